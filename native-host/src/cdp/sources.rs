//! Where `unmodal mcp` takes the remote browser's URL and headers from: its flags, files
//! the flags name, and the environment. Another local user can read a process's arguments
//! (`ps`, `/proc/PID/cmdline`), but not its environment nor a file of the user's with mode
//! 0600: a token goes there.

use super::Endpoint;
use super::endpoint::parse_header;
use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The URL when neither `--cdp-endpoint` nor `--cdp-endpoint-file` gives one.
pub const ENDPOINT_VAR: &str = "UNMODAL_CDP_ENDPOINT";
/// Headers, one `Name: value` a line, added to those of the flags.
pub const HEADERS_VAR: &str = "UNMODAL_CDP_HEADERS";

/// A file of headers or a URL is a few lines; anything larger is not one.
const MAX_FILE: u64 = 64 << 10;

/// What the command line says about a remote browser. No `Debug`: it holds the secrets.
#[derive(Default)]
pub struct Given {
    pub endpoint: Option<String>,
    pub endpoint_file: Option<PathBuf>,
    pub headers: Vec<String>,
    pub header_file: Option<PathBuf>,
    pub ca: Option<PathBuf>,
    pub header_any_host: bool,
}

impl Given {
    /// The remote browser, or `None` when nothing names one. `env` reads a variable (the
    /// process's own, or a test's). A flag beats the variable for the URL; headers from
    /// every source are sent, each name once.
    pub fn resolve(self, env: impl Fn(&str) -> Option<OsString>) -> Result<Option<Endpoint>> {
        let (url, from) = match (self.endpoint, &self.endpoint_file) {
            (Some(url), _) => (url, "--cdp-endpoint".to_owned()),
            (None, Some(file)) => (one_url(file)?, format!("--cdp-endpoint-file {}", file.display())),
            (None, None) => match var(&env, ENDPOINT_VAR)? {
                Some(url) => (url.trim().to_owned(), ENDPOINT_VAR.to_owned()),
                None => {
                    let needing = [
                        (!self.headers.is_empty(), "--cdp-header"),
                        (self.header_file.is_some(), "--cdp-header-file"),
                        (self.ca.is_some(), "--cdp-ca"),
                        (self.header_any_host, "--cdp-header-any-host"),
                    ];
                    if let Some((_, flag)) = needing.iter().find(|(given, _)| *given) {
                        bail!(
                            "{flag} is for a remote browser: name it with --cdp-endpoint URL, --cdp-endpoint-file \
FILE or {ENDPOINT_VAR}"
                        );
                    }
                    // UNMODAL_CDP_HEADERS alone names no browser: a local session.
                    return Ok(None);
                }
            },
        };
        let mut headers: Vec<(String, String, String)> = Vec::new();
        for (i, h) in self.headers.iter().enumerate() {
            let from = format!("--cdp-header #{}", i + 1);
            add(&mut headers, parse_header(h, &from)?, from)?;
        }
        if let Some(file) = &self.header_file {
            let text = read_private(file, "--cdp-header-file")?;
            for (n, line) in lines(&text) {
                let from = format!("--cdp-header-file {} line {n}", file.display());
                add(&mut headers, parse_header(line, &from)?, from)?;
            }
        }
        if let Some(text) = var(&env, HEADERS_VAR)? {
            for (n, line) in lines(&text) {
                let from = format!("{HEADERS_VAR} line {n}");
                add(&mut headers, parse_header(line, &from)?, from)?;
            }
        }
        let headers = headers.into_iter().map(|(k, v, _)| (k, v)).collect();
        Ok(Some(Endpoint::parsed(&url, &from, headers, self.ca.as_deref())?.header_any_host(self.header_any_host)))
    }
}

/// A header, unless its name came already (the WebSocket request would keep one of them).
fn add(headers: &mut Vec<(String, String, String)>, (k, v): (String, String), from: String) -> Result<()> {
    if let Some((_, _, first)) = headers.iter().find(|(name, _, _)| name.eq_ignore_ascii_case(&k)) {
        bail!("the header {k} is given twice, by {first} and by {from}: give it once");
    }
    headers.push((k, v, from));
    Ok(())
}

/// A variable's value; unset or empty is none. Errors never show the value.
fn var(env: &impl Fn(&str) -> Option<OsString>, name: &str) -> Result<Option<String>> {
    match env(name) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => v.into_string().map(Some).map_err(|_| anyhow::anyhow!("{name} is not valid UTF-8")),
    }
}

