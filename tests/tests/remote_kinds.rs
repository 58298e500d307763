//! The kinds of modal UI not covered by `remote.rs`, in a remote browser (the provider
//! stand-in, reached only over its CDP URL): device choosers, payment, storage access,
//! sign-in, the leave-page prompt and file choosers. Each is raised as its local test raises
//! it, and each test checks both what the page got and what the host in `unmodal mcp`
//! recorded, so the bridge carries the whole round trip. One browser per test; the kinds of
//! one test run in tabs of their own (rules and policies belong to a tab).

use super::remote::{LIMIT, Remote, Via};
use anyhow::{Result, ensure};
use serde_json::{Value, json};
use unmodal_e2e::page::Page;
use unmodal_e2e::web::{CHOOSERS_PAGE, WebServer};
use unmodal_e2e::{cdp, chooser, eventually, framed};

const USB_CANCEL: &str = "NotFoundError: Failed to execute 'requestDevice' on 'USB': No device selected.";
const HID_CANCEL: &str = "resolved []";
const SERIAL_CANCEL: &str = "NotFoundError: Failed to execute 'requestPort' on 'Serial': No port selected by the user.";

/// A tab of its own at `url` (served by the test), loaded and listed by the host: its page
/// and id.
async fn tab(r: &Remote, url: &str) -> Result<(Page, i64)> {
    let page = r.browser.new_page(url).await?;
    let loaded = format!("location.href === {} && document.readyState === 'complete'", json!(url));
    eventually(LIMIT, &format!("{url} loaded"), || async {
        Ok((page.eval(&loaded).await? == json!(true)).then_some(()))
    })
    .await?;
    let tab = r.tab_of(url).await?;
    Ok((page, tab))
}

async fn must_respond(r: &Remote, tab: i64, timeout_s: u32) -> Result<()> {
    let v = r
        .agent
        .ok(
            "configure",
            json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": timeout_s, "tab_id": tab}),
        )
        .await?;
    ensure!(v["policy_in_force"] == json!(true), "must_respond not in force: {v}");
    Ok(())
}

/// The prompt held for the agent in `tab`, once there is one. (Taken from the held
/// dialogs every answer lists: `pending_dialogs` lists records still to be acknowledged too.)
async fn answer(r: &Remote, held: &Value, accept: bool) -> Result<Value> {
    r.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": held["dialog_id"], "accept": accept})).await
}

/// The tab's closed records of type `kind`, oldest first, once there are `n`.
async fn closed(r: &Remote, tab: i64, kind: &str, n: usize) -> Result<Vec<Value>> {
    let recs = r
        .records(tab, &format!("{n} closed {kind} record(s)"), |recs| {
            recs.iter().filter(|x| x["type"] == kind && x["state"] == "closed").count() >= n
        })
        .await?;
    Ok(recs.into_iter().filter(|x| x["type"] == kind).collect())
}

/// `(decided_by, closed_by, accepted)` of a record.
fn verdict(rec: &Value) -> (Option<&str>, Option<&str>, Option<bool>) {
    (rec["decided_by"].as_str(), rec["closed_by"].as_str(), rec["accepted"].as_bool())
}

fn explained(rec: &Value, words: &[&str]) -> Result<()> {
    let e = rec["explanation"].as_str().unwrap_or_default();
    ensure!(words.iter().all(|w| e.contains(w)), "the explanation lacks {words:?}: {rec}");
    Ok(())
}

/// The page's value of `expr` once it is neither null nor "pending".
async fn settled(page: &Page, expr: &str) -> Result<Value> {
    eventually(LIMIT, &format!("{expr} settling"), || async {
        let v = page.eval(expr).await?;
        Ok((!v.is_null() && v != json!("pending")).then_some(v))
    })
    .await
}

/// Clicks `#key` on the choosers page (the gesture a chooser needs) and waits until its
/// call settled.
async fn chooser(page: &Page, key: &str) -> Result<Value> {
    page.bring_to_front().await?;
    page.click(&format!("#{key}")).await?;
    settled(page, &format!("out.{key} ?? null")).await
}

