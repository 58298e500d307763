//! Rules narrowed by message or URL: accept "Delete project alpha?" and refuse the rest.

use serde_json::json;
use unmodal_e2e::Session;

#[tokio::test(flavor = "multi_thread")]
async fn most_specific_matching_rule_wins_and_is_named() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/match/projects", "<!doctype html><title>match</title>").await?;
    let set = s
        .agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false,
                   "match": {"message_contains": "Project ALPHA"}}),
        )
        .await?;
    assert_eq!(set["match"], json!({"message_contains": "Project ALPHA"}));
    // A catch-all refusal beside it: the narrower rule still wins for alpha.
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "all", "accept": false, "once": false}),
        )
        .await?;
    assert_eq!(
        s.page_value("[confirm('Delete project alpha?'), confirm('Delete project beta?')]").await?,
        json!([true, false])
    );
    let all = s.last_dialog(2).await.and(s.dialogs().await)?;
    let (alpha, beta) = (&all["recent_dialogs"][0], &all["recent_dialogs"][1]);
    assert_eq!(alpha["rule_id"], set["rule_id"]);
    assert!(alpha["explanation"].as_str().unwrap().contains(r#"message contains "Project ALPHA""#), "{alpha}");
    assert_ne!(beta["rule_id"], set["rule_id"]);
    assert_eq!(beta["decided_by"], "rule");

    // URL conditions: only pages whose URL contains the text.
    let call = |text: &str, url: &str| {
        json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": text, "once": false,
               "match": {"url_contains": url}})
    };
    s.agent.ok("interact", call("here", "/MATCH/")).await?;
    s.agent.ok("interact", call("elsewhere", "/other/")).await?;
    assert_eq!(s.page_value("prompt('Name?')").await?, json!("here"));
    // Invalid conditions are refused, naming the field.
    match s.agent.call("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert", "match": {"message_contains": ""}})).await? {
        unmodal_e2e::Reply::Failed(v) => assert_eq!(v["error"]["param"], "match.message_contains"),
        other => panic!("expected invalid_params, got {other:?}"),
    }
    Ok(())
}
