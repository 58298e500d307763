//! Parts of Unmodal stop and start again while the agent works: the host killed, the
//! extension's service worker stopped by the browser, `unmodal mcp` restarted, two MCP
//! clients at once. Rules, policies and the history come back; nothing answered is lost.

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use unmodal_e2e::{Agent, Session, eventually};

const PAGE: &str = "<!doctype html><title>work</title><p>work</p>";

/// A session with the pilot on, a rule that accepts every confirm, and some history.
async fn working_session() -> anyhow::Result<Session> {
    let (s, _) = Session::with_pilot("/work", PAGE).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    assert_eq!(s.page_value("[confirm('one?'), alert('two'), prompt('three?')]").await?, json!([true, null, null]));
    s.last_dialog(3).await?;
    Ok(s)
}

fn host_pid(tabs: &Value) -> Value {
    tabs["browsers"][0]["browser"]["host_pid"].clone()
}

/// Waits until a host other than `old` answers with the rule and the three dialogs of
/// `working_session`; returns how long that took.
async fn state_is_back(s: &Session, old: &Value) -> anyhow::Result<Duration> {
    let start = Instant::now();
    eventually(Duration::from_secs(15), "a new host with the old state", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        if host_pid(&tabs) == *old || host_pid(&tabs).is_null() || tabs["pilot_enabled"] != true {
            return Ok(None);
        }
        let d = s.dialogs().await?;
        let messages: Vec<_> = d["recent_dialogs"].as_array().into_iter().flatten().map(|r| &r["message"]).collect();
        let back = d["auto_responses"][0]["dialog_type"] == "confirm"
            && messages.starts_with(&[&json!("one?"), &json!("two"), &json!("three?")]);
        Ok(back.then_some(()))
    })
    .await?;
    Ok(start.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_host_is_replaced_and_its_state_comes_back() -> anyhow::Result<()> {
    let s = working_session().await?;
    let old = host_pid(&s.agent.ok("observe", json!({"what": "tabs"})).await?);
    let st = std::process::Command::new("kill").args(["-9", &old.to_string()]).status()?;
    anyhow::ensure!(st.success(), "could not kill host {old}");
    // While no host runs, the page keeps its rules, and what it reports waits.
    assert_eq!(s.page_value("confirm('while away?')").await?, json!(true));
    let took = state_is_back(&s, &old).await;
    eprintln!("host killed -> state back: {took:?}");
    took?;
    let d = s.last_dialog(4).await?;
    assert_eq!((d["message"].as_str(), d["decided_by"].as_str()), (Some("while away?"), Some("rule")), "{d}");
    assert_eq!(s.page_value("confirm('after?')").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_service_worker_comes_back_with_everything_in_force() -> anyhow::Result<()> {
    let s = working_session().await?;
    let old = host_pid(&s.agent.ok("observe", json!({"what": "tabs"})).await?);
    let start = Instant::now();
    s.stop_worker().await?;
    // The page still has its rules; its report wakes the worker, which starts a new host.
    assert_eq!(s.page_value("confirm('wakes it?')").await?, json!(true));
    state_is_back(&s, &old).await?;
    eprintln!("service worker stopped -> state back: {:?}", start.elapsed());
    let d = s.last_dialog(4).await?;
    assert_eq!((d["message"].as_str(), d["decided_by"].as_str()), (Some("wakes it?"), Some("rule")), "{d}");
    assert_eq!(s.page_value("confirm('after?')").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dialog_held_for_the_agent_survives_a_stopped_service_worker() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/work", PAGE).await?;
    s.policy("must_respond", 60).await?;
    s.page_later("window.got = confirm('Still here?')").await?;
    let id = s.held(1).await?[0]["dialog_id"].clone();
    let old = host_pid(&s.agent.ok("observe", json!({"what": "tabs"})).await?);
    let start = Instant::now();
    s.stop_worker().await?;
    // The dialog blocks the page, so nothing there wakes the worker; the agent's call does
    // not either (it goes to the host, which is gone). The browser starts the worker again
    // for its next event; the debugger session's events are such events, so does a tab
    // change. Wait for a new host that still lists the same dialog, with its watchdog.
    let back = eventually(Duration::from_secs(15), "a new host still holding the dialog", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        let held = &tabs["dialogs_blocking"]["dialogs"][0];
        let new_host = host_pid(&tabs) != old && !host_pid(&tabs).is_null();
        Ok((new_host && held["dialog_id"] == id).then(|| held.clone()))
    })
    .await;
    eprintln!("service worker stopped with a dialog held -> listed by the new host: {:?}", start.elapsed());
    let held = match back {
        Ok(held) => held,
        Err(e) => {
            let now = s.agent.call("observe", json!({"what": "dialogs"})).await;
            return Err(e.context(format!("observe now: {now:?}\nbrowser and host log:\n{}", s.browser.log_tail())));
        }
    };
    let left = held["watchdog_in_s"].as_f64().unwrap_or_default();
    assert!(left > 30.0 && left <= 60.0, "the watchdog goes on where it was: {held}");
    let v = s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    assert_eq!(v["agent_answer_applied"], true, "{v}");
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    let d = s.last_dialog_where(1, |d| d["state"] == "closed").await?;
    assert_eq!((d["dialog_id"].clone(), d["closed_by"].as_str()), (id, Some("agent")), "{d}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn two_agents_share_one_state_and_a_restarted_one_finds_it() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/work", PAGE).await?;
    let other = Agent::start(&s.browser.art.host, &s.browser.runtime).await?;
    // One sets up, the other sees it.
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "A"}))
        .await?;
    let seen = other.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(seen["auto_responses"][0]["text"], "A", "{seen}");
    // A dialog held for the agents: the second answers, the first sees who did.
    s.policy("must_respond", 60).await?;
    s.page_later("window.got = confirm('Which of you?')").await?;
    let held = s.held(1).await?;
    let id = held[0]["dialog_id"].clone();
    let v = other.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    assert_eq!(v["agent_answer_applied"], true);
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    let d = s.last_dialog_where(1, |d| d["state"] == "closed").await?;
    assert_eq!((d["dialog_id"].clone(), d["closed_by"].as_str()), (id, Some("agent")));
    // `unmodal mcp` restarted: same state.
    other.close().await?;
    let again = Agent::start(&s.browser.art.host, &s.browser.runtime).await?;
    let v = again.ok("observe", json!({"what": "dialogs"})).await?;
    assert_eq!(v["recent_dialogs"][0]["message"], "Which of you?");
    assert_eq!(v["dialog_policy"]["policy"], "must_respond");
    again.close().await
}

