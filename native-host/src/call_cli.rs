//! `unmodal call TOOL 'JSON'`: one tool call from a shell, a CI step or a script that has no
//! MCP client (a Playwright test setting a rule first, a Stagehand script reading the
//! record). It is an MCP call: this process serves `unmodal mcp`'s own server to an
//! in-process MCP client over a pipe, so the arguments go through the very checks and
//! forwarding an agent's calls do, and the answer is the structured result an agent gets.
//! The client offers no roots: only `files.allowed_dirs` of config.json let a file through.
//! `pilot_switch` is no MCP tool, so nothing here can switch the pilot.

use crate::mcp::Server;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;

/// How a call ended, and so the process's exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The tool answered (exit 0).
    Answered,
    /// The tool failed: the structured error is printed (exit 1). An `execute_javascript`
    /// result with `success: false` counts as one.
    ToolError,
    /// The call never reached a tool: unreadable JSON, no such tool (exit 2, as clap's usage
    /// errors).
    Usage,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Self::Answered => ExitCode::SUCCESS,
            Self::ToolError => ExitCode::from(1),
            Self::Usage => ExitCode::from(2),
        }
    }
}

fn usage(code: &str, message: String) -> (Outcome, Value) {
    (Outcome::Usage, json!({"error": {"code": code, "message": message}}))
}

/// Runs the call and prints its answer on stdout as JSON.
pub fn run(tool: &str, arguments: &str) -> ExitCode {
    let answered = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| usage("internal", format!("cannot start: {e}")))
        .map(|rt| rt.block_on(call(tool, arguments)));
    let (outcome, value) = answered.unwrap_or_else(|e| e);
    let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
    // A closed stdout (`| head`) is no reason to panic.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    outcome.exit_code()
}

/// One call through `unmodal mcp`'s server, in this process.
pub async fn call(tool: &str, arguments: &str) -> (Outcome, Value) {
    let args = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return usage("invalid_params", format!("the arguments must be a JSON object, like '{{}}', not {other}"));
        }
        Err(e) => return usage("invalid_params", format!("the arguments are not JSON: {e}")),
    };
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        if let Ok(running) = Server::new().serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let answer = async {
        // `()`: a client with no capabilities, so no roots.
        let client = ().serve(client_end).await.map_err(|e| format!("MCP handshake: {e}"))?;
        let result = client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)).await;
        let _ = client.cancel().await;
        Ok::<_, String>(result)
    };
    let result = answer.await;
    server.abort();
    match result {
        Err(why) => usage("internal", why),
        Ok(Ok(r)) => {
            let value = r.structured_content.clone().unwrap_or_else(|| json!({"content": r.content}));
            let failed = r.is_error == Some(true) || value.get("success") == Some(&json!(false));
            (if failed { Outcome::ToolError } else { Outcome::Answered }, value)
        }
        Ok(Err(ServiceError::McpError(e))) if e.message.contains("tool not found") => {
            usage("unknown_tool", format!("no tool {tool:?}; the tools: {}", tool_names().join(", ")))
        }
        Ok(Err(ServiceError::McpError(e))) => usage("invalid_params", e.message.to_string()),
        Ok(Err(e)) => usage("internal", e.to_string()),
    }
}

/// The MCP tools, as `tools/list` names them.
pub fn tool_names() -> Vec<String> {
    Server::new().tool_names()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn arguments_are_checked_by_the_mcp_server_before_any_host_is_asked() {
        let (o, v) = call("interact", r#"{"action": "handle_dialog", "setup": true, "dialog_type": "nope"}"#).await;
        assert_eq!((o, v["error"]["code"].as_str()), (Outcome::ToolError, Some("invalid_params")), "{v}");
        assert_eq!(v["error"]["param"], "dialog_type", "{v}");
        // A failure that is a result (`success: false`) still exits non-zero.
        let (o, v) = call("execute_javascript", r#"{"code": "1", "timeout_ms": 0}"#).await;
        assert_eq!(
            (o, v["success"].as_bool(), v["code"].as_str()),
            (Outcome::ToolError, Some(false), Some("invalid_params")),
            "{v}"
        );
        let (o, v) = call("pilot_switch", r#"{"on": true}"#).await;
        assert_eq!((o, v["error"]["code"].as_str()), (Outcome::Usage, Some("unknown_tool")), "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("interact"), "{v}");
        for bad in ["[1]", "{", "\"x\""] {
            let (o, v) = call("observe", bad).await;
            assert_eq!((o, v["error"]["code"].as_str()), (Outcome::Usage, Some("invalid_params")), "{bad}: {v}");
        }
    }
}
