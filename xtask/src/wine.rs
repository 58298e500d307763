//! The Windows build run under Wine (Debian's Wine 8), after the typecheck for the other
//! systems: the host's unit tests; the CLI's `install` (the registry read back with Wine's
//! `reg query`), `doctor`, `pilot status` and `uninstall`; and a named-pipe round trip, a
//! host started as a browser starts one and `unmodal mcp` answering a tool call through it.
//!
//! One Wine prefix, `target/wine/prefix`, made once (its first start, wineboot, is the slow
//! part) and reused. Rust's std imports `ProcessPrng` from `bcryptprimitives.dll`, which
//! Wine 8 lacks: a stand-in built here with mingw goes into the prefix's `system32`.

use crate::{bootstrap, sh};
use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const TARGET: &str = "x86_64-pc-windows-gnu";
const MINGW: &str = "x86_64-w64-mingw32-gcc";
/// What a person would read in the registry for every browser.
const VENDOR_KEYS: [&str; 4] = [
    r"Software\Google\Chrome",
    r"Software\Chromium",
    r"Software\Microsoft\Edge",
    r"Software\BraveSoftware\Brave-Browser",
];
/// The stand-in: `ProcessPrng` as advapi32's `RtlGenRandom` (`SystemFunction036`), which
/// Wine has; it takes a ULONG length, so a larger request goes in pieces.
const PRNG_C: &str = r#"#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
"#;
/// Unit tests that cannot pass under Wine, and why: skipped there, said so.
const NOT_UNDER_WINE: [(&str, &str); 1] = [(
    "parent_browser::tests::this_processs_parent_is_read",
    "a program Wine starts from Linux has no Windows parent process to read",
)];
/// Long enough for a first wineboot on a loaded machine; a hung Wine still ends.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs it all, or says what was skipped and why. Under `CI=true` a skip on a machine that
/// could run it (x86_64 Linux) is a failure: there the Windows build must not go untested
/// unnoticed.
pub fn test() -> Result<()> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        eprintln!("xtask: note: the Windows tests under Wine run on x86_64 Linux only: skipped");
        return Ok(());
    }
    if let Err(e) = tools_ready() {
        let what =
            format!("the Windows tests under Wine (unit tests, install/doctor/pilot, the named pipe) skipped: {e:#}");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            bail!("{what} (CI=true: a skip fails here)");
        }
        eprintln!("xtask: warning: {what}");
        return Ok(());
    }
    let built = sh::timed("Wine: the Windows build", build)?;
    let wine = sh::timed("Wine: the prefix", Wine::ready)?;
    sh::timed("Wine: unit tests", || wine.unit_tests(&built.tests))?;
    sh::timed("Wine: install, doctor, pilot, uninstall", || wine.cli(&built.unmodal))?;
    sh::timed("Wine: the named-pipe round trip", || wine.round_trip(&built.unmodal))
}

/// The target whose build `test` runs under Wine, if it will (the typecheck then leaves it out).
pub fn target_if_ready() -> Option<&'static str> {
    (cfg!(target_os = "linux") && cfg!(target_arch = "x86_64") && tools_ready().is_ok()).then_some(TARGET)
}

/// The Rust target, mingw (the linker, and the stand-in's compiler) and Wine.
fn tools_ready() -> Result<()> {
    bootstrap::rust_target(TARGET)?;
    bootstrap::c_compiler(MINGW, "gcc-mingw-w64-x86-64")?;
    // Debian: `wine` is the `wine` command, `wine64` the 64-bit loader it runs.
    bootstrap::program("wine", &["wine", "wine64"])
}

struct Built {
    tests: PathBuf,
    unmodal: PathBuf,
}

/// The debug `unmodal.exe` and the library's unit-test binary, linked with mingw.
fn build() -> Result<Built> {
    let cargo = || {
        let mut cmd = sh::cargo();
        let linker = format!("CARGO_TARGET_{}_LINKER", TARGET.to_uppercase().replace('-', "_"));
        if std::env::var_os(&linker).is_none() {
            cmd.env(linker, MINGW);
        }
        // Warnings are errors, as in the typecheck this build stands in for.
        let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
        flags.push_str(" -D warnings");
        cmd.env("RUSTFLAGS", flags.trim());
        cmd
    };
    eprintln!("xtask: building unmodal.exe and its unit tests for {TARGET}");
    let mut both = cargo();
    both.args(["build", "--quiet", "-p", "unmodal", "--bin", "unmodal", "--target", TARGET]);
    sh::run(&mut both)?;
    let mut tests = cargo();
    tests.args(["test", "--no-run", "--quiet", "-p", "unmodal", "--lib", "--target", TARGET]);
    tests.args(["--message-format", "json-render-diagnostics"]).stderr(Stdio::inherit());
    let out = sh::output(&mut tests)?;
    let exe = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("cargo named no unit-test executable for the Windows build")?;
    let unmodal = sh::root().join("target").join(TARGET).join("debug/unmodal.exe");
    Ok(Built { tests: exe, unmodal })
}

