//! Bluetooth device choosers picked where Unmodal holds a DevTools connection (issue 52):
//! the record lists the devices the browser offers (kept current), the agent picks one over
//! MCP with `device_id`, a rule picks by id or takes the first; a device not offered is an
//! error and the chooser stays held; `must_respond` waits for the agent, then the watchdog
//! cancels; the pilot off picks nothing; USB is still cancelled. Devices are emulated
//! (`BluetoothEmulation`, `unmodal_e2e::bluetooth`). A browser with a DevTools port (the
//! host's own connection through the profile's `DevToolsActivePort`, as `unmodal mcp
//! --browser` has it), and a remote browser behind the WS-only proxy (`remote.rs`).
//!
//! The answerer watches a page only from before its chooser opens. The agent's setup answer
//! comes once it does (`Answerer::settled`): the test of issue 52's done-when in a browser
//! `unmodal mcp --browser` started relies on that alone, as an agent must. The other tests
//! also wait through the host's test hook (`UNMODAL_TEST_ANSWERER`), as a barrier only.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::bluetooth::{self, Bluetooth, answerer_hook};
use unmodal_e2e::page::Page;
use unmodal_e2e::{Options, Session, activation, eventually};

const PAGE: &str = r#"<!doctype html><title>bt</title>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => document.title = 'got ' + d.name, (e) => { window.why = e.message; document.title = 'error ' + e.name; })">pair</button>
<button id=u style="position: fixed; top: 80px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.usb.requestDevice({filters: []}).then(() => document.title = 'usb got', (e) => document.title = 'usb ' + e.name)">usb</button>"#;

pub(super) const HEART: &str = "09:09:09:09:09:09";
pub(super) const THERMO: &str = "08:08:08:08:08:08";
pub(super) const LIMIT: Duration = Duration::from_secs(15);

async fn session() -> Result<(Session, String, Bluetooth)> {
    let s = Session::start_with(Options {
        args: vec![bluetooth::SWITCH.into()],
        env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())],
        ..Options::default()
    })
    .await?;
    let url = s.open("/bt.html", PAGE, &[]).await?;
    s.enable_pilot().await?;
    let bt = Bluetooth::emulate(&s.browser.cdp).await?;
    bt.preconnected(HEART, "Heart Rate").await?;
    Ok((s, url, bt))
}

/// Waits until the host's answerer watches `url` for choosers (a barrier: the rule or
/// policy just set asked for it).
pub(super) async fn watched(runtime: &std::path::Path, url: &str) -> Result<()> {
    answerer_hook(runtime, json!({"op": "wait", "which": "devices", "for": "covered", "url": url})).await.map(drop)
}

pub(super) async fn title(page: &unmodal_e2e::page::Page) -> Result<String> {
    Ok(page.eval("document.title").await?.as_str().unwrap_or_default().to_owned())
}

pub(super) async fn title_is(page: &unmodal_e2e::page::Page, want: &str) -> Result<()> {
    let got = eventually(LIMIT, &format!("the page's title {want:?}"), || async {
        Ok((title(page).await? == want).then_some(()))
    })
    .await;
    ensure!(got.is_ok(), "the page's title: {:?} (wanted {want:?})", title(page).await);
    Ok(())
}

/// Clicks `#b` (its Bluetooth call) until the page's title is `want`.
pub(super) async fn pair_until_title(page: &Page, want: &str) -> Result<()> {
    pair_with_until_title(page, "#b", want).await
}

/// Clicks `button` (its Bluetooth call; `activation::click_until`) until the page's title
/// is `want`.
pub(super) async fn pair_with_until_title(page: &Page, button: &str, want: &str) -> Result<()> {
    let what = format!("the page's title {want:?}");
    activation::click_until(page, button, &what, || async { Ok((title(page).await? == want).then_some(())) }).await
}

