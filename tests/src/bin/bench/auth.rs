//! HTTP auth: a fetch that meets a 401 and is answered by an auth rule (page → server 401 →
//! `onAuthRequired` → service worker → host → rule → credentials → server 200), against the
//! same fetch carrying its `Authorization` header from the start, and the default's cancel
//! (the page gets the 401), all in the same page and run, interleaved.

use super::{RUNS, row, stats};
use anyhow::Result;
use serde_json::json;
use unmodal_e2e::Session;

const REALM: &str = "bench";
const USER: &str = "bench-user";
const PASSWORD: &str = "bench-password";

/// Milliseconds of one `fetch` of `path` in the page, and the status it got.
async fn timed_fetch(s: &Session, path: &str, header: Option<&str>) -> Result<(f64, u64)> {
    let init = header.map_or("{}".to_string(), |h| format!("{{headers: {{Authorization: '{h}'}}}}"));
    let expr = format!(
        "(async () => {{ const t0 = performance.now(); const r = await fetch('{path}', {init}); await r.text(); \
         return [performance.now() - t0, r.status]; }})()"
    );
    let v = s.page_value(&expr).await?;
    Ok((v[0].as_f64().unwrap_or(f64::NAN), v[1].as_u64().unwrap_or(0)))
}

pub async fn rows(s: &Session) -> Result<()> {
    use base64::Engine as _;
    println!("\nHTTP auth: one fetch of a Basic-protected URL ({RUNS} runs, interleaved):");
    let header = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}")));
    let v = s
        .agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "auth", "username": USER,
                "password": PASSWORD, "once": false, "match": {"url_contains": "/rule-"}}),
        )
        .await?;
    anyhow::ensure!(v["rules_in_force"] == true, "auth rule not in force: {v}");
    let (mut header_ms, mut rule_ms, mut cancel_ms) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS {
        // A directory and realm of its own each time: the browser would otherwise answer
        // from its own cache, without a challenge.
        for kind in ["header", "rule", "cancel"] {
            let realm = format!("{REALM} {kind} {i}");
            s.web.protected(&format!("/{kind}-{i}/api"), b"{\"ok\":true}", "application/json", &realm, USER, PASSWORD);
        }
        let (ms, status) = timed_fetch(s, &format!("/header-{i}/api"), Some(&header)).await?;
        anyhow::ensure!(status == 200, "with the header: {status}");
        header_ms.push(ms);
        let (ms, status) = timed_fetch(s, &format!("/rule-{i}/api"), None).await?;
        anyhow::ensure!(status == 200, "with the rule: {status}");
        rule_ms.push(ms);
        let (ms, status) = timed_fetch(s, &format!("/cancel-{i}/api"), None).await?;
        anyhow::ensure!(status == 401, "without a rule: {status}");
        cancel_ms.push(ms);
    }
    let (base, rule) = (stats(header_ms), stats(rule_ms));
    row("fetch with its Authorization header (baseline)", &base, "ms");
    row("fetch: 401 -> auth rule -> 200", &rule, "ms");
    row("fetch: 401 -> default cancel -> page gets 401", &stats(cancel_ms), "ms");
    println!("  ratio (median rule / median baseline): {:.1}x", rule.median / base.median.max(1e-3));
    Ok(())
}