struct Wine {
    prefix: PathBuf,
}

impl Wine {
    /// The prefix, booted once, with the stand-in DLL in its system32.
    fn ready() -> Result<Self> {
        let dir = sh::root().join("target/wine");
        let wine = Self { prefix: dir.join("prefix") };
        // Written once wineboot is through: a prefix without it (an interrupted boot) is
        // made again.
        let booted = dir.join("prefix-booted");
        if !booted.is_file() {
            eprintln!("xtask: making the Wine prefix {} (once)", wine.prefix.display());
            let _ = fs::remove_dir_all(&wine.prefix);
            fs::create_dir_all(&wine.prefix)?;
            let (ok, out) = wine.output(Command::new("wine").args(["wineboot", "--init"]), "wineboot")?;
            ensure!(ok, "wineboot failed:\n{out}");
            sh::run(wine.env(&mut Command::new("wineserver")).arg("-w"))?;
            fs::write(&booted, "")?;
        }
        let dll = wine.prefix.join("drive_c/windows/system32/bcryptprimitives.dll");
        let source = dir.join("bcryptprimitives.c");
        if !dll.is_file() || fs::read_to_string(&source).ok().as_deref() != Some(PRNG_C) {
            fs::write(&source, PRNG_C)?;
            let built = dir.join("bcryptprimitives.dll");
            sh::run(Command::new(MINGW).args(["-shared", "-O2", "-o"]).arg(&built).arg(&source).arg("-ladvapi32"))
                .context("building the stand-in bcryptprimitives.dll")?;
            fs::copy(&built, &dll)?;
        }
        Ok(wine)
    }

