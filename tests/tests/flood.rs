//! A page that calls alert() in a tight loop never blocks and never floods the agent.

use serde_json::json;
use std::time::Duration;
use unmodal_e2e::{Session, eventually};

const CALLS: u64 = 100_000;

#[tokio::test(flavor = "multi_thread")]
async fn alert_loop_is_folded_into_an_exact_count_without_growing_memory() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/flood", "<!doctype html><title>flood</title>").await?;
    let heap = async || -> anyhow::Result<f64> {
        s.page.call("HeapProfiler.collectGarbage", json!({})).await?;
        Ok(s.page.call("Runtime.getHeapUsage", json!({})).await?["usedSize"].as_f64().unwrap_or(0.0))
    };
    // Warm up (first calls compile code), then measure.
    s.page_value("window.t0 = performance.now(); for (let i = 0; i < 100; i++) alert('warm ' + i)").await?;
    let before = heap().await?;
    let span = s
        .page_value(&format!(
            "(() => {{ for (let i = 0; i < {CALLS}; i++) alert('spam ' + i); return performance.now() - t0; }})()"
        ))
        .await?;
    let after = heap().await?;
    let span_ms = span.as_f64().expect("the loop returned its duration");
    assert!(after - before < 2e6, "page heap grew by {} bytes", after - before);
    // The token bucket: a burst of 10, then 10 a second over the time the calls took.
    let most = 10 + (span_ms / 100.0).ceil() as u64 + 1;

    // The host saw at most a burst of reports; the rest arrive as one exact count.
    let (entries, d, folded, records) = eventually(Duration::from_secs(10), "the counts adding up", || async {
        let logs = s.agent.ok("observe", json!({"what": "logs"})).await?;
        let entries = logs["logs"].as_array().cloned().unwrap_or_default();
        let folded: u64 = entries.iter().filter(|e| e["type"] == "flood").filter_map(|e| e["count"].as_u64()).sum();
        let d = s.dialogs().await?;
        let records = d["recent_dialogs"].as_array().map_or(0, Vec::len) as u64 + d["evicted"].as_u64().unwrap_or(0);
        Ok((folded + records >= CALLS + 100).then_some((entries, d, folded, records)))
    })
    .await?;
    let reported = entries.iter().filter(|e| e["type"] == "alert").count() as u64;
    assert_eq!(folded + records, CALLS + 100, "every call is counted exactly once: {d}");
    assert_eq!(d["folded_by_flood_limit"], folded);
    assert!(records <= most, "{records} reports reached the host in {span_ms:.0} ms (at most {most})");
    assert_eq!(reported, records, "each report is one log entry");
    let flood = entries.iter().find(|e| e["type"] == "flood").unwrap();
    assert_eq!((flood["source"].as_str(), flood["level"].as_str()), (Some("dialog"), Some("warning")));
    assert!(flood["url"].as_str().unwrap().ends_with("/flood"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_dialog_is_also_a_log_entry_with_its_origin() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/logs", "<!doctype html><title>logs</title><body></body>").await?;
    s.page_value("confirm('top?'); const f = document.createElement('iframe'); document.body.append(f); f.contentWindow.prompt('inner?')").await?;
    s.last_dialog(2).await?;
    let logs = s.agent.ok("observe", json!({"what": "logs"})).await?;
    let e = logs["logs"].as_array().unwrap();
    assert_eq!(e.len(), 2, "{logs}");
    assert_eq!(
        (e[0]["source"].as_str(), e[0]["type"].as_str(), e[0]["message"].as_str()),
        (Some("dialog"), Some("confirm"), Some("top?"))
    );
    assert_eq!(e[0]["url"], url.as_str());
    assert_eq!(
        (e[1]["type"].as_str(), e[1]["url"].as_str(), e[1]["page_url"].as_str()),
        (Some("prompt"), Some("about:blank"), Some(url.as_str()))
    );
    assert!(e[1]["summary"].as_str().unwrap().contains("default policy"));
    Ok(())
}

/// Choosers called in a loop (the screen-share picker needs no gesture) are all cancelled,
/// and past the same flood limit they are counted instead of asked: the agent's history is
/// not pushed out.
#[tokio::test(flavor = "multi_thread")]
async fn a_loop_of_choosers_is_cancelled_and_folded() -> anyhow::Result<()> {
    const PICKERS: u64 = 2000;
    let (s, _) = Session::with_pilot("/pickers", "<!doctype html><title>pickers</title>").await?;
    s.page_value(&format!(
        "window.t0 = performance.now(); window.done = 0; window.span = 0; window.results = {{}};
         for (let i = 0; i < {PICKERS}; i++) navigator.mediaDevices.getDisplayMedia({{video: true}}).then(
           () => {{ results.resolved = (results.resolved || 0) + 1; }},
           (e) => {{ done++; span = performance.now() - t0; results[e.name + ': ' + e.message] = (results[e.name + ': ' + e.message] || 0) + 1; }}); 0"
    ))
    .await?;
    eventually(Duration::from_secs(60), "every picker cancelled", || async {
        Ok((s.page.eval("done").await? == json!(PICKERS)).then_some(()))
    })
    .await?;
    assert_eq!(s.page.eval("results").await?, json!({"NotAllowedError: Permission denied": PICKERS}));
    let span_ms = s.page.eval("span").await?.as_f64().unwrap_or(f64::MAX);
    let most = 10 + (span_ms / 100.0).ceil() as u64 + 1;
    let (d, records) = eventually(Duration::from_secs(10), "the counts adding up", || async {
        let d = s.dialogs().await?;
        let records = d["recent_dialogs"].as_array().map_or(0, Vec::len) as u64 + d["evicted"].as_u64().unwrap_or(0);
        let folded = d["folded_by_flood_limit"].as_u64().unwrap_or(0);
        Ok((folded + records >= PICKERS).then_some((d, records)))
    })
    .await?;
    assert_eq!(d["folded_by_flood_limit"].as_u64().unwrap_or(0) + records, PICKERS, "every call counted once: {d}");
    assert!(records <= most, "{records} pickers were asked about in {span_ms:.0} ms (at most {most})");
    Ok(())
}