#[tokio::test]
async fn device_choosers_are_cancelled_by_the_default_a_rule_and_the_agent() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let url = r.web.page("/choosers", CHOOSERS_PAGE, &[]);
    let (page, tab) = tab(&r, &url).await?;

    // The default: cancelled at once, with the browser's own cancel result.
    assert_eq!(chooser(&page, "usb").await?, json!(USB_CANCEL));
    let recs = closed(&r, tab, "device_chooser", 1).await?;
    assert_eq!(verdict(&recs[0]), (Some("default_policy"), Some("default_policy"), Some(false)), "{recs:?}");
    assert_eq!((recs[0]["chooser"].as_str(), recs[0]["url"].as_str()), (Some("usb"), Some(url.as_str())));
    explained(&recs[0], &["default policy"])?;

    // A rule for Serial choosers.
    let v = r.rule(json!({"dialog_type": "device_chooser", "chooser": "serial", "tab_id": tab})).await?;
    ensure!(v["rules_in_force"] == true, "{v}");
    assert_eq!(chooser(&page, "serial").await?, json!(SERIAL_CANCEL));
    let recs = closed(&r, tab, "device_chooser", 2).await?;
    assert_eq!(verdict(&recs[1]), (Some("rule"), Some("rule"), Some(false)), "{recs:?}");
    ensure!(recs[1]["rule_id"].is_u64(), "{recs:?}");
    explained(&recs[1], &["rule"])?;

    // must_respond: held until the agent cancels; picking a device is refused.
    // In a chooser the browser keeps open (`chooser::open_kept_open`).
    must_respond(&r, tab, 60).await?;
    chooser::open_kept_open(&page, &url, "hid").await?;
    let h = r.held(tab).await?;
    assert_eq!(h["type"], "device_chooser", "{h}");
    assert_eq!(page.eval("out.hid").await?, json!("pending"), "the page's call waits");
    let refused = r
        .agent
        .call("interact", json!({"action": "handle_dialog", "dialog_id": h["dialog_id"], "accept": true}))
        .await?;
    let text = format!("{refused:?}");
    ensure!(text.contains("invalid_params") && text.contains("can only be cancelled"), "{text}");
    answer(&r, &h, false).await?;
    assert_eq!(settled(&page, "out.hid ?? null").await?, json!(HID_CANCEL));
    // The newest: a try the browser closed at once may have left a record before it.
    let recs = closed(&r, tab, "device_chooser", 3).await?;
    let last = recs.last().unwrap();
    assert_eq!(verdict(last), (Some("agent"), Some("agent"), Some(false)), "{recs:?}");
    explained(last, &["the agent"])?;
    Ok(())
}

const KIND_PAGE: &str = "<!doctype html><title>kind</title><p>kind</p>";

/// A Payment Request's show(), as a page awaits it.
const SHOW: &str = "new PaymentRequest([{supportedMethods: 'basic-card'}],
    {total: {label: 'T', amount: {currency: 'USD', value: '1.00'}}}).show()
  .then((r) => ['ok', typeof r], (e) => ['error', e.name, e.message])";

/// A FedCM sign-in, as a page awaits it.
const SIGN_IN: &str = "navigator.credentials.get({identity: {providers: [{configURL: 'https://idp.example/config.json', clientId: 'x'}]}})
  .then(() => ['ok'], (e) => ['error', e.name, e.message])";

/// A storage access request, as a page awaits it.
const STORAGE: &str =
    "document.requestStorageAccess().then((v) => ['ok', String(v)], (e) => ['error', e.name, e.message])";

/// `expr` run in the framed page's frame (`framed::serve`), awaited.
async fn in_frame(page: &Page, expr: &str) -> Result<Value> {
    framed::in_frame(|e| async move { page.eval(&e).await }, expr).await
}