/// Numbered lines with text, less blank ones and `#` comments.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// The one URL in `--cdp-endpoint-file`.
fn one_url(file: &Path) -> Result<String> {
    let text = read_private(file, "--cdp-endpoint-file")?;
    let mut urls = lines(&text);
    match (urls.next(), urls.next()) {
        (Some((_, url)), None) => Ok(url.to_owned()),
        (None, _) => bail!("--cdp-endpoint-file {}: no URL in it", file.display()),
        (Some(_), Some((n, _))) => {
            bail!("--cdp-endpoint-file {}: one URL only, and line {n} is another", file.display())
        }
    }
}

/// The text of a file that holds a secret, once it is known to be the user's alone (Unix:
/// owned by the user, mode 0600 or stricter). Errors name the file and the fix, never
/// what is in it.
fn read_private(path: &Path, flag: &str) -> Result<String> {
    let shown = path.display();
    let mut file = std::fs::File::open(path).with_context(|| format!("{flag} {shown}: cannot open it"))?;
    let meta = file.metadata().with_context(|| format!("{flag} {shown}"))?;
    if !meta.is_file() {
        bail!("{flag} {shown}: not a file");
    }
    // Asked of the open file, so the file checked is the file read.
    match crate::platform::not_private(&file).with_context(|| format!("{flag} {shown}"))? {
        Some(crate::platform::NotPrivate::Owner) => bail!(
            "{flag} {shown}: the file belongs to another user, who could change it or read it: keep the secret in a \
file of your own, then chmod 600 it"
        ),
        Some(crate::platform::NotPrivate::Mode(mode)) => bail!(
            "{flag} {shown}: other users may read or change it (mode {mode:04o}); make it yours alone: chmod 600 {shown}"
        ),
        None => {}
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_FILE + 1).read_to_end(&mut bytes).with_context(|| format!("{flag} {shown}: reading it"))?;
    if bytes.len() as u64 > MAX_FILE {
        bail!("{flag} {shown}: over {MAX_FILE} bytes, not a file of headers or a URL");
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{flag} {shown}: not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const SECRET: &str = "s3cret-t0ken";

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), v.into())).collect();
        move |name| vars.get(name).cloned()
    }

    fn private(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        crate::platform::write_private(&path, text.as_bytes()).unwrap();
        path
    }

    fn err(given: Given, vars: &[(&str, &str)]) -> String {
        let e = format!("{:#}", given.resolve(env(vars)).expect_err("an error"));
        assert!(!e.contains(SECRET), "an error shows the secret: {e}");
        e
    }

    #[test]
    fn the_url_and_headers_come_from_flags_files_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let url_file = private(dir.path(), "url", "# the session's URL\n\nwss://fleet.example/s?token=t\r\n");
        let header_file = private(
            dir.path(),
            "headers",
            &format!("# for the fleet\r\nAuthorization: Bearer {SECRET}\r\n\r\nX-Team:  blue \n"),
        );
        let given = Given {
            endpoint_file: Some(url_file),
            headers: vec!["X-Flag: 1".into()],
            header_file: Some(header_file),
            ..Given::default()
        };
        let e = given.resolve(env(&[(HEADERS_VAR, "X-Env: e\n\nX-More: m")])).unwrap().unwrap();
        assert_eq!(e.redacted(), "wss://fleet.example/…");
        let names: Vec<_> = e.headers().iter().map(|(k, v)| format!("{k}={v}")).collect();
        let bearer = format!("Authorization=Bearer {SECRET}");
        assert_eq!(names, ["X-Flag=1", bearer.as_str(), "X-Team=blue", "X-Env=e", "X-More=m"]);
        // The variable names the URL when no flag does; a flag beats it.
        let vars = [(ENDPOINT_VAR, " http://127.0.0.1:9222 \n"), (HEADERS_VAR, "A: b")];
        let e = Given::default().resolve(env(&vars)).unwrap().unwrap();
        assert_eq!((e.redacted().as_str(), e.headers().len()), ("http://127.0.0.1:9222", 1));
        let flag = Given { endpoint: Some("ws://127.0.0.1:1/x".into()), ..Given::default() };
        assert_eq!(flag.resolve(env(&vars)).unwrap().unwrap().redacted(), "ws://127.0.0.1:1/…");
        // Headers in the environment alone name no browser: a local session.
        assert!(Given::default().resolve(env(&[(HEADERS_VAR, "A: b"), (ENDPOINT_VAR, "")])).unwrap().is_none());
        // The flag that needs a browser says how to name one.
        let e = err(Given { headers: vec![format!("Authorization: {SECRET}")], ..Given::default() }, &[]);
        assert!(e.contains("--cdp-header is for a remote browser") && e.contains(ENDPOINT_VAR), "{e}");
        let e = err(Given { header_any_host: true, ..Given::default() }, &[]);
        assert!(e.contains("--cdp-header-any-host"), "{e}");
    }

    #[test]
    fn bad_sources_are_said_by_name_and_line_without_their_text() {
        let dir = tempfile::tempdir().unwrap();
        let url = || Some("wss://fleet.example/x".to_owned());
        // A header given twice (the request would keep one).
        let e = err(
            Given { endpoint: url(), headers: vec![format!("authorization: {SECRET}")], ..Given::default() },
            &[(HEADERS_VAR, &format!("# c\nAuthorization: Bearer {SECRET}"))],
        );
        assert!(e.contains("--cdp-header #1") && e.contains(&format!("{HEADERS_VAR} line 2")), "{e}");
        // A malformed line: where it is, not what it says.
        let file = private(dir.path(), "h", &format!("X-Ok: 1\nBearer {SECRET}\n"));
        let e = err(Given { endpoint: url(), header_file: Some(file.clone()), ..Given::default() }, &[]);
        assert!(e.contains(&format!("{} line 2", file.display())) && e.contains("Name: value"), "{e}");
        let e = err(Given { endpoint: url(), ..Given::default() }, &[(HEADERS_VAR, &format!("Bad {SECRET}: x"))]);
        assert!(e.contains("line 1") && e.contains("not a header name"), "{e}");
        // A URL file with two URLs, or none; a missing file.
        let two = private(dir.path(), "two", &format!("wss://a/{SECRET}\nwss://b/{SECRET}\n"));
        let e = err(Given { endpoint_file: Some(two), ..Given::default() }, &[]);
        assert!(e.contains("one URL only, and line 2"), "{e}");
        let none = private(dir.path(), "none", "# nothing yet\n");
        assert!(err(Given { endpoint_file: Some(none), ..Given::default() }, &[]).contains("no URL in it"));
        let e = err(Given { endpoint_file: Some(dir.path().join("missing")), ..Given::default() }, &[]);
        assert!(e.contains("missing") && e.contains("cannot open it"), "{e}");
        // A URL from a file or the variable is checked as the flag's is, named by its source.
        let e = err(Given::default(), &[(ENDPOINT_VAR, &format!("ftp://u:{SECRET}@h/"))]);
        assert!(e.starts_with(ENDPOINT_VAR) && e.contains("ftp://h/…"), "{e}");
        let big = private(dir.path(), "big", &"#".repeat(MAX_FILE as usize + 1));
        assert!(err(Given { endpoint_file: Some(big), ..Given::default() }, &[]).contains("over"));
    }

    /// Another local user reads what a file readable by others holds: such a file is
    /// refused, and the error says the fix. (Files are new on this branch: 892be98 took
    /// headers as arguments only, which every local user can read in /proc/PID/cmdline.)
    #[cfg(unix)]
    #[test]
    fn a_file_other_users_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let headers = private(dir.path(), "headers", &format!("Authorization: Bearer {SECRET}\n"));
        let url = private(dir.path(), "url", &format!("wss://fleet.example/x?token={SECRET}\n"));
        for mode in [0o644, 0o640, 0o604, 0o660, 0o602] {
            for (given, flag) in [
                (Given { endpoint_file: Some(url.clone()), ..Given::default() }, "--cdp-endpoint-file"),
                (
                    Given {
                        endpoint: Some("wss://fleet.example/x".into()),
                        header_file: Some(headers.clone()),
                        ..Given::default()
                    },
                    "--cdp-header-file",
                ),
            ] {
                let file = given.endpoint_file.clone().or_else(|| given.header_file.clone()).unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
                let e = err(given, &[]);
                let fix = format!("chmod 600 {}", file.display());
                assert!(e.starts_with(&format!("{flag} {}", file.display())) && e.contains(&fix), "{mode:o}: {e}");
            }
        }
        // Another user's file, however private: only root can give a file away to test it.
        if crate::platform::runs_as_root() {
            std::fs::set_permissions(&headers, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::chown(&headers, Some(65534), None).unwrap();
            let given = Given {
                endpoint: Some("wss://fleet.example/x".into()),
                header_file: Some(headers.clone()),
                ..Given::default()
            };
            let e = err(given, &[]);
            assert!(e.contains("belongs to another user"), "{e}");
            std::os::unix::fs::chown(&headers, Some(0), None).unwrap();
        }
        // 0600 and stricter are taken.
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&headers, std::fs::Permissions::from_mode(mode)).unwrap();
            let given = Given {
                endpoint: Some("wss://fleet.example/x".into()),
                header_file: Some(headers.clone()),
                ..Given::default()
            };
            assert_eq!(given.resolve(env(&[])).unwrap().unwrap().headers().len(), 1, "{mode:o}");
        }
    }
}
