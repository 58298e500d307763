//! The MCP surface as an agent meets it: the response shapes docs/tools.md documents, errors
//! that name what is wrong and change nothing, and a clear answer when no browser is there.

use serde_json::json;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::{Agent, Reply, Session};

#[tokio::test(flavor = "multi_thread")]
async fn without_a_browser_every_tool_says_extension_not_connected() -> anyhow::Result<()> {
    let art = Artifacts::find()?;
    let empty = unmodal_e2e::private_dir("unmodal-rt-")?;
    let agent = Agent::start(&art.host, empty.path()).await?;
    let mut names = agent.tool_names().await?;
    names.sort();
    assert_eq!(names, ["configure", "execute_javascript", "highlight_element", "interact", "manage_state", "observe"]);
    for (tool, args) in [
        ("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm"})),
        ("interact", json!({"action": "handle_dialog", "status": true})),
        ("observe", json!({"what": "dialogs"})),
        ("observe", json!({"what": "tabs"})),
        ("configure", json!({"action": "dialog_policy", "policy": "must_respond"})),
        ("execute_javascript", json!({"script": "1 + 1"})),
        ("highlight_element", json!({"selector": "#a"})),
        ("manage_state", json!({"action": "list"})),
    ] {
        match agent.call(tool, args).await? {
            Reply::Failed(v) if tool != "execute_javascript" => {
                assert_eq!(v["error"]["code"], "extension_not_connected", "{v}");
                assert!(v["error"]["message"].as_str().unwrap().contains("unmodal doctor"), "{v}");
            }
            // execute_javascript answers every failure as a result: {success: false, error, code}.
            Reply::Ok(v) if tool == "execute_javascript" => {
                assert_eq!(
                    (v["success"].as_bool(), v["code"].as_str()),
                    (Some(false), Some("extension_not_connected"))
                );
                assert!(v["error"].as_str().unwrap().contains("unmodal doctor"), "{v}");
            }
            other => panic!("{tool}: expected extension_not_connected, got {other:?}"),
        }
    }
    agent.close().await
}

#[tokio::test(flavor = "multi_thread")]
async fn status_no_pending_and_invalid_parameters() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/api", "<!doctype html><title>api</title>").await?;

    let status = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(status["status"], "ok");
    assert_eq!(status["pending_dialogs"], json!([]));
    assert_eq!(status["tab"]["url"], url.as_str());

    let none = s.agent.ok("interact", json!({"action": "handle_dialog", "accept": true})).await?;
    assert_eq!(none["status"], "no_pending_dialog");
    assert_eq!(
        none["message"],
        "No dialog is currently pending. Use setup=true to pre-configure auto-responses for future dialogs."
    );

    // A dialog the default policy answered is pending until the agent acknowledges it.
    assert_eq!(s.page_value("confirm('Leave?')").await?, json!(false));
    s.last_dialog(1).await?;
    let status = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(status["pending_dialogs"][0]["message"], "Leave?", "{status}");
    let ack = s.agent.ok("interact", json!({"action": "handle_dialog", "accept": false})).await?;
    assert_eq!(ack["status"], "dismissed");
    assert_eq!(ack["dialog"]["type"], "confirm");
    assert_eq!(ack["agent_answer_applied"], true);

    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "kept"}))
        .await?;
    let bad = [
        (json!({"action": "handle_dialog", "setup": true, "dialog_type": "popup"}), "dialog_type"),
        (json!({"action": "handle_dialog", "setup": true}), "dialog_type"),
        (json!({"action": "handle_dialog", "setup": "yes", "dialog_type": "alert"}), "setup"),
        (json!({"action": "handle_dialog", "tab_id": "first"}), "tab_id"),
        (json!({"action": "click"}), "action"),
        (json!({"setup": true}), "action"),
        (json!({"action": "handle_dialog", "once": false}), "once"),
    ];
    for (args, param) in bad {
        match s.agent.call("interact", args.clone()).await? {
            Reply::Failed(v) => {
                assert_eq!(v["error"]["code"], "invalid_params", "{args}: {v}");
                assert_eq!(v["error"]["param"], param, "{args}: {v}");
                assert!(v["error"]["message"].as_str().unwrap().contains(param), "{v}");
            }
            other => panic!("{args}: expected invalid_params, got {other:?}"),
        }
    }
    match s.agent.call("observe", json!({"what": "cookies"})).await? {
        Reply::Failed(v) => assert_eq!(v["error"]["param"], "what"),
        other => panic!("expected invalid_params, got {other:?}"),
    }
    match s.agent.call("interact", json!({"action": "handle_dialog", "status": true, "tab_id": 999_999})).await? {
        Reply::Failed(v) => assert_eq!(v["error"]["code"], "tab_not_found", "{v}"),
        other => panic!("expected tab_not_found, got {other:?}"),
    }
    // Nothing changed: the one rule set before the bad calls is still the only one.
    let status = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(status["auto_responses"].as_array().map(Vec::len), Some(1), "{status}");
    assert_eq!(status["auto_responses"][0]["text"], "kept");
    assert_eq!(s.page_value("prompt('still answered?')").await?, json!("kept"));
    Ok(())
}
