//! `unmodal pilot on|off|status`: a person switches AI Web Pilot from a terminal. It reaches
//! each browser's host over the private socket; `unmodal mcp` has no such call, so an agent
//! with only its MCP tools cannot. Whoever can run commands as this user can.

use crate::ipc::{self, Tool};
use crate::paths;
use crate::reply::{ErrorCode, ToolError};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `unmodal pilot` waits for a browser that runs but whose extension has not
/// reached its host yet: a cold start (launch, service worker, host listening) takes a few
/// seconds on a loaded machine (tests/tests/pilot_cli_wait.rs prints it), and more than
/// 10 s was measured on a heavily overloaded one (a fresh-clone CI beside a suite, two busy
/// loops and two builds on 2 cores); it is still a short wait at a prompt.
pub const CONNECT_WAIT: Duration = Duration::from_secs(20);
/// How long it waits when no browser process is seen at all: one launched alongside (a
/// script's `chromium & unmodal pilot on`) takes a moment to show up in the process list.
pub const NO_BROWSER_WAIT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    On,
    Off,
    Status,
}

/// One connected browser, as its host describes it.
struct Found {
    socket: PathBuf,
    status: Value,
}

pub fn run(action: Action, user_data_dir: Option<&Path>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let said = |line: &str| eprintln!("unmodal: {line}");
    let waits = Waits { running: CONNECT_WAIT, none: NO_BROWSER_WAIT, seen: &|| browser_seen(user_data_dir) };
    rt.block_on(switch_waiting(&paths::runtime_dir(), action, user_data_dir, &waits, &said)).map(|lines| {
        for l in lines {
            println!("{l}");
        }
    })
}

/// What may be a browser whose extension is still reaching its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A browser process runs (its pid).
    Running(u32),
    /// No browser process runs.
    None,
    /// The process list cannot be read here: as if one were starting.
    Unknown,
}

/// How long to wait for a host, and how to tell whether a browser runs.
pub struct Waits<'a> {
    /// While a browser runs (or none can be told).
    pub running: Duration,
    /// While none runs.
    pub none: Duration,
    pub seen: &'a dyn Fn() -> Seen,
}

/// A Chromium-family browser process (not one of its helpers) on this machine, in the
/// profile `profile` if one is named; `Unknown` when the process list cannot be read.
pub fn browser_seen(profile: Option<&Path>) -> Seen {
    if let Some(pid) = profile.and_then(crate::browser::profile::locked_by) {
        return Seen::Running(pid);
    }
    let Some(all) = crate::platform::command_lines() else { return Seen::Unknown };
    all.iter()
        .find(|(_, args)| crate::browser::profile::is_browser(args, profile))
        .map_or(Seen::None, |(pid, _)| Seen::Running(*pid))
}

/// What to print, one line per browser; an error says what to do instead. Asks once.
pub async fn switch(dir: &Path, action: Action, user_data_dir: Option<&Path>) -> Result<Vec<String>> {
    let waits = Waits { running: Duration::ZERO, none: Duration::ZERO, seen: &|| Seen::None };
    switch_waiting(dir, action, user_data_dir, &waits, &|_| {}).await
}

/// As `switch`, waiting for a browser whose extension is still reaching its host (`say`
/// tells the person so, once).
pub async fn switch_waiting(
    dir: &Path,
    action: Action,
    user_data_dir: Option<&Path>,
    waits: &Waits<'_>,
    say: &dyn Fn(&str),
) -> Result<Vec<String>> {
    let start = Instant::now();
    let mut told = false;
    let (found, seen) = loop {
        let found = connected(dir, user_data_dir).await?;
        let seen = (waits.seen)();
        let limit = if seen == Seen::None { waits.none } else { waits.running };
        if !found.is_empty() || start.elapsed() >= limit {
            break (found, seen);
        }
        if !told {
            told = true;
            let which = user_data_dir.map_or_else(String::new, |d| format!(" (profile {})", d.display()));
            say(&format!(
                "no browser's Unmodal extension has reached its host yet{which}; waiting up to {} s for one that is \
starting...",
                limit.as_secs_f64()
            ));
        }
        tokio::time::sleep(POLL).await;
    };
    if found.is_empty() {
        let limit = if seen == Seen::None { waits.none } else { waits.running };
        bail!("{}", not_found(user_data_dir, seen, limit));
    }
    let on = match action {
        Action::Status => return Ok(found.iter().map(|f| describe(&f.status, None)).collect()),
        Action::On => true,
        Action::Off => false,
    };
    // Taking power away needs no aim; giving it does.
    if on && found.len() > 1 {
        let listed: Vec<String> = found.iter().map(|f| format!("  {}", describe(&f.status, None))).collect();
        bail!(
            "{} browsers with Unmodal are connected; pick one with --user-data-dir DIR:\n{}",
            found.len(),
            listed.join("\n")
        );
    }
    let mut lines = Vec::new();
    for f in &found {
        let args = json!({ "on": on, "user_data_dir": user_data_dir });
        let status = ipc::ask_socket(&f.socket, Tool::PilotSwitch, args).await?;
        lines.push(describe(&status, Some(on)));
    }
    Ok(lines)
}

