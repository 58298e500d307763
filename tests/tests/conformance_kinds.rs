//! The other kinds' wrappers where the browser asks nobody: every call the page hook wraps
//! (a permission, a file picker, storage access, geolocation, the clipboard, print) made on
//! a frame sandboxed without `allow-modals` and on a removed frame's window, in a browser
//! without Unmodal and in one with it (pilot on, no rule: the default), from a real click.
//! What the page sees must be equal, value for value (a promise's outcome with the error's
//! name and message, or what was thrown), but for the difference pinned below (docs/limits.md,
//! limits).

use serde_json::Value;
use std::time::Duration;
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::page::Page;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const PAGE: &str = r#"<!doctype html><title>kinds</title>
<iframe id=sb sandbox='allow-scripts allow-same-origin' srcdoc='<p>sandboxed'></iframe>
<button id=go style='position:fixed;left:0;top:0;width:200px;height:100px'>go</button>
<script>
  // A promise's outcome with the error's name and message; what a call threw. Each is kept
  // as it comes: a call that never settles shows as missing (no timer decides "pending").
  const settle = (p) => Promise.resolve(p).then(
    (v) => 'ok:' + (typeof v === 'object' && v !== null ? v.constructor.name : String(v)),
    (e) => 'err:' + (e && e.name) + ':' + (e && e.message));
  const call = (f) => { try { return settle(f()); } catch (e) { return Promise.resolve('threw:' + e.name + ':' + e.message); } };
  window.outcomes = {};
  const CALLS = {
    getUserMedia: (w) => w.navigator.mediaDevices.getUserMedia({ video: true }),
    notification: (w) => w.Notification.requestPermission(),
    openPicker: (w) => w.showOpenFilePicker(),
    savePicker: (w) => w.showSaveFilePicker(),
    directoryPicker: (w) => w.showDirectoryPicker(),
    storageAccess: (w) => w.document.requestStorageAccess(),
    geolocation: (w) => new Promise((ok, no) => w.navigator.geolocation.getCurrentPosition(ok, no)),
    clipboard: (w) => w.navigator.clipboard.readText(),
    print: (w) => w.print(),
  };
  go.onclick = () => {
    const f = document.createElement('iframe');
    document.body.append(f);
    const removed = f.contentWindow;
    f.remove();
    const out = [];
    for (const [name, fn] of Object.entries(CALLS)) {
      for (const [where, w] of [['sandboxed', sb.contentWindow], ['removed', removed]]) {
        const key = `${where} ${name}`;
        window.outcomes[key] = null;
        out.push(call(() => fn(w)).then((r) => (window.outcomes[key] = r, `${key} ${r}`)));
      }
    }
    Promise.all(out).then((r) => window.results = r);
  };
</script>"#;

async fn results(page: &Page) -> anyhow::Result<Vec<String>> {
    page.click("#go").await?;
    // Every call here settles at once in both browsers (no one is asked); one that never
    // does is a failure that names it.
    let v = eventually(Duration::from_secs(30), "every call's outcome", || async {
        let v = page.eval("window.results ?? null").await?;
        Ok((!v.is_null()).then_some(v))
    })
    .await;
    match v {
        Ok(v) => Ok(serde_json::from_value(v)?),
        Err(e) => {
            let missing = page
                .eval("Object.entries(window.outcomes ?? {}).filter(([, r]) => r === null).map(([k]) => k)")
                .await?;
            anyhow::bail!("{e}; the calls that never settled: {missing}")
        }
    }
}

/// A removed frame's window has `Notification` under Unmodal: the hook made the interface
/// as the frame started (to wrap `requestPermission`); a window removed before its page ever
/// used it has none without Unmodal.
fn known_difference(theirs: &str) -> Option<&'static str> {
    (theirs == "removed notification threw:TypeError:Cannot read properties of undefined (reading 'requestPermission')")
        .then_some("removed notification ok:undefined")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_other_kinds_answer_as_the_browser_where_it_asks_nobody() -> anyhow::Result<()> {
    let web = WebServer::start()?;
    let url = web.page("/kinds", PAGE, &[]);
    let browser = Browser::launch(Options { extension: false, ..Options::default() }).await?;
    let page = browser.first_page().await?;
    page.goto(&url).await?;
    let theirs = results(&page).await?;
    let s = Session::start().await?;
    s.open("/kinds", PAGE, &[]).await?;
    s.enable_pilot().await?;
    let ours = results(&s.page).await?;
    assert_eq!(theirs.len(), 18, "{theirs:?}");
    let differs: Vec<String> = theirs
        .iter()
        .zip(&ours)
        .filter(|(a, b)| known_difference(a).map_or(a != b, |d| d != b.as_str()))
        .map(|(a, b)| format!("without Unmodal: {a}\n   with it:     {b}"))
        .collect();
    assert!(differs.is_empty(), "differs:\n{}", differs.join("\n"));
    // Nothing is held open (what the default answered is listed for the agent to
    // acknowledge, closed), and print() was recorded as the browser's.
    let d = s.dialogs().await?;
    let listed = d["pending_dialogs"].as_array().cloned().unwrap_or_default();
    assert!(listed.iter().all(|r| r["state"] == "closed"), "{listed:?}");
    // (The removed frame's print has nobody to carry it.)
    let prints = eventually(Duration::from_secs(10), "the sandboxed frame's print recorded", || async {
        let d = s.dialogs().await?;
        let prints: Vec<Value> =
            d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "print").cloned().collect();
        Ok((!prints.is_empty()).then_some(prints))
    })
    .await?;
    assert!(prints.iter().all(|r| r["decided_by"] == "browser"), "{prints:?}");
    Ok(())
}