#[tokio::test]
async fn payment_sign_in_and_storage_access_over_the_bridge() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    // As locally: the calls come from another site than the test's usual server.
    let site = WebServer::other_site()?;

    // Payment: no payment app can take it headless, so the default leaves it to the
    // browser (its own refusal, recorded as accepted); a rule refuses it as a person's close.
    let pay = site.page("/pay", KIND_PAGE, &[]);
    let (page, t) = tab(&r, &pay).await?;
    assert_eq!(page.eval(SHOW).await?[1], "NotSupportedError");
    let recs = closed(&r, t, "payment", 1).await?;
    assert_eq!((recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool()), (Some("default_policy"), Some(true)));
    assert_eq!(recs[0]["message"], "payment request (show): no payment app can take it", "{recs:?}");
    explained(&recs[0], &["no payment app can take it"])?;
    r.rule(json!({"dialog_type": "payment", "accept": false, "tab_id": t})).await?;
    assert_eq!(page.eval(SHOW).await?, json!(["error", "AbortError", "User closed the Payment Request UI."]));
    let recs = closed(&r, t, "payment", 2).await?;
    assert_eq!((recs[1]["decided_by"].as_str(), recs[1]["accepted"].as_bool()), (Some("rule"), Some(false)));
    explained(&recs[1], &["rule"])?;

    // Sign-in: the default refuses it at once with the browser's own error; a refusing
    // rule likewise; under must_respond the agent's refusal reaches the waiting page.
    let sign = site.page("/sign-in", KIND_PAGE, &[]);
    let (page, t) = tab(&r, &sign).await?;
    let network = json!(["error", "NetworkError", "Error retrieving a token."]);
    assert_eq!(page.eval(SIGN_IN).await?, network);
    let recs = closed(&r, t, "sign_in", 1).await?;
    assert_eq!((recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool()), (Some("default_policy"), Some(false)));
    assert_eq!(recs[0]["message"], "sign in with https://idp.example/config.json (FedCM)", "{recs:?}");
    explained(&recs[0], &["default policy"])?;
    r.rule(json!({"dialog_type": "sign_in", "accept": false, "tab_id": t})).await?;
    assert_eq!(page.eval(SIGN_IN).await?, network);
    let recs = closed(&r, t, "sign_in", 2).await?;
    assert_eq!((recs[1]["decided_by"].as_str(), recs[1]["accepted"].as_bool()), (Some("rule"), Some(false)));
    explained(&recs[1], &["rule"])?;
    must_respond(&r, t, 60).await?;
    page.eval(&format!("window.held = 'pending'; {SIGN_IN}.then((v) => window.held = v); 0")).await?;
    let h = r.held(t).await?;
    assert_eq!(h["type"], "sign_in", "{h}");
    assert_eq!(page.eval("window.held").await?, json!("pending"), "the page's call waits");
    answer(&r, &h, false).await?;
    assert_eq!(settled(&page, "window.held").await?, network);
    let recs = closed(&r, t, "sign_in", 3).await?;
    assert_eq!(verdict(&recs[2]), (Some("agent"), Some("agent"), Some(false)), "{recs:?}");
    explained(&recs[2], &["the agent"])?;

    // Storage access, asked by another site's frame under a strict CSP: the default
    // refuses it with the browser's own error; a rule leaves it to the browser, which
    // refuses it itself headless.
    let (top, widget) = framed::serve(&r.web, &site, "");
    let (page, t) = tab(&r, &top).await?;
    let refused = json!(["error", "NotAllowedError", "requestStorageAccess not allowed"]);
    assert_eq!(in_frame(&page, STORAGE).await?, refused);
    let recs = closed(&r, t, "storage_access", 1).await?;
    assert_eq!((recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool()), (Some("default_policy"), Some(false)));
    assert_eq!(recs[0]["url"].as_str(), Some(widget.as_str()), "the frame's own URL: {recs:?}");
    explained(&recs[0], &["default policy"])?;
    r.rule(json!({"dialog_type": "storage_access", "tab_id": t})).await?;
    assert_eq!(in_frame(&page, STORAGE).await?, refused);
    let recs = closed(&r, t, "storage_access", 2).await?;
    assert_eq!((recs[1]["decided_by"].as_str(), recs[1]["accepted"].as_bool()), (Some("rule"), Some(true)));
    explained(&recs[1], &["rule"])?;
    assert_eq!(page.eval("violations").await?, json!([]), "no CSP violation");
    Ok(())
}

