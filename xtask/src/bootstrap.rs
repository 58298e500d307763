//! Installs what the build and the tests need on a fresh machine, or says how.

use crate::sh;
use anyhow::{Result, bail};
use std::process::Command;

pub fn wasm_target() -> Result<()> {
    rust_target("wasm32-unknown-unknown")
}

/// Adds rustup's standard library for `target` unless it is there.
pub fn rust_target(target: &str) -> Result<()> {
    let installed = sh::output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == target) {
        return Ok(());
    }
    eprintln!("xtask: adding the {target} target");
    sh::run(Command::new("rustup").args(["target", "add", target]))
        .map_err(|e| e.context(format!("install the target with `rustup target add {target}`")))
}

/// A C compiler on PATH (`program`), from Debian's `package` when it is missing and we can
/// install it; else an error naming the package.
pub fn c_compiler(program: &str, package: &str) -> Result<()> {
    self::program(program, &[package])
}

/// `program` on PATH, from Debian's `packages` when it is missing and we can install them
/// (as root, with apt-get); else an error naming them.
pub fn program(program: &str, packages: &[&str]) -> Result<()> {
    if on_path(program) {
        return Ok(());
    }
    let root = sh::output(Command::new("id").arg("-u")).unwrap_or_default().trim() == "0";
    let named = packages.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" and ");
    if !(root && sh::have("apt-get")) {
        bail!("{program} is missing: install Debian's {named}");
    }
    eprintln!("xtask: installing {named} from Debian's packages");
    apt_install(packages)
}

pub fn node_tools() -> Result<()> {
    let tools = sh::root().join("tools");
    if ["wasm2js", "wasm-opt", "esbuild"].iter().all(|t| tools.join("node_modules/.bin").join(t).exists()) {
        return Ok(());
    }
    if !sh::have("npm") {
        bail!("npm is needed for binaryen's wasm2js: install Node.js (Debian: `apt-get install nodejs npm`)");
    }
    eprintln!("xtask: installing pinned build tools (npm ci in tools/)");
    sh::run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(tools))
}

/// The browser drivers the tests run beside Unmodal (`tests/peers/`, versions pinned by its
/// lockfile). `npm ci` again only when the lockfile changed since the last install: a copy
/// of it is left in `node_modules/` as the stamp. Neither package downloads a browser.
pub fn test_peers() -> Result<()> {
    let dir = sh::root().join("tests/peers");
    let lock = std::fs::read(dir.join("package-lock.json"))?;
    let stamp = dir.join("node_modules/.unmodal-installed-lock.json");
    let bins = ["playwright-mcp", "chrome-devtools-mcp"];
    if std::fs::read(&stamp).is_ok_and(|s| s == lock)
        && bins.iter().all(|b| dir.join("node_modules/.bin").join(b).exists())
        && dir.join("node_modules/@browserbasehq/stagehand/package.json").exists()
    {
        return Ok(());
    }
    if !sh::have("npm") {
        bail!(
            "npm is needed for the test peers (Playwright MCP, chrome-devtools-mcp, Stagehand): install Node.js 20.19+"
        );
    }
    eprintln!("xtask: installing the pinned test peers (npm ci in tests/peers/)");
    sh::run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .env("PUPPETEER_SKIP_DOWNLOAD", "1")
            .current_dir(&dir),
    )?;
    std::fs::write(&stamp, lock)?;
    Ok(())
}

pub const CHROMIUM: &str = "/usr/bin/chromium";

pub fn chromium() -> Result<()> {
    if std::env::var_os("UNMODAL_CHROMIUM").is_some() || std::path::Path::new(CHROMIUM).exists() {
        return Ok(());
    }
    let root = sh::output(Command::new("id").arg("-u")).unwrap_or_default().trim() == "0";
    if !(root && sh::have("apt-get")) {
        bail!(
            "Chromium is needed: install Debian's `chromium` package, or point UNMODAL_CHROMIUM at a Chromium binary \
             (branded Chrome 137+ ignores --load-extension)"
        );
    }
    eprintln!("xtask: installing Chromium from Debian's packages");
    apt_install(&["chromium"])
}

/// A virtual screen and a person's mouse for the test that clicks the toolbar popup of a
/// headful browser (`tests/tests/popup_headful.rs`). Without them that test says it is
/// skipped, and fails under `CI=true`; so only a warning here when they cannot be installed.
pub fn display_tools() -> Result<()> {
    let missing: Vec<&str> =
        [("Xvfb", "xvfb"), ("xdotool", "xdotool")].iter().filter(|(bin, _)| !on_path(bin)).map(|(_, p)| *p).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let root = sh::output(Command::new("id").arg("-u")).unwrap_or_default().trim() == "0";
    if !(root && sh::have("apt-get")) {
        eprintln!(
            "xtask: warning: {} missing, so the headful popup test will be skipped: install Debian's `xvfb` and `xdotool`",
            missing.join(" and ")
        );
        return Ok(());
    }
    eprintln!("xtask: installing {} from Debian's packages", missing.join(" and "));
    apt_install(&missing)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Debian's packages, when this runs as root with apt-get; else says what to install.
pub fn apt_install_as_root(packages: &[&str]) -> Result<()> {
    let root = sh::output(Command::new("id").arg("-u")).unwrap_or_default().trim() == "0";
    if !(root && sh::have("apt-get")) {
        bail!("install {} (Debian's packages of those names)", packages.join(" "));
    }
    apt_install(packages)
}

fn apt_install(packages: &[&str]) -> Result<()> {
    sh::run(Command::new("apt-get").args(["update", "-qq"]))?;
    sh::run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}
