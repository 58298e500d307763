//! Agent frameworks that drive the browser over CDP themselves, run for real beside Unmodal:
//! `unmodal browser` started as a user starts it, `unmodal call` as a script calls it, and a
//! Stagehand 4.4.0 script (tests/peers/stagehand-driver.mjs) or a browser-use 0.13.14 script
//! (tests/frameworks/*.py, in the venv `cargo xtask test` makes) attached to its port.

use crate::artifacts::{Artifacts, repo_root};
use crate::browser::{Slot, chromium_binary, slot};
use crate::started::{self, Started};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

/// How long `unmodal browser` may take to say it runs with Unmodal connected.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Stagehand's extension as installed in tests/peers (it loads it from there itself).
pub fn stagehand_extension_dir() -> PathBuf {
    repo_root().join("tests/peers/node_modules/@browserbasehq/stagehand/dist/extension")
}

/// `unmodal browser --headless --port 0 …` in a home and runtime directory of its own.
pub struct UnmodalBrowser {
    child: tokio::process::Child,
    pub port: u16,
    pub printed: String,
    pub dir: tempfile::TempDir,
    pub exe: PathBuf,
    _slot: Arc<Slot>,
}

impl UnmodalBrowser {
    pub async fn start(extra: &[&str]) -> Result<Self> {
        let slot = slot().await;
        let dir = tempfile::Builder::new().prefix("unmodal-fw-").tempdir()?;
        for d in ["home", "run"] {
            std::fs::create_dir(dir.path().join(d))?;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path().join("run"), std::fs::Permissions::from_mode(0o700))?;
        let exe = Artifacts::find()?.host;
        let chromium = chromium_binary()?.display().to_string();
        let mut args = vec!["browser", "--headless", "--port", "0", "--browser-path", &chromium];
        args.extend_from_slice(extra);
        let cmd = command_in(&exe, dir.path(), &args);
        let Started { child, port, printed } = started::unmodal_browser(cmd, START_LIMIT).await?;
        Ok(Self { child, port, printed, dir, exe, _slot: slot })
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Where the hosts' sockets are (`UNMODAL_RUNTIME_DIR`).
    pub fn runtime(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    pub fn profile(&self) -> PathBuf {
        self.home().join(".local/share/unmodal/profiles/default")
    }

    pub fn cdp_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `unmodal <args>` as this user's shell runs it.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        command_in(&self.exe, self.dir.path(), args)
    }

    /// `unmodal pilot on` for this browser, as a person types it.
    pub async fn pilot_on(&self) -> Result<()> {
        let profile = self.profile().display().to_string();
        let out = self.command(&["pilot", "on", "--user-data-dir", &profile]).output().await?;
        let said = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !said.contains("AI Web Pilot is on") {
            bail!("`unmodal pilot on` said: {said}{}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// `unmodal call TOOL 'ARGS'`: its exit code and the JSON it printed.
    pub async fn call(&self, tool: &str, args: Value) -> Result<(i32, Value)> {
        call_with(self.command(&["call", tool, &args.to_string()])).await
    }

    /// As `call`, expecting exit 0.
    pub async fn call_ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call(tool, args.clone()).await? {
            (0, v) => Ok(v),
            (code, v) => bail!("`unmodal call {tool} '{args}'` exited {code}: {v}"),
        }
    }

    /// The newest recorded dialog with `message` in any tab, through `unmodal call observe`.
    pub async fn recorded(&self, message: &str) -> Result<Option<Value>> {
        let tabs = self.call_ok("observe", json!({"what": "tabs"})).await?;
        for tab in tabs["tabs"].as_array().into_iter().flatten() {
            let d = self.call_ok("observe", json!({"what": "dialogs", "tab_id": tab["id"]})).await?;
            let found = d["recent_dialogs"].as_array().into_iter().flatten().rev().find(|r| r["message"] == message);
            if let Some(r) = found {
                return Ok(Some(r.clone()));
            }
        }
        Ok(None)
    }
}

impl Drop for UnmodalBrowser {
    fn drop(&mut self) {
        // SIGTERM: `unmodal browser` closes its browser (kill_on_drop would orphan it).
        if let Some(pid) = self.child.id() {
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            crate::wait::blocking_until(Duration::from_secs(10), || matches!(self.child.try_wait(), Ok(Some(_))));
        }
    }
}

/// `unmodal <args>` with `dir`'s home and runtime directory.
fn command_in(exe: &Path, dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(args)
        .env("HOME", dir.join("home"))
        .env("UNMODAL_RUNTIME_DIR", dir.join("run"))
        .env_remove("UNMODAL_DATA_DIR")
        .env_remove("UNMODAL_CONFIG")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs an `unmodal call` command: its exit code and its stdout as JSON.
pub async fn call_with(mut cmd: tokio::process::Command) -> Result<(i32, Value)> {
    let out = cmd.output().await.context("running `unmodal call`")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&text)
        .with_context(|| format!("`unmodal call` printed no JSON: {text}{}", String::from_utf8_lossy(&out.stderr)))?;
    Ok((out.status.code().unwrap_or(-1), v))
}

/// Node's major version.
async fn node_major() -> Result<u32> {
    let out = tokio::process::Command::new("node").arg("--version").output().await.context("node")?;
    let v = String::from_utf8_lossy(&out.stdout);
    v.trim()
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .with_context(|| format!("node --version: {v}"))
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// tests/peers/stagehand-driver.mjs: a Stagehand script, one command at a time or several
/// side by side.
pub struct StagehandScript {
    child: tokio::process::Child,
    stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
    waiting: Waiting,
    next: std::sync::atomic::AtomicU64,
    pub node: String,
}

/// A command sent and not yet answered.
pub struct Pending(oneshot::Receiver<Result<Value, String>>);

impl Pending {
    /// Its answer, if it comes within `limit`; `Ok(None)` if not (still pending).
    pub async fn within(&mut self, limit: Duration) -> Result<Option<Result<Value, String>>> {
        match tokio::time::timeout(limit, &mut self.0).await {
            Ok(Ok(r)) => Ok(Some(r)),
            Ok(Err(_)) => bail!("the Stagehand script ended"),
            Err(_) => Ok(None),
        }
    }
}

impl StagehandScript {
    /// Node 20 needs `--experimental-websocket` (Stagehand asks for Node 22.18+, whose
    /// WebSocket is on by default); Node 22 and later run it as it is.
    pub async fn start() -> Result<Self> {
        let major = node_major().await?;
        let mut cmd = tokio::process::Command::new("node");
        if major < 22 {
            cmd.arg("--experimental-websocket");
        }
        let peers = repo_root().join("tests/peers");
        let mut child = cmd
            .arg(peers.join("stagehand-driver.mjs"))
            .current_dir(&peers)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting node (Stagehand)")?;
        let stdin = child.stdin.take().context("stdin")?;
        let waiting: Waiting = Arc::default();
        let (ready_tx, ready) = oneshot::channel();
        waiting.lock().unwrap().insert(0, ready_tx);
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let routes = waiting.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
                let Some(id) = v["id"].as_u64() else { continue };
                let r = match v.get("error") {
                    Some(e) => Err(e.as_str().unwrap_or_default().to_owned()),
                    None => Ok(v["ok"].clone()),
                };
                if let Some(tx) = routes.lock().unwrap().remove(&id) {
                    let _ = tx.send(r);
                }
            }
        });
        let mut ready = Pending(ready);
        let hello = ready.within(Duration::from_secs(30)).await?.context("the Stagehand script never started")?;
        let node = hello.map_err(anyhow::Error::msg)?["node"].as_str().unwrap_or_default().to_owned();
        Ok(Self { child, stdin: tokio::sync::Mutex::new(stdin), waiting, next: 1.into(), node })
    }

    /// Sends a command; its answer comes later.
    pub async fn send(&self, op: &str, mut args: Value) -> Result<Pending> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().insert(id, tx);
        args["id"] = json!(id);
        args["op"] = json!(op);
        let mut line = args.to_string();
        line.push('\n');
        self.stdin.lock().await.write_all(line.as_bytes()).await?;
        Ok(Pending(rx))
    }

