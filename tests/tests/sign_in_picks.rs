//! Sign-in picks (issue 52): where the host holds a DevTools connection of its own (a
//! browser with a DevTools port, as `unmodal mcp --browser` starts one; a remote browser
//! behind the WS-only proxy), a sign-in rule with an account, or the agent's accept of a
//! sign-in held under `must_respond`, lets the FedCM call through, and the account is
//! picked in the browser's account chooser: by the rule, or by the agent on the chooser's
//! own held record, which lists the accounts first.
//! The loopback provider (`idp.rs`) has two accounts, u1 and u2; its token names the account
//! the browser posted. A refusal, the pilot off or the default never post an account, and
//! a refusal never reaches the provider at all.

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::agent::Reply;
use unmodal_e2e::bluetooth::answerer_hook;
use unmodal_e2e::idp::Rp;
use unmodal_e2e::{Options, Session, eventually};

pub(super) const LIMIT: Duration = Duration::from_secs(15);

pub(super) async fn session() -> Result<Session> {
    // The test hook only waits until the answerer covers a page (`wait covered`); what it
    // wants seen is the kind's own.
    Session::start_with(Options { env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())], ..Options::default() }).await
}

pub(super) fn rp(path: &str) -> Result<Rp> {
    Rp::start(path)
}

pub(super) async fn show(s: &Session, url: &str) -> Result<()> {
    s.page.goto(url).await?;
    s.page.bring_to_front().await?;
    s.agent.wait_for_tab(url).await?;
    Ok(())
}

pub(super) async fn covered(runtime: &std::path::Path, url: &str) -> Result<()> {
    answerer_hook(runtime, json!({"op": "wait", "which": "accounts", "for": "covered", "url": url})).await.map(drop)
}

pub(super) async fn title(s: &Session) -> Result<String> {
    Ok(s.page.eval("document.title").await?.as_str().unwrap_or_default().to_owned())
}

/// Waits until the page's title is `want`.
pub(super) async fn titled(s: &Session, want: &str) -> Result<()> {
    let got = eventually(LIMIT, want, || async { Ok((title(s).await? == want).then_some(())) }).await;
    ensure!(got.is_ok(), "the page's title: {:?}, not {want:?}", title(s).await);
    Ok(())
}

/// The agent accepts the held call `call` under must_respond: the browser asks the
/// provider, and its account chooser is held as a record of its own; that held record.
pub(super) async fn let_through_to_its_chooser(s: &Session, call: &Value) -> Result<Value> {
    s.answer(call, true).await?;
    eventually(LIMIT, "the account chooser held", || async {
        let held = s.held(1).await?;
        Ok(held.into_iter().find(|h| h["dialog_id"] != call["dialog_id"]))
    })
    .await
}

/// The relying party's page `/rp1.html` shown with the pilot on under `must_respond` (60 s),
/// its frame covered by the answerer: the session and the provider.
pub(super) async fn held_for_the_agent() -> Result<(Session, Rp)> {
    let s = session().await?;
    let one = rp("/rp1.html")?;
    show(&s, &one.url).await?;
    s.enable_pilot().await?;
    s.policy("must_respond", 60).await?;
    covered(&s.browser.runtime, &one.url).await?;
    Ok((s, one))
}

/// The record `id` once it is closed.
pub(super) async fn closed_record(s: &Session, id: &Value) -> Result<Value> {
    eventually(LIMIT, "the chooser's record closed", || async {
        let recs = s.dialogs().await?["recent_dialogs"].as_array().cloned().unwrap_or_default();
        Ok(recs.into_iter().find(|r| r["dialog_id"] == *id && r["state"] == "closed"))
    })
    .await
}

pub(super) async fn rule(s: &Session, more: Value) -> Result<Value> {
    let mut a = json!({"action": "handle_dialog", "setup": true, "dialog_type": "sign_in", "once": true});
    a.as_object_mut().unwrap().extend(more.as_object().cloned().unwrap_or_default());
    s.agent.ok("interact", a).await
}