/// The hosts in `dir` that answer for `user_data_dir` (all of them without one).
async fn connected(dir: &Path, user_data_dir: Option<&Path>) -> Result<Vec<Found>> {
    let filter = json!({ "user_data_dir": user_data_dir });
    let mut found = Vec::new();
    for (socket, reply) in ipc::ask_each(dir, Tool::PilotSwitch, filter).await? {
        match reply {
            Ok(status) => found.push(Found { socket, status }),
            Err(e) if e.code == ErrorCode::OtherBrowser => {}
            Err(e) => tracing::warn!(socket = %socket.display(), error = %e, "host did not answer"),
        }
    }
    Ok(found)
}

/// Why no browser answered, and what to check.
fn not_found(user_data_dir: Option<&Path>, seen: Seen, waited: Duration) -> String {
    let profile = user_data_dir.map_or_else(String::new, |d| format!(" with the profile {}", d.display()));
    let waited = if waited.is_zero() { String::new() } else { format!(" within {} s", waited.as_secs_f64()) };
    match seen {
        Seen::Running(pid) => format!(
            "a browser{profile} runs (pid {pid}), but its Unmodal extension did not reach the host{waited}. Check \
that the extension is loaded and enabled there (chrome://extensions), that the host is registered for this \
browser (`unmodal install`), and that the browser runs as this user; `unmodal doctor` shows what is missing."
        ),
        _ if user_data_dir.is_some() => format!(
            "no browser with the Unmodal extension runs{profile}{waited}. Start it with that --user-data-dir and \
the extension loaded; `unmodal pilot status` lists the connected browsers, `unmodal doctor` shows what is missing."
        ),
        _ => ToolError::not_connected().message,
    }
}

