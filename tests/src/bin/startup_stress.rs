//! `cargo xtask stress-startup`: launches fresh browsers, many at once, each opening a page
//! whose first script calls `confirm()`, and counts launches whose dialog never reached the
//! host (the start-up loss). Each launch: its own profile and runtime dir, the real host,
//! `unmodal mcp` polling `observe`, as `tests/tests/startup.rs` does once per launch.
//!
//! Options: `--launches N` (default 1000), `--parallel P` (browsers at once, default 6),
//! `--bare` (no DevTools client: the browser is started without a CDP connection, as a
//! person's would be; default: the test harness's browser, CDP attached), `--slow-scripts`
//! (content scripts that take long to load: the race likelier, not certain; see
//! `slow_scripts.rs`), `--cold` (drop the kernel's caches before each
//! launch, as root: the browser and the extension read from disk), `--extension DIR` (another
//! build of the extension, same key: the build before a change), `--keep DIR` (copy each
//! lost launch's browser log there). `UNMODAL_STRESS_ARGS`: more Chromium switches (e.g.
//! `--enable-logging=stderr --v=1`).

use anyhow::{Context, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::browser::{Browser, Options, QUIET_ARGS, chromium_binary, registered_profile};
use unmodal_e2e::slow_scripts::slow_scripts_copy;
use unmodal_e2e::{Agent, WebServer};

/// A lost report never arrives: the limit only has to outlast a loaded machine's slowest
/// start (6.2 s seen at 6 at once).
const REPORT_LIMIT: Duration = Duration::from_secs(30);

struct Args {
    launches: usize,
    parallel: usize,
    bare: bool,
    slow_scripts: bool,
    cold: bool,
    keep: Option<PathBuf>,
    extension: Option<PathBuf>,
}

fn args() -> Result<Args> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| argv.iter().position(|a| a == name).and_then(|i| argv.get(i + 1)).cloned();
    Ok(Args {
        launches: value("--launches").map_or(Ok(1000), |v| v.parse()).context("--launches N")?,
        parallel: value("--parallel").map_or(Ok(6), |v| v.parse()).context("--parallel P")?,
        bare: argv.iter().any(|a| a == "--bare"),
        slow_scripts: argv.iter().any(|a| a == "--slow-scripts"),
        cold: argv.iter().any(|a| a == "--cold"),
        keep: value("--keep").map(PathBuf::from),
        extension: value("--extension").map(PathBuf::from),
    })
}

