//! What the framework tests (tests/tests/stagehand.rs, browser_use.rs) need beside the test
//! peers: browser-use in a venv of its own, target/frameworks/venv, installed from PyPI with
//! every file's hash pinned (tests/frameworks/requirements.txt, made by `pip-compile
//! --generate-hashes` from requirements.in). About 364 MB; installed again only when the
//! requirements change (a copy of them in the venv is the stamp).

use crate::sh;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The end-to-end modules of the frameworks phase (`cargo xtask test` runs them last).
pub const MODULES: &[&str] = &["stagehand::", "browser_use::"];

pub fn venv_dir() -> PathBuf {
    crate::target_dir().join("frameworks/venv")
}

/// A Python of 3.11 or later (browser-use's floor) with the venv module.
fn python() -> Option<PathBuf> {
    ["python3.13", "python3.12", "python3.11", "python3"].iter().find_map(|name| {
        let ok = Command::new(name)
            .args(["-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"])
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| PathBuf::from(name))
    })
}

pub fn venv() -> Result<()> {
    let requirements = sh::root().join("tests/frameworks/requirements.txt");
    let wanted = std::fs::read(&requirements)?;
    let dir = venv_dir();
    let stamp = dir.join("unmodal-installed-requirements.txt");
    let py = dir.join("bin/python");
    if std::fs::read(&stamp).is_ok_and(|s| s == wanted) && py.is_file() {
        return Ok(());
    }
    let python = match python() {
        Some(p) => p,
        None => {
            crate::bootstrap::apt_install_as_root(&["python3", "python3-venv"])?;
            python().context("no Python 3.11 or later with its venv module, even after installing python3-venv")?
        }
    };
    eprintln!("xtask: installing browser-use into {} (pinned with hashes; about 364 MB)", dir.display());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    sh::run(Command::new(&python).args(["-m", "venv"]).arg(&dir))?;
    install(&py, &requirements)?;
    std::fs::write(&stamp, wanted)?;
    Ok(())
}

fn install(py: &Path, requirements: &Path) -> Result<()> {
    let mut cmd = Command::new(py);
    cmd.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--require-hashes", "--no-deps", "-r"])
        .arg(requirements)
        // No telemetry or set-up logging at import time, in the tests either.
        .env("ANONYMIZED_TELEMETRY", "false");
    if sh::run(&mut cmd).is_err() {
        bail!("pip could not install tests/frameworks/requirements.txt into {}", py.display());
    }
    Ok(())
}
