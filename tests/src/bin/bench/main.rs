//! `cargo xtask bench`: measures Unmodal in real headless Chromium. Each figure is the
//! median and spread of repeated runs, beside a baseline measured in the same run.

use anyhow::Result;
use serde_json::{Value, json};
use std::time::Instant;
use unmodal_e2e::browser::Options;
use unmodal_e2e::page::Page;
use unmodal_e2e::{Session, eventually};

mod answerer;
mod auth;
mod file_chooser;
mod launch;
mod passkey;
mod peers;
mod pilot;
mod remote;
mod startup;

const RUNS: usize = 15;
const CALLS: usize = 2000;

struct Stats {
    median: f64,
    p10: f64,
    p90: f64,
}

fn stats(mut xs: Vec<f64>) -> Stats {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    Stats { median: at(0.5), p10: at(0.1), p90: at(0.9) }
}

fn row(name: &str, s: &Stats, unit: &str) {
    println!("  {name:<44} median {:>9.3} {unit}   (p10 {:.3}, p90 {:.3})", s.median, s.p10, s.p90);
}

/// Per-call microseconds of `body` run `CALLS` times, once per run.
async fn per_call_us(s: &Session, body: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for _ in 0..RUNS {
        out.push(one_run(s, body).await?.0);
    }
    Ok(out)
}

/// One run of `CALLS` calls of `body` in the page: µs per call, and the page's `sink`.
async fn one_run(s: &Session, body: &str) -> Result<(f64, Value)> {
    let expr = format!(
        "(() => {{ let sink = 0; const t0 = performance.now(); for (let i = 0; i < {CALLS}; i++) {{ {body} }} \
         return [(performance.now() - t0) * 1000 / {CALLS}, sink]; }})()"
    );
    let v: Value = s.page_value(&expr).await?;
    Ok((v[0].as_f64().unwrap_or(f64::NAN), v[1].clone()))
}

/// The decision time of `confirm()` answered by a rule, ours and each variant build (same
/// extension id, so the same host) in browsers of their own, measured in turns.
async fn decision_beside(variants: &[std::path::PathBuf]) -> Result<()> {
    let page = "<!doctype html><title>bench</title><script>function plain(m) { return m.length > 3; }</script>";
    let mut builds = vec![("ours".to_string(), None)];
    builds.extend(variants.iter().map(|v| (format!("variant {}", v.display()), Some(v.clone()))));
    let mut sessions = Vec::new();
    for (_, dir) in &builds {
        let s = Session::start_with(Options { extension_dir: dir.clone(), ..Options::default() }).await?;
        s.open("/bench", page, &[]).await?;
        s.enable_pilot().await?;
        s.agent
            .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
            .await?;
        sessions.push(s);
    }
    println!("Decision time per confirm() answered by a rule ({RUNS} runs of {CALLS} calls, builds in turns):");
    let mut times = vec![Vec::new(); builds.len()];
    let mut base = Vec::new();
    for run in 0..RUNS {
        // Each build goes first in turn: the first of a round runs on a quieter machine.
        for k in 0..sessions.len() {
            let i = (k + run) % sessions.len();
            let (us, sink) = one_run(&sessions[i], "sink += confirm('Delete?') ? 1 : 0;").await?;
            anyhow::ensure!(sink == json!(CALLS), "the rule did not answer every call: {sink}");
            times[i].push(us);
        }
        base.push(one_run(&sessions[0], "sink += plain('Delete?') ? 1 : 0;").await?.0);
    }
    row("plain JS function call (baseline)", &stats(base), "us");
    let ours = stats(times[0].clone());
    for ((name, _), t) in builds.iter().zip(&times) {
        let st = stats(t.clone());
        row(&format!("confirm() answered by a rule: {name}"), &st, "us");
        if name != "ours" {
            println!("  ratio ours / {name}: {:.2}", ours.median / st.median.max(1e-3));
        }
    }
    Ok(())
}

