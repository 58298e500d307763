//! From nothing to a working agent set-up: the `unmodal` binary alone, copied into an empty
//! directory and run with an empty home, installs itself, starts its browser, and serves the
//! agent beside Playwright MCP. Also the two-line MCP config, and each bad input a new user
//! meets (a port in use, no browser, a profile in use, an unwritable data directory).

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::browser::chromium_binary;
use unmodal_e2e::started::{self, Started};
use unmodal_e2e::{Agent, Driver, Peer, WebServer, eventually};

const PAGE: &str = "<!doctype html><title>drafts</title>\
    <button onclick=\"document.querySelector('#out').textContent = 'confirm: ' + confirm('Delete the draft?')\">Delete</button>\
    <p id=out>none</p>";

/// errno "text file busy".
const ETXTBSY: i32 = 26;

/// A new user's machine: the binary alone in `bin/`, an empty home, a private runtime dir.
/// It holds a browser slot: its browsers are started by `unmodal`, not `Browser::launch`.
struct Fresh {
    dir: tempfile::TempDir,
    exe: PathBuf,
    _slot: std::sync::Arc<unmodal_e2e::browser::Slot>,
}

impl Fresh {
    async fn new() -> Result<Self> {
        let slot = unmodal_e2e::browser::slot().await;
        let dir = tempfile::Builder::new().prefix("unmodal-fresh-").tempdir()?;
        for d in ["bin", "home", "run"] {
            std::fs::create_dir(dir.path().join(d))?;
        }
        std::fs::set_permissions(dir.path().join("run"), std::fs::Permissions::from_mode(0o700))?;
        let exe = dir.path().join("bin/unmodal");
        std::fs::copy(Artifacts::find()?.host, &exe)?;
        // A child another test thread forked while the copy was open for writing holds it
        // until that child execs: running the copy fails with ETXTBSY until then.
        eventually(Duration::from_secs(10), "the copied binary running", || async {
            match tokio::process::Command::new(&exe).arg("--version").output().await {
                Err(e) if e.raw_os_error() == Some(ETXTBSY) => Ok(None),
                other => other.map(|_| Some(())).context("running the copied binary"),
            }
        })
        .await?;
        Ok(Self { dir, exe, _slot: slot })
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// The profile `unmodal browser` uses by default.
    fn profile(&self) -> PathBuf {
        self.home().join(".local/share/unmodal/profiles/default")
    }

    /// `unmodal <args>` with only what a fresh login has: the browser found on PATH.
    fn command(&self, args: &[&str]) -> Result<tokio::process::Command> {
        let chromium = chromium_binary()?;
        let path = format!("{}:/usr/bin:/bin", chromium.parent().context("chromium's directory")?.display());
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home())
            .env("UNMODAL_RUNTIME_DIR", self.run_dir())
            .kill_on_drop(true);
        Ok(cmd)
    }

    async fn output(&self, args: &[&str]) -> Result<(bool, String)> {
        let out = self.command(args)?.stdin(Stdio::null()).output().await?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Ok((out.status.success(), text))
    }
}

async fn start_browser(fresh: &Fresh, args: &[&str]) -> Result<Started> {
    start_browser_with(fresh.command(args)?).await
}

async fn start_browser_with(cmd: tokio::process::Command) -> Result<Started> {
    started::unmodal_browser(cmd, Duration::from_secs(60)).await
}