/// The device chooser held (of tab `tab`, if named; not record `not`) whose record `ready`
/// holds of, as `observe` lists it now. A record listing a device is a chooser the browser
/// opened: its click's activation was not raced.
pub(super) async fn listed(
    agent: &unmodal_e2e::Agent,
    tab: Option<i64>,
    not: &Value,
    ready: impl Fn(&Value) -> bool,
) -> Result<Option<Value>> {
    let mut args = json!({"what": "dialogs"});
    if let Some(t) = tab {
        args["tab_id"] = json!(t);
    }
    let d = agent.ok("observe", args).await?;
    let mut held = d["pending_dialogs"].as_array().cloned().unwrap_or_default().into_iter();
    Ok(held.find(|r| r["type"] == "device_chooser" && r["dialog_id"] != *not && ready(r)))
}

/// The held record `id` among `dialogs`' pending ones, once `ready` holds of it.
async fn pending_where(
    agent: &unmodal_e2e::Agent,
    tab: Option<i64>,
    id: &Value,
    ready: impl Fn(&Value) -> bool,
) -> Result<Value> {
    let mut args = json!({"what": "dialogs"});
    if let Some(t) = tab {
        args["tab_id"] = json!(t);
    }
    let found = eventually(LIMIT, "the held chooser's record", || async {
        let d = agent.ok("observe", args.clone()).await?;
        let rec = d["pending_dialogs"].as_array().into_iter().flatten().find(|r| r["dialog_id"] == *id).cloned();
        Ok(rec.filter(|r| ready(r)))
    })
    .await;
    match found {
        Ok(rec) => Ok(rec),
        // What the record said instead (held with other devices, or closed, and why).
        Err(e) => anyhow::bail!("{e}: {}", agent.ok("observe", args).await?),
    }
}

pub(super) fn device_ids(rec: &Value) -> Vec<String> {
    let mut ids: Vec<String> = rec["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["device_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

/// The agent's whole flow over MCP: held under must_respond, the record lists the device,
/// then also one that advertises later; a device not offered is an error naming the
/// offered ones and the chooser stays held; the pick reaches the page.
#[tokio::test]
async fn the_agent_picks_a_device_the_record_listed() -> Result<()> {
    let (s, url, bt) = session().await?;
    s.policy("must_respond", 60).await?;
    watched(&s.browser.runtime, &url).await?;
    let any = |r: &Value| !device_ids(r).is_empty();
    let rec = activation::click_until(&s.page, "#b", "the chooser held with its devices", || {
        listed(&s.agent, None, &Value::Null, any)
    })
    .await?;
    let id = rec["dialog_id"].clone();
    ensure!(device_ids(&rec) == [HEART], "{rec}");
    ensure!(rec["chooser"] == "bluetooth" && rec["no_choice"].is_null(), "{rec}");
    bt.advertise(THERMO, "Thermo").await?;
    let rec = pending_where(&s.agent, None, &id, |r| device_ids(r).len() == 2).await?;
    ensure!(device_ids(&rec) == [THERMO, HEART], "kept current: {rec}");
    // Not offered: invalid_params naming the offered ids; still held.
    let gone = s
        .agent
        .call("interact", json!({"action": "handle_dialog", "dialog_id": id, "device_id": "07:07:07:07:07:07"}))
        .await?;
    let text = format!("{gone:?}");
    ensure!(text.contains("invalid_params") && text.contains("is not offered") && text.contains(HEART), "{text}");
    let bare = s.agent.call("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    ensure!(format!("{bare:?}").contains("device_id"), "accept alone names no device: {bare:?}");
    ensure!(s.held(1).await?[0]["dialog_id"] == id, "still held");
    ensure!(title(&s.page).await? == "bt", "the page's call still waits");
    let done = s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "device_id": HEART})).await?;
    ensure!(done["agent_answer_applied"] == true, "{done}");
    title_is(&s.page, "got Heart Rate").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    let last = recs.last().context("a record")?;
    ensure!(last["closed_by"] == "agent" && last["accepted"] == true && last["picked"] == HEART, "{last}");
    Ok(())
}