fn epoch_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// must_respond: from a prompt() opening to the agent seeing it (polling observe, as an
/// agent does), and from the agent's answer to the page's script going on.
async fn held_dialogs(s: &Session) -> Result<()> {
    println!("\nA dialog held for the agent (must_respond; agent polls observe {{what: \"dialogs\"}}):");
    let (mut poll_ms, mut seen_ms, mut resume_ms, mut call_ms) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut held_poll_ms = Vec::new();
    for i in 0..RUNS {
        let t = Instant::now();
        s.dialogs().await?;
        poll_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let marker = format!("held probe {i}");
        s.page_later(&format!(
            "window.t0 = performance.timeOrigin + performance.now(); window.got = prompt('{marker}'); \
             window.t1 = performance.timeOrigin + performance.now();"
        ))
        .await?;
        let seen = loop {
            let d = s.dialogs().await?;
            let now = epoch_ms();
            if d["pending_dialogs"].as_array().into_iter().flatten().any(|r| r["message"] == marker.as_str()) {
                break now;
            }
            anyhow::ensure!(t.elapsed().as_secs() < 10, "the held dialog never showed up: {d}");
        };
        // A held dialog must not slow the host down (must_respond.rs once asserted < 1 s).
        let t = Instant::now();
        s.dialogs().await?;
        held_poll_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let asked = epoch_ms();
        let t = Instant::now();
        s.agent.ok("interact", json!({"action": "handle_dialog", "accept": true, "text": "ok"})).await?;
        call_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let v = s.page.eval("[window.t0, window.t1, window.got]").await?;
        anyhow::ensure!(v[2] == "ok", "the page got {v}");
        seen_ms.push(seen - v[0].as_f64().unwrap_or(f64::NAN));
        resume_ms.push(v[1].as_f64().unwrap_or(f64::NAN) - asked);
    }
    row("observe call, nothing held (baseline)", &stats(poll_ms), "ms");
    row("observe call, a dialog held (goal < 1 s)", &stats(held_poll_ms), "ms");
    row("prompt() opened -> visible to the agent", &stats(seen_ms), "ms");
    row("agent answers -> page script resumes", &stats(resume_ms), "ms");
    row("the answering interact call, end to end", &stats(call_ms), "ms");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    // `cargo xtask bench -- --soak-seconds N` (default 120; 0 skips the soak), `--only-soak`,
    // `--only-peers`, `--only-launch`, `--only-file-chooser`, `--only-remote`,
    // `--only-remote-faults` (its drops and file copies alone), `--only-answerer`.
    let args: Vec<String> = std::env::args().collect();
    let soak_secs = args
        .iter()
        .position(|a| a == "--soak-seconds")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(120), |v| v.parse::<u64>())?;
    if args.iter().any(|a| a == "--only-soak") {
        return soak(soak_secs).await;
    }
    if args.iter().any(|a| a == "--only-answerer") {
        return answerer::rows().await;
    }
    if args.iter().any(|a| a == "--only-auth") {
        let (s, _) = Session::with_pilot("/bench", "<!doctype html><title>bench</title>").await?;
        return auth::rows(&s).await;
    }
    if args.iter().any(|a| a == "--only-pilot") {
        let (s, _) = Session::with_pilot("/bench", "<!doctype html><title>bench</title><body></body>").await?;
        return pilot::rows(&s).await;
    }
    if args.iter().any(|a| a == "--only-launch") {
        return launch::rows().await;
    }
    if args.iter().any(|a| a == "--only-passkey") {
        return passkey::rows().await;
    }
    if args.iter().any(|a| a == "--only-file-chooser") {
        return file_chooser::rows().await;
    }
    if args.iter().any(|a| a == "--only-peers") {
        return peers::run().await;
    }
    if args.iter().any(|a| a == "--only-remote-faults") {
        return remote::faults_and_files().await;
    }
    if args.iter().any(|a| a == "--only-remote") {
        return remote::rows().await;
    }
    if args.iter().any(|a| a == "--only-decision") {
        let variants: Vec<std::path::PathBuf> =
            args.windows(2).filter(|w| w[0] == "--variant").map(|w| w[1].clone().into()).collect();
        return decision_beside(&variants).await;
    }
    if args.iter().any(|a| a == "--only-startup") {
        // `--variant DIR` (repeatable): another build of the extension, measured beside ours.
        let variants: Vec<std::path::PathBuf> =
            args.windows(2).filter(|w| w[0] == "--variant").map(|w| w[1].clone().into()).collect();
        let (s, _) = Session::with_pilot("/bench", "<!doctype html><title>bench</title>").await?;
        // `--trace-only`: only the trace's rows (the quickest to compare variants by).
        let trace_only = args.iter().any(|a| a == "--trace-only");
        startup::share(&s.browser.art.extension, &s.web, &variants, trace_only).await?;
        // `--no-heavy`: the share alone (for comparing variants quickly).
        if args.iter().any(|a| a == "--no-heavy") {
            return Ok(());
        }
        return startup::heavy(&s).await;
    }
    let s = Session::start().await?;
    s.open(
        "/bench",
        "<!doctype html><title>bench</title><script>function plain(m) { return m.length > 3; }</script>",
        // Cross-origin isolated: performance.now() is fine enough (5 us) to time single calls.
        &[("Cross-Origin-Opener-Policy", "same-origin"), ("Cross-Origin-Embedder-Policy", "require-corp")],
    )
    .await?;
    s.enable_pilot().await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;

    println!("Unmodal benchmark: {RUNS} runs of {CALLS} calls each, headless Chromium");
    println!("\nFrom a page's confirm() to the event visible through observe (agent side, {RUNS} runs):");
    let mut seen_ms = Vec::new();
    let mut eval_ms = Vec::new();
    for i in 0..RUNS {
        let t = Instant::now();
        s.page.eval("1").await?;
        eval_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let marker = format!("latency probe {i}");
        let t = Instant::now();
        s.page.eval(&format!("confirm('{marker}')")).await?;
        loop {
            let d = s.dialogs().await?;
            if d["recent_dialogs"].as_array().into_iter().flatten().any(|r| r["message"] == marker.as_str()) {
                break;
            }
            anyhow::ensure!(t.elapsed().as_secs() < 10, "the probe dialog never showed up: {d}");
        }
        seen_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        tokio::time::sleep(std::time::Duration::from_millis(150)).await; // under the flood limit
    }
    row("DevTools evaluate round trip (baseline)", &stats(eval_ms), "ms");
    row("confirm() -> visible in observe", &stats(seen_ms), "ms");

    println!("\nDecision time per dialog call (page -> engine -> answer, report posted to the extension):");
    let base = stats(per_call_us(&s, "sink += plain('Delete?') ? 1 : 0;").await?);
    let dialog = stats(per_call_us(&s, "sink += confirm('Delete?') ? 1 : 0;").await?);
    row("plain JS function call (baseline)", &base, "us");
    row("confirm() answered by a rule", &dialog, "us");
    println!("  ratio (median confirm / median baseline): {:.1}x", dialog.median / base.median.max(1e-3));
    // Single calls, timed one by one (clock resolution 5 us in an isolated page).
    let single = |body: &str| {
        format!(
            "(() => {{ if (!crossOriginIsolated) return null; const t = []; for (let i = 0; i < {CALLS}; i++) {{ \
             const t0 = performance.now(); {body}; t.push((performance.now() - t0) * 1000); }} \
             t.sort((a, b) => a - b); return [t[Math.floor(t.length * 0.5)], t[Math.floor(t.length * 0.99)]]; }})()"
        )
    };
    let (mut p50, mut p99, mut base99) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let v = s.page_value(&single("confirm('Delete?')")).await?;
        let b = s.page_value(&single("plain('Delete?')")).await?;
        if v.is_null() {
            println!("  (page not cross-origin isolated: single-call percentiles skipped)");
            break;
        }
        p50.push(v[0].as_f64().unwrap_or(f64::NAN));
        p99.push(v[1].as_f64().unwrap_or(f64::NAN));
        base99.push(b[1].as_f64().unwrap_or(f64::NAN));
    }
    if !p99.is_empty() {
        row("single confirm() call, p50 of each run", &stats(p50), "us");
        row("single confirm() call, p99 of each run", &stats(p99), "us");
        row("single plain call, p99 of each run (baseline)", &stats(base99), "us");
    }

    println!("\nA page calling alert() 10,000 times in a loop (flood limit on):");
    let mut loop_ms = Vec::new();
    let mut plain_ms = Vec::new();
    for _ in 0..RUNS {
        let t = |body: &str| {
            format!(
                "(() => {{ const t0 = performance.now(); for (let i = 0; i < 10000; i++) {body}; return performance.now() - t0; }})()"
            )
        };
        loop_ms.push(s.page_value(&t("alert('spam ' + i)")).await?.as_f64().unwrap_or(f64::NAN));
        plain_ms.push(s.page_value(&t("plain('spam ' + i)")).await?.as_f64().unwrap_or(f64::NAN));
    }
    row("10,000 plain calls (baseline)", &stats(plain_ms), "ms");
    row("10,000 alert() calls", &stats(loop_ms), "ms");

    println!("\nA new document's first inline script calls confirm() (persistent rule set, {RUNS} loads):");
    let early = s.web.page("/early", "<!doctype html><script>document.title = String(confirm('early'))</script>", &[]);
    // The same in a frame from another site (its own renderer), which tells the top page.
    let other = unmodal_e2e::web::WebServer::other_site()?;
    let widget = other.page(
        "/early-widget",
        "<!doctype html><script>parent.postMessage(String(confirm('early')), '*')</script>",
        &[],
    );
    let framed = s.web.page(
        "/early-framed",
        &format!(
            "<!doctype html><script>onmessage = (e) => document.title = e.data</script><iframe src='{widget}'></iframe>"
        ),
        &[],
    );
    let by_rule = |url: String| {
        let s = &s;
        async move {
            let mut n = 0;
            for _ in 0..RUNS {
                s.page.goto(&url).await?;
                // A frame's answer arrives by postMessage, possibly after the load event.
                let title = s.page_value("new Promise((done) => { const t0 = Date.now(); \
                    const poll = () => document.title || Date.now() - t0 > 2000 ? done(document.title) : setTimeout(poll, 5); poll(); })").await?;
                if title == json!("true") {
                    n += 1;
                }
            }
            anyhow::Ok(n)
        }
    };
    let (top, frame) = (by_rule(early.clone()).await?, by_rule(framed.clone()).await?);
    println!("  answered by the rule: top document {top} of {RUNS}, frame from another site {frame} of {RUNS}");
    println!("  (the others by the default policy, reported as such)");

    // must_respond: the debugger session's new-document script carries the rules.
    s.policy("must_respond", 60).await?;
    let (top, frame) = (by_rule(early).await?, by_rule(framed).await?);
    println!("  the same under must_respond: top document {top} of {RUNS}, frame from another site {frame} of {RUNS}");
    held_dialogs(&s).await?;
    s.policy("auto", 10).await?;
    auth::rows(&s).await?;
    pilot::rows(&s).await?;
    passkey::rows().await?;
    file_chooser::rows().await?;
    peers::run().await?;
    remote::rows().await?;
    launch::rows().await?;

    startup::share(&s.browser.art.extension, &s.web, &[], false).await?;
    startup::heavy(&s).await?;

    let art = &s.browser.art;
    let size = |f: &str| std::fs::metadata(art.extension.join(f)).map(|m| m.len()).unwrap_or(0);
    println!("\nSize of the in-page code:");
    println!("  inject.js (page hook + engine, minified):   {} bytes", size("inject.js"));
    println!("  content.js (bridge, isolated world):        {} bytes", size("content.js"));
    drop(s);
    if soak_secs > 0 {
        soak(soak_secs).await?;
    }
    Ok(())
}

