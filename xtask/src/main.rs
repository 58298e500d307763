//! `cargo xtask <command>` — the project's automation, in Rust instead of shell scripts.

mod bootstrap;
mod build;
mod cross;
mod dist;
mod frameworks;
mod hook_parts;
mod phases;
mod repeat;
mod sh;
mod wine;

use anyhow::{Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

  build   build the wasm engine, assemble target/extension/, build target/release/unmodal
  extension
          build the wasm engine, assemble target/extension/ and build the test build's
          target/debug/unmodal, which carries it: the quick loop before `cargo test -p
          unmodal-e2e` with UNMODAL_TEST_HOST=target/debug/unmodal
  test    build the extension, typecheck the host for Windows and macOS, run the Windows
          build's unit and CLI tests under Wine (x86_64 Linux), then run every test (unit and
          real-Chromium end-to-end, against the test build's target/debug/unmodal); the
          frameworks phase last (Stagehand and browser-use beside Unmodal, in a venv it makes)
  frameworks
          the frameworks phase alone: build as `extension` does, then run it
  wine    the Windows build's tests under Wine, as `test` runs them: the host's unit tests,
          install (read back with `reg query`), doctor, pilot status, uninstall, and a
          named-pipe round trip between `unmodal mcp` and a host
  dist    build, then make the release in target/dist/: an archive per target this machine can
          build (Linux x64 tar.gz, Windows x64 zip with mingw; macOS only with a linker for it),
          SHA256SUMS, and the npm packages (unmodal + @unmodal/<os>-<cpu>) packed in
          target/dist/npm/, then installed offline and run as a check
  demo    build, then run Chromium + extension + host with a scripted agent session
  bench   build, then measure the engine in real headless Chromium
  repeat <test>|<module>::|--suite [--times N] [--parallel P] [--load L]
          build, then run one end-to-end test (or a module's tests, or the whole end-to-end
          phase) N times (default 20), P processes at once (default 2; a suite run is one at
          a time), beside L busy loops that load the machine (default 0); prints how many
          passed and keeps each failed run's output in target/repeat/
  stress-startup [--launches N] [--parallel P] [--slow-scripts] [--bare] [--cold] [--keep DIR]
          build, then launch fresh browsers whose start page calls confirm() at once and
          count the dialogs that never reached the host (default 1000 launches, 6 at once)
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("build") => build::all(),
        Some("extension") => {
            sh::timed("build the extension", build::extension)?;
            sh::run(sh::cargo().args(["build", "-p", "unmodal"]))
        }
        Some("test") => test(rest),
        Some("frameworks") => {
            sh::timed("build the extension", build::extension)?;
            sh::run(sh::cargo().args(["build", "-p", "unmodal"]))?;
            let mut clock = phases::Clock::default();
            let out = frameworks_phase(&mut clock);
            eprint!("{}", clock.report());
            out
        }
        Some("dist") => dist::all(),
        Some("wine") => sh::timed("Windows build under Wine", wine::test),
        Some("demo") => harness_bin("demo", rest),
        Some("bench") => harness_bin("bench", rest),
        Some("repeat") => repeat::run(rest),
        Some("stress-startup") => harness_bin("startup_stress", rest),
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

fn test(rest: &[String]) -> Result<()> {
    let mut clock = phases::Clock::default();
    let out = test_phases(&mut clock, rest);
    eprint!("{}", clock.report());
    out
}

fn test_phases(clock: &mut phases::Clock, rest: &[String]) -> Result<()> {
    // No release host: the end-to-end tests run target/debug/unmodal, which the test build
    // below makes anyway (cargo builds a package's binary for its integration tests), so
    // the dependencies are not compiled a second time with optimisations.
    clock.run(&phases::EXTENSION, build::extension)?;
    let under_wine: Vec<&str> = wine::target_if_ready().into_iter().collect();
    clock.run(&phases::CROSS, || cross::check(&under_wine))?;
    clock.run(&phases::WINE, wine::test)?;
    clock.run(&phases::TOOLS, || {
        bootstrap::chromium()?;
        bootstrap::display_tools()?;
        bootstrap::test_peers()
    })?;
    let cargo_test = |args: &[&str]| {
        let mut cmd = sh::cargo();
        cmd.args(["test", "--all-features"]).args(args);
        if std::env::var_os("RUST_TEST_THREADS").is_none() {
            cmd.env("RUST_TEST_THREADS", test_threads().to_string());
        }
        cmd.env("UNMODAL_TEST_HOST", target_dir().join("debug/unmodal"));
        quiet_error_backtraces(&mut cmd);
        cmd
    };
    // Every phase selects the same packages (`--workspace`) and features, and picks its
    // test targets by name: a narrower package selection unifies the dependencies' features
    // otherwise and rebuilds them (about 6 min of a fresh clone's run, measured).
    clock.run(&phases::BUILD, || sh::run(&mut cargo_test(&["--workspace", "--no-run"])))?;
    // Unit tests (every package's libraries, binaries and integration tests but the
    // end-to-end binary), the end-to-end tests and the frameworks' each run even when
    // another failed: a run reports all it found.
    let unit = clock.run(&phases::UNIT, || {
        let others = integration_tests_besides_e2e()?;
        let mut args = vec!["--workspace", "--no-fail-fast", "--lib", "--bins"];
        for t in &others {
            args.extend(["--test", t.as_str()]);
        }
        sh::run(cargo_test(&args).args(rest))
    });
    let e2e = clock.run(&phases::E2E, || {
        let mut cmd = cargo_test(&["--workspace", "--no-fail-fast", "--test", "e2e"]);
        cmd.args(rest);
        // The frameworks' tests are a phase of their own, timed apart (below).
        if !rest.iter().any(|a| a == "--") {
            cmd.arg("--");
        }
        for m in frameworks::MODULES {
            cmd.args(["--skip", m]);
        }
        sh::run(&mut cmd)
    });
    let frameworks = frameworks_phase(clock);
    unit.and(e2e).and(frameworks)
}

/// Stagehand and browser-use beside Unmodal: their tools, then their end-to-end modules.
fn frameworks_phase(clock: &mut phases::Clock) -> Result<()> {
    clock.run(&phases::FRAMEWORK_TOOLS, || {
        bootstrap::chromium()?;
        bootstrap::test_peers()?;
        frameworks::venv()
    })?;
    clock.run(&phases::FRAMEWORKS, || {
        let mut cmd = sh::cargo();
        cmd.args(["test", "--workspace", "--all-features", "--no-fail-fast", "--test", "e2e", "--"]);
        cmd.args(frameworks::MODULES);
        if std::env::var_os("RUST_TEST_THREADS").is_none() {
            cmd.env("RUST_TEST_THREADS", test_threads().to_string());
        }
        cmd.env("UNMODAL_TEST_HOST", target_dir().join("debug/unmodal"));
        quiet_error_backtraces(&mut cmd);
        sh::run(&mut cmd)
    })
}

/// A failing test's error says what did not happen; with `RUST_BACKTRACE=1` (set on CI
/// machines) anyhow adds a backtrace of 20-odd frames after it, and a log's tail then shows
/// the frames instead of the message. Panics keep their backtraces; a person who wants the
/// errors' sets `RUST_LIB_BACKTRACE=1`.
fn quiet_error_backtraces(cmd: &mut std::process::Command) {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        cmd.env("RUST_LIB_BACKTRACE", "0");
    }
}