/// A rule picks by id once its device is offered (it advertises after the chooser opened);
/// a rule that takes the first device picks at once.
#[tokio::test]
async fn rules_pick_by_id_when_offered_and_the_first_device() -> Result<()> {
    let (s, url, bt) = session().await?;
    let v = s
        .agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "device_id": THERMO}),
        )
        .await?;
    ensure!(v["rules_in_force"] == true && v["accept"] == true, "{v}");
    ensure!(v["auto_responses"][0]["device_id"] == THERMO, "the rule shows its device: {v}");
    watched(&s.browser.runtime, &url).await?;
    let heart = |r: &Value| device_ids(r) == [HEART];
    let rec = activation::click_until(&s.page, "#b", "the chooser held with its devices", || {
        listed(&s.agent, None, &Value::Null, heart)
    })
    .await?;
    ensure!(rec["rule_id"].is_u64(), "held for its rule: {rec}");
    ensure!(title(&s.page).await? == "bt", "Heart Rate is not the rule's device");
    bt.advertise(THERMO, "Thermo").await?;
    // An advertised-only device reaches the page with no name (measured).
    title_is(&s.page, "got null").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    ensure!(recs[0]["closed_by"] == "rule" && recs[0]["picked"] == THERMO && recs[0]["rule_id"].is_u64(), "{recs:?}");
    // pick: "first"
    s.page.eval("document.title = 'bt'").await?;
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "pick": "first"}),
        )
        .await?;
    activation::click_until(&s.page, "#b", "picked", || async {
        Ok(title(&s.page).await?.starts_with("got ").then_some(()))
    })
    .await?;
    let recs = s.closed_records("device_chooser", 2).await?;
    ensure!(recs[1]["closed_by"] == "rule" && recs[1]["picked"].is_string(), "{recs:?}");
    Ok(())
}

/// Under must_respond with nobody answering, the watchdog cancels (the page gets the
/// browser's cancel); a by-name rule never matches the empty names Chromium gives, so its
/// chooser waits for the watchdog too.
#[tokio::test]
async fn the_watchdog_cancels_what_nobody_picked() -> Result<()> {
    let (s, url, _bt) = session().await?;
    s.policy("must_respond", 2).await?;
    watched(&s.browser.runtime, &url).await?;
    pair_until_title(&s.page, "error NotFoundError").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    ensure!(recs[0]["closed_by"] == "watchdog" && recs[0]["accepted"] == false, "{recs:?}");
    s.page.eval("document.title = 'bt'").await?;
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "device_name_contains": "Heart"}),
        )
        .await?;
    pair_until_title(&s.page, "error NotFoundError").await?;
    let recs = s.closed_records("device_chooser", 2).await?;
    ensure!(
        recs[1]["closed_by"] == "watchdog" && recs[1]["picked"].is_null() && device_ids(&recs[1]) == [HEART],
        "{recs:?}"
    );
    Ok(())
}

/// USB beside a rule that picks: cancelled by it, saying why; and held, accept: true is
/// refused with the reason.
#[tokio::test]
async fn usb_is_still_only_cancelled() -> Result<()> {
    let (s, _url, _bt) = session().await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "pick": "first", "once": false}))
        .await?;
    s.page.click("#u").await?;
    title_is(&s.page, "usb NotFoundError").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    let why = recs[0]["explanation"].as_str().unwrap_or_default();
    ensure!(recs[0]["accepted"] == false && why.contains("only Bluetooth"), "{recs:?}");
    let refused = s
        .agent
        .call("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "chooser": "usb", "pick": "first"}))
        .await?;
    ensure!(format!("{refused:?}").contains("only a Bluetooth chooser"), "{refused:?}");
    Ok(())
}

