//! Real headless Chromium with the built extension loaded and the real host registered in
//! a throwaway profile. Nothing touches the user's own browser profiles.

use crate::artifacts::Artifacts;
use crate::cdp::Cdp;
use crate::page::Page;
use crate::wait::eventually;
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::thread::ThreadId;
use std::time::Duration;
use tempfile::TempDir;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Browser {
    child: Child,
    pub cdp: Arc<Cdp>,
    pub profile: TempDir,
    /// `UNMODAL_RUNTIME_DIR` of this browser's host (its socket lives here).
    pub runtime: PathBuf,
    pub log: PathBuf,
    pub art: Artifacts,
    _slot: Arc<Slot>,
}

/// How many tests may run browsers at once: `UNMODAL_TEST_BROWSERS`, else two per core
/// (a browser test mostly waits), fewer if memory is short (about 1 GB each with its host,
/// peers and renderers, to be safe).
pub fn browser_slots() -> usize {
    if let Some(n) = std::env::var("UNMODAL_TEST_BROWSERS").ok().and_then(|v| v.trim().parse().ok()) {
        return std::cmp::max(n, 1);
    }
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let by_memory = available_memory_gb().unwrap_or(u64::MAX);
    (cores * 2).min(usize::try_from(by_memory).unwrap_or(usize::MAX)).max(1)
}

/// `MemAvailable` from /proc/meminfo, in whole GB.
fn available_memory_gb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / (1024 * 1024))
}

/// One test's share of the machine: held while any browser of that test runs.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    since: std::time::Instant,
}

/// `UNMODAL_TEST_TIMES=<file>`: each test's time holding a slot (its browsers' lives) is
/// appended there as `<seconds> <test>`, to find the tests that set the suite's length.
impl Drop for Slot {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("UNMODAL_TEST_TIMES") else { return };
        let thread = std::thread::current();
        let line = format!("{:.1} {}\n", self.since.elapsed().as_secs_f64(), thread.name().unwrap_or("?"));
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
        if let Ok(mut file) = file {
            let _ = std::io::Write::write_all(&mut file, line.as_bytes());
        }
    }
}

static SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(browser_slots())));
static HELD: LazyLock<Mutex<HashMap<ThreadId, Weak<Slot>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// Waits for a slot for the calling test. A test is its thread (libtest gives each test
/// one, and `#[tokio::test]` polls the test's body on it), so a test's second browser shares
/// its first one's slot: a test waiting for its second browser never waits for itself.
/// Tests that start browsers some other way (`unmodal browser`) hold one of these too.
pub async fn slot() -> Arc<Slot> {
    let me = std::thread::current().id();
    let held = |map: &HashMap<ThreadId, Weak<Slot>>| map.get(&me).and_then(Weak::upgrade);
    if let Some(slot) = held(&HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner)) {
        return slot;
    }
    let permit = SLOTS.clone().acquire_owned().await.expect("the semaphore is never closed");
    let mut map = HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(slot) = held(&map) {
        return slot;
    }
    let slot = Arc::new(Slot { _permit: permit, since: std::time::Instant::now() });
    map.retain(|_, s| s.strong_count() > 0);
    map.insert(me, Arc::downgrade(&slot));
    slot
}

pub struct Options {
    /// Load the extension (off: a baseline browser for benchmarks).
    pub extension: bool,
    /// Share a runtime dir between several browsers (one agent, several hosts).
    pub runtime: Option<PathBuf>,
    /// Extra environment for the browser, which its host inherits (e.g. `UNMODAL_CONFIG`).
    pub env: Vec<(String, String)>,
    /// Load this unpacked extension instead of ours, with no host (`extension` must be off):
    /// the benchmark's empty-script floor.
    pub other_extension: Option<PathBuf>,
    /// Load this build of our extension (same key, so the same id and host) instead of
    /// target/extension: the build before a change, measured beside it (`bench --variant`).
    pub extension_dir: Option<PathBuf>,
    /// The page the browser opens as it starts (default `about:blank`).
    pub start_url: Option<String>,
    /// More command-line switches for Chromium.
    pub args: Vec<String>,
    /// The profile's `Default/Preferences` before the first start (e.g. the extension's
    /// file access switched off).
    pub preferences: Option<serde_json::Value>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            extension: true,
            runtime: None,
            env: Vec::new(),
            other_extension: None,
            extension_dir: None,
            start_url: None,
            args: Vec::new(),
            preferences: None,
        }
    }
}