    /// A command that must succeed within `limit`.
    pub async fn ok(&self, op: &str, args: Value, limit: Duration) -> Result<Value> {
        let mut p = self.send(op, args).await?;
        match p.within(limit).await? {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => bail!("Stagehand {op}: {e}"),
            None => bail!("Stagehand {op} did not return within {limit:?}"),
        }
    }
}

impl Drop for StagehandScript {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The venv `cargo xtask test` made for the browser-use tests.
pub fn venv_python() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_root().join("target"), PathBuf::from);
    let py = target.join("frameworks/venv/bin/python");
    if !py.is_file() {
        bail!("{} is missing: `cargo xtask test` makes it (or `cargo xtask frameworks`)", py.display());
    }
    Ok(py)
}

/// Runs tests/frameworks/`script` with the venv's Python and `args`; its last stdout line
/// as JSON (what it found), or its whole output in the error.
pub async fn browser_use(script: &str, args: &[&str], env: &[(&str, &Path)], limit: Duration) -> Result<Value> {
    let mut cmd = tokio::process::Command::new(venv_python()?);
    cmd.arg(repo_root().join("tests/frameworks").join(script))
        .args(args)
        .env("ANONYMIZED_TELEMETRY", "false")
        .env("BROWSER_USE_SETUP_LOGGING", "false")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(limit, cmd.output()).await.with_context(|| format!("{script} hung"))??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_default();
    match serde_json::from_str(last) {
        Ok(v) if out.status.success() => Ok(v),
        _ => bail!("{script} failed ({}):\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr)),
    }
}

/// Whether a JavaScript dialog is open in the page showing `url`, as a new DevTools client
/// of that page is told (the browser announces an open dialog on `Page.enable`).
pub async fn dialog_open(browser: &crate::Browser, url: &str) -> Result<bool> {
    let cdp = &browser.cdp;
    let targets = cdp.call(None, "Target.getTargets", json!({})).await?;
    let Some(id) = targets["targetInfos"].as_array().into_iter().flatten().find(|t| t["url"] == url) else {
        return Ok(false);
    };
    let r = cdp.call(None, "Target.attachToTarget", json!({"targetId": id["targetId"], "flatten": true})).await?;
    let session = r["sessionId"].as_str().context("attachToTarget without sessionId")?.to_owned();
    let mut events = cdp.events();
    // Not awaited: a page held by a dialog may not answer Page.enable until it closes.
    let enable = {
        let (cdp, session) = (cdp.clone(), session.clone());
        tokio::spawn(async move { cdp.call(Some(&session), "Page.enable", json!({})).await })
    };
    let seen = crate::cdp::wait_event(&mut events, Duration::from_secs(3), |e| {
        e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&session)
    })
    .await
    .is_ok();
    enable.abort();
    let _ = cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session})).await;
    Ok(seen)
}