/// Pilot off: a rule that picks waits (not in force); nothing is attached (the page is not
/// covered) or picked, and a pick asked of the answerer is refused; the record says
/// pilot_off and the browser's chooser stands.
#[tokio::test]
async fn with_the_pilot_off_nothing_is_picked() -> Result<()> {
    let s = Session::start_with(Options {
        args: vec![bluetooth::SWITCH.into()],
        env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())],
        ..Options::default()
    })
    .await?;
    let url = s.open("/bt.html", PAGE, &[]).await?;
    let bt = Bluetooth::emulate(&s.browser.cdp).await?;
    bt.preconnected(HEART, "Heart Rate").await?;
    let rule = json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "pick": "first", "once": false});
    let v = s.agent.ok("interact", rule).await?;
    ensure!(v["rules_in_force"] == false, "the pilot is off: {v}");
    // Devices wanted (as the rule asks, and through the hook besides), yet with the pilot
    // off the answerer attaches for nothing, and the page is not covered: both read once the
    // hook's `want` answered, which sets what the answerer attaches for (no timer).
    let runtime = &s.browser.runtime;
    answerer_hook(runtime, json!({"op": "want", "devices": true})).await?;
    let covers = answerer_hook(runtime, json!({"op": "covers", "which": "devices", "url": url})).await?;
    ensure!(covers == json!({"covered": false, "attaching": false}), "pilot off: nothing attached: {covers}");
    // A try the browser refused for want of the click's activation opened no chooser (and
    // made no record: the hook asks only after the browser's answer on Bluetooth's
    // availability, which comes after its refusal), so it says nothing of a pick.
    let before = s.dialogs().await?["recent_dialogs"].as_array().map_or(0, Vec::len);
    let rec = activation::click_until(&s.page, "#b", "the call recorded", || async {
        let recent = s.dialogs().await?["recent_dialogs"].as_array().cloned().unwrap_or_default();
        Ok(recent.get(before..).and_then(|new| new.iter().find(|r| r["type"] == "device_chooser").cloned()))
    })
    .await
    .context("record")?;
    s.host_caught_up().await.context("caught up")?;
    let t = title(&s.page).await.context("title")?;
    ensure!(rec["decided_by"] == "pilot_off" && rec["picked"].is_null(), "{rec}");
    // No device reached the page. (The barrier's alert closes the browser's own chooser, so
    // the page may have the browser's cancel by now.)
    ensure!(t == "bt" || t == "error NotFoundError", "nothing picked: {t}");
    let none = answerer_hook(runtime, json!({"op": "prompts"})).await?;
    ensure!(none["prompts"].as_array().is_some_and(Vec::is_empty), "nothing attached: {none}");
    // A pick asked for all the same is refused: the pilot is off.
    let pick = answerer_hook(runtime, json!({"op": "select_device", "prompt": 1, "device_id": HEART})).await;
    ensure!(pick.as_ref().is_err_and(|e| e.to_string().contains("pilot is off")), "{pick:?}");
    Ok(())
}

