//! `unmodal browser`: a browser with Unmodal loaded, in a profile of its own, open to the
//! agent's driver on a DevTools port. `unmodal mcp --browser` starts the same one.

pub mod allow;
mod find;
mod pipe;
pub(crate) mod profile;
mod say;

use crate::{debuggable, extension, install, paths, platform};
use anyhow::{Context, Result, bail, ensure};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// How long the browser may take to open its DevTools port.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long the extension may take to reach its host once the browser runs.
const HOST_LIMIT: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub headless: bool,
    /// The DevTools port; 0 = any free one.
    pub port: u16,
    /// The profile directory (default: `<data dir>/profiles/default`).
    pub profile: Option<PathBuf>,
    pub browser_path: Option<PathBuf>,
    /// Origins let into the DevTools port (`--remote-allow-origins`), already checked.
    pub remote_allow_origins: Vec<String>,
}

/// A browser with Unmodal: one this call started (`child`), or one already running on the
/// profile.
pub struct Running {
    pub child: Option<Child>,
    pub pid: u32,
    pub endpoint: String,
    pub profile: PathBuf,
    /// Whether the extension reached its host (the pilot's state, as the host said it).
    pub host: Option<bool>,
    /// The browser's DevTools pipe: it closes with it.
    pipe: Option<pipe::Pipe>,
}

impl Running {
    /// Closes a browser this process started: asked politely (`Browser.close` over its
    /// DevTools pipe, the one way on every OS; without one, SIGTERM where there is such a
    /// signal), then killed; killed at once where it cannot be asked.
    pub async fn close(&mut self) {
        let Some(child) = self.child.as_mut() else { return };
        let asked = self.pipe.as_mut().is_some_and(|p| p.ask_to_close().is_ok())
            || child.id().is_some_and(|pid| platform::ask_to_exit(pid).is_ok());
        if !asked && child.id().is_some() {
            let _ = child.kill().await;
            return;
        }
        if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_err() {
            let _ = child.kill().await;
        }
    }
}

/// One line on stdout (a closed stdout is no error).
pub fn say_line(line: &str) {
    say::print(&[line.to_owned()]);
}

/// Where `unmodal browser` keeps its profiles (`doctor` lists them).
pub fn profiles_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("profiles")
}