pub fn chromium_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("UNMODAL_CHROMIUM") {
        return Ok(p.into());
    }
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if std::path::Path::new(p).exists() {
            return Ok(p.into());
        }
    }
    bail!("Chromium not found: `cargo xtask test` installs Debian's chromium, or set UNMODAL_CHROMIUM")
}

/// Switches every test browser gets, headless or not: no sandbox (root), no GPU, and none
/// of the background traffic this machine's closed network refuses.
pub const QUIET_ARGS: &[&str] = &[
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
];

/// A throwaway profile with the host registered in it by the real installer, as a user
/// would run it, aimed at this profile only; and its runtime dir (the host's socket).
pub fn registered_profile(art: &Artifacts, prefix: &str) -> Result<(TempDir, PathBuf)> {
    let profile = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let runtime = profile.path().join("run");
    // Private, as the host makes it: a client (`unmodal pilot` typed before the host
    // started) refuses one open to others.
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&runtime)?;
    let st = Command::new(&art.host)
        .args(["install", "--user-data-dir"])
        .arg(profile.path())
        .stdout(Stdio::null())
        .status()?;
    if !st.success() {
        bail!("`unmodal install --user-data-dir` failed");
    }
    Ok((profile, runtime))
}

/// The last `n` lines a browser (and the host, whose stderr it inherits) logged to `log`,
/// without the D-Bus noise.
pub fn log_tail(log: &std::path::Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.contains("dbus")).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Browser {
    pub async fn launch(opts: Options) -> Result<Self> {
        let slot = slot().await;
        let art = Artifacts::find()?;
        let (profile, own_runtime) = if opts.extension {
            registered_profile(&art, "unmodal-profile-")?
        } else {
            let profile = tempfile::Builder::new().prefix("unmodal-profile-").tempdir()?;
            let run = profile.path().join("run");
            std::fs::create_dir(&run)?;
            (profile, run)
        };
        let runtime = opts.runtime.unwrap_or(own_runtime);
        if let Some(prefs) = &opts.preferences {
            std::fs::create_dir_all(profile.path().join("Default"))?;
            std::fs::write(profile.path().join("Default/Preferences"), prefs.to_string())?;
        }
        let log = profile.path().join("chromium.log");
        let mut cmd = Command::new(chromium_binary()?);
        cmd.arg("--headless=new")
            .args(QUIET_ARGS)
            .args([
                "--remote-debugging-port=0",
                "--window-size=1024,768",
                // As docs/browsers.md's recipe: the debugging bar would resize a headful tab.
                "--silent-debugger-extension-api",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(&opts.args);
        // `UNMODAL_TEST_CONSOLE=1`: the extension's console in the log (`INFO:CONSOLE`), for
        // tracing a failure. Off by default: it changes the browser's timing enough to hide
        // the start-up stall `stalled.js` exists for.
        if std::env::var_os("UNMODAL_TEST_CONSOLE").is_some_and(|v| v == "1") {
            cmd.args(["--enable-logging=stderr", "--v=0"]);
        }
        if opts.extension {
            let dir = opts.extension_dir.as_ref().unwrap_or(&art.extension);
            cmd.arg(format!("--load-extension={}", dir.display()))
                .arg(format!("--disable-extensions-except={}", dir.display()));
        } else if let Some(dir) = &opts.other_extension {
            cmd.arg(format!("--load-extension={}", dir.display()))
                .arg(format!("--disable-extensions-except={}", dir.display()));
        }
        cmd.arg(opts.start_url.as_deref().unwrap_or("about:blank"))
            .env("UNMODAL_RUNTIME_DIR", &runtime)
            .env("UNMODAL_LOG", std::env::var("UNMODAL_LOG").unwrap_or_else(|_| "info".into()))
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        let child = crate::chromium_group::spawn(&mut cmd).context("starting Chromium")?;
        let ws = devtools_url_or_log(&profile, &log).await?;
        let cdp = Cdp::connect(&ws).await?;
        let browser = Self { child, cdp, profile, runtime, log, art, _slot: slot };
        if opts.extension {
            browser.wait_for_service_worker().await?;
        }
        Ok(browser)
    }

    /// A broken manifest fails silently; the service worker existing proves it loaded.
    async fn wait_for_service_worker(&self) -> Result<()> {
        let url = format!("chrome-extension://{}/background.js", self.art.extension_id);
        let started = eventually(Duration::from_secs(15), "the extension's service worker starting", || async {
            let targets = self.cdp.call(None, "Target.getTargets", json!({})).await?;
            Ok(targets["targetInfos"].as_array().into_iter().flatten().any(|t| t["url"] == url.as_str()).then_some(()))
        });
        if let Err(e) = started.await {
            bail!("{e} (manifest rejected?); log: {}", self.log_tail());
        }
        Ok(())
    }

    /// The browser's first tab, attached.
    pub async fn first_page(&self) -> Result<Page> {
        let targets = self.cdp.call(None, "Target.getTargets", json!({})).await?;
        let id = targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["targetId"].as_str())
            .context("no page target")?
            .to_owned();
        Page::attach(self.cdp.clone(), id).await
    }

    /// A browser without Unmodal showing `url`, once its title reads `title`: what a page
    /// gets where Unmodal is not, for a test to compare with.
    pub async fn plain_page(url: &str, title: &str) -> Result<(Self, Page)> {
        let browser = Self::launch(Options { extension: false, ..Options::default() }).await?;
        let page = browser.new_page(url).await?;
        crate::eventually(std::time::Duration::from_secs(15), "the page without Unmodal loaded", || async {
            Ok(matches!(page.eval("document.title").await, Ok(t) if t == title).then_some(()))
        })
        .await?;
        Ok((browser, page))
    }

    pub async fn new_page(&self, url: &str) -> Result<Page> {
        let t = self.cdp.call(None, "Target.createTarget", json!({"url": url})).await?;
        let id = t["targetId"].as_str().context("createTarget without targetId")?.to_owned();
        Page::attach(self.cdp.clone(), id).await
    }

    /// Closes the tab and waits until the browser has let it go (its target is gone):
    /// `Target.closeTarget` answers as the close starts, and what the tab held (a chooser
    /// left open) is torn down after, where it can cancel a chooser another tab opens.
    pub async fn close_page(&self, page: &Page) -> Result<()> {
        self.cdp.call(None, "Target.closeTarget", json!({"targetId": page.target_id})).await?;
        eventually(Duration::from_secs(10), "the closed tab's target went away", || async {
            let targets = self.cdp.call(None, "Target.getTargets", json!({})).await?;
            let listed =
                targets["targetInfos"].as_array().into_iter().flatten().any(|t| t["targetId"] == *page.target_id);
            Ok((!listed).then_some(()))
        })
        .await
    }

    /// The port of the browser's DevTools endpoint (`--remote-debugging-port=0` picked it;
    /// `DevToolsActivePort` in the profile names it), where other drivers attach.
    pub fn debugging_port(&self) -> Result<u16> {
        let text = std::fs::read_to_string(self.profile.path().join("DevToolsActivePort"))?;
        text.lines().next().and_then(|l| l.trim().parse().ok()).context("DevToolsActivePort without a port")
    }

    /// The last lines Chromium (and the host, whose stderr it inherits) logged, without the
    /// D-Bus noise; with `UNMODAL_TEST_CONSOLE=1` the extension's console is among them.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log, 80)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        crate::chromium_group::kill(&mut self.child);
        // `UNMODAL_TEST_KEEP_LOGS=<dir>`: every browser's log (with its host's) kept there,
        // named for its profile, for tracing a failure after the profile is gone.
        if let Some(dir) = std::env::var_os("UNMODAL_TEST_KEEP_LOGS") {
            let name = self.profile.path().file_name().unwrap_or_default().to_string_lossy().into_owned();
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::copy(&self.log, std::path::Path::new(&dir).join(format!("{name}.log")));
        }
    }
}

/// The browser's DevTools WebSocket, or its log saying why not.
async fn devtools_url_or_log(profile: &TempDir, log: &std::path::Path) -> Result<String> {
    match devtools_url(profile.path(), Duration::from_secs(30)).await {
        Ok(url) => Ok(url),
        Err(e) => bail!("{e}; its log:\n{}", std::fs::read_to_string(log).unwrap_or_default()),
    }
}

/// The browser's DevTools WebSocket, from `DevToolsActivePort` in its profile (the port
/// `--remote-debugging-port=0` picked and the browser endpoint's path), once it is written.
pub async fn devtools_url(profile: &std::path::Path, limit: Duration) -> Result<String> {
    let file = profile.join("DevToolsActivePort");
    eventually(limit, "the browser's DevToolsActivePort", || async {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut lines = text.lines();
        Ok(match (lines.next(), lines.next()) {
            (Some(port), Some(path)) if path.starts_with("/devtools/browser/") => {
                Some(format!("ws://127.0.0.1:{}{}", port.trim(), path.trim()))
            }
            _ => None,
        })
    })
    .await
}