/// How the host goes away under a tab with an `automatic-downloads` grant.
#[derive(Clone, Copy, Debug)]
enum HostGoes {
    /// Killed: the service worker stays and starts a new host.
    Killed,
    /// Its service worker stopped (which ends the host): a new worker and a new host.
    WorkerStopped,
}

/// Permission rules live in the host's memory only, so a new host has no grant. The
/// browser's setting the old one had the worker make must not outlive it: the new host's
/// config is the truth, and a batch of three downloads goes the browser's own way.
async fn a_grant_the_new_host_forgot_is_not_in_force(how: HostGoes) -> anyhow::Result<()> {
    use super::config_clear::{batch_page, downloads_setting, only_the_first_is_saved};
    let dir = tempfile::tempdir()?;
    let prefs = json!({"download": {"default_directory": dir.path(), "prompt_for_download": false}});
    let s =
        Session::start_with(unmodal_e2e::browser::Options { preferences: Some(prefs), ..Default::default() }).await?;
    let url = batch_page(&s.web);
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    s.enable_pilot().await?;
    let grant = json!({"action": "handle_dialog", "setup": true, "dialog_type": "permission",
                       "permission": "automatic-downloads", "once": false});
    assert_eq!(s.agent.ok("interact", grant).await?["rules_in_force"], true);
    assert_eq!(downloads_setting(&s, &url).await?, "allow", "the grant is the site's setting");
    let old = host_pid(&s.agent.ok("observe", json!({"what": "tabs"})).await?);
    match how {
        HostGoes::Killed => {
            let st = std::process::Command::new("kill").args(["-9", &old.to_string()]).status()?;
            anyhow::ensure!(st.success(), "could not kill host {old}");
        }
        HostGoes::WorkerStopped => {
            s.stop_worker().await?;
            // A dialog report wakes it (nothing else in the page would).
            s.page_value("confirm('wakes it?')").await?;
        }
    }
    eventually(Duration::from_secs(15), "a new host without the grant", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        if host_pid(&tabs) == old || host_pid(&tabs).is_null() || tabs["pilot_enabled"] != true {
            return Ok(None);
        }
        let rules = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
        Ok((rules["auto_responses"] == json!([])).then_some(()))
    })
    .await?;
    // Nothing here may change the tab's config (any new config would drop the grant): the
    // new host's word alone has to.
    let setting = eventually(Duration::from_secs(15), "the site's setting back to the browser's", || async {
        let v = downloads_setting(&s, &url).await?;
        Ok((v != "allow").then_some(v))
    })
    .await;
    if let Err(e) = setting {
        eprintln!("{e}: clicking anyway, to show what the page gets");
    }
    only_the_first_is_saved(&s, &s.page, dir.path(), &format!("its host ({how:?})")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_grant_goes_with_a_killed_host() -> anyhow::Result<()> {
    a_grant_the_new_host_forgot_is_not_in_force(HostGoes::Killed).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_grant_goes_with_a_stopped_service_worker() -> anyhow::Result<()> {
    a_grant_the_new_host_forgot_is_not_in_force(HostGoes::WorkerStopped).await
}
