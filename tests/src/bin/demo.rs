//! `cargo xtask demo`: headless Chromium with the Unmodal extension, the real host, and a
//! scripted agent session over MCP against a page that throws dialogs. Prints each step.

use anyhow::Result;
use serde_json::{Value, json};
use unmodal_e2e::{PageCall, Session, eventually};

const PAGE: &str = r#"<!doctype html><title>Projects</title>
<style>body{font:16px sans-serif;margin:2em} button{margin:.3em;padding:.5em 1em}</style>
<h1>Projects</h1>
<button id="delete">Delete project alpha</button>
<button id="rename">Rename project</button>
<button id="save">Save</button>
<button id="notify">Turn on notifications</button>
<button id="connect">Connect a USB device</button>
<p id="out">nothing yet</p>
<script>
  const out = (t) => (document.getElementById('out').textContent = t);
  document.getElementById('delete').onclick = () => out(confirm('Delete project alpha?') ? 'alpha deleted' : 'delete cancelled');
  document.getElementById('rename').onclick = () => out('renamed to ' + JSON.stringify(prompt('New name?', 'alpha')));
  document.getElementById('save').onclick = () => { alert('Saved!'); out('saved'); };
  document.getElementById('notify').onclick = () => Notification.requestPermission().then((r) => out('notifications: ' + r));
  document.getElementById('connect').onclick = () => navigator.usb.requestDevice({ filters: [] })
    .then((d) => out('device: ' + d.productName), (e) => out(e.name + ': ' + e.message));
</script>"#;

fn step(n: u32, text: &str) {
    println!("\n{n}. {text}");
}

fn show(label: &str, v: &Value) {
    println!("   {label}: {v}");
}

async fn click(s: &Session, id: &str) -> Result<Value> {
    // The page writes what happened into #out; clear it first, then wait for the new line.
    s.page.eval("document.getElementById('out').textContent = ''").await?;
    s.page.click(&format!("#{id}")).await?;
    eventually(std::time::Duration::from_secs(10), "the page's answer", || async {
        let out = s.page.eval("document.getElementById('out').textContent").await?;
        Ok((out != serde_json::json!("")).then_some(out))
    })
    .await
}

