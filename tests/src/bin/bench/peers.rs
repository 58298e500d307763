//! Beside a CDP driver: how soon a dialog held under `must_respond` is in Unmodal's state,
//! measured against a plain CDP client watching the same tab (the harness's own session),
//! and how often an agent that turns to Unmodal the moment Playwright MCP's click returns
//! finds it there. `cargo xtask bench -- --only-peers`.

use anyhow::{Result, ensure};
use serde_json::json;
use std::time::{Duration, Instant};
use unmodal_e2e::{Driver, Peer, Session, cdp, eventually};

const TRIES: usize = 50;

fn quantiles(mut xs: Vec<f64>) -> (f64, f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.1), at(0.9), at(0.95))
}

fn row(name: &str, xs: Vec<f64>) {
    let (p50, p10, p90, p95) = quantiles(xs);
    println!("  {name:<52} median {p50:>7.2} ms   p95 {p95:.2}   (p10 {p10:.2}, p90 {p90:.2})");
}

async fn listed(s: &Session, marker: &str) -> Result<bool> {
    let d = s.dialogs().await?;
    Ok(d["pending_dialogs"].as_array().into_iter().flatten().any(|r| r["message"] == marker))
}

pub async fn run() -> Result<()> {
    const PAGE: &str = "<!doctype html><title>peers</title>\
        <button onclick=\"window.got = confirm(document.querySelector('#m').value)\">Ask</button>\
        <input id=m value=none>";
    let (s, url) = Session::with_pilot("/peers", PAGE).await?;
    s.policy("must_respond", 60).await?;

    println!("\nBeside a CDP driver (must_respond, {TRIES} tries each):");
    let (mut baseline, mut visible, mut first_call_hits) = (Vec::new(), Vec::new(), 0);
    for i in 0..TRIES {
        let t = Instant::now();
        s.dialogs().await?;
        baseline.push(t.elapsed().as_secs_f64() * 1000.0);
        let marker = format!("peer probe {i}");
        let mut ev = s.page.events();
        s.page_later(&format!("window.got = confirm('{marker}')")).await?;
        let me = s.page.session.clone();
        cdp::wait_event(&mut ev, Duration::from_secs(10), |e| {
            e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me)
        })
        .await?;
        // The CDP client saw it: an agent asks Unmodal now, and again until it is there.
        let seen = Instant::now();
        let mut first = true;
        while !listed(&s, &marker).await? {
            first = false;
            ensure!(seen.elapsed() < Duration::from_secs(10), "held dialog {marker} never listed");
        }
        visible.push(seen.elapsed().as_secs_f64() * 1000.0);
        first_call_hits += usize::from(first);
        s.agent.ok("interact", json!({"action": "handle_dialog", "accept": true})).await?;
    }
    row("observe call, nothing held (baseline)", baseline);
    row("CDP client sees Page.javascriptDialogOpening -> observe lists it", visible);
    println!("  the first observe after the CDP event already listed it: {first_call_hits} of {TRIES}");

    let peer = Peer::start(Driver::PlaywrightMcp, s.browser.debugging_port()?).await?;
    let (mut misses, mut clicks) = (0, Vec::new());
    for i in 0..TRIES {
        let marker = format!("driver probe {i}");
        s.page.eval(&format!("document.querySelector('#m').value = '{marker}'")).await?;
        // Playwright MCP learns of the close (answered through Unmodal) a moment later.
        eventually(Duration::from_secs(10), "Playwright MCP seeing the last dialog closed", || async {
            Ok((!peer.call("browser_snapshot", json!({})).await?.is_error).then_some(()))
        })
        .await?;
        let t = Instant::now();
        let r = peer.click_button(&url, "Ask").await?;
        clicks.push(t.elapsed().as_secs_f64() * 1000.0);
        ensure!(r.text.contains("confirm"), "Playwright MCP did not report the dialog: {}", r.text);
        if !listed(&s, &marker).await? {
            misses += 1;
        }
        s.agent.ok("interact", json!({"action": "handle_dialog", "accept": true})).await?;
    }
    row("Playwright MCP: snapshot + click calls (dialog opens)", clicks);
    println!("  Playwright MCP's click returned -> observe did not list the dialog: {misses} of {TRIES}");
    peer.close().await
}
