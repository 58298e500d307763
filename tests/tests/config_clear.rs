//! Clearing rules takes them out of the tab's config too, whatever their kind: a rule the
//! worker acts on by itself (the `automatic-downloads` grant, set as the browser's setting
//! for each site the tab goes to) must stop the moment `clear` says it is gone, and when
//! its tab closes. (A host restart forgetting it: `restarts.rs`.)

use super::downloads::{names, settled};
use serde_json::{Value, json};
use unmodal_e2e::browser::Options;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);
const BODY: &str = "id,total\n1,42\n";

/// Serves a page at `/batch` that starts three downloads in one click (as export buttons
/// do), plus the files; the page's URL.
pub(crate) fn batch_page(web: &WebServer) -> String {
    for n in ["a", "b", "c"] {
        web.page(
            &format!("/{n}.csv"),
            BODY,
            &[("Content-Type", "text/csv"), ("Content-Disposition", &format!("attachment; filename={n}.csv"))],
        );
    }
    web.page(
        "/batch",
        "<!doctype html><title>batch</title><button id=all>all</button>
         <script>document.getElementById('all').onclick = () => { for (const n of ['a', 'b', 'c']) {
           const a = document.createElement('a'); a.href = '/' + n + '.csv'; a.download = ''; a.click(); } };</script>",
        &[],
    )
}

/// The browser's automatic-downloads setting for `url` (`allow`, `block`, `ask`), as the
/// extension's service worker reads it. Read only; the test's DevTools session on the
/// worker leaves at once.
pub(crate) async fn downloads_setting(s: &Session, url: &str) -> anyhow::Result<String> {
    let id = s.worker_target().await?;
    let r = s.browser.cdp.call(None, "Target.attachToTarget", json!({"targetId": id, "flatten": true})).await?;
    let session = r["sessionId"].as_str().unwrap_or_default().to_owned();
    let expr =
        format!("chrome.contentSettings.automaticDownloads.get({{primaryUrl: {}}}).then((r) => r.setting)", json!(url));
    let v = s
        .browser
        .cdp
        .call(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
        )
        .await;
    let _ = s.browser.cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session})).await;
    Ok(v?["result"]["value"].as_str().unwrap_or_default().to_owned())
}

/// Clicks the batch page's button in `page` and checks the browser's own way: the first
/// download saved, the site's automatic downloads blocked (said on its record), the other
/// two dropped. `why` says what the grant should not have outlived.
pub(crate) async fn only_the_first_is_saved(
    s: &Session,
    page: &unmodal_e2e::page::Page,
    dir: &std::path::Path,
    why: &str,
) -> anyhow::Result<()> {
    page.click("#all").await?;
    let first = eventually(LIMIT, "the first download ended", || async {
        let d = s.dialogs().await?;
        let recs: Vec<Value> =
            d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "download").cloned().collect();
        Ok(recs.first().filter(|r| r["download_state"] != "in_progress" && r["state"] == "closed").cloned())
    })
    .await?;
    assert_eq!(first["download_state"], "complete", "{first}");
    assert!(
        first["explanation"].as_str().is_some_and(|e| e.contains("blocks this site's automatic downloads")),
        "the grant outlived {why}: {first}; saved {:?}",
        names(dir)
    );
    assert_eq!(settled(dir).await?, ["a.csv"], "only the first, as without a rule ({why})");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cleared_download_grant_stops_at_once_on_the_next_site() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let prefs = json!({"download": {"default_directory": dir.path(), "prompt_for_download": false}});
    let s = Session::start_with(Options { preferences: Some(prefs), ..Default::default() }).await?;
    s.open("/start", "<!doctype html><title>start</title>", &[]).await?;
    s.enable_pilot().await?;
    let grant = json!({"action": "handle_dialog", "setup": true, "dialog_type": "permission",
                       "permission": "automatic-downloads", "once": false});
    assert_eq!(s.agent.ok("interact", grant).await?["rules_in_force"], true);
    let clear = json!({"action": "handle_dialog", "setup": true, "clear": true, "dialog_type": "permission"});
    let v = s.agent.ok("interact", clear).await?;
    assert_eq!(v["removed"], 1, "{v}");
    assert_eq!(v["auto_responses"], json!([]), "{v}");
    // Another site: were the grant still in the worker, it would be set for this one too.
    let other = WebServer::other_site()?;
    let url = batch_page(&other);
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    only_the_first_is_saved(&s, &s.page, dir.path(), "its clear").await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_grant_goes_with_its_tab() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let prefs = json!({"download": {"default_directory": dir.path(), "prompt_for_download": false}});
    let s = Session::start_with(Options { preferences: Some(prefs), ..Default::default() }).await?;
    s.open("/start", "<!doctype html><title>start</title>", &[]).await?;
    s.enable_pilot().await?;
    // A second tab on another site gets the grant (the browser's setting for that site).
    let other = WebServer::other_site()?;
    let url = batch_page(&other);
    let granted = s.browser.new_page(&url).await?;
    granted.bring_to_front().await?;
    let tab = s.agent.wait_for_tab(&url).await?["id"].clone();
    let grant = json!({"action": "handle_dialog", "setup": true, "dialog_type": "permission",
                       "permission": "automatic-downloads", "once": false, "tab_id": tab});
    assert_eq!(s.agent.ok("interact", grant).await?["rules_in_force"], true);
    assert_eq!(downloads_setting(&s, &url).await?, "allow", "the grant is the site's setting");
    // The tab closes; the host forgets it.
    s.browser.close_page(&granted).await?;
    eventually(LIMIT, "the closed tab leaving the host's list", || async {
        let v = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        Ok((!v["tabs"].as_array().into_iter().flatten().any(|t| t["id"] == tab)).then_some(()))
    })
    .await?;
    // Nothing here changes another tab's config: the tab's closing alone has to.
    let setting = eventually(LIMIT, "the site's setting back to the browser's", || async {
        let v = downloads_setting(&s, &url).await?;
        Ok((v != "allow").then_some(v))
    })
    .await;
    if let Err(e) = setting {
        eprintln!("{e}: clicking anyway, to show what the page gets");
    }
    // The first tab, without a rule, goes to the same site: the browser's own way there.
    s.page.bring_to_front().await?;
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    only_the_first_is_saved(&s, &s.page, dir.path(), "its tab").await
}
