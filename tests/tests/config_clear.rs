//! Clearing rules takes them out of the tab's config too, whatever their kind: a rule the
//! worker acts on by itself (the `automatic-downloads` grant, set as the browser's setting
//! for each site the tab goes to) must stop the moment `clear` says it is gone.

use super::downloads::names;
use serde_json::{Value, json};
use unmodal_e2e::browser::Options;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);
const BODY: &str = "id,total\n1,42\n";

/// Serves a page at `/batch` that starts three downloads in one click (as export buttons
/// do), plus the files; the page's URL.
fn batch_page(web: &WebServer) -> String {
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
    s.page.click("#all").await?;
    // The browser's own way: the first is saved and the site's automatic downloads blocked.
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
        "the grant outlived its clear: {first}; saved {:?}",
        names(dir.path())
    );
    assert_eq!(names(dir.path()), ["a.csv"], "only the first, as without a rule");
    Ok(())
}