    /// `cmd` in this prefix, quiet, without a display (nothing here opens a window) and
    /// without Wine's offers to install Mono and Gecko.
    fn env<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .current_dir(sh::root())
    }

    fn command(&self, exe: &Path) -> Command {
        let mut cmd = Command::new("wine");
        cmd.arg(exe);
        self.env(&mut cmd);
        cmd
    }

    /// Runs `cmd` (in this prefix) to its end within `LIMIT`: its status and output.
    fn output(&self, cmd: &mut Command, what: &str) -> Result<(bool, String)> {
        let child = self.env(cmd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let out = Reaped(child).finish(LIMIT).with_context(|| format!("`{what}` under Wine"))?;
        Ok(out)
    }

    /// The library's unit tests, all of them.
    fn unit_tests(&self, exe: &Path) -> Result<()> {
        eprintln!("xtask: the host's unit tests under Wine ({})", exe.display());
        let mut cmd = self.command(exe);
        cmd.arg("--quiet");
        for (test, why) in NOT_UNDER_WINE {
            eprintln!("xtask: note: skipped under Wine: {test} ({why})");
            cmd.args(["--skip", test]);
        }
        // insta asks `cargo metadata` for the workspace otherwise, which Wine cannot run;
        // and a snapshot that differs fails here, it is never rewritten.
        cmd.env("INSTA_WORKSPACE_ROOT", sh::root()).env("INSTA_UPDATE", "no");
        cmd.stdin(Stdio::null());
        sh::run(&mut cmd).context("the host's unit tests fail under Wine")
    }

    /// `install` registers every browser under HKCU (read back with `reg query`) with a
    /// manifest under %LOCALAPPDATA% naming this exe; `doctor` sees it; `pilot status`
    /// says plainly that no browser is there; `uninstall` takes the keys back.
    fn cli(&self, exe: &Path) -> Result<()> {
        eprintln!("xtask: install, doctor, pilot status and uninstall under Wine");
        let run = |args: &[&str]| self.output(self.command(exe).args(args), &format!("unmodal {}", args.join(" ")));
        let (ok, out) = run(&["install"])?;
        ensure!(ok, "`unmodal.exe install` failed under Wine: {out}");
        let local = self.windows_env("LOCALAPPDATA")?;
        for key in VENDOR_KEYS {
            let manifest = self.registered(key)?.with_context(|| format!("no key under HKCU\\{key} after install"))?;
            ensure!(
                manifest.to_lowercase().starts_with(&local.to_lowercase()),
                "HKCU\\{key} names {manifest}, not a file under %LOCALAPPDATA% ({local})"
            );
            let text = fs::read_to_string(self.unix_path(&manifest)?)
                .with_context(|| format!("reading the manifest HKCU\\{key} names ({manifest})"))?;
            let host: Value = serde_json::from_str(&text)?;
            ensure!(
                host["allowed_origins"][0].as_str().is_some_and(|o| o.starts_with("chrome-extension://")),
                "the manifest HKCU\\{key} names is not Unmodal's: {text}"
            );
            let binary = host["path"].as_str().context("the manifest names no binary")?;
            ensure!(
                fs::canonicalize(self.unix_path(binary)?).with_context(|| format!("{binary}: no such file"))?
                    == fs::canonicalize(exe)?,
                "the manifest HKCU\\{key} names {binary}, not the unmodal.exe that ran install"
            );
        }

        let (_, out) = run(&["doctor"])?;
        for name in ["Chrome", "Chromium", "Brave", "Edge"] {
            let seen = format!("{name} host registration ({local}\\unmodal\\");
            ensure!(
                out.lines().any(|l| l.starts_with("ok") && l.contains(&seen)),
                "`unmodal.exe doctor` does not see {name}'s registration:\n{out}"
            );
        }

        let (ok, out) = run(&["pilot", "status"])?;
        ensure!(
            !ok && out.contains("No browser with the Unmodal extension") && out.contains("unmodal doctor"),
            "`unmodal.exe pilot status` without a browser should fail saying so, said:\n{out}"
        );

        let (ok, out) = run(&["uninstall"])?;
        ensure!(ok, "`unmodal.exe uninstall` failed under Wine: {out}");
        for key in VENDOR_KEYS {
            ensure!(self.registered(key)?.is_none(), "HKCU\\{key} still names a host after uninstall");
        }
        Ok(())
    }

    /// The manifest `HKCU\<vendor>\NativeMessagingHosts\dev.unmodal.host` names, by
    /// Wine's `reg query`; `None` when there is no such key.
    fn registered(&self, vendor: &str) -> Result<Option<String>> {
        let key = format!(r"HKCU\{vendor}\NativeMessagingHosts\dev.unmodal.host");
        let (ok, out) = self.output(Command::new("wine").args(["reg", "query", &key, "/ve"]), "reg query")?;
        if !ok {
            return Ok(None);
        }
        // `    (Default)    REG_SZ    C:\...\dev.unmodal.host.json`
        let value = out.lines().find_map(|l| l.split_once("REG_SZ").map(|(_, v)| v.trim().to_owned()));
        value.map(Some).with_context(|| format!("`reg query {key}` printed no value:\n{out}"))
    }

    fn windows_env(&self, name: &str) -> Result<String> {
        let (ok, out) = self.output(Command::new("wine").args(["cmd", "/c", "echo", &format!("%{name}%")]), "cmd")?;
        let value = out.trim().to_owned();
        ensure!(ok && !value.is_empty() && !value.contains('%'), "%{name}% is not set under Wine: {out}");
        Ok(value)
    }

    fn unix_path(&self, windows: &str) -> Result<PathBuf> {
        let (ok, out) = self.output(Command::new("winepath").args(["-u", windows]), "winepath")?;
        ensure!(ok, "winepath -u {windows}: {out}");
        Ok(PathBuf::from(out.trim()))
    }

    /// A host started as a browser starts one (the extension's origin as its argument,
    /// native-messaging frames on stdin) listens on its named pipe; `unmodal mcp` answers
    /// an `initialize` and an `observe` call whose answer only that host can give (its tab
    /// and the dialog it recorded). Then the browser closes the port: the host exits and
    /// takes its pipe's file away.
    fn round_trip(&self, exe: &Path) -> Result<()> {
        eprintln!("xtask: a named-pipe round trip between `unmodal mcp` and a host under Wine");
        let run_dir = sh::root().join("target/wine/run");
        let _ = fs::remove_dir_all(&run_dir);
        fs::create_dir_all(&run_dir)?;
        let runtime = format!("Z:{}", run_dir.display()).replace('/', "\\");
        let mut host = self.command(exe);
        host.arg("chrome-extension://unmodal-wine-test/").env("UNMODAL_RUNTIME_DIR", &runtime);
        let mut host = Reaped(host.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?);
        let mut to_host = host.0.stdin.take().context("no stdin")?;
        for msg in [
            json!({"type": "hello", "version": "wine", "pilot": false}),
            json!({"type": "tabs", "tracked": 7, "tabs": [{"id": 7, "url": "http://wine.test/"}]}),
            json!({"type": "dialog", "tab_id": 7, "report": {"seq": 1, "phase": "decided", "kind": "alert",
                "message": "hello from Wine", "decided_by": "default_policy", "accepted": true}}),
        ] {
            let body = msg.to_string().into_bytes();
            to_host.write_all(&u32::try_from(body.len())?.to_le_bytes())?;
            to_host.write_all(&body)?;
        }
        to_host.flush()?;
        // The host's frames to the browser must be read, or a full pipe would stall it.
        let mut from_host = host.0.stdout.take().context("no stdout")?;
        let drain = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = from_host.read_to_end(&mut all);
        });

        let mut mcp = self.command(exe);
        mcp.arg("mcp").env("UNMODAL_RUNTIME_DIR", &runtime);
        let mut mcp = Reaped(mcp.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?);
        let mut agent = Agent {
            stdin: mcp.0.stdin.take().context("no stdin")?,
            lines: lines_of(mcp.0.stdout.take().context("no stdout")?),
        };
        let init = agent.ask(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "xtask-wine", "version": "0"}}),
        )?;
        ensure!(init["result"]["serverInfo"]["name"] == "unmodal", "`initialize` answered {init}");
        agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        // The host may still be starting (a slow Wine): ask again until it answers.
        let deadline = std::time::Instant::now() + LIMIT;
        let mut id = 2;
        let dialogs = loop {
            let call = agent.ask(id, "tools/call", json!({"name": "observe", "arguments": {"what": "dialogs"}}))?;
            let result = &call["result"];
            if result["isError"] != true && result["structuredContent"].is_object() {
                break result["structuredContent"].clone();
            }
            ensure!(std::time::Instant::now() < deadline, "the host never answered through its pipe: {call}");
            id += 1;
            std::thread::sleep(Duration::from_millis(200));
        };
        ensure!(dialogs["tab"]["id"] == 7, "`observe` did not come from the host fed tab 7: {dialogs}");
        let recent = dialogs["recent_dialogs"].as_array().cloned().unwrap_or_default();
        ensure!(
            recent.len() == 1 && recent[0]["message"] == "hello from Wine",
            "`observe` lacks the dialog the host recorded: {dialogs}"
        );
        drop(agent);
        mcp.finish(LIMIT)?;

        drop(to_host);
        let (ok, _) = host.finish(LIMIT)?;
        let _ = drain.join();
        ensure!(ok, "the host did not exit cleanly when the browser closed its port");
        let left: Vec<_> = fs::read_dir(&run_dir)?.filter_map(Result::ok).map(|e| e.file_name()).collect();
        ensure!(left.is_empty(), "the host left {left:?} in its runtime directory");
        Ok(())
    }
}

