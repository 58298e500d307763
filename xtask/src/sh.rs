//! Running commands: the workspace root, cargo, and a runner that says what failed.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::Command;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// The assembled extension, which the `unmodal` binary carries (native-host/build.rs).
pub fn extension_dir() -> PathBuf {
    root().join("target/extension")
}

/// cargo, in the workspace, with the extension named for the host's build script: every
/// cargo run xtask makes builds the same host (no rebuild between build, test and bench).
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root()).env("UNMODAL_EXTENSION_DIR", extension_dir());
    cmd
}

pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("could not start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

/// Runs one step of a command and says how long it took: where a run's time goes, read
/// from any CI log.
pub fn timed<T>(step: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = std::time::Instant::now();
    let out = f();
    eprintln!("xtask: {step}: {:.1} s{}", start.elapsed().as_secs_f64(), if out.is_ok() { "" } else { " (failed)" });
    out
}

pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("could not start {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}