/// The pilot switched off while a chooser is held under must_respond, its record listing a
/// device: the chooser is cancelled (the page gets the browser's NotFoundError, not a wait),
/// nothing is picked and the agent's late pick is refused; the record says how it closed.
/// The pilot back on: a new request is held again, with its devices listed, and picked.
#[tokio::test]
async fn the_pilot_switched_off_while_a_chooser_is_held_cancels_it() -> Result<()> {
    let (s, url, _bt) = session().await?;
    s.policy("must_respond", 60).await?;
    watched(&s.browser.runtime, &url).await?;
    let heart = |r: &Value| device_ids(r) == [HEART];
    let id = activation::click_until(&s.page, "#b", "the chooser held with its devices", || {
        listed(&s.agent, None, &Value::Null, heart)
    })
    .await?["dialog_id"]
        .clone();
    let said = s.pilot_command("off")?;
    ensure!(said.contains("AI Web Pilot is off"), "{said}");
    title_is(&s.page, "error NotFoundError").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    let rec = &recs[0];
    ensure!(rec["accepted"] == false && rec["picked"].is_null(), "cancelled, nothing picked: {rec}");
    ensure!(rec["closed_by"] == "pilot_off" && rec["decided_by"] == "pilot_off", "says the pilot: {rec}");
    let why = rec["explanation"].as_str().unwrap_or_default();
    ensure!(why.contains("Closed by AI Web Pilot switching off"), "{rec}");
    ensure!(rec["no_choice"].as_str().is_some_and(|n| n.contains("switched off while this chooser was held")), "{rec}");
    let late =
        s.agent.call("interact", json!({"action": "handle_dialog", "dialog_id": id, "device_id": HEART})).await?;
    ensure!(format!("{late:?}").contains("error") || format!("{late:?}").contains("is_error: Some(true)"), "{late:?}");
    ensure!(title(&s.page).await? == "error NotFoundError", "no late pick");

    // On again: the policy stands, a new request is held and listed, and the agent picks.
    s.enable_pilot().await?;
    watched(&s.browser.runtime, &url).await?;
    s.page.eval("document.title = 'bt'").await?;
    let id = activation::click_until(&s.page, "#b", "a new chooser held with its devices", || {
        listed(&s.agent, None, &id, heart)
    })
    .await?["dialog_id"]
        .clone();
    s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "device_id": HEART})).await?;
    title_is(&s.page, "got Heart Rate").await?;
    let recs = s.closed_records("device_chooser", 2).await?;
    ensure!(recs[1]["closed_by"] == "agent" && recs[1]["picked"] == HEART, "{recs:?}");
    Ok(())
}

/// The done-when of issue 52 in a remote browser: behind the WS-only proxy, over
/// `unmodal mcp --cdp-endpoint`, the record lists the device and the agent pairs it.
#[tokio::test]
async fn behind_the_proxy_the_agent_pairs_an_emulated_device() -> Result<()> {
    use super::remote::{Remote, Via};
    let (r, url, page, tab) = Remote::with_page(Via::Query, "/bt.html", PAGE).await?;
    let bt = Bluetooth::emulate(r.browser.cdp()).await?;
    bt.preconnected(HEART, "Heart Rate").await?;
    let v = r
        .agent
        .ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60, "tab_id": tab}))
        .await?;
    ensure!(v["policy_in_force"] == true, "{v}");
    watched(r.runtime.path(), &url).await?;
    let any = |r: &Value| !device_ids(r).is_empty();
    let rec = activation::click_until(&page, "#b", "the chooser held with its devices", || {
        listed(&r.agent, Some(tab), &Value::Null, any)
    })
    .await?;
    let id = rec["dialog_id"].clone();
    ensure!(device_ids(&rec) == [HEART], "{rec}");
    r.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "device_id": HEART})).await?;
    title_is(&page, "got Heart Rate").await?;
    let recs = r.records(tab, "the pick recorded", |recs| recs.iter().any(|x| x["picked"] == HEART)).await?;
    ensure!(recs.iter().any(|x| x["closed_by"] == "agent"), "{recs:?}");
    Ok(())
}