/// The workspace's integration-test targets other than the end-to-end binary, as cargo
/// metadata lists them (a new one is run without being named here).
fn integration_tests_besides_e2e() -> Result<Vec<String>> {
    let out = sh::output(sh::cargo().args(["metadata", "--no-deps", "--format-version", "1"]))?;
    let meta: serde_json::Value = serde_json::from_str(&out)?;
    let mut names = Vec::new();
    for target in
        meta["packages"].as_array().into_iter().flatten().flat_map(|p| p["targets"].as_array().into_iter().flatten())
    {
        let is_test = target["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "test"));
        if let (true, Some(name)) = (is_test, target["name"].as_str())
            && name != "e2e"
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// More test threads than cores: the end-to-end tests mostly wait on browsers, and how many
/// run browsers at once is their harness's limit (`UNMODAL_TEST_BROWSERS`), not this.
fn test_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let browsers = std::env::var("UNMODAL_TEST_BROWSERS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    (4 * cores).max(browsers)
}

fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| sh::root().join("target"), Into::into)
}

/// demo and bench drive a real browser; they live in the e2e harness crate.
fn harness_bin(name: &str, rest: &[String]) -> Result<()> {
    build::all()?;
    bootstrap::chromium()?;
    bootstrap::test_peers()?;
    let mut cmd = sh::cargo();
    cmd.args(["run", "--quiet", "--release", "-p", "unmodal-e2e", "--bin", name, "--"]).args(rest);
    sh::run(&mut cmd)
}
