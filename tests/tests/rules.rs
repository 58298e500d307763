//! The agent's rules answer real dialogs in a real page, and the host records each one.

use serde_json::json;
use unmodal_e2e::Session;

const PAGE: &str = "<!doctype html><title>rules</title><p>rules</p>";

#[tokio::test(flavor = "multi_thread")]
async fn confirm_rule_answers_once_then_default_policy() -> anyhow::Result<()> {
    let s = Session::start().await?;
    let url = s.open("/rules", PAGE, &[]).await?;
    s.enable_pilot().await?;

    let set = s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true})).await?;
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
    assert!(
        d["timestamp"].as_str().is_some_and(|t| t.contains('T')),
        "{d}"
    );

    // once: the rule is spent, the default policy answers the next confirm.
    assert_eq!(s.page_value("confirm('Again?')").await?, json!(false));
    let d = s.last_dialog(2).await?;
    assert_eq!(
        (d["decided_by"].as_str(), d["accepted"].as_bool()),
        (Some("default_policy"), Some(false))
    );
    let status = s
        .agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "status": true}),
        )
        .await?;
    assert_eq!(status["auto_responses"], json!([]), "{status}");
    Ok(())
}