const DRAFT: &str = r#"<!doctype html><title>draft</title><p id=p>editing</p>
<script>addEventListener('beforeunload', (e) => { localStorage.setItem('saved', 'yes'); e.preventDefault(); e.returnValue = 'unsaved'; });</script>"#;

/// Starts a navigation of `page` without waiting for it (a held prompt stops it).
fn navigate(page: &Page, url: &str) {
    let (cdp, session, url) = (page.cdp.clone(), page.session.clone(), url.to_owned());
    tokio::spawn(async move { cdp.call(Some(&session), "Page.navigate", json!({"url": url})).await });
}

async fn title_becomes(page: &Page, want: &str) -> Result<()> {
    eventually(LIMIT, &format!("the title becoming {want}"), || async {
        Ok((page.eval("document.title").await? == json!(want)).then_some(()))
    })
    .await
}

#[tokio::test]
async fn the_leave_page_prompt_is_answered_by_a_rule_and_by_the_agent() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let away = r.web.page("/away", "<!doctype html><title>away</title>", &[]);

    // A rule that accepts: the page's handler runs, its ask is swallowed, the tab leaves
    // with no prompt at all.
    let url = r.web.page("/draft", DRAFT, &[]);
    let (page, t) = tab(&r, &url).await?;
    r.rule(json!({"dialog_type": "beforeunload", "tab_id": t})).await?;
    page.bring_to_front().await?;
    page.click("#p").await?; // the prompt needs a user activation
    let mut events = page.events();
    let me = page.session.clone();
    let opened = cdp::wait_event(&mut events, LIMIT, |e| {
        e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me)
    });
    tokio::select! {
        gone = page.goto(&away) => gone?,
        e = opened => anyhow::bail!("a prompt opened in spite of the rule: {:?}", e.map(|e| e.params)),
    }
    assert_eq!(page.eval("[document.title, localStorage.getItem('saved')]").await?, json!(["away", "yes"]));
    let recs = closed(&r, t, "beforeunload", 1).await?;
    assert_eq!((recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool()), (Some("rule"), Some(true)));
    explained(&recs[0], &["navigation goes on without a prompt"])?;

    // must_respond: the real prompt is held; the agent says stay, then leave.
    let url = r.web.page("/draft2", DRAFT, &[]);
    let (page, t) = tab(&r, &url).await?;
    must_respond(&r, t, 60).await?;
    page.bring_to_front().await?;
    page.click("#p").await?;
    navigate(&page, &away);
    let h = r.held(t).await?;
    assert_eq!(h["type"], "beforeunload", "{h}");
    answer(&r, &h, false).await?;
    let stayed = closed(&r, t, "beforeunload", 1).await?;
    assert_eq!(verdict(&stayed[0]), (Some("agent"), Some("agent"), Some(false)), "{stayed:?}");
    explained(&stayed[0], &["stay"])?;
    assert_eq!(page.eval("document.title").await?, json!("draft"), "stay keeps the page");
    // The draft still asks: a second prompt, and leave.
    navigate(&page, &away);
    let h = r.held(t).await?;
    answer(&r, &h, true).await?;
    title_becomes(&page, "away").await?;
    let recs = closed(&r, t, "beforeunload", 2).await?;
    assert_eq!(verdict(&recs[1]), (Some("agent"), Some("agent"), Some(true)), "{recs:?}");
    explained(&recs[1], &["leave"])?;
    Ok(())
}

const FILES: &str = "<!doctype html><title>files</title>
<label for=f>Your CV</label><input type=file id=f accept='.txt,text/plain'>
<script>
  window.got = [];
  for (const t of ['input', 'change', 'cancel']) {
    document.getElementById('f').addEventListener(t, (e) => got.push([t, e.isTrusted, e.target.files.length]));
  }
</script>";