pub(super) fn account_ids(r: &Value) -> Vec<&str> {
    r["accounts"].as_array().into_iter().flatten().filter_map(|a| a["account_id"].as_str()).collect()
}

/// A rule picks by account_id, then by email (case-insensitive), and `only_account` with
/// two accounts offered picks none (the chooser is closed: NetworkError). Each record lists
/// the accounts, emails redacted, and names the pick; only the picked account is posted.
#[tokio::test(flavor = "multi_thread")]
async fn a_rule_picks_by_id_or_email_and_only_account_picks_none_of_two() -> Result<()> {
    let s = session().await?;
    let one = rp("/rp1.html")?;
    show(&s, &one.url).await?;
    s.enable_pilot().await?;
    let set = rule(&s, json!({"account_id": "u2"})).await?;
    ensure!(set["message"].as_str().is_some_and(|m| m.contains("pick account_id \"u2\"")), "{set}");
    covered(&s.browser.runtime, &one.url).await?;
    s.page.click("#b").await?;
    titled(&s, "token token-for-u2").await?;
    ensure!(*one.idp.asserted.lock().unwrap() == ["u2"], "the provider was asked for u2 alone");
    let r = s.closed_records("sign_in", 1).await?.remove(0);
    ensure!(r["decided_by"] == "rule" && r["accepted"] == true, "{r}");
    ensure!(account_ids(&r) == ["u1", "u2"] && r["picked_account"] == "u2", "{r}");
    ensure!(r["account_dialog"] == "AccountChooser", "{r}");
    // Emails are personal data: redacted like page text.
    ensure!(r["accounts"][0]["email"] == "[redacted:email]", "{r}");
    ensure!(r["redacted"].as_array().is_some_and(|k| k.contains(&json!("email"))), "{r}");
    ensure!(r["accounts"][1]["config_url"] == one.idp.config_url().as_str(), "{r}");

    let two = rp("/rp2.html")?;
    show(&s, &two.url).await?;
    rule(&s, json!({"account_email": "ONE@idp.test"})).await?;
    covered(&s.browser.runtime, &two.url).await?;
    s.page.click("#b").await?;
    titled(&s, "token token-for-u1").await?;
    ensure!(*two.idp.asserted.lock().unwrap() == ["u1"]);

    let three = rp("/rp3.html")?;
    show(&s, &three.url).await?;
    rule(&s, json!({"only_account": true})).await?;
    covered(&s.browser.runtime, &three.url).await?;
    s.page.click("#b").await?;
    titled(&s, "error NetworkError").await?;
    ensure!(three.idp.asserted.lock().unwrap().is_empty(), "no account posted");
    let r = eventually(LIMIT, "the record says no account fits", || async {
        let recs = s.closed_records("sign_in", 1).await?;
        Ok(recs.into_iter().find(|r| r["explanation"].as_str().is_some_and(|e| e.contains("no account fits"))))
    })
    .await?;
    ensure!(account_ids(&r) == ["u1", "u2"] && r["picked_account"].is_null(), "{r}");
    s.page_runs().await
}