/// The recorded dialogs of the tab showing `url`, as the agent sees them.
async fn recorded(agent: &Agent, url: &str) -> Result<Vec<Value>> {
    let tabs = agent.ok("observe", json!({"what": "tabs"})).await?;
    let tab = tabs["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url).map(|t| t["id"].clone());
    let Some(tab) = tab else { return Ok(Vec::new()) };
    let d = agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
    Ok(d["recent_dialogs"].as_array().cloned().unwrap_or_default())
}

/// A person switches the pilot on, then the agent sets a rule; Playwright MCP's click
/// raises a `confirm()` the rule answers.
async fn a_rule_answers_the_drivers_click(fresh: &Fresh, agent: &Agent, port: u16) -> Result<()> {
    let profile = fresh.profile();
    let (ok, said) = fresh.output(&["pilot", "on", "--user-data-dir", &profile.display().to_string()]).await?;
    ensure!(ok && said.contains("AI Web Pilot is on"), "`unmodal pilot on` said: {said}");
    let web = WebServer::start()?;
    let url = web.page("/drafts", PAGE, &[]);
    let peer = Peer::start(Driver::PlaywrightMcp, port).await?;
    peer.navigate(&url).await?;
    agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true, "once": false}),
        )
        .await?;
    let r = tokio::time::timeout(Duration::from_secs(20), peer.click_button(&url, "Delete"))
        .await
        .context("the click hung")??;
    ensure!(!r.is_error, "Playwright MCP: {}", r.text);
    let seen = peer.evaluate(&url, "() => document.querySelector('#out').textContent").await?;
    ensure!(seen.text.contains("confirm: true"), "the page got: {}", seen.text);
    let rec = eventually(Duration::from_secs(15), "the dialog recorded", || async {
        Ok(recorded(agent, &url)
            .await?
            .into_iter()
            .find(|r| r["message"] == "Delete the draft?" && r["decided_by"].is_string()))
    })
    .await?;
    assert_eq!((rec["decided_by"].as_str(), rec["accepted"].as_bool()), (Some("rule"), Some(true)), "{rec}");
    peer.close().await
}

/// The command lines of the processes running on `profile` (the browser and its helpers).
fn processes_on(profile: &Path) -> Vec<Vec<String>> {
    let needle = format!("--user-data-dir={}", profile.display());
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<String> = raw.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            args.contains(&needle).then_some(args)
        })
        .collect()
}

/// The browser process's command line (helpers carry `--type=`).
fn browser_cmdline(profile: &Path) -> Option<String> {
    processes_on(profile).into_iter().find(|a| !a.iter().any(|x| x.starts_with("--type="))).map(|a| a.join(" "))
}