/// "AI Web Pilot is on in the browser with profile /p (pid 12)." and what follows from it.
fn describe(status: &Value, switched: Option<bool>) -> String {
    let on = status["pilot_enabled"] == true;
    let browser = &status["browser"];
    let profile =
        browser["profile"].as_str().map_or_else(|| "an unknown profile".to_owned(), |p| format!("profile {p}"));
    let pid = browser["pid"].as_u64().map_or_else(String::new, |p| format!(", pid {p}"));
    let mut line = format!("AI Web Pilot is {} in the browser with {profile}{pid}.", if on { "on" } else { "off" });
    if switched.is_some() && status["applied"] != true {
        line += " The extension has not confirmed it yet (is its service worker running?).";
    }
    if switched.is_none() && browser["remote_control"].is_string() {
        line += " A program can control this browser: only this command switches the pilot on there.";
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A stand-in host on `socket` serving the profile `profile`: answers `pilot_switch` as a
    /// host does (the status, switched when asked; another profile is `other_browser`).
    fn fake_host(socket: PathBuf, profile: &'static str) {
        let mut listener = crate::platform::listen(&socket).unwrap();
        tokio::spawn(async move {
            let mut on = false;
            while let Ok(stream) = listener.accept().await {
                let (r, mut w) = tokio::io::split(stream);
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let req: Value = serde_json::from_str(&line).unwrap();
                    assert_eq!(req["tool"], "pilot_switch");
                    let dir = &req["args"]["user_data_dir"];
                    let answer = if !dir.is_null() && dir != profile {
                        json!({"error": {"code": "other_browser", "message": "not mine"}})
                    } else {
                        if let Some(v) = req["args"]["on"].as_bool() {
                            on = v;
                        }
                        json!({"ok": {"pilot_enabled": on, "applied": true,
                            "browser": {"pid": 1, "profile": profile, "remote_control": "started with --remote-debugging-port"}}})
                    };
                    w.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
                }
            }
        });
    }

    #[tokio::test]
    async fn a_starting_browser_is_waited_for_and_said_so() {
        let dir = paths::private_tempdir();
        let socket = paths::socket_path(dir.path(), std::process::id());
        let told = std::sync::Mutex::new(Vec::new());
        let say = |l: &str| told.lock().unwrap().push(l.to_owned());
        // A limit far beyond the host's 300 ms: a loaded machine must not fail this.
        let waits = Waits { running: Duration::from_secs(30), none: Duration::ZERO, seen: &|| Seen::Running(42) };
        let later = socket.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            fake_host(later, "/p/a");
        });
        let said = switch_waiting(dir.path(), Action::On, None, &waits, &say).await.unwrap();
        assert_eq!(said, ["AI Web Pilot is on in the browser with profile /p/a, pid 1."]);
        let told = told.lock().unwrap().clone();
        assert!(told.len() == 1 && told[0].contains("waiting up to 30 s"), "{told:?}");
    }

    #[tokio::test]
    async fn it_fails_saying_what_to_check_once_the_wait_is_over() {
        let dir = paths::private_tempdir();
        let quiet = |_: &str| {};
        let waits = Waits { running: Duration::from_millis(300), none: Duration::ZERO, seen: &|| Seen::Running(42) };
        let start = Instant::now();
        let err = switch_waiting(dir.path(), Action::On, None, &waits, &quiet).await.unwrap_err().to_string();
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert!(err.contains("runs (pid 42)") && err.contains("unmodal doctor") && err.contains("chrome://extensions"));
        // No browser at all: only the short wait, and the plain "not connected".
        let waits = Waits { running: Duration::from_secs(60), none: Duration::ZERO, seen: &|| Seen::None };
        let start = Instant::now();
        let err = switch_waiting(dir.path(), Action::Status, None, &waits, &quiet).await.unwrap_err().to_string();
        assert!(start.elapsed() < Duration::from_secs(30), "no minute's wait for nothing");
        assert!(err.contains("No browser with the Unmodal extension") && err.contains("unmodal doctor"), "{err}");
    }

    #[tokio::test]
    async fn on_needs_a_browser_named_when_several_run_and_off_takes_them_all() {
        let dir = paths::private_tempdir();
        let err = switch(dir.path(), Action::On, None).await.unwrap_err().to_string();
        assert!(err.contains("No browser with the Unmodal extension"), "{err}");

        // Sockets named after live processes (this one), so they are not taken for stale.
        fake_host(paths::socket_path(dir.path(), std::process::id()), "/p/a");
        fake_host(paths::socket_path(dir.path(), 1), "/p/b");
        let err = switch(dir.path(), Action::On, None).await.unwrap_err().to_string();
        assert!(err.contains("2 browsers") && err.contains("--user-data-dir") && err.contains("/p/b"), "{err}");

        let said = switch(dir.path(), Action::On, Some(Path::new("/p/b"))).await.unwrap();
        assert_eq!(said, ["AI Web Pilot is on in the browser with profile /p/b, pid 1."]);
        let status = switch(dir.path(), Action::Status, None).await.unwrap();
        assert_eq!(status.len(), 2);
        assert!(status.iter().any(|l| l.contains("is on") && l.contains("/p/b") && l.contains("only this command")));
        assert!(status.iter().any(|l| l.contains("is off") && l.contains("/p/a")));

        let said = switch(dir.path(), Action::Off, None).await.unwrap();
        assert_eq!(said.len(), 2);
        assert!(said.iter().all(|l| l.contains("is off")), "{said:?}");
        let err = switch(dir.path(), Action::On, Some(Path::new("/p/c"))).await.unwrap_err().to_string();
        assert!(err.contains("/p/c") && err.contains("unmodal pilot status"), "{err}");
    }
}