fn describe(d: &Value) -> String {
    format!(
        "{} \"{}\" -> accepted={} by {} ({})",
        d["type"].as_str().unwrap_or("?"),
        d["message"].as_str().unwrap_or(""),
        d["accepted"],
        d["decided_by"].as_str().unwrap_or("?"),
        d["explanation"].as_str().unwrap_or("")
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    println!("Unmodal demo: headless Chromium + extension + host + an MCP agent session");
    let s = Session::start().await?;
    println!("   Chromium started with the extension (service worker up); `unmodal mcp` connected");
    let url = s.open("/projects", PAGE, &[]).await?;
    println!("   page: {url}");

    step(1, "AI Web Pilot is off (the default): a dialog keeps its native behaviour and is only reported");
    let call = s
        .page_call("document.getElementById('delete').click(), document.getElementById('out').textContent", "")
        .await?;
    if let PageCall::NativeDialog { kind, message, returned } = &call {
        println!(
            "   the browser showed its own {kind} \"{message}\" (the demo answered it as a human would: OK) -> page: {returned}"
        );
    }
    let d = s.last_dialog_where(1, |d| d["state"] == "closed").await?;
    println!("   observe: {}", describe(&d));

    let e = s.agent.ok("execute_javascript", json!({"script": "document.title"})).await?;
    println!("   agent: execute_javascript -> success {}, {}: {}", e["success"], e["code"], e["error"]);

    step(2, "A person runs `unmodal pilot on` in a terminal (the only way in a browser a program controls)");
    s.enable_pilot().await?;
    println!("   pilot on");

    step(3, "Agent: interact {action: handle_dialog, setup: true, dialog_type: confirm, accept: true}");
    let r = s
        .agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true}))
        .await?;
    show("status", &r["status"]);
    show("message", &r["message"]);
    show("tab", &r["tab"]);
    println!("   agent clicks \"Delete project alpha\" -> page: {}", click(&s, "delete").await?);
    println!("   observe: {}", describe(&s.last_dialog(2).await?));

    step(4, "The rule was `once`: the next confirm gets the safe default (false)");
    println!("   agent clicks again -> page: {}", click(&s, "delete").await?);
    println!("   observe: {}", describe(&s.last_dialog(3).await?));

    step(5, "Agent pre-answers a prompt with text, then clicks \"Rename\"");
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "beta"}))
        .await?;
    println!("   page: {}", click(&s, "rename").await?);
    println!("   observe: {}", describe(&s.last_dialog(4).await?));

    step(6, "No rule for alert: the default policy closes it and the page goes on");
    println!("   page: {}", click(&s, "save").await?);
    println!("   observe: {}", describe(&s.last_dialog(5).await?));

    step(
        7,
        "Agent wants to read the next dialog before answering: configure {action: dialog_policy, policy: must_respond}",
    );
    let r = s.policy("must_respond", 30).await?;
    show("message", &r["message"]);
    s.page_later("document.getElementById('delete').click()").await?;
    let held = s.held(1).await?;
    println!("   agent clicks \"Delete project alpha\": the confirm stays open and the page waits");
    show("every answer now carries dialogs_blocking", &held[0]);
    let r = s
        .agent
        .ok("interact", json!({"action": "handle_dialog", "dialog_id": held[0]["dialog_id"], "accept": true}))
        .await?;
    show("agent answers accept", &json!({"status": r["status"], "closed_by": r["dialog"]["closed_by"]}));
    println!("   page: {}", s.page.eval("document.getElementById('out').textContent").await?);
    s.policy("auto", 10).await?;

    step(8, "Agent: interact {action: handle_dialog, status: true}");
    let r = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    show("pending_dialogs", &json!(r["pending_dialogs"].as_array().map_or(0, Vec::len)));
    show("auto_responses", &r["auto_responses"]);

    step(9, "AI Web Pilot tools: point at a button, read page state, save and restore the site's state");
    let r = s.agent.ok("highlight_element", json!({"selector": "#delete", "duration_ms": 2000})).await?;
    show("highlight_element #delete", &json!({"bounds": r["bounds"], "matched": r["matched"]}));
    let r = s
        .agent
        .ok("execute_javascript", json!({"script": "({out: document.getElementById('out').textContent, buttons: document.querySelectorAll('button').length})"}))
        .await?;
    show("execute_javascript", &r["result"]);
    let r = s.agent.ok("execute_javascript", json!({"script": "while (true) {}", "timeout_ms": 300})).await?;
    show("execute_javascript while(true){} (timeout_ms 300)", &json!({"success": r["success"], "code": r["code"]}));
    s.page.eval("localStorage.setItem('draft', 'alpha v2'); document.cookie = 'session=abc; path=/'; 0").await?;
    let r = s.agent.ok("manage_state", json!({"action": "save", "snapshot_name": "projects"})).await?;
    show(
        "manage_state save (counts and size only, never a value)",
        &json!({"saved": r["saved"], "size_bytes": r["size_bytes"]}),
    );
    s.page.eval("localStorage.clear(); document.cookie = 'session=; max-age=0; path=/'; 0").await?;
    let r = s.agent.ok("manage_state", json!({"action": "load", "snapshot_name": "projects"})).await?;
    show("manage_state load", &json!({"restored": r["restored"], "navigated": r["navigated"]}));
    show("the page's storage again", &s.page.eval("[localStorage.getItem('draft'), document.cookie]").await?);

    step(10, "Beyond JS dialogs: a permission prompt and a device chooser");
    let r = s
        .agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "permission", "permission": "notifications"}))
        .await?;
    show("rule", &r["message"]);
    println!("   page: {}", click(&s, "notify").await?);
    println!("   no rule for the USB chooser (in headless it would never settle): the default cancels it");
    println!("   page: {}", click(&s, "connect").await?);
    let chooser = eventually(std::time::Duration::from_secs(10), "the chooser's record", || async {
        let d = s.dialogs().await?;
        let recent = d["recent_dialogs"].as_array().cloned().unwrap_or_default();
        Ok(recent.into_iter().rev().find(|r| r["type"] == "device_chooser"))
    })
    .await?;
    println!("   observe: {}", describe(&chooser));

    println!("\nAfter the pilot went on, no dialog blocked the tab except the one the agent chose to hold. Done.");
    Ok(())
}
