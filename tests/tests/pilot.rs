//! AI Web Pilot: off by default (dialogs observed, native behaviour kept); only a human
//! clicking the popup switch turns it on; the agent has no way to.

use serde_json::json;
use unmodal_e2e::{PageCall, Reply, Session};

const PAGE: &str = "<!doctype html><title>pilot</title>";

#[tokio::test(flavor = "multi_thread")]
async fn pilot_off_keeps_native_dialogs_and_reports_them_then_popup_click_turns_it_on() -> anyhow::Result<()> {
    let s = Session::start().await?;
    s.open("/pilot", PAGE, &[]).await?;
    let set =
        s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm"})).await?;
    assert_eq!(set["pilot_enabled"], false);
    assert!(set["warning"].as_str().unwrap().contains("popup"), "{set}");

    // Off: the browser's own dialog opens, and the page gets the human's answer.
    let call = s.page_call("prompt('Name?', 'x')", "typed by a human").await?;
    assert_eq!(
        call,
        PageCall::NativeDialog { kind: "prompt".into(), message: "Name?".into(), returned: json!("typed by a human") }
    );
    let d = s.last_dialog_where(1, |d| d["state"] == "closed").await?;
    assert_eq!((d["decided_by"].as_str(), d["closed_by"].as_str()), (Some("pilot_off"), Some("remote")));
    assert_eq!(d["response_text"], "typed by a human");
    assert_eq!(d["state"], "closed");

    // The agent cannot switch it on: there is no such parameter or tool.
    match s.agent.call("interact", json!({"action": "handle_dialog", "pilot": true})).await? {
        Reply::Failed(e) => assert_eq!(
            (e["error"]["code"].as_str(), e["error"]["param"].as_str()),
            (Some("invalid_params"), Some("pilot"))
        ),
        other => panic!("expected a parameter error, got {other:?}"),
    }
    match s.agent.call("configure", json!({"action": "pilot", "policy": "auto"})).await? {
        Reply::Failed(e) => assert_eq!(e["error"]["param"], "action", "{e}"),
        other => panic!("expected a parameter error, got {other:?}"),
    }
    let mut names = s.agent.tool_names().await?;
    names.sort();
    assert_eq!(names, ["configure", "execute_javascript", "highlight_element", "interact", "manage_state", "observe"]);

    // A human clicks the switch in the real popup: the stored rule now answers.
    s.enable_pilot().await?;
    assert_eq!(s.page_value("confirm('Delete?')").await?, json!(true));
    assert_eq!(s.last_dialog(2).await?["decided_by"], "rule");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_synthetic_click_on_the_switch_does_nothing() -> anyhow::Result<()> {
    let s = Session::start().await?;
    let popup = s.open_popup().await?;
    // A trusted click toggles the box and fires `change` before click() returns; a scripted
    // one must do neither.
    let after = popup
        .eval(
            "(() => { const box = document.querySelector('#pilot'); let changed = false; \
             box.addEventListener('change', () => { changed = true; }); box.click(); return [box.checked, changed]; })()",
        )
        .await?;
    assert_eq!(after, json!([false, false]));
    assert_eq!(popup.eval("chrome.storage.local.get('pilot').then((r) => r.pilot === true)").await?, json!(false));
    Ok(())
}