/// The done-when of issue 52 in a browser Unmodal started: `unmodal mcp --browser` on a
/// fresh login (installed, the browser found on PATH), the test's own DevTools client on
/// its DevTools port (`--port 0`) for the emulated adapter and the tab; the agent pairs the device it read, then signs in with the account its rule names.
#[tokio::test(flavor = "multi_thread")]
async fn in_a_browser_unmodal_mcp_started_the_agent_pairs_a_device_and_signs_in_with_its_account() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    use unmodal_e2e::browser::chromium_binary;
    let _slot = unmodal_e2e::browser::slot().await;
    let dir = tempfile::Builder::new().prefix("unmodal-picks-").tempdir()?;
    for d in ["home", "run"] {
        std::fs::create_dir(dir.path().join(d))?;
    }
    std::fs::set_permissions(dir.path().join("run"), std::fs::Permissions::from_mode(0o700))?;
    let art = unmodal_e2e::artifacts::Artifacts::find()?;
    let chromium = chromium_binary()?;
    let path = format!("{}:/usr/bin:/bin", chromium.parent().context("chromium's directory")?.display());
    let (home, run) = (dir.path().join("home"), dir.path().join("run"));
    let command = |args: &[&str]| {
        let mut cmd = tokio::process::Command::new(&art.host);
        cmd.args(args)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", &home)
            .env("UNMODAL_RUNTIME_DIR", &run)
            .kill_on_drop(true);
        cmd
    };
    let out = command(&["install"]).stdin(std::process::Stdio::null()).output().await?;
    ensure!(out.status.success(), "install: {}", String::from_utf8_lossy(&out.stderr));
    // Port 0: the browser picks one and writes it in the profile's DevToolsActivePort.
    let agent =
        unmodal_e2e::Agent::start_command(command(&["mcp", "--browser", "--headless", "--port", "0"]), &[]).await?;
    agent.ok("observe", json!({"what": "tabs"})).await?;
    let profile = home.join(".local/share/unmodal/profiles/default");
    let out = command(&["pilot", "on", "--user-data-dir", &profile.display().to_string()]).output().await?;
    ensure!(String::from_utf8_lossy(&out.stdout).contains("AI Web Pilot is on"), "{out:?}");
    let ws = unmodal_e2e::browser::devtools_url(&profile, LIMIT).await?;
    let cdp = unmodal_e2e::cdp::Cdp::connect(&ws).await?;
    let bt = Bluetooth::emulate(&cdp).await?;
    bt.preconnected(HEART, "Heart Rate").await?;
    let web = unmodal_e2e::WebServer::start()?;
    let url = web.page("/bt.html", PAGE, &[]);
    let t = cdp.call(None, "Target.createTarget", json!({"url": url})).await?;
    let page =
        unmodal_e2e::page::Page::attach(cdp.clone(), t["targetId"].as_str().context("no target")?.to_owned()).await?;
    let tab = agent.wait_for_tab_listed(&url).await?;
    let v = agent
        .ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60, "tab_id": tab}))
        .await?;
    ensure!(v["policy_in_force"] == true, "{v}");
    // No barrier but the answer itself: an agent has no other (the host answers once its
    // answerer watches the tab's page).
    let any = |r: &Value| !device_ids(r).is_empty();
    let rec =
        activation::click_until(&page, "#b", "held with its devices", || listed(&agent, Some(tab), &Value::Null, any))
            .await?;
    let id = rec["dialog_id"].clone();
    ensure!(device_ids(&rec) == [HEART], "the record listed the choice first: {rec}");
    agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "device_id": HEART})).await?;
    title_is(&page, "got Heart Rate").await?;

    // And signs in with the account it chose: a rule naming it picks it in the browser's
    // FedCM account chooser, which the record lists first.
    let rp = unmodal_e2e::idp::Rp::start("/rp.html")?;
    let t = cdp.call(None, "Target.createTarget", json!({"url": rp.url})).await?;
    let signing =
        unmodal_e2e::page::Page::attach(cdp.clone(), t["targetId"].as_str().context("no target")?.to_owned()).await?;
    let tab = agent.wait_for_tab_listed(&rp.url).await?;
    let set = json!({"action": "handle_dialog", "setup": true, "dialog_type": "sign_in", "once": true,
        "account_id": "u2", "tab_id": tab});
    agent.ok("interact", set).await?;
    signing.click("#b").await?;
    title_is(&signing, "token token-for-u2").await?;
    ensure!(*rp.idp.asserted.lock().unwrap() == ["u2"], "the provider was asked for u2 alone");
    let rec = eventually(LIMIT, "the sign-in recorded", || async {
        let v = agent.ok("observe", json!({"what": "dialogs"})).await?;
        Ok(v["recent_dialogs"].as_array().into_iter().flatten().find(|r| r["type"] == "sign_in").cloned())
    })
    .await?;
    let listed: Vec<&str> =
        rec["accounts"].as_array().into_iter().flatten().filter_map(|a| a["account_id"].as_str()).collect();
    ensure!(listed == ["u1", "u2"] && rec["picked_account"] == "u2", "{rec}");
    agent.close().await
}