/// The page's file input events from the `from`-th on, once there are `n` more.
async fn file_events(page: &Page, from: usize, n: usize) -> Result<Vec<Value>> {
    eventually(LIMIT, &format!("{n} file input event(s)"), || async {
        let got = page.eval("got").await?.as_array().cloned().unwrap_or_default();
        Ok((got.len() >= from + n).then(|| got[from..].to_vec()))
    })
    .await
}

async fn click_input(page: &Page) -> Result<()> {
    page.bring_to_front().await?;
    page.click("#f").await
}

#[tokio::test]
async fn file_choosers_are_cancelled_by_default_by_a_rule_and_by_the_agent() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let cancel = || json!(["cancel", true, 0]);

    // No rule, no policy: nothing intercepts, and the browser cancels at once itself.
    let url = r.web.page("/files", FILES, &[]);
    let (page, t) = tab(&r, &url).await?;
    click_input(&page).await?;
    assert_eq!(file_events(&page, 0, 1).await?, [cancel()], "the browser's own cancel");
    let d = r.agent.ok("observe", json!({"what": "dialogs", "tab_id": t})).await?;
    assert_eq!(d["recent_dialogs"], json!([]), "nothing recorded: {d}");

    // must_respond: held (the page waits, as for a person), then the agent cancels.
    must_respond(&r, t, 60).await?;
    click_input(&page).await?;
    let h = r.held(t).await?;
    assert_eq!(h["type"], "file_chooser", "{h}");
    ensure!(h["message"].as_str().is_some_and(|m| m.contains("Your CV")), "{h}");
    assert_eq!(page.eval("got.length").await?, json!(1), "the page waits for the chooser");
    answer(&r, &h, false).await?;
    assert_eq!(file_events(&page, 1, 1).await?, [cancel()]);
    let recs = closed(&r, t, "file_chooser", 1).await?;
    assert_eq!(verdict(&recs[0]), (Some("agent"), Some("agent"), Some(false)), "{recs:?}");
    assert_eq!((recs[0]["mode"].as_str(), recs[0]["label"].as_str()), (Some("single"), Some("Your CV")), "{recs:?}");
    explained(&recs[0], &["the agent"])?;
    assert_eq!(page.eval("got.length").await?, json!(2), "one cancel, nothing else");

    // A cancelling rule, in a tab of its own (see the next test for why): intercepted,
    // decided by the rule, and the page gets the input's own trusted cancel.
    let url = r.web.page("/files2", FILES, &[]);
    let (page, t) = tab(&r, &url).await?;
    let v = r.rule(json!({"dialog_type": "file_chooser", "accept": false, "tab_id": t})).await?;
    ensure!(v["rules_in_force"] == true, "{v}");
    click_input(&page).await?;
    assert_eq!(file_events(&page, 0, 1).await?, [cancel()]);
    let recs = closed(&r, t, "file_chooser", 1).await?;
    assert_eq!(verdict(&recs[0]), (Some("rule"), Some("rule"), Some(false)), "{recs:?}");
    explained(&recs[0], &["rule"])?;
    Ok(())
}

/// Once a cancelling once-rule is spent, the tab's debugger session is let go while the
/// cancel still runs on a lease (debugger.js `sync`). The browser's report of the chooser
/// the cancel reopened must still reach it (`leftOver` leases): else the cancel waits out
/// its `CANCEL_WAIT_MS` and takes the page's next chooser on that input for its own, which
/// is then never recorded nor held, and the page waits for good (found here; local too).
#[tokio::test]
async fn a_chooser_right_after_a_spent_cancel_rule_is_held_under_must_respond() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let url = r.web.page("/files", FILES, &[]);
    let (page, t) = tab(&r, &url).await?;
    r.rule(json!({"dialog_type": "file_chooser", "accept": false, "tab_id": t})).await?;
    click_input(&page).await?;
    file_events(&page, 0, 1).await?;
    closed(&r, t, "file_chooser", 1).await?;
    must_respond(&r, t, 60).await?;
    click_input(&page).await?;
    let h = r.held(t).await?;
    answer(&r, &h, false).await?;
    assert_eq!(file_events(&page, 1, 1).await?, [json!(["cancel", true, 0])]);
    Ok(())
}