/// Under must_respond the call waits for the agent before the provider is asked; the
/// agent's accept lets it through, and its account chooser is held for the agent as a
/// record listing the accounts; an account not offered is an error naming those that are,
/// and the chooser stays held; the agent's pick reaches the page. The next chooser,
/// unanswered, is closed by the watchdog: nothing is posted.
#[tokio::test(flavor = "multi_thread")]
async fn under_must_respond_the_agent_picks_from_the_listed_accounts_then_the_watchdog_closes_one() -> Result<()> {
    let (s, one) = held_for_the_agent().await?;
    s.page.click("#b").await?;
    let call = s.held(1).await?.remove(0);
    s.host_caught_up().await?;
    ensure!(one.idp.asked.lock().unwrap().is_empty(), "the provider is not asked before the agent's answer");
    let chooser = let_through_to_its_chooser(&s, &call).await?;
    let id = chooser["dialog_id"].clone();
    let rec = eventually(LIMIT, "the held chooser's record", || async {
        let d = s.dialogs().await?;
        let mut all = d["pending_dialogs"].as_array().into_iter().chain(d["recent_dialogs"].as_array()).flatten();
        Ok(all.find(|&r| r["dialog_id"] == id).cloned())
    })
    .await
    .unwrap_or_else(|_| chooser.clone());
    ensure!(chooser["type"] == "sign_in" && account_ids(&rec) == ["u1", "u2"], "{rec} {chooser}");
    ensure!(one.idp.asserted.lock().unwrap().is_empty(), "nothing posted before the agent picks");
    let wrong =
        s.agent.call("interact", json!({"action": "handle_dialog", "dialog_id": id, "account_id": "u9"})).await?;
    let said = format!("{wrong:?}");
    ensure!(!matches!(wrong, Reply::Ok(_)) && said.contains("u9") && said.contains("offered"), "{said}");
    ensure!(said.contains("u1") && said.contains("u2"), "the offered ids are named: {said}");
    ensure!(s.held(1).await?.iter().any(|h| h["dialog_id"] == id), "still held");
    let bare = s.agent.call("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    ensure!(
        !matches!(bare, Reply::Ok(_)) && format!("{bare:?}").contains("account_id"),
        "an accept without an account, two offered: {bare:?}"
    );
    s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "account_id": "u1"})).await?;
    titled(&s, "token token-for-u1").await?;
    ensure!(*one.idp.asserted.lock().unwrap() == ["u1"]);
    let recs = s.closed_records("sign_in", 2).await?;
    let closed = recs.iter().find(|r| r["dialog_id"] == id).cloned().unwrap_or_default();
    ensure!(closed["closed_by"] == "agent" && closed["picked_account"] == "u1", "{closed}");

    let two = rp("/rp2.html")?;
    show(&s, &two.url).await?;
    s.policy("must_respond", 5).await?;
    covered(&s.browser.runtime, &two.url).await?;
    s.page.click("#b").await?;
    let call = s.held(1).await?.remove(0);
    s.answer(&call, true).await?;
    titled(&s, "error NetworkError").await?;
    ensure!(two.idp.asserted.lock().unwrap().is_empty(), "the watchdog posts nothing");
    let by = s.closed_by("sign_in", 4).await?;
    ensure!(by.last().is_some_and(|b| b == "watchdog"), "{by:?}");
    Ok(())
}