/// The host's resident memory, in KiB.
fn host_rss_kib(pid: &Value) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).ok_or_else(|| anyhow::anyhow!("no VmRSS"))?;
    Ok(line.split_whitespace().nth(1).unwrap_or("0").parse()?)
}

/// Per-call microseconds of `alert()` in the page (counted as raised) and of a plain
/// function (the baseline, under the same load), in batches of `CALLS`.
async fn alert_batches(page: &Page, runs: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let (mut alerts, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let expr = |body: &str| {
            format!(
                "(() => {{ let sink = 0; const t0 = performance.now(); for (let i = 0; i < {CALLS}; i++) {{ {body}; }} \
                 return [(performance.now() - t0) * 1000 / {CALLS}, sink]; }})()"
            )
        };
        alerts.push(page.eval(&expr("raised++; alert('batch')")).await?[0].as_f64().unwrap_or(f64::NAN));
        plain.push(page.eval(&expr("sink += String(i).length")).await?[0].as_f64().unwrap_or(f64::NAN));
    }
    Ok((alerts, plain))
}

/// A fresh browser with 50 tabs, each raising 10 dialogs a second for `secs`: every dialog
/// is accounted for (reported + folded = raised), the host's memory stays flat, and the
/// decision time during the soak matches the one before.
async fn soak(secs: u64) -> Result<()> {
    const TABS: usize = 50;
    println!("\nSoak: {TABS} tabs x 10 dialogs/s for {secs} s (a fresh browser and host):");
    // Background tabs keep their timers at full rate, as tabs driven by agents do.
    let args = ["--disable-background-timer-throttling", "--disable-renderer-backgrounding"];
    let s = Session::start_with(Options { args: args.map(String::from).to_vec(), ..Options::default() }).await?;
    let html = "<!doctype html><title>soak</title><script>window.raised = 0;</script>";
    let first = s.open("/soak", html, &[]).await?;
    s.enable_pilot().await?;
    let mut others = Vec::new();
    for i in 1..TABS {
        let url = s.web.page(&format!("/soak{i}"), html, &[]);
        others.push(s.browser.new_page(&url).await?);
        s.agent.wait_for_tab_listed(&url).await?;
    }
    let pages: Vec<&Page> = std::iter::once(&s.page).chain(others.iter()).collect();
    let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    let pid = tabs["browsers"][0]["browser"]["host_pid"].clone();
    let ids: Vec<Value> = tabs["tabs"].as_array().into_iter().flatten().map(|t| t["id"].clone()).collect();
    anyhow::ensure!(ids.len() >= TABS, "only {} tabs listed", ids.len());
    let (before, before_plain) = alert_batches(&s.page, RUNS).await?;
    let rss_start = host_rss_kib(&pid)?;
    for p in pages.iter() {
        p.eval("window.timer = setInterval(() => { raised++; alert('soak ' + raised); }, 100); 0").await?;
    }
    let t0 = Instant::now();
    let (mut during, mut during_plain) = (Vec::new(), Vec::new());
    let mut rss = vec![rss_start];
    while t0.elapsed().as_secs() < secs {
        // The sampling period of the measurement, not a wait for something to happen.
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        rss.push(host_rss_kib(&pid)?);
        let (a, p) = alert_batches(&s.page, 1).await?;
        during.extend(a);
        during_plain.extend(p);
    }
    let mut raised = 0u64;
    for p in pages.iter() {
        raised += p.eval("clearInterval(timer); raised").await?.as_u64().unwrap_or(0);
    }
    // Reports travel after the calls: wait until the host has accounted for all of them.
    let count = || async {
        let (mut kept, mut folded, mut evicted) = (0u64, 0u64, 0u64);
        for id in &ids {
            let d = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": id})).await?;
            kept += d["recent_dialogs"].as_array().map_or(0, Vec::len) as u64;
            folded += d["folded_by_flood_limit"].as_u64().unwrap_or(0);
            evicted = d["evicted"].as_u64().unwrap_or(0);
        }
        anyhow::Ok((kept + evicted, folded))
    };
    let all_in = eventually(std::time::Duration::from_secs(30), "every report reaching the host", || async {
        let (reported, folded) = count().await?;
        Ok((reported + folded >= raised).then_some(()))
    });
    // A shortfall is a figure to print, not a reason to stop.
    let _ = all_in.await;
    let (reported, folded) = count().await?;
    let rss_end = host_rss_kib(&pid)?;
    println!(
        "  raised {raised}, reported {reported} + folded {folded} = {} ({})",
        reported + folded,
        if reported + folded == raised { "exact" } else { "MISMATCH" }
    );
    let half = rss.len() / 2;
    println!(
        "  host memory (VmRSS, KiB): start {rss_start}, end {rss_end}; max of the first half {}, of the second half {}",
        rss[..half.max(1)].iter().max().copied().unwrap_or(0),
        rss[half..].iter().max().copied().unwrap_or(0)
    );
    println!("  samples every 5 s: {rss:?}");
    let ratio = |a: &[f64], p: &[f64]| stats(a.iter().zip(p).map(|(a, p)| a / p.max(1e-3)).collect());
    let (r_before, r_during) = (ratio(&before, &before_plain), ratio(&during, &during_plain));
    row("alert() per call before the soak", &stats(before), "us");
    row("alert() per call during the soak", &stats(during), "us");
    row("plain call during the soak (baseline)", &stats(during_plain), "us");
    row("alert / plain, before the soak", &r_before, "x");
    row("alert / plain, during the soak", &r_during, "x");
    println!("  (the machine's 2 cores run 50 busy renderers during the soak: compare the ratios; {first})");
    Ok(())
}