/// The agent's end of `unmodal mcp`: JSON-RPC lines.
struct Agent {
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Agent {
    fn send(&mut self, msg: &Value) -> Result<()> {
        writeln!(self.stdin, "{msg}")?;
        Ok(self.stdin.flush()?)
    }

    /// Sends a request and waits for its answer (notifications in between are passed over).
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Result<Value> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = self.lines.recv_timeout(LIMIT).with_context(|| format!("no answer to `{method}`"))?;
            let msg: Value = serde_json::from_str(&line).with_context(|| format!("not JSON: {line}"))?;
            if msg["id"] == id {
                return Ok(msg);
            }
        }
    }
}

/// `out`'s lines, read on a thread of their own (so a wait on them can end).
fn lines_of(out: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A child killed if it is still running when this is dropped (a failed check).
struct Reaped(Child);

impl Reaped {
    /// Waits for the end within `limit`: success, and stdout and stderr (those it pipes).
    fn finish(mut self, limit: Duration) -> Result<(bool, String)> {
        let mut streams = Vec::new();
        for s in [
            self.0.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
            self.0.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            streams.push(std::thread::spawn(move || {
                let mut text = String::new();
                let _ = BufReader::new(s).read_to_string(&mut text);
                text
            }));
        }
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.0.try_wait()? {
                break status;
            }
            ensure!(std::time::Instant::now() < deadline, "still running after {} s", limit.as_secs());
            std::thread::sleep(Duration::from_millis(20));
        };
        let text = streams.into_iter().map(|t| t.join().unwrap_or_default()).collect::<Vec<_>>().join("");
        Ok((status.success(), text))
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
