//! must_respond: a dialog no rule answers stays open (held by the extension's debugger
//! session) until the agent answers it; the page gets exactly that answer. Also the
//! watchdog, several held dialogs, and `observe` answering while the page is blocked.

use anyhow::Context;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use unmodal_e2e::{Reply, Session, eventually};

const PAGE: &str = "<!doctype html><title>form</title><p id=p>form</p>";

async fn held_session(timeout_s: u32) -> anyhow::Result<Session> {
    let (s, _) = Session::with_pilot("/form", PAGE).await?;
    s.policy("must_respond", timeout_s).await?;
    Ok(s)
}

/// Answers the one held dialog as the agent; returns the tool's answer.
async fn answer(s: &Session, args: Value) -> anyhow::Result<Value> {
    let mut a = json!({"action": "handle_dialog"});
    a.as_object_mut().unwrap().extend(args.as_object().cloned().unwrap_or_default());
    s.agent.ok("interact", a).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_prompt_returns_exactly_the_agents_text() -> anyhow::Result<()> {
    let s = held_session(60).await?;
    s.page_later("window.got = prompt('Your name?', 'anonymous')").await?;
    let held = s.held(1).await?;
    assert_eq!((held[0]["type"].as_str(), held[0]["message"].as_str()), (Some("prompt"), Some("Your name?")));
    assert!(s.page_blocked().await, "the page must wait for the agent");
    // The pending record has what the agent needs to decide.
    let d = s.dialogs().await?;
    let p = &d["pending_dialogs"][0];
    assert_eq!((p["state"].as_str(), p["default_text"].as_str()), (Some("open"), Some("anonymous")), "{d}");
    assert_eq!(p["decided_by"], "agent");
    assert!(d["dialogs_blocking"]["message"].as_str().unwrap().contains("dialog_id"), "{d}");

    let v = answer(&s, json!({"accept": true, "text": "Ada Lovelace"})).await?;
    assert_eq!(v["status"], "dismissed");
    assert_eq!(v["agent_answer_applied"], true);
    assert_eq!(
        (v["dialog"]["closed_by"].as_str(), v["dialog"]["response_text"].as_str()),
        (Some("agent"), Some("Ada Lovelace"))
    );
    assert!(v.get("dialogs_blocking").is_none(), "answered, nothing blocks: {v}");
    assert_eq!(s.page.eval("window.got").await?, json!("Ada Lovelace"));
    let r = s.last_dialog(1).await?;
    assert_eq!(
        (r["state"].as_str(), r["closed_by"].as_str(), r["accepted"].as_bool()),
        (Some("closed"), Some("agent"), Some(true))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_confirm_returns_true_then_false() -> anyhow::Result<()> {
    let s = held_session(60).await?;
    for (accept, n) in [(true, 1), (false, 2)] {
        s.page_later("window.got = confirm('Delete the project?')").await?;
        let held = s.held(1).await?;
        assert_eq!(held[0]["type"], "confirm");
        answer(&s, json!({"accept": accept})).await?;
        assert_eq!(s.page.eval("window.got").await?, json!(accept));
        let r = s.last_dialog(n).await?;
        assert_eq!((r["closed_by"].as_str(), r["accepted"].as_bool()), (Some("agent"), Some(accept)), "{r}");
    }
    // An alert too: it blocks until answered, and returns undefined.
    s.page_later("window.got = alert('Saved') === undefined").await?;
    s.held(1).await?;
    answer(&s, json!({})).await?;
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn two_held_dialogs_need_their_dialog_id() -> anyhow::Result<()> {
    let s = held_session(60).await?;
    // A second tab under the same policy.
    let url = s.web.page("/other", "<!doctype html><title>other</title>", &[]);
    let other = s.browser.new_page(&url).await?;
    other.bring_to_front().await?;
    s.agent.wait_for_tab(&url).await?;
    s.policy("must_respond", 60).await?;

    s.page_later("window.got = confirm('Pay the invoice?')").await?;
    other.eval("setTimeout(() => { window.got = confirm('Cancel the order?') }, 0); 0").await?;
    let held = s.held(2).await?;
    let id_of = |m: &str| held.iter().find(|d| d["message"] == m).and_then(|d| d["dialog_id"].as_u64()).unwrap();
    let (pay, cancel) = (id_of("Pay the invoice?"), id_of("Cancel the order?"));

    match s.agent.call("interact", json!({"action": "handle_dialog", "accept": true})).await? {
        Reply::Failed(v) => {
            assert_eq!(v["error"]["code"], "several_dialogs_pending", "{v}");
            let m = v["error"]["message"].as_str().unwrap();
            assert!(m.contains(&format!("dialog_id {pay}")) && m.contains(&format!("dialog_id {cancel}")), "{m}");
            assert_eq!(v["error"]["dialogs_blocking"]["dialogs"].as_array().map(Vec::len), Some(2), "{v}");
        }
        other => anyhow::bail!("an answer without dialog_id must be refused: {other:?}"),
    }
    answer(&s, json!({"dialog_id": cancel, "accept": false})).await?;
    answer(&s, json!({"dialog_id": pay, "accept": true})).await?;
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    assert_eq!(other.eval("window.got").await?, json!(false));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watchdog_dismisses_an_unanswered_dialog() -> anyhow::Result<()> {
    let s = held_session(1).await?;
    let start = Instant::now();
    s.page_later("window.got = prompt('Anyone there?', 'x')").await?;
    s.held(1).await?;
    let r = s.last_dialog_where(1, |r| r["state"] == "closed").await?;
    assert!(start.elapsed() >= Duration::from_millis(900), "closed too early: {:?}", start.elapsed());
    assert_eq!((r["closed_by"].as_str(), r["accepted"].as_bool()), (Some("watchdog"), Some(false)), "{r}");
    assert_eq!(s.page.eval("window.got").await?, json!(null));
    // Too late for the agent now: nothing is pending, and it is told so.
    let v = answer(&s, json!({"accept": true})).await?;
    assert_eq!(v["status"], "no_pending_dialog", "{v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn observe_and_other_tabs_keep_answering_while_a_dialog_is_held() -> anyhow::Result<()> {
    let s = held_session(60).await?;
    let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    let first = tabs["tracked_tab"].as_i64().unwrap();
    let url = s.web.page("/other", "<!doctype html><title>other</title>", &[]);
    let other = s.browser.new_page(&url).await?;
    s.page_later("window.got = confirm('Held?')").await?;
    s.held(1).await?;
    let second = s.agent.wait_for_tab_listed(&url).await?;
    // Each answers (a held dialog must not hold the host); how fast is the bench's figure.
    for _ in 0..20 {
        let call = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": first}));
        let d = tokio::time::timeout(Duration::from_secs(10), call).await.context("observe hung")??;
        assert_eq!(d["pending_dialogs"][0]["state"], "open");
    }
    // Another tab is not held: a rule set up there works as ever.
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "tab_id": second}))
        .await?;
    assert_eq!(other.eval("confirm('Other tab?')").await?, json!(true));
    // Every answer, errors included, names the held dialog.
    match s.agent.call("interact", json!({"action": "handle_dialog", "tab_id": 999_999})).await? {
        Reply::Failed(v) => assert_eq!(v["error"]["dialogs_blocking"]["dialogs"][0]["message"], "Held?", "{v}"),
        o => anyhow::bail!("{o:?}"),
    }
    match s
        .agent
        .call("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 0}))
        .await?
    {
        Reply::Failed(v) => {
            assert_eq!(v["error"]["param"], "timeout_s", "{v}");
            assert_eq!(v["error"]["dialogs_blocking"]["dialogs"][0]["message"], "Held?", "{v}");
        }
        o => anyhow::bail!("{o:?}"),
    }
    answer(&s, json!({"accept": true})).await?;
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_accept_and_auto_dismiss_answer_at_once_and_say_so() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/form", PAGE).await?;
    s.policy("auto_accept", 10).await?;
    assert_eq!(s.page_value("[confirm('a'), prompt('b', 'def')]").await?, json!([true, ""]));
    let r = s.last_dialog(2).await?;
    assert_eq!((r["decided_by"].as_str(), r["closed_by"].as_str()), (Some("policy"), Some("policy")), "{r}");
    s.policy("auto_dismiss", 10).await?;
    assert_eq!(s.page_value("[confirm('a'), prompt('b', 'def')]").await?, json!([false, null]));
    // Rules still come first.
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm"})).await?;
    assert_eq!(s.page_value("confirm('c')").await?, json!(true));
    s.policy("auto", 10).await?;
    assert_eq!(s.page_value("[confirm('a'), prompt('b', 'def')]").await?, json!([false, null]));
    let r = s.last_dialog(7).await?;
    assert_eq!(r["decided_by"], "default_policy", "{}", s.dialogs().await?["recent_dialogs"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_a_policy_waits_for_the_human() -> anyhow::Result<()> {
    let s = Session::start().await?;
    s.open("/form", PAGE, &[]).await?;
    let v = s.agent.ok("configure", json!({"action": "dialog_policy", "policy": "must_respond"})).await?;
    assert_eq!((v["policy_in_force"].as_bool(), v["pilot_enabled"].as_bool()), (Some(false), Some(false)), "{v}");
    assert!(v["warning"].as_str().unwrap().contains("popup"), "{v}");
    // No debugger session: the browser's own dialog, answered by the test as a human would.
    match s.page_call("confirm('Human?')", "").await? {
        unmodal_e2e::PageCall::NativeDialog { kind, .. } => assert_eq!(kind, "confirm"),
        other => anyhow::bail!("expected the native dialog: {other:?}"),
    }
    assert!(s.agent.ok("observe", json!({"what": "tabs"})).await?.get("dialogs_blocking").is_none());
    // The human switches the pilot on: the stored policy applies.
    s.enable_pilot().await?;
    s.page_later("window.got = confirm('Held now?')").await?;
    s.held(1).await?;
    answer(&s, json!({"accept": true})).await?;
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dialog_closed_outside_unmodal_is_recorded_as_remote() -> anyhow::Result<()> {
    let s = held_session(60).await?;
    s.page_later("window.got = confirm('Who answers?')").await?;
    s.held(1).await?;
    // Another DevTools client (here the test, as a human or another tool would) answers it.
    s.page.call("Page.handleJavaScriptDialog", json!({"accept": true})).await?;
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    let r = s.last_dialog_where(1, |r| r["state"] == "closed").await?;
    assert_eq!((r["closed_by"].as_str(), r["decided_by"].as_str()), (Some("remote"), Some("remote")), "{r}");
    let v = answer(&s, json!({"accept": false})).await?;
    assert_eq!(v["status"], "no_pending_dialog", "nothing is left to answer: {v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn if_the_host_dies_a_held_dialog_is_let_go_and_the_policy_comes_back() -> anyhow::Result<()> {
    let s = held_session(600).await?;
    let pid = s.agent.ok("observe", json!({"what": "tabs"})).await?["browsers"][0]["browser"]["host_pid"].clone();
    // A second dialog right after the first must not be left open either.
    s.page_later("window.got = [confirm('Orphan?'), confirm('Orphan too?')]").await?;
    s.held(1).await?;
    let st = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status()?;
    anyhow::ensure!(st.success(), "could not kill host {pid}");
    // Nobody can answer any more: the service worker dismisses it at once (well before the
    // 600 s watchdog, which is what a deadline far below it shows).
    let got = tokio::time::timeout(Duration::from_secs(20), s.page.eval("window.got")).await??;
    assert_eq!(got, json!([false, false]));
    // The browser starts a new host, which takes over the old one's state: the policy is in
    // force again and the history is there.
    let start = Instant::now();
    eventually(Duration::from_secs(10), "a new host with the old state in force", || async {
        let v = s.dialogs().await?;
        let back = v["dialog_policy"]["policy"] == "must_respond"
            && v["dialog_policy"]["in_force"] == true
            && v["recent_dialogs"].as_array().is_some_and(|r| r.iter().any(|d| d["message"] == "Orphan?"));
        Ok(back.then_some(()))
    })
    .await?;
    eprintln!("host killed -> old state in force again: {:?}", start.elapsed());
    let orphan = s.last_dialog_where(1, |d| d["message"] == "Orphan?" && d["state"] == "closed").await?;
    assert_eq!(
        (orphan["closed_by"].as_str(), orphan["accepted"].as_bool()),
        (Some("default_policy"), Some(false)),
        "{orphan}"
    );
    s.page_later("window.again = confirm('Held again?')").await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["message"], "Held again?");
    answer(&s, json!({"accept": true})).await?;
    assert_eq!(s.page.eval("window.again").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_set_right_after_a_rule_fired_is_the_one_in_force() -> anyhow::Result<()> {
    // A once-rule spent by the page makes the host send the tab's rules again (with the
    // policy of that moment) while the agent's policy change may already be on its way.
    let (s, _) = Session::with_pilot("/form", PAGE).await?;
    for i in 0..8 {
        let accept = i % 2 == 0;
        s.agent
            .ok(
                "interact",
                json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": !accept}),
            )
            .await?;
        assert_eq!(s.page_value("confirm('rule')").await?, json!(!accept), "round {i}");
        s.policy(if accept { "auto_accept" } else { "auto_dismiss" }, 10).await?;
        let got = s.page_value("confirm('policy')").await?;
        if got != json!(accept) {
            anyhow::bail!("round {i}: the policy just set must answer, got {got}: {}", s.dialogs().await?);
        }
    }
    Ok(())
}