/// A refusal and the default never reach the provider, even where the answerer covers the
/// page (the page cannot make the hook let its call through when no pick is coming); a
/// rule without an account leaves it to the browser; with the pilot off a picking rule
/// picks nothing and the record says pilot_off.
#[tokio::test(flavor = "multi_thread")]
async fn refused_default_and_pilot_off_pick_nothing_and_a_refusal_never_reaches_the_provider() -> Result<()> {
    let s = session().await?;
    let one = rp("/rp1.html")?;
    show(&s, &one.url).await?;
    s.enable_pilot().await?;
    // The page is covered (the hook wants FedCM seen), and no pick is coming.
    let runtime = &s.browser.runtime;
    answerer_hook(runtime, json!({"op": "want", "accounts": true})).await?;
    covered(runtime, &one.url).await?;
    // The default refuses it though the page is covered: the page cannot get its call
    // through by asking, only a pick coming (the host's own decision) lets it through.
    s.page.click("#b").await?;
    titled(&s, "error NetworkError").await?;
    rule(&s, json!({"accept": false})).await?;
    s.page.eval("document.title = 'rp'").await?;
    s.page.click("#b").await?;
    titled(&s, "error NetworkError").await?;
    s.host_caught_up().await?;
    ensure!(one.idp.asked.lock().unwrap().is_empty(), "the provider was asked: {:?}", one.idp.asked.lock().unwrap());
    let by: Vec<String> = s.closed_records("sign_in", 2).await?.iter().map(|r| r["decided_by"].to_string()).collect();
    ensure!(by == ["\"default_policy\"", "\"rule\""], "{by:?}");
    answerer_hook(runtime, json!({"op": "want"})).await?;

    // Left to the browser: the browser's own (headless: its NetworkError after its delay).
    let two = rp("/rp2.html")?;
    show(&s, &two.url).await?;
    rule(&s, json!({"accept": true})).await?;
    s.page.click("#b").await?;
    let r = eventually(LIMIT, "the rule's record", || async {
        let recs = s.closed_records("sign_in", 1).await?;
        Ok(recs.into_iter().find(|r| r["url"] == two.url.as_str()))
    })
    .await?;
    ensure!(r["decided_by"] == "rule" && r["accepted"] == true && r["accounts"].is_null(), "{r}");

    // Pilot off with a picking rule set: nothing picked, the browser's own way.
    let three = rp("/rp3.html")?;
    show(&s, &three.url).await?;
    rule(&s, json!({"account_id": "u1"})).await?;
    s.pilot_command("off")?;
    s.page.click("#b").await?;
    let r = eventually(LIMIT, "the pilot-off record", || async {
        let d = s.dialogs().await?;
        let recs = d["recent_dialogs"].as_array().cloned().unwrap_or_default();
        Ok(recs.into_iter().find(|r| r["type"] == "sign_in" && r["url"] == three.url.as_str()))
    })
    .await?;
    ensure!(r["decided_by"] == "pilot_off" && r["picked_account"].is_null(), "{r}");
    s.host_caught_up().await?;
    ensure!(three.idp.asserted.lock().unwrap().is_empty(), "nothing picked with the pilot off");
    Ok(())
}

/// In a remote browser behind the WS-only proxy (`unmodal mcp --cdp-endpoint`): a rule's
/// pick, then the agent's under must_respond, over the bridge's connection.
#[tokio::test(flavor = "multi_thread")]
async fn behind_the_proxy_a_rule_and_the_agent_pick_an_account() -> Result<()> {
    use super::remote::{Remote, Via};
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let one = rp("/rp1.html")?;
    let page = r.browser.new_page(&one.url).await?;
    let tab = r.tab_of(&one.url).await?;
    r.rule(json!({"dialog_type": "sign_in", "account_id": "u2", "tab_id": tab})).await?;
    let runtime = r.runtime.path();
    covered(runtime, &one.url).await?;
    page.click("#b").await?;
    let title =
        || async { Ok::<_, anyhow::Error>(page.eval("document.title").await?.as_str().unwrap_or_default().to_owned()) };
    let got = eventually(LIMIT, "the rule's pick reached the page", || async {
        Ok((title().await? == "token token-for-u2").then_some(()))
    })
    .await;
    ensure!(got.is_ok(), "the page's title: {:?}", title().await);
    ensure!(*one.idp.asserted.lock().unwrap() == ["u2"]);

    let two = rp("/rp2.html")?;
    page.goto(&two.url).await?;
    r.tab_of(&two.url).await?;
    let v = r
        .agent
        .ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60, "tab_id": tab}))
        .await?;
    ensure!(v["policy_in_force"] == true, "{v}");
    covered(runtime, &two.url).await?;
    page.click("#b").await?;
    let call = r.held(tab).await?;
    r.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": call["dialog_id"], "accept": true})).await?;
    let chooser = eventually(LIMIT, "the account chooser held", || async {
        let held = r.held(tab).await?;
        Ok((held["dialog_id"] != call["dialog_id"]).then_some(held))
    })
    .await?;
    r.agent
        .ok("interact", json!({"action": "handle_dialog", "dialog_id": chooser["dialog_id"], "account_id": "u1"}))
        .await?;
    let got = eventually(LIMIT, "the agent's pick reached the page", || async {
        Ok((title().await? == "token token-for-u1").then_some(()))
    })
    .await;
    ensure!(got.is_ok(), "the page's title: {:?}", title().await);
    ensure!(*two.idp.asserted.lock().unwrap() == ["u1"]);
    Ok(())
}
