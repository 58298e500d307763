//! Passkeys: a WebAuthn `create()` answered by a passkey rule (the page hook holds the call,
//! the host's rule accepts, the worker arms a virtual authenticator through the tab's
//! debugger, then the browser makes the credential), against the same `create()` in a
//! browser without Unmodal whose authenticator was armed beforehand (the browser's own
//! cost), and the default's refusal; interleaved, in the same run.

use super::{RUNS, row, stats};
use anyhow::Result;
use serde_json::json;
use unmodal_e2e::browser::Browser;
use unmodal_e2e::page::Page;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const PAGE: &str = "<!doctype html><title>passkeys</title>";

/// Milliseconds from the page's call to its answer, and `true` or the error's name and message.
async fn timed_create(
    eval: &impl AsyncFn(&str) -> Result<serde_json::Value>,
    user: usize,
) -> Result<(f64, serde_json::Value)> {
    let v = eval(&format!(
        "(async () => {{ const t0 = performance.now();
           const ok = await navigator.credentials.create({{publicKey: {{rp: {{id: 'localhost', name: 'R'}},
             user: {{id: new Uint8Array([{user} % 256, {user} >> 8]), name: 'u', displayName: 'U'}},
             challenge: new Uint8Array(32), pubKeyCredParams: [{{type: 'public-key', alg: -7}}]}}}})
             .then(() => true, (e) => e.name + ': ' + e.message);
           return [performance.now() - t0, ok]; }})()"
    ))
    .await?;
    Ok((v[0].as_f64().unwrap_or(f64::NAN), v[1].clone()))
}

pub async fn rows() -> Result<()> {
    println!("\nPasskeys: one navigator.credentials.create() on localhost ({RUNS} runs, interleaved):");
    let site = WebServer::other_site()?;
    let s = Session::start().await?;
    let url = site.page("/passkeys", PAGE, &[]);
    s.page.goto(&url).await?;
    s.page.bring_to_front().await?;
    s.agent.wait_for_tab(&url).await?;
    s.enable_pilot().await?;
    let (_plain, page) = Browser::plain_page(&site.page("/plain", PAGE, &[]), "passkeys").await?;
    arm(&page).await?;
    let ours = async |expr: &str| s.page_value(expr).await;
    let theirs = async |expr: &str| page.eval(expr).await;

    let (mut base_ms, mut rule_ms, mut refuse_ms) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS {
        // A fresh document each run: the page hook's flood limit (10 asks a second per
        // document) would otherwise refuse some calls uncounted by rules, which is not what
        // this measures. `goto` returns once the page has loaded.
        s.page.goto(&url).await?;
        // The default first (no rule), then the rule's accept.
        let (ms, made) = timed_create(&ours, i).await?;
        anyhow::ensure!(made != json!(true), "the default refused");
        refuse_ms.push(ms);
        s.agent
            .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "passkey", "accept": true}))
            .await?;
        let (ms, made) = timed_create(&ours, i).await?;
        anyhow::ensure!(made == json!(true), "the rule's authenticator made no passkey: {made}");
        rule_ms.push(ms);
        // The authenticator is removed after the call; the next run starts from nothing.
        eventually(std::time::Duration::from_secs(10), "the authenticator removed", || async {
            let v = s.page_value("PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable()").await?;
            Ok((v == json!(false)).then_some(()))
        })
        .await?;
        let (ms, made) = timed_create(&theirs, i).await?;
        anyhow::ensure!(made == json!(true), "the armed plain browser made no passkey: {made}");
        base_ms.push(ms);
    }
    let (base, rule) = (stats(base_ms), stats(rule_ms));
    row("create(), authenticator armed before (baseline)", &base, "ms");
    row("create() -> passkey rule -> armed -> made", &rule, "ms");
    row("create() -> default refusal (NotAllowedError)", &stats(refuse_ms), "ms");
    println!("  goal: the rule's answer <= 50 ms from the call (median {:.1} ms)", rule.median);
    Ok(())
}

/// A browser without Unmodal, its virtual authenticator armed as a test would.
async fn arm(page: &Page) -> Result<()> {
    page.call("WebAuthn.enable", json!({})).await?;
    page.call(
        "WebAuthn.addVirtualAuthenticator",
        json!({"options": {"protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
                           "hasUserVerification": true, "isUserVerified": true, "automaticPresenceSimulation": true}}),
    )
    .await?;
    Ok(())
}