/// No process runs on `profile` any more.
async fn browser_gone(profile: &Path) -> Result<()> {
    eventually(Duration::from_secs(15), "the browser closing", || async {
        Ok(processes_on(profile).is_empty().then_some(()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_alone_sets_up_its_browser_and_answers_beside_playwright_mcp() -> Result<()> {
    let fresh = Fresh::new().await?;
    let (ok, said) = fresh.output(&["install"]).await?;
    ensure!(ok && said.contains("extension unpacked in"), "`unmodal install` said: {said}");
    let mut started = start_browser(&fresh, &["browser", "--headless", "--port", "0"]).await?;
    ensure!(started.printed.contains("Unmodal is connected"), "{}", started.printed);
    ensure!(
        started.printed.contains("@playwright/mcp@") && started.printed.contains("--cdp-endpoint"),
        "{}",
        started.printed
    );
    // A second one on the same profile names the first.
    let (ok, again) = fresh.output(&["browser", "--headless", "--port", "0"]).await?;
    ensure!(ok && again.contains("already running") && again.contains(&format!(":{}", started.port)), "{again}");

    // doctor knows the profile and the browser in it, and finds nothing missing there.
    let (_, doc) = fresh.output(&["doctor"]).await?;
    let profile_line = format!("ok   profile {} (running, pid", fresh.profile().display());
    for want in [
        profile_line.as_str(),
        "ok     host registered in it",
        "ok     started with --silent-debugger-extension-api",
        "ok   extension unpacked for this binary",
    ] {
        ensure!(doc.contains(want), "doctor lacks {want:?}:\n{doc}");
    }
    let mut cmd = fresh.command(&["mcp"])?;
    cmd.stderr(Stdio::null());
    let agent = Agent::start_command(cmd, &[]).await?;
    a_rule_answers_the_drivers_click(&fresh, &agent, started.port).await?;
    agent.close().await?;

    // Ctrl-C closes the browser.
    let pid = started.child.id().context("pid")?;
    std::process::Command::new("kill").args(["-INT", &pid.to_string()]).status()?;
    let status =
        tokio::time::timeout(Duration::from_secs(20), started.child.wait()).await.context("it did not exit")??;
    ensure!(status.success(), "{status}");
    browser_gone(&fresh.profile()).await?;

    // uninstall takes back what install wrote.
    let (ok, said) = fresh.output(&["uninstall"]).await?;
    ensure!(ok && said.contains("extension"), "{said}");
    ensure!(!fresh.home().join(".local/share/unmodal/extension").exists(), "{said}");
    Ok(())
}

/// Branded Chrome 137+ ignores `--load-extension`: there the extension is loaded through the
/// DevTools pipe (`Extensions.loadUnpacked`). The same path, forced, on Chromium. And a
/// killed `unmodal browser` takes its browser with it.
#[tokio::test(flavor = "multi_thread")]
async fn the_extension_loads_through_the_devtools_pipe_where_the_flag_is_ignored() -> Result<()> {
    let fresh = Fresh::new().await?;
    let mut cmd = fresh.command(&["browser", "--headless", "--port", "0"])?;
    cmd.env("UNMODAL_LOAD_VIA_PIPE", "1");
    let mut started = start_browser_with(cmd).await?;
    ensure!(started.printed.contains("Unmodal is connected"), "{}", started.printed);
    let browser = browser_cmdline(&fresh.profile()).context("no browser runs on the profile")?;
    // (Debian's wrapper adds an empty `--load-extension=` of its own.)
    let loads = browser.split(' ').any(|a| a.strip_prefix("--load-extension=").is_some_and(|v| !v.is_empty()));
    ensure!(browser.contains("--remote-debugging-pipe") && !loads, "{browser}");
    // Killed outright, `unmodal` leaves no browser behind: the browser exits with its pipe.
    started.child.kill().await?;
    browser_gone(&fresh.profile()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_lines_of_mcp_config_start_everything() -> Result<()> {
    let fresh = Fresh::new().await?;
    let (ok, said) = fresh.output(&["install"]).await?;
    ensure!(ok, "{said}");
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port();
    let mut cmd = fresh.command(&["mcp", "--browser", "--headless", "--port", &port.to_string()])?;
    let err_log = fresh.dir.path().join("mcp.err");
    cmd.stderr(std::fs::File::create(&err_log)?);
    let agent = match Agent::start_command(cmd, &[]).await {
        Ok(a) => a,
        Err(e) => bail!("{e:#}; it said: {}", std::fs::read_to_string(&err_log).unwrap_or_default()),
    };
    // Its browser runs and is connected by the first call.
    let tabs = agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(tabs["tabs"].is_array(), "{tabs}");
    a_rule_answers_the_drivers_click(&fresh, &agent, port).await?;
    // The agent leaving closes the browser it started.
    agent.close().await?;
    browser_gone(&fresh.profile()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_set_ups_are_clear_errors_that_leave_nothing_behind() -> Result<()> {
    let fresh = Fresh::new().await?;
    let data = fresh.home().join(".local/share/unmodal");
    // A port in use.
    let held = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    let port = held.local_addr()?.port().to_string();
    let (ok, said) = fresh.output(&["browser", "--headless", "--port", &port]).await?;
    ensure!(!ok && said.contains(&format!("port {port}")) && said.contains("--port 0"), "{said}");
    ensure!(!data.exists(), "a refused start wrote {}", data.display());
    // No such browser binary.
    let (ok, said) = fresh.output(&["browser", "--headless", "--browser-path", "/nonexistent/chromium"]).await?;
    ensure!(!ok && said.contains("/nonexistent/chromium") && said.contains("Chromium"), "{said}");
    ensure!(!data.exists(), "a refused start wrote {}", data.display());
    // An unwritable data directory (under a plain file: unwritable for root too).
    std::fs::write(fresh.dir.path().join("file"), "")?;
    let mut cmd = fresh.command(&["browser", "--headless", "--port", "0"])?;
    let out = cmd.env("UNMODAL_DATA_DIR", fresh.dir.path().join("file/unmodal")).stdin(Stdio::null()).output().await?;
    let said = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success() && said.contains("UNMODAL_DATA_DIR"), "{said}");
    // A profile another browser holds (started without a DevTools port).
    let profile = fresh.dir.path().join("held-profile");
    let mut other = tokio::process::Command::new(chromium_binary()?)
        .args(["--headless=new", "--no-sandbox", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    eventually(Duration::from_secs(20), "the other browser locking its profile", || async {
        Ok(std::fs::symlink_metadata(profile.join("SingletonLock")).is_ok().then_some(()))
    })
    .await?;
    let p = profile.display().to_string();
    let (ok, said) = fresh.output(&["browser", "--headless", "--port", "0", "--profile", &p]).await?;
    ensure!(!ok && said.contains("in use by another browser"), "{said}");
    other.kill().await?;
    Ok(())
}