/// What one launch came to.
enum Outcome {
    Reported(Duration),
    Lost(String),
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<()> {
    let a = args()?;
    let web = Arc::new(WebServer::start()?);
    let gate = Arc::new(Semaphore::new(a.parallel.max(1)));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let base = a.extension.clone().map_or_else(|| Artifacts::find().map(|art| art.extension), Ok)?;
    let slow = if a.slow_scripts { Some(slow_scripts_copy(&base)?) } else { None };
    let extension: Option<Arc<PathBuf>> = match &slow {
        Some(dir) => Some(Arc::new(dir.path().to_owned())),
        None => a.extension.clone().map(Arc::new),
    };
    println!(
        "start-up stress: {} launches, {} at once, {}{}{}",
        a.launches,
        a.parallel,
        if a.bare { "no DevTools client" } else { "the test harness's browser (CDP attached)" },
        if a.slow_scripts { ", content scripts slow to load" } else { "" },
        if a.cold { ", cold caches" } else { "" },
    );
    let mut runs = Vec::new();
    for n in 1..=a.launches {
        let permit = gate.clone().acquire_owned().await?;
        let (web, done, keep, total, extension) =
            (web.clone(), done.clone(), a.keep.clone(), a.launches, extension.clone());
        let how = How { bare: a.bare, cold: a.cold, extension };
        runs.push(tokio::spawn(async move {
            let msg = format!("Right at start? #{n}");
            let url = web.page(
                &format!("/first/{n}"),
                &format!("<!doctype html><title>first</title><script>confirm({msg:?})</script>"),
                &[],
            );
            let out = one(&url, &msg, &how, keep.as_deref(), n).await;
            drop(permit);
            let k = done.fetch_add(1, Ordering::SeqCst) + 1;
            match &out {
                Ok(Outcome::Lost(why)) => eprintln!("launch {n}: LOST\n{why}"),
                Err(e) => eprintln!("launch {n}: failed to run: {e:#}"),
                _ => {}
            }
            if k % 50 == 0 || k == total {
                eprintln!("  {k}/{total} launches done");
            }
            out
        }));
    }
    let (mut times, mut lost, mut broken) = (Vec::new(), Vec::new(), 0);
    for (i, r) in runs.into_iter().enumerate() {
        match r.await? {
            Ok(Outcome::Reported(t)) => times.push(t.as_secs_f64()),
            Ok(Outcome::Lost(_)) => lost.push(i + 1),
            Err(_) => broken += 1,
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times.get(((times.len().max(1) - 1) as f64 * q).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "lost {} of {} launches ({} could not run); report after the agent connected: median {:.2} s, p95 {:.2} s, max {:.2} s; {:.0} s in all",
        lost.len(),
        a.launches,
        broken,
        at(0.5),
        at(0.95),
        at(1.0),
        started.elapsed().as_secs_f64()
    );
    if !lost.is_empty() {
        println!("lost launches: {lost:?}");
        std::process::exit(1);
    }
    if broken > 0 {
        std::process::exit(2);
    }
    Ok(())
}

/// How each launch is made.
struct How {
    bare: bool,
    cold: bool,
    /// Another build of the extension (`--slow-scripts`), else the built one.
    extension: Option<Arc<PathBuf>>,
}

async fn one(url: &str, message: &str, how: &How, keep: Option<&Path>, n: usize) -> Result<Outcome> {
    if how.cold {
        // The browser and the extension read from disk, as on a fresh machine.
        let _ = Command::new("sh").args(["-c", "sync; echo 3 > /proc/sys/vm/drop_caches"]).status();
    }
    let extension = how.extension.as_deref().cloned();
    if how.bare {
        let b = BareBrowser::launch(url, extension)?;
        let agent = Agent::start(&b.art.host, &b.runtime).await?;
        let seen = agent.dialog_listed_within(url, message, REPORT_LIMIT).await;
        agent.close().await.ok();
        return Ok(match seen {
            Some(t) => Outcome::Reported(t),
            None => Outcome::Lost(keep_log(&b.log, keep, n)),
        });
    }
    let browser =
        Browser::launch(Options { start_url: Some(url.to_owned()), args: extra_args(), ..Options::default() }).await?;
    let agent = Agent::start(&browser.art.host, &browser.runtime).await?;
    let seen = agent.dialog_listed_within(url, message, REPORT_LIMIT).await;
    let out = match seen {
        Some(t) => Outcome::Reported(t),
        None => {
            let tabs = agent.call("observe", json!({"what": "tabs"})).await;
            let worker = worker_state(&browser).await.unwrap_or_else(|e| format!("(unreadable: {e:#})"));
            Outcome::Lost(format!("observe tabs: {tabs:?}\nworker: {worker}\n{}", keep_log(&browser.log, keep, n)))
        }
    };
    agent.close().await.ok();
    Ok(out)
}

/// What the extension's worker can say of itself: a build made for tracing (a
/// `globalThis.__unmodalTrace` list its code fills) says what it saw; others say so.
async fn worker_state(browser: &Browser) -> Result<String> {
    let cdp = &browser.cdp;
    let targets = cdp.call(None, "Target.getTargets", json!({})).await?;
    let sw = format!("chrome-extension://{}/background.js", browser.art.extension_id);
    let list = targets["targetInfos"].as_array().cloned().unwrap_or_default();
    let Some(t) = list.iter().find(|t| t["url"] == sw.as_str()) else {
        return Ok(format!("no worker target; targets: {list:?}"));
    };
    let attached = cdp.call(None, "Target.attachToTarget", json!({"targetId": t["targetId"], "flatten": true})).await?;
    let session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
    let expr = "typeof __unmodalTrace === 'undefined' ? 'no trace in this build' : JSON.stringify(__unmodalTrace)";
    let v = cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": expr, "returnByValue": true})).await?;
    Ok(v["result"]["value"].as_str().unwrap_or_default().to_owned())
}

fn keep_log(log: &Path, keep: Option<&Path>, n: usize) -> String {
    let Some(dir) = keep else { return format!("browser log: {}", log.display()) };
    let to = dir.join(format!("launch-{n}.log"));
    let _ = std::fs::create_dir_all(dir);
    match std::fs::copy(log, &to) {
        Ok(_) => format!("browser log kept: {}", to.display()),
        Err(e) => format!("browser log not kept ({e})"),
    }
}

/// A browser no DevTools client ever connects to: the extension and the host as a user's
/// browser has them, the start page on the command line.
struct BareBrowser {
    child: std::process::Child,
    art: Artifacts,
    runtime: PathBuf,
    log: PathBuf,
    _profile: tempfile::TempDir,
}

impl BareBrowser {
    fn launch(url: &str, extension: Option<PathBuf>) -> Result<Self> {
        let art = Artifacts::find()?;
        let (profile, runtime) = registered_profile(&art, "unmodal-stress-")?;
        let log = profile.path().join("chromium.log");
        let ext = extension.unwrap_or_else(|| art.extension.clone()).display().to_string();
        let child = unmodal_e2e::chromium_group::spawn(
            Command::new(chromium_binary()?)
                .arg("--headless=new")
                .args(QUIET_ARGS)
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg(format!("--load-extension={ext}"))
                .arg(format!("--disable-extensions-except={ext}"))
                .args(extra_args())
                .arg(url)
                .env("UNMODAL_RUNTIME_DIR", &runtime)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log)?),
        )
        .context("starting Chromium")?;
        Ok(Self { child, art, runtime, log, _profile: profile })
    }
}

/// `UNMODAL_STRESS_ARGS`: more switches for the bare browser (e.g. logging).
fn extra_args() -> Vec<String> {
    std::env::var("UNMODAL_STRESS_ARGS").map(|v| v.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
}

impl Drop for BareBrowser {
    fn drop(&mut self) {
        unmodal_e2e::chromium_group::kill(&mut self.child);
    }
}