/// Starts the browser, or finds the one already running on the profile.
pub async fn start(opts: &Options) -> Result<Running> {
    let data = std::path::absolute(paths::data_dir()?)?;
    let profile = match &opts.profile {
        Some(p) => std::path::absolute(p).with_context(|| format!("--profile {}", p.display()))?,
        None => profiles_dir(&data).join("default"),
    };
    if let Some(b) = debuggable::running()
        .into_iter()
        .find(|b| b.user_data_dir.as_deref().is_some_and(|d| paths::same_dir(d, &profile)))
    {
        let endpoint = b.port.map_or_else(|| "(port unknown)".to_owned(), say::endpoint);
        if !opts.remote_allow_origins.is_empty() {
            eprintln!(
                "unmodal: the browser already running on this profile keeps the origins it was started with; close it \
to start one with --remote-allow-origins"
            );
        }
        let host = profile::host_status(&profile, Duration::ZERO).await;
        return Ok(Running { child: None, pid: b.pid, endpoint, profile, host, pipe: None });
    }
    if let Some(pid) = profile::locked_by(&profile) {
        bail!(
            "the profile {} is in use by another browser (pid {pid}) that has no DevTools port: close that browser, or \
pick another profile with --profile DIR",
            profile.display()
        );
    }
    let found = find::browser(opts.browser_path.as_deref())?;
    let exe = found.path;
    // Google Chrome 137+ ignores --load-extension; UNMODAL_LOAD_VIA_PIPE=1 takes that path
    // with any browser (the tests, on Chromium).
    let via_pipe = found.branded || std::env::var_os("UNMODAL_LOAD_VIA_PIPE").is_some_and(|v| v == "1");
    if opts.port != 0 {
        profile::port_free(opts.port)?;
    }
    let ext = extension::unpack(&data)?;
    // A profile holds cookies and logins: the user's alone.
    platform::create_private_dir_all(&profile)
        .with_context(|| format!("cannot create the profile directory {}", profile.display()))?;
    install::install(&[], Some(&profile))?;
    let log = profile.join("unmodal-browser.log");
    let mut cmd = Command::new(&exe);
    cmd.arg(format!("--user-data-dir={}", profile.display())).arg(format!("--remote-debugging-port={}", opts.port));
    let (pipe, browser_ends) = pipe::attach(&mut cmd, via_pipe)?.unzip();
    if !via_pipe {
        cmd.arg(format!("--load-extension={}", ext.display()));
    }
    cmd
        // Without it the "started debugging this browser" bar shrinks the tab's viewport as
        // soon as the extension attaches its debugger (must_respond, pilot tools).
        .arg("--silent-debugger-extension-api")
        .args(["--no-first-run", "--no-default-browser-check"]);
    if opts.headless {
        cmd.arg("--headless=new");
    }
    if !opts.remote_allow_origins.is_empty() {
        cmd.arg(format!("--remote-allow-origins={}", opts.remote_allow_origins.join(",")));
    }
    if cfg!(target_os = "linux") {
        // Chrome on Windows and macOS has Web Bluetooth on; Chromium on Linux exposes
        // `navigator.bluetooth` only with this (CDP-FACTS 2), and agents should meet sites as
        // a person on the other systems does.
        cmd.arg("--enable-features=WebBluetooth");
    }
    if platform::runs_as_root() {
        // Chromium refuses to run as root with its sandbox (containers, CI).
        cmd.arg("--no-sandbox");
    }
    cmd.arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).with_context(|| format!("cannot write {}", log.display()))?);
    let mut child = {
        // The browser's ends close here, once it has them.
        let _browser_ends = browser_ends;
        cmd.spawn().with_context(|| format!("cannot start {}", exe.display()))?
    };
    let pid = child.id().unwrap_or(0);
    // Whatever fails from here, the browser just started goes too.
    let ready = async {
        let pipe = match pipe {
            Some(pipe) if via_pipe => {
                let (pipe, id) = pipe.load_unpacked(&ext, START_LIMIT).await?;
                ensure!(
                    id == install::EXTENSION_ID,
                    "the browser loaded the extension as {id}, not {}: is the unpacked copy damaged? Run `unmodal install`",
                    install::EXTENSION_ID
                );
                Some(pipe)
            }
            pipe => pipe,
        };
        anyhow::Ok((pipe, profile::devtools_port(&log, &mut child, START_LIMIT).await?))
    };
    let (pipe, port) = match ready.await {
        Ok(r) => r,
        Err(e) => {
            let _ = child.kill().await;
            bail!("{e:#}\n{}", profile::log_tail(&log, opts.headless));
        }
    };
    // Also for `mcp --browser`: the agent's first call then finds the extension connected.
    let host = profile::host_status(&profile, HOST_LIMIT).await;
    Ok(Running { child: Some(child), pid, endpoint: say::endpoint(port), profile, host, pipe })
}

/// `unmodal browser`: starts it, says how to use it, and runs until it closes or Ctrl-C.
pub fn run(opts: &Options) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut running = start(opts).await?;
        say::print(&say::started(&running));
        if running.child.is_none() {
            return Ok(());
        }
        let child = running.child.as_mut().expect("started above");
        tokio::select! {
            status = child.wait() => {
                let status = status?;
                say::print(&[format!("the browser closed ({status})")]);
                return Ok(());
            }
            _ = platform::terminated() => {}
        }
        running.close().await;
        say::print(&["the browser is closed".to_owned()]);
        Ok(())
    })
}
