//! Pages that forbid WebAssembly, and frames the page creates itself.

use serde_json::json;
use std::time::Duration;
use unmodal_e2e::{Session, eventually};

#[tokio::test(flavor = "multi_thread")]
async fn strict_csp_page_gets_rules_and_sees_no_violation() -> anyhow::Result<()> {
    let s = Session::start().await?;
    let csp = "script-src 'self' 'unsafe-inline'; report-uri /csp-report";
    s.open("/csp", unmodal_e2e::web::CSP_PAGE, &[("Content-Security-Policy", csp)]).await?;
    s.enable_pilot().await?;
    // The policy really forbids WebAssembly here (else this test proves nothing).
    let wasm = s
        .page_value(
            "try { new WebAssembly.Module(new Uint8Array([0,97,115,109,1,0,0,0])); 'allowed' } catch (e) { e.name }",
        )
        .await?;
    assert_eq!(wasm, json!("CompileError"));
    s.page_value("violations.length = 0").await?;

    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    assert_eq!(s.page_value("[confirm('one'), confirm('two'), prompt('three')]").await?, json!([true, true, null]));
    let d = s.last_dialog(3).await?;
    assert_eq!(d["type"], "prompt");
    // A violation of the page's own marks the end (a script from another origin, which CSP
    // stops before any request): once its event and its report are in, anything the
    // dialogs caused would be in too.
    s.page_value(
        "document.head.append(Object.assign(document.createElement('script'), {src: 'http://127.0.0.2:9/marker.js'})); 0",
    )
    .await?;
    eventually(Duration::from_secs(10), "the marker's event and report", || async {
        Ok((s.page_value("violations.length").await? != json!(0) && s.web.hits("/csp-report") >= 2).then_some(()))
    })
    .await?;
    let v = s.page_value("violations").await?;
    assert_eq!(v.as_array().map(Vec::len), Some(1), "only the marker: {v}");
    assert!(!v[0].as_str().unwrap_or("").contains("chrome-extension"), "{v}");
    assert_eq!(s.web.hits("/csp-report"), 2, "only the page's own two probes may be reported");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn script_created_about_blank_iframe_is_covered() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/frames", "<!doctype html><title>frames</title><body></body>").await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    let v = s
        .page_value(
            "(() => { const f = document.createElement('iframe'); document.body.append(f);
               const w = f.contentWindow; return [w.location.href, w.confirm('From the frame?'), w.prompt('p')]; })()",
        )
        .await?;
    assert_eq!(v, json!(["about:blank", true, null]));
    let d = s.last_dialog(2).await?;
    let all = s.dialogs().await?;
    let first = &all["recent_dialogs"][0];
    assert_eq!((first["type"].as_str(), first["message"].as_str()), (Some("confirm"), Some("From the frame?")));
    assert_eq!(first["decided_by"], "rule");
    assert_ne!(first["frame_id"], 0, "reported from the child frame: {first}");
    assert_eq!(d["type"], "prompt");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn rules_set_later_reach_existing_same_origin_frames() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/later", "<!doctype html><title>later</title><body></body>").await?;
    // Frames first (one nested in the other), the rule afterwards.
    s.page_value("window.f = document.createElement('iframe'); document.body.append(f); const g = f.contentDocument.createElement('iframe'); f.contentDocument.body.append(g); window.g = g; 1").await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    assert_eq!(
        s.page_value("[f.contentWindow.confirm('child?'), g.contentWindow.confirm('grandchild?')]").await?,
        json!([true, true])
    );
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "clear": true})).await?;
    assert_eq!(
        s.page_value("[f.contentWindow.confirm('child?'), g.contentWindow.confirm('grandchild?')]").await?,
        json!([false, false])
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_origin_frames_get_the_tabs_rules() -> anyhow::Result<()> {
    // Another port is another origin in the same renderer; another site is another renderer.
    for other in [unmodal_e2e::web::WebServer::start()?, unmodal_e2e::web::WebServer::other_site()?] {
        let s = Session::start().await?;
        let child = other.page(
            "/widget",
            "<!doctype html><script>onmessage = (e) => parent.postMessage([confirm('Pay 10 EUR?'), location.origin], '*');</script>",
            &[],
        );
        let top = format!(
            "<!doctype html><title>shop</title>
             <script>let frameLoaded; window.loaded = new Promise((done) => frameLoaded = done);</script>
             <iframe id=w onload='frameLoaded()' src='{child}'></iframe>
             <script>window.ask = () => new Promise((done) => {{ onmessage = (e) => done(e.data); w.contentWindow.postMessage('go', '*'); }});</script>"
        );
        let url = s.open("/shop", &top, &[]).await?;
        s.enable_pilot().await?;
        s.agent
            .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
            .await?;
        let v = s.page_value("loaded.then(() => ask())").await?;
        assert_eq!(v, json!([true, other.origin]));
        let d = s.last_dialog(1).await?;
        assert_eq!(
            (d["decided_by"].as_str(), d["url"].as_str(), d["page_url"].as_str()),
            (Some("rule"), Some(child.as_str()), Some(url.as_str())),
            "{d}"
        );
        assert_ne!(d["frame_id"], 0);
    }
    Ok(())
}
