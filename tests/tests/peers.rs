//! Beside the agent's own browser driver: Playwright MCP (`--cdp-endpoint`) and
//! chrome-devtools-mcp (`--browserUrl`), attached to the same Chromium over CDP, each
//! driven through a real MCP client. A rule answers before the driver sees a modal; with
//! the pilot off the driver answers and Unmodal says so; under `must_respond` Unmodal lists
//! the held dialog before the driver's click returns, and either side may answer it.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::{Driver, Peer, PeerReply, Session, eventually};

const PAGE: &str = "<!doctype html><title>drafts</title>\
    <button onclick=\"window.got = confirm('Delete the draft?'); document.querySelector('#out').textContent = 'confirm: ' + got\">Delete</button>\
    <button onclick=\"document.querySelector('#out').textContent = 'next: done'\">Next</button>\
    <p id=out>none</p>";

/// No driver call may hang: a driver blocked by a dialog nobody answers would.
const DRIVER_LIMIT: Duration = Duration::from_secs(20);

async fn driver_call<T>(what: &str, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(DRIVER_LIMIT, f).await.with_context(|| format!("the driver hung on {what}"))?
}

async fn out(s: &Session) -> Result<Value> {
    s.page.eval("document.querySelector('#out').textContent").await
}

/// Whether a driver's reply says a dialog is open (each says it its own way).
fn saw_modal(r: &PeerReply) -> bool {
    let t = r.text.to_lowercase();
    t.contains("modal state") || t.contains("dialog")
}

async fn session(pilot: bool, driver: Driver) -> Result<(Session, String, Peer)> {
    let (s, url) = if pilot {
        Session::with_pilot("/drafts", PAGE).await?
    } else {
        let s = Session::start().await?;
        let url = s.open("/drafts", PAGE, &[]).await?;
        (s, url)
    };
    let peer = Peer::start(driver, s.browser.debugging_port()?).await?;
    Ok((s, url, peer))
}

async fn a_rule_answers_and_the_driver_sees_no_modal(driver: Driver) -> Result<()> {
    let (s, url, peer) = session(true, driver).await?;
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true, "once": false}),
        )
        .await?;
    let r = driver_call("click", peer.click_button(&url, "Delete")).await?;
    ensure!(!r.is_error && !saw_modal(&r), "{driver:?} saw a modal: {}", r.text);
    assert_eq!(out(&s).await?, json!("confirm: true"));
    // The driver's next action works: nothing is left open.
    let r = driver_call("next click", peer.click_button(&url, "Next")).await?;
    ensure!(!r.is_error && !saw_modal(&r), "{driver:?}: {}", r.text);
    assert_eq!(out(&s).await?, json!("next: done"));
    let rec = s.last_dialog(1).await?;
    assert_eq!((rec["decided_by"].as_str(), rec["accepted"].as_bool()), (Some("rule"), Some(true)), "{rec}");
    peer.close().await
}

async fn pilot_off_the_driver_answers(driver: Driver) -> Result<()> {
    let (s, url, peer) = session(false, driver).await?;
    let r = driver_call("click", peer.click_button(&url, "Delete")).await?;
    ensure!(saw_modal(&r), "{driver:?} did not report the dialog: {}", r.text);
    let r = driver_call("answer", peer.answer_dialog(false, None)).await?;
    ensure!(!r.is_error, "{driver:?}: {}", r.text);
    eventually(Duration::from_secs(10), "the page getting the driver's answer", || async {
        Ok((out(&s).await? == json!("confirm: false")).then_some(()))
    })
    .await?;
    let rec = s.last_dialog_where(1, |r| r["state"] == "closed").await?;
    assert_eq!((rec["closed_by"].as_str(), rec["accepted"].as_bool()), (Some("remote"), Some(false)), "{rec}");
    peer.close().await
}

const UPLOAD: &str = "<!doctype html><title>upload</title><input type=file id=f aria-label=Resume>\
    <p id=out>none</p><script>f.onchange = async () => out.textContent = f.files[0].name + ': ' + await f.files[0].text();</script>";

