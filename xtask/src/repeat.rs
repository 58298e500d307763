//! `cargo xtask repeat`: one end-to-end test run many times, several at once, optionally
//! beside busy loops that load the machine: how flakes are found and fixes are shown to
//! hold. Each run is a process of its own (its own browser); a failing run's output is kept.
//! `--suite` runs the whole end-to-end phase instead, one run after another, as `cargo
//! xtask test` runs it (its tests in parallel), beside the same busy loops: a suite that
//! passes only on a quiet machine is found here, not by a person's laptop.

use crate::sh;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

pub const USAGE: &str = "repeat <test>|<module>::|--suite [--times N] [--parallel P] [--load L]";

/// What `--suite` names in place of a test.
const SUITE: &str = "the end-to-end suite";

#[derive(Debug)]
struct Opts {
    test: String,
    times: usize,
    parallel: usize,
    load: usize,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut opts = Opts { test: String::new(), times: 20, parallel: 2, load: 0 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<usize> {
            it.next()
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("{name} takes a number, as in `cargo xtask {USAGE}`"))
        };
        match a.as_str() {
            "--times" => opts.times = number("--times")?,
            "--parallel" => opts.parallel = number("--parallel")?.max(1),
            "--load" => opts.load = number("--load")?,
            "--suite" if opts.test.is_empty() => opts.test = SUITE.to_owned(),
            "--suite" => bail!("--suite runs every test: name no test with it (cargo xtask {USAGE})"),
            other if other.starts_with("--") => bail!("unknown option {other}: cargo xtask {USAGE}"),
            test if opts.test.is_empty() => opts.test = test.to_owned(),
            extra => bail!("one test at a time ({extra} is a second): cargo xtask {USAGE}"),
        }
    }
    if opts.test.is_empty() {
        bail!(
            "name the test, e.g. `cargo xtask repeat file_chooser::a_chooser_right_after_a_spent_cancel_rule_is_held`"
        );
    }
    Ok(opts)
}

pub fn run(args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    sh::timed("build the extension", crate::build::extension)?;
    sh::run(sh::cargo().args(["build", "--quiet", "-p", "unmodal"]))?;
    let exe = e2e_binary()?;
    let host = crate::target_dir().join("debug/unmodal");
    let logs = crate::target_dir().join("repeat");
    std::fs::create_dir_all(&logs)?;

    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..opts.load)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();

    let suite = opts.test == SUITE;
    // A suite run is already as parallel as the machine allows: runs go one after another.
    let parallel = if suite { 1 } else { opts.parallel };
    eprintln!(
        "xtask: {} × {} ({} at once{})",
        opts.times,
        opts.test,
        parallel,
        if opts.load > 0 { format!(", {} busy loops beside them", opts.load) } else { String::new() }
    );
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..parallel {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= opts.times {
                        break;
                    }
                    let run =
                        if suite { whole(&exe, &host, &logs, i) } else { once(&exe, &host, &opts.test, &logs, i) };
                    match run {
                        Ok(None) => {}
                        Ok(Some(log)) => failed.lock().unwrap_or_else(|e| e.into_inner()).push(log),
                        Err(e) => {
                            failed.lock().unwrap_or_else(|e| e.into_inner()).push(PathBuf::from(format!("{e:#}")))
                        }
                    }
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        let _ = b.join();
    }
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "xtask: {} passed {} of {} runs in {:.0} s",
        opts.test,
        opts.times - failed.len(),
        opts.times,
        start.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        for log in &failed {
            eprintln!("xtask: failed: {}", log.display());
        }
        bail!("{} of {} runs failed", failed.len(), opts.times);
    }
    Ok(())
}

/// One run; the path of its kept output if it failed. A name ending in `::` is a module:
/// its tests run together, as the suite runs them.
fn once(exe: &Path, host: &Path, test: &str, logs: &Path, i: usize) -> Result<Option<PathBuf>> {
    let module = test.ends_with("::");
    let args: &[&str] = if module { &[test] } else { &["--exact", test, "--test-threads", "1"] };
    let (passed, text) = run_e2e(exe, host, args)?;
    // A filter that names no test runs none and passes: that is not a pass.
    let ran = if module { !text.contains(" 0 passed; 0 failed") } else { text.contains("1 passed; 0 failed") };
    if !ran && passed {
        let said = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("nothing");
        bail!("`{test}` names no end-to-end test (the harness said: {said})");
    }
    if passed {
        return Ok(None);
    }
    let log = logs.join(format!("{}-{i}.log", test.trim_end_matches("::").replace("::", "-")));
    std::fs::write(&log, &text)?;
    eprintln!("xtask: run {} failed: {}", i + 1, text_failing(&text).join(", "));
    Ok(Some(log))
}

/// The tests a run's output says failed.
fn text_failing(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.ends_with(" ... FAILED"))
        .map(|l| l.trim_start_matches("test ").trim_end_matches(" ... FAILED"))
        .collect()
}

/// One run of the whole suite; the path of its kept output if it failed (its failing
/// tests and its closing line said on the terminal as it ends).
fn whole(exe: &Path, host: &Path, logs: &Path, i: usize) -> Result<Option<PathBuf>> {
    let start = Instant::now();
    let (passed, text) = run_e2e(exe, host, &[])?;
    let closing = text.lines().rev().find(|l| l.starts_with("test result:")).unwrap_or("no closing line");
    let failing = text_failing(&text);
    eprintln!("xtask: suite run {} in {:.0} s: {closing}", i + 1, start.elapsed().as_secs_f64());
    for f in &failing {
        eprintln!("xtask:   {f}");
    }
    if passed {
        return Ok(None);
    }
    let log = logs.join(format!("suite-{i}.log"));
    std::fs::write(&log, text)?;
    Ok(Some(log))
}

/// Runs the end-to-end binary with `args` as `cargo xtask test` would (from `tests/`, with
/// the test build's host): whether it passed, and all it printed.
fn run_e2e(exe: &Path, host: &Path, args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(exe)
        .args(args)
        .current_dir(sh::root().join("tests"))
        .env("UNMODAL_TEST_HOST", host)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not start {}", exe.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// The end-to-end test binary, built (cargo names it in its JSON messages).
fn e2e_binary() -> Result<PathBuf> {
    let mut cmd = sh::cargo();
    cmd.args(["test", "--no-run", "--quiet", "-p", "unmodal-e2e", "--test", "e2e", "--message-format", "json"]);
    cmd.stderr(Stdio::inherit());
    let out = sh::output(&mut cmd)?;
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("cargo named no end-to-end test executable")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_are_read_and_mistakes_said() {
        let o = parse(&args(&["a::b", "--times", "5", "--parallel", "3", "--load", "2"])).unwrap();
        assert_eq!((o.test.as_str(), o.times, o.parallel, o.load), ("a::b", 5, 3, 2));
        assert!(parse(&args(&[])).unwrap_err().to_string().contains("name the test"));
        assert!(parse(&args(&["a", "--times", "x"])).unwrap_err().to_string().contains("takes a number"));
        assert!(parse(&args(&["a", "b"])).unwrap_err().to_string().contains("one test at a time"));
        assert!(parse(&args(&["a", "--fast"])).unwrap_err().to_string().contains("unknown option"));
        let o = parse(&args(&["--suite", "--times", "3", "--load", "2"])).unwrap();
        assert_eq!((o.test.as_str(), o.times, o.load), (SUITE, 3, 2));
        assert!(parse(&args(&["a::b", "--suite"])).unwrap_err().to_string().contains("name no test"));
    }
}
