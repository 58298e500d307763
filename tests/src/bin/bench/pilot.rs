//! AI Web Pilot rows: each tool's round trip through a real MCP client, beside a plain
//! `observe` call timed in the same loop (`cargo xtask bench -- --only-pilot` runs these alone).

use super::{RUNS, row, stats};
use anyhow::Result;
use serde_json::json;
use std::time::Instant;
use unmodal_e2e::Session;

/// Samples per row: the calls are quick, more samples steady the spread.
const SAMPLES: usize = 3 * RUNS;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

pub async fn rows(s: &Session) -> Result<()> {
    println!("\nAI Web Pilot tools, round trip through the MCP client ({SAMPLES} calls each):");
    s.page.eval("document.body.innerHTML = '<button id=go style=\"margin: 40px\">Go</button>'; 0").await?;
    let (mut observe, mut exec, mut highlight) = (Vec::new(), Vec::new(), Vec::new());
    // The first call of each pays for attaching the debugger once more; measured apart.
    let t = Instant::now();
    s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
    let first_exec = ms(t);
    for _ in 0..SAMPLES {
        let t = Instant::now();
        s.agent.ok("observe", json!({"what": "tabs"})).await?;
        observe.push(ms(t));
        let t = Instant::now();
        let v = s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
        exec.push(ms(t));
        anyhow::ensure!(v["result"] == json!(2), "{v}");
    }
    // Arming the debugger reports each script the page has loaded: the same call on a page
    // with 300 more (the page's document is loaded afresh afterwards, for the rows below).
    s.page.eval("for (let i = 0; i < 300; i++) (0, eval)('var __bench' + i + ' = ' + i); 0").await?;
    let mut exec_heavy = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
        exec_heavy.push(ms(t));
    }
    let url = s.page.eval("location.href").await?;
    s.page.goto(url.as_str().unwrap_or_default()).await?;
    s.page.eval("document.body.innerHTML = '<button id=go style=\"margin: 40px\">Go</button>'; 0").await?;
    // Each highlight holds the debugger until it is hidden; the next one replaces it.
    for _ in 0..SAMPLES {
        let t = Instant::now();
        s.agent.ok("highlight_element", json!({"selector": "#go", "duration_ms": 60000})).await?;
        highlight.push(ms(t));
    }
    // The highlight still holds the debugger: the same call without attaching and detaching.
    let mut exec_attached = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
        exec_attached.push(ms(t));
    }
    row("observe {what:\"tabs\"} (baseline)", &stats(observe.clone()), "ms");
    let e = stats(exec);
    row("execute_javascript \"1 + 1\", interleaved (goal <= 10 ms)", &e, "ms");
    row("highlight_element (replacing the last one)", &stats(highlight), "ms");
    row("execute_javascript, debugger already attached", &stats(exec_attached), "ms");
    row("execute_javascript, page with 300 more scripts", &stats(exec_heavy), "ms");
    println!("  ratio (median execute / median observe): {:.1}x", e.median / stats(observe).median.max(1e-3));
    println!("  (the first execute_javascript of the run: {first_exec:.1} ms)");

    println!("\nmanage_state with 1 MB of localStorage ({RUNS} runs; goal <= 200 ms each):");
    s.page.eval("localStorage.clear(); localStorage.setItem('big', 'x'.repeat(1024 * 1024)); 0").await?;
    let (mut save, mut load, mut load_nav) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        s.agent.ok("manage_state", json!({"action": "save", "snapshot_name": "bench"})).await?;
        save.push(ms(t));
        // One entry differs: the load writes it back (1 MB) and removes the stray one.
        s.page.eval("localStorage.setItem('big', 'y'); localStorage.setItem('stray', '1'); 0").await?;
        let t = Instant::now();
        let v = s
            .agent
            .ok("manage_state", json!({"action": "load", "snapshot_name": "bench", "include_url": false}))
            .await?;
        load.push(ms(t));
        anyhow::ensure!(v["written"]["localStorage"] == json!(1), "{v}");
        let t = Instant::now();
        s.agent.ok("manage_state", json!({"action": "load", "snapshot_name": "bench"})).await?;
        load_nav.push(ms(t));
    }
    row("save (1 MB of storage)", &stats(save), "ms");
    row("load, 1 MB written back, no navigation", &stats(load), "ms");
    row("load with include_url (navigates the tab)", &stats(load_nav), "ms");
    s.agent.ok("manage_state", json!({"action": "delete", "snapshot_name": "bench"})).await?;

    // pilot_consent.rs once asserted this under 1 s; on a loaded machine it is not a test.
    println!("\nThe terminal command ({RUNS} runs):");
    let mut on = Vec::new();
    for _ in 0..RUNS {
        s.pilot_command("off")?;
        let t = Instant::now();
        let said = s.pilot_command("on")?;
        on.push(ms(t));
        anyhow::ensure!(said.contains("AI Web Pilot is on") && !said.contains("not confirmed"), "{said}");
    }
    row("`unmodal pilot on`, to the extension's confirmation (goal < 1 s)", &stats(on), "ms");
    Ok(())
}