/// With no file_chooser rule and no policy (pilot on), or with the pilot off, Unmodal leaves
/// choosers alone: the driver's own upload tool works, and nothing is recorded.
async fn the_drivers_upload_works_beside_unmodal(driver: Driver, pilot: bool) -> Result<()> {
    let s = Session::start().await?;
    let url = s.open("/upload", UPLOAD, &[]).await?;
    if pilot {
        s.enable_pilot().await?;
    }
    let peer = Peer::start(driver, s.browser.debugging_port()?).await?;
    let file = peer.scratch.path().join("upload.txt");
    std::fs::write(&file, "from the driver")?;
    let r = driver_call("upload", peer.upload(&url, "Resume", &file)).await?;
    ensure!(!r.is_error, "{driver:?}: {}", r.text);
    eventually(Duration::from_secs(10), "the page getting the driver's file", || async {
        Ok((out(&s).await? == json!("upload.txt: from the driver")).then_some(()))
    })
    .await?;
    assert_eq!(s.records_caught_up().await?, Vec::<Value>::new(), "Unmodal left the chooser alone");
    peer.close().await
}

/// A file_chooser rule answers a chooser the driver's click opened: the page gets the rule's
/// file, and the driver's next action works. Playwright MCP intercepts every chooser itself
/// and lists it as its modal state whoever answers it: `browser_file_upload` without paths
/// clears that and changes nothing in the page.
async fn a_rule_gives_the_file_beside_the_driver(driver: Driver) -> Result<()> {
    let s = Session::start().await?;
    let url = s
        .open("/upload", &format!("{UPLOAD}<button onclick=\"out.textContent = 'next: done'\">Next</button>"), &[])
        .await?;
    s.enable_pilot().await?;
    let work = tempfile::tempdir()?;
    std::fs::write(work.path().join("cv.txt"), "from the rule")?;
    let agent =
        unmodal_e2e::agent::Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()])
            .await?;
    let rule = json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "files": [work.path().join("cv.txt")]});
    assert_eq!(agent.ok("interact", rule).await?["rules_in_force"], true);
    let peer = Peer::start(driver, s.browser.debugging_port()?).await?;
    let r = driver_call("click", peer.click_role(&url, "button", "Resume")).await?;
    ensure!(!r.is_error, "{driver:?}: {}", r.text);
    eventually(Duration::from_secs(10), "the page getting the rule's file", || async {
        Ok((out(&s).await? == json!("cv.txt: from the rule")).then_some(()))
    })
    .await?;
    if driver == Driver::PlaywrightMcp {
        ensure!(r.text.contains("File chooser"), "Playwright MCP lists the chooser: {}", r.text);
        let r = driver_call("clearing its modal state", peer.call("browser_file_upload", json!({}))).await?;
        ensure!(!r.is_error, "{}", r.text);
        assert_eq!(out(&s).await?, json!("cv.txt: from the rule"), "the page keeps the rule's file");
    }
    let r = driver_call("next click", peer.click_button(&url, "Next")).await?;
    ensure!(!r.is_error, "{driver:?}'s next click: {}", r.text);
    assert_eq!(out(&s).await?, json!("next: done"));
    assert_eq!(s.closed_records("file_chooser", 1).await?[0]["decided_by"], "rule");
    peer.close().await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_a_file_rule_answers_and_it_goes_on() -> Result<()> {
    a_rule_gives_the_file_beside_the_driver(Driver::PlaywrightMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_a_file_rule_answers_and_it_goes_on() -> Result<()> {
    a_rule_gives_the_file_beside_the_driver(Driver::ChromeDevtoolsMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_uploads_beside_unmodal() -> Result<()> {
    the_drivers_upload_works_beside_unmodal(Driver::PlaywrightMcp, true).await?;
    the_drivers_upload_works_beside_unmodal(Driver::PlaywrightMcp, false).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_uploads_beside_unmodal() -> Result<()> {
    the_drivers_upload_works_beside_unmodal(Driver::ChromeDevtoolsMcp, true).await?;
    the_drivers_upload_works_beside_unmodal(Driver::ChromeDevtoolsMcp, false).await
}

/// The held dialog `observe` lists right now (no waiting), if any.
async fn pending_now(s: &Session) -> Result<Option<Value>> {
    let d = s.dialogs().await?;
    Ok(d["pending_dialogs"].as_array().and_then(|p| p.first()).cloned())
}

async fn must_respond_either_side_answers(driver: Driver) -> Result<()> {
    let (s, url, peer) = session(true, driver).await?;
    s.policy("must_respond", 30).await?;
    for (n, unmodal_answers) in [(1, true), (2, false), (3, true), (4, false)] {
        let r = driver_call("click", peer.click_button(&url, "Delete")).await?;
        // The moment the driver's click returns, Unmodal already lists the dialog.
        let pending = match pending_now(&s).await? {
            Some(p) => p,
            // The driver gave up on its own click first (Playwright's 5 s action timeout, hit
            // on a heavily loaded machine while the click was still on its way): that says
            // nothing of Unmodal's listing, so the dialog the click still opens is awaited.
            None if r.text.contains("TimeoutError") => {
                eprintln!("try {n}: {driver:?}'s own click timed out before the dialog opened; waiting for it");
                eventually(Duration::from_secs(30), "the dialog the timed-out click opens", || pending_now(&s)).await?
            }
            None => anyhow::bail!("try {n}: {driver:?}'s click returned ({}) before Unmodal listed the dialog", r.text),
        };
        assert_eq!(pending["message"], "Delete the draft?");
        let accept = n % 3 != 0;
        if unmodal_answers {
            let v = s.agent.ok("interact", json!({"action": "handle_dialog", "accept": accept})).await?;
            assert_eq!(v["dialog"]["closed_by"], "agent", "{v}");
        } else {
            let r = driver_call("answer", peer.answer_dialog(accept, None)).await?;
            ensure!(!r.is_error, "{driver:?} could not answer: {}", r.text);
        }
        let want = json!(format!("confirm: {accept}"));
        eventually(Duration::from_secs(10), "the page getting the answer", || async {
            Ok((out(&s).await? == want).then_some(()))
        })
        .await?;
        let rec = s.last_dialog_where(n, |r| r["state"] == "closed").await?;
        let by = if unmodal_answers { "agent" } else { "remote" };
        assert_eq!((rec["closed_by"].as_str(), rec["accepted"].as_bool()), (Some(by), Some(accept)), "{rec}");
        // Nothing waits any more, so no watchdog will fire on it.
        let v = s.dialogs().await?;
        assert!(v.get("dialogs_blocking").is_none() && v["pending_dialogs"] == json!([]), "{v}");
        // The driver is not left behind: its next action works. It hears of the close from
        // its own CDP session, in its own time (Playwright MCP under load: after the page
        // already has the answer), so a refusal naming the modal is "not yet".
        let r = eventually(Duration::from_secs(10), "the driver's next click", || async {
            match driver_call("next click", peer.click_button(&url, "Next")).await {
                Err(e) if e.to_string().contains("modal state") => Ok(None),
                Ok(r) if r.is_error && r.text.contains("modal state") => Ok(None),
                other => other.map(Some),
            }
        })
        .await?;
        ensure!(!r.is_error, "{driver:?}: {}", r.text);
        assert_eq!(out(&s).await?, json!("next: done"));
    }
    peer.close().await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_a_rule_answers_and_it_sees_no_modal() -> Result<()> {
    a_rule_answers_and_the_driver_sees_no_modal(Driver::PlaywrightMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_a_rule_answers_and_it_sees_no_modal() -> Result<()> {
    a_rule_answers_and_the_driver_sees_no_modal(Driver::ChromeDevtoolsMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_answers_with_the_pilot_off() -> Result<()> {
    pilot_off_the_driver_answers(Driver::PlaywrightMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_answers_with_the_pilot_off() -> Result<()> {
    pilot_off_the_driver_answers(Driver::ChromeDevtoolsMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_must_respond_either_side_answers() -> Result<()> {
    must_respond_either_side_answers(Driver::PlaywrightMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_must_respond_either_side_answers() -> Result<()> {
    must_respond_either_side_answers(Driver::ChromeDevtoolsMcp).await
}
