//! The agent side: a real MCP client (rmcp) driving `unmodal mcp` over its stdio.

use crate::wait::eventually;
use anyhow::{Context, Result, bail};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(15);

pub struct Agent {
    client: RunningService<RoleClient, Client>,
}

/// The client's side of MCP: with directories given, it offers them as its roots (the
/// places `unmodal mcp` may write files such as a printed page's PDF).
#[derive(Clone, Default)]
pub struct Client {
    roots: Vec<std::path::PathBuf>,
}

// MCP's roots are deprecated (SEP-2577) but still what clients send.
#[allow(deprecated)]
impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let mut info = rmcp::model::ClientInfo::default();
        if !self.roots.is_empty() {
            info.capabilities.roots = Some(rmcp::model::RootsCapabilities::default());
        }
        info
    }

    async fn list_roots(
        &self,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        let roots = self.roots.iter().map(|d| rmcp::model::Root::new(format!("file://{}", d.display()))).collect();
        Ok(rmcp::model::ListRootsResult::new(roots))
    }
}

/// What a tool call came back with.
#[derive(Debug)]
pub enum Reply {
    /// A result (structured content).
    Ok(Value),
    /// A tool-level error result (`isError: true`), e.g. `extension_not_connected`.
    Failed(Value),
    /// An MCP protocol error, e.g. invalid parameters.
    Error { code: i32, message: String, data: Option<Value> },
}

impl Agent {
    /// Starts `unmodal mcp` with the given runtime dir (where the hosts' sockets are).
    pub async fn start(host: &Path, runtime: &Path) -> Result<Self> {
        Self::start_with_roots(host, runtime, &[]).await
    }

    /// As `start`, with a client that offers `roots` (directories) to the server.
    pub async fn start_with_roots(host: &Path, runtime: &Path, roots: &[std::path::PathBuf]) -> Result<Self> {
        let mut cmd = tokio::process::Command::new(host);
        cmd.arg("mcp").env("UNMODAL_RUNTIME_DIR", runtime);
        Self::start_command(cmd, roots).await
    }

    /// An MCP client of the server `cmd` starts (its whole command line and environment).
    pub async fn start_command(cmd: tokio::process::Command, roots: &[std::path::PathBuf]) -> Result<Self> {
        let transport = TokioChildProcess::new(cmd).context("starting `unmodal mcp`")?;
        let client = Client { roots: roots.to_vec() };
        let client = client.serve(transport).await.context("MCP handshake with `unmodal mcp`")?;
        Ok(Self { client })
    }

    pub async fn tool_names(&self) -> Result<Vec<String>> {
        let tools = self.client.list_all_tools().await?;
        Ok(tools.into_iter().map(|t| t.name.to_string()).collect())
    }

    pub async fn call(&self, tool: &str, args: Value) -> Result<Reply> {
        let Value::Object(map) = args else { bail!("tool arguments must be an object") };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(map);
        match self.client.call_tool(params).await {
            Ok(r) => {
                let v = r.structured_content.clone().context("tool result without structured content")?;
                Ok(if r.is_error == Some(true) { Reply::Failed(v) } else { Reply::Ok(v) })
            }
            Err(ServiceError::McpError(e)) => {
                Ok(Reply::Error { code: e.code.0, message: e.message.to_string(), data: e.data })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Calls and expects a successful result.
    pub async fn ok(&self, tool: &str, args: Value) -> Result<Value> {
        match self.call(tool, args.clone()).await? {
            Reply::Ok(v) => Ok(v),
            other => bail!("{tool} {args} did not succeed: {other:?}"),
        }
    }

    /// Waits until the browser's host answers and a tab with `url` is the tracked tab.
    pub async fn wait_for_tab(&self, url: &str) -> Result<Value> {
        eventually(LIMIT, &format!("tab {url} becoming the tracked tab"), || async {
            let v = self.ok("observe", serde_json::json!({"what": "tabs"})).await?;
            let tracked = v["tracked_tab"].as_i64();
            let tabs = v["tabs"].as_array().into_iter().flatten();
            Ok(tabs.into_iter().find(|t| t["url"] == url && t["id"].as_i64() == tracked).cloned())
        })
        .await
    }

    /// Waits until a tab with `url` is listed (tracked or not); returns its id.
    pub async fn wait_for_tab_listed(&self, url: &str) -> Result<i64> {
        eventually(LIMIT, &format!("tab {url} being listed"), || async {
            let v = self.ok("observe", serde_json::json!({"what": "tabs"})).await?;
            Ok(v["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url).and_then(|t| t["id"].as_i64()))
        })
        .await
    }

    /// How long until the host listed a dialog with `message` in the tab showing `url`
    /// (waiting at most `limit`); `None` if it never did.
    pub async fn dialog_listed_within(&self, url: &str, message: &str, limit: Duration) -> Option<Duration> {
        let start = std::time::Instant::now();
        let seen = eventually(limit, "the dialog reaching the host", || async {
            let tabs = self.ok("observe", serde_json::json!({"what": "tabs"})).await?;
            let tab = tabs["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url);
            let Some(id) = tab.map(|t| t["id"].clone()) else { return Ok(None) };
            let d = self.ok("observe", serde_json::json!({"what": "dialogs", "tab_id": id})).await?;
            Ok(d["recent_dialogs"].as_array().into_iter().flatten().any(|r| r["message"] == message).then_some(()))
        });
        seen.await.ok().map(|()| start.elapsed())
    }

    pub async fn close(self) -> Result<()> {
        self.client.cancel().await?;
        Ok(())
    }
}
