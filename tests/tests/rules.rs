//! The agent's rules answer real dialogs in a real page, and the host records each one.

use serde_json::json;
use unmodal_e2e::Session;

const PAGE: &str = "<!doctype html><title>rules</title><p>rules</p>";

#[tokio::test(flavor = "multi_thread")]
async fn confirm_rule_answers_once_then_default_policy() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/rules", PAGE).await?;

    let set = s
        .agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true}))
        .await?;
    assert_eq!(set["status"], "configured");
    assert_eq!(set["tab"]["url"], url.as_str());
    assert_eq!(set["rules_in_force"], true, "{set}");

    assert_eq!(s.page_value("confirm('Delete?')").await?, json!(true));
    let d = s.last_dialog(1).await?;
    assert_eq!(d["type"], "confirm");
    assert_eq!(d["message"], "Delete?");
    assert_eq!(d["url"], url.as_str());
    assert_eq!(d["accepted"], true);
    assert_eq!(d["decided_by"], "rule");
    assert_eq!(d["rule_id"], set["rule_id"]);
    assert!(d["timestamp"].as_str().is_some_and(|t| t.contains('T')), "{d}");

    // once: the rule is spent, the default policy answers the next confirm.
    assert_eq!(s.page_value("confirm('Again?')").await?, json!(false));
    let d = s.last_dialog(2).await?;
    assert_eq!((d["decided_by"].as_str(), d["accepted"].as_bool()), (Some("default_policy"), Some(false)));
    let status = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(status["auto_responses"], json!([]), "{status}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_rule_returns_its_text_and_alert_rule_closes() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/rules", PAGE).await?;

    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "Ada Lovelace"}),
        )
        .await?;
    assert_eq!(s.page_value("prompt('Your name?', 'anonymous')").await?, json!("Ada Lovelace"));
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("prompt"), Some("rule")));
    assert_eq!(d["response_text"], "Ada Lovelace");
    assert_eq!(d["default_text"], "anonymous");

    // Accepted without text: the empty string, not the page's default.
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "accept": true}))
        .await?;
    assert_eq!(s.page_value("prompt('Again?', 'anonymous')").await?, json!(""));

    // A dismissing rule: confirm false, prompt null, for every dialog until cleared.
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "all", "accept": false, "once": false}),
        )
        .await?;
    for _ in 0..3 {
        assert_eq!(s.page_value("[confirm('a'), prompt('b')]").await?, json!([false, null]));
    }
    let cleared = s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "clear": true})).await?;
    assert_eq!(cleared["removed"], 1, "{cleared}");

    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert"})).await?;
    assert_eq!(s.page_value("alert('Saved'), 'after'").await?, json!("after"));
    let d = s.last_dialog(9).await?;
    assert_eq!(
        (d["type"].as_str(), d["decided_by"].as_str(), d["message"].as_str()),
        (Some("alert"), Some("rule"), Some("Saved"))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn default_policy_without_rules() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/rules", PAGE).await?;
    let v = s.page_value("const a = alert('hi'); [a === undefined, confirm('sure?'), prompt('name?', 'x')]").await?;
    assert_eq!(v, json!([true, false, null]));
    s.last_dialog(3).await?;
    let d = s.dialogs().await?;
    let recent = d["recent_dialogs"].as_array().unwrap();
    let summary: Vec<_> =
        recent.iter().map(|r| (r["type"].as_str(), r["accepted"].as_bool(), r["decided_by"].as_str())).collect();
    assert_eq!(
        summary,
        vec![
            (Some("alert"), Some(true), Some("default_policy")),
            (Some("confirm"), Some(false), Some("default_policy")),
            (Some("prompt"), Some(false), Some("default_policy")),
        ]
    );
    assert!(recent[1]["explanation"].as_str().unwrap().contains("no auto-response matched"), "{d}");
    // Non-string messages are converted as the browser converts them.
    assert_eq!(s.page_value("confirm({ toString() { return 'obj' } }), confirm(42), 1").await?, json!(1));
    let d = s.last_dialog(5).await?;
    assert_eq!(d["message"], "42");
    Ok(())
}
