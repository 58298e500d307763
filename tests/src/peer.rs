//! The agent's other browser driver, as agents run it beside Unmodal: Playwright MCP or
//! chrome-devtools-mcp (pinned in `tests/peers/`, installed by `cargo xtask test`),
//! attached over CDP to the test's Chromium and driven through a real MCP client.

use anyhow::{Context, Result, bail};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// `@playwright/mcp` over `--cdp-endpoint`.
    PlaywrightMcp,
    /// `chrome-devtools-mcp` over `--browserUrl`.
    ChromeDevtoolsMcp,
}

impl Driver {
    pub const ALL: [Driver; 2] = [Driver::PlaywrightMcp, Driver::ChromeDevtoolsMcp];

    fn bin(self) -> &'static str {
        match self {
            Self::PlaywrightMcp => "playwright-mcp",
            Self::ChromeDevtoolsMcp => "chrome-devtools-mcp",
        }
    }

    /// The command line a user would give it to attach to a running browser.
    fn args(self, endpoint: &str, scratch: &std::path::Path) -> Vec<String> {
        match self {
            Self::PlaywrightMcp => {
                vec!["--cdp-endpoint".into(), endpoint.into(), "--output-dir".into(), scratch.display().to_string()]
            }
            Self::ChromeDevtoolsMcp => vec![
                "--browserUrl".into(),
                endpoint.into(),
                "--no-usage-statistics".into(),
                "--no-performance-crux".into(),
                "--logFile".into(),
                scratch.join("cdm.log").display().to_string(),
            ],
        }
    }
}

/// Where `npm ci` put the peers.
pub fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/node_modules/.bin")
}

pub struct Peer {
    pub driver: Driver,
    client: RunningService<RoleClient, ()>,
    /// Its working directory, output files and `stderr.log`.
    pub scratch: tempfile::TempDir,
}

/// A tool's answer: its text parts joined, and whether it was an error.
#[derive(Debug, Clone)]
pub struct PeerReply {
    pub text: String,
    pub is_error: bool,
}

impl Peer {
    /// Starts `driver` attached to the browser whose DevTools listen on `port`.
    pub async fn start(driver: Driver, port: u16) -> Result<Self> {
        Self::start_with(driver, port, &[]).await
    }

    /// As `start`, with more command-line options for the driver.
    pub async fn start_with(driver: Driver, port: u16, extra: &[&str]) -> Result<Self> {
        Self::start_at(driver, &format!("http://127.0.0.1:{port}"), extra).await
    }

    /// Starts `driver` attached to the browser at `endpoint` (any URL the driver takes: a
    /// remote provider's `ws(s)://…`), with more command-line options.
    pub async fn start_at(driver: Driver, endpoint: &str, extra: &[&str]) -> Result<Self> {
        let bin = peers_dir().join(driver.bin());
        if !bin.exists() {
            bail!("{} is not installed: run `cargo xtask test` (it runs `npm ci` in tests/peers/)", bin.display());
        }
        let scratch = tempfile::Builder::new().prefix("unmodal-peer-").tempdir()?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(driver.args(endpoint, scratch.path()))
            .args(extra)
            .current_dir(scratch.path())
            .env("CI", "1")
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1");
        let (transport, _stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::fs::File::create(scratch.path().join("stderr.log"))?)
            .spawn()
            .with_context(|| format!("starting {driver:?}"))?;
        let client = ().serve(transport).await.with_context(|| format!("MCP handshake with {driver:?}"))?;
        Ok(Self { driver, client, scratch })
    }

    pub async fn tool_names(&self) -> Result<Vec<String>> {
        Ok(self.client.list_all_tools().await?.into_iter().map(|t| t.name.to_string()).collect())
    }

    pub async fn call(&self, tool: &str, args: Value) -> Result<PeerReply> {
        let Value::Object(map) = args else { bail!("tool arguments must be an object") };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(map);
        let r = self.client.call_tool(params).await.with_context(|| format!("{:?} {tool}", self.driver))?;
        let text = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n");
        Ok(PeerReply { text, is_error: r.is_error == Some(true) })
    }

    /// Calls and requires a result that is not an error.
    pub async fn ok(&self, tool: &str, args: Value) -> Result<String> {
        let r = self.call(tool, args.clone()).await?;
        if r.is_error {
            bail!("{:?} {tool} {args} failed: {}", self.driver, r.text);
        }
        Ok(r.text)
    }

    /// What it logged, for a failing test's message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.scratch.path().join("stderr.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// The page the driver works in, for chrome-devtools-mcp's `pageId` (its tools need
    /// one): the one whose URL starts with `url_prefix` (else the first web page).
    async fn page_args(&self, url_prefix: Option<&str>) -> Result<serde_json::Map<String, Value>> {
        let mut args = serde_json::Map::new();
        if self.driver == Driver::ChromeDevtoolsMcp {
            let pages = self.ok("list_pages", json!({})).await?;
            // Lines like "1: drafts (http://127.0.0.1:4000/drafts) [selected]".
            let id = pages
                .lines()
                .filter_map(|l| {
                    let (id, rest) = l.split_once(": ")?;
                    Some((id.trim().parse::<u64>().ok()?, rest))
                })
                .find(|(_, rest)| {
                    url_prefix.map_or(!rest.contains("(chrome-extension:"), |u| rest.contains(&format!("({u}")))
                })
                .map(|(id, _)| id)
                .with_context(|| format!("no page {url_prefix:?} in {pages}"))?;
            args.insert("pageId".into(), json!(id));
        }
        Ok(args)
    }

    /// Navigates the driver's page to `url`.
    pub async fn navigate(&self, url: &str) -> Result<String> {
        match self.driver {
            Driver::PlaywrightMcp => self.ok("browser_navigate", json!({"url": url})).await,
            Driver::ChromeDevtoolsMcp => {
                let mut args = self.page_args(None).await?;
                args.insert("type".into(), json!("url"));
                args.insert("url".into(), json!(url));
                self.ok("navigate_page", Value::Object(args)).await
            }
        }
    }

    /// Clicks the button labelled `name` in the page at `url` the way an agent does: a
    /// snapshot for the element's reference, then the driver's click tool. Returns the
    /// click's reply (a driver says there when a dialog opened).
    pub async fn click_button(&self, url: &str, name: &str) -> Result<PeerReply> {
        self.click_role(url, "button", name).await
    }

    /// As `click_button`, for an element of any ARIA `role` whose name starts with `name`.
    pub async fn click_role(&self, url: &str, role: &str, name: &str) -> Result<PeerReply> {
        let label = format!("{role} \"{name}");
        let (tool, mut args) = match self.driver {
            Driver::PlaywrightMcp => ("browser_snapshot", serde_json::Map::new()),
            Driver::ChromeDevtoolsMcp => ("take_snapshot", self.page_args(Some(url)).await?),
        };
        let snapshot = self.ok(tool, Value::Object(args.clone())).await?;
        let line =
            snapshot.lines().find(|l| l.contains(&label)).with_context(|| format!("no {label} in {snapshot}"))?;
        let reference =
            |key: &str, end: char| line.split(key).nth(1).and_then(|r| r.split(end).next()).map(str::to_owned);
        match self.driver {
            Driver::PlaywrightMcp => {
                let r = reference("[ref=", ']').with_context(|| format!("no ref in {line}"))?;
                self.call("browser_click", json!({"element": label, "target": r})).await
            }
            Driver::ChromeDevtoolsMcp => {
                let r = reference("uid=", ' ').with_context(|| format!("no uid in {line}"))?;
                args.insert("uid".into(), json!(r));
                self.call("click", Value::Object(args)).await
            }
        }
    }

    /// Evaluates `function` (`() => …`, awaited) in the page at `url` with the driver's own
    /// tool; its text reply.
    pub async fn evaluate(&self, url: &str, function: &str) -> Result<PeerReply> {
        match self.driver {
            Driver::PlaywrightMcp => self.call("browser_evaluate", json!({"function": function})).await,
            Driver::ChromeDevtoolsMcp => {
                let mut args = self.page_args(Some(url)).await?;
                args.insert("function".into(), json!(function));
                self.call("evaluate_script", Value::Object(args)).await
            }
        }
    }

    /// Uploads `file` through the file input whose snapshot line contains `label`, with the
    /// driver's own tool: Playwright MCP clicks it (its file chooser becomes a modal state)
    /// and answers with `browser_file_upload`; chrome-devtools-mcp's `upload_file` does both.
    pub async fn upload(&self, url: &str, label: &str, file: &std::path::Path) -> Result<PeerReply> {
        let file = file.display().to_string();
        match self.driver {
            Driver::PlaywrightMcp => {
                let snapshot = self.ok("browser_snapshot", json!({})).await?;
                let line = snapshot
                    .lines()
                    .find(|l| l.contains(label))
                    .with_context(|| format!("no {label} in {snapshot}"))?;
                let r = line.split("[ref=").nth(1).and_then(|r| r.split(']').next()).context("no ref")?;
                let click = self.call("browser_click", json!({"element": label, "target": r})).await?;
                if !click.text.contains("File chooser") {
                    bail!("no file chooser after the click: {}", click.text);
                }
                self.call("browser_file_upload", json!({"paths": [file]})).await
            }
            Driver::ChromeDevtoolsMcp => {
                let mut args = self.page_args(Some(url)).await?;
                let snapshot = self.ok("take_snapshot", Value::Object(args.clone())).await?;
                let line = snapshot
                    .lines()
                    .find(|l| l.contains(label))
                    .with_context(|| format!("no {label} in {snapshot}"))?;
                let uid = line.split("uid=").nth(1).and_then(|r| r.split(' ').next()).context("no uid")?;
                args.insert("uid".into(), json!(uid));
                args.insert("filePaths".into(), json!([file]));
                self.call("upload_file", Value::Object(args)).await
            }
        }
    }

    /// Answers the open dialog with the driver's own tool.
    pub async fn answer_dialog(&self, accept: bool, text: Option<&str>) -> Result<PeerReply> {
        match self.driver {
            Driver::PlaywrightMcp => {
                let mut args = json!({"accept": accept});
                if let Some(t) = text {
                    args["promptText"] = json!(t);
                }
                self.call("browser_handle_dialog", args).await
            }
            Driver::ChromeDevtoolsMcp => {
                let mut args = self.page_args(None).await?;
                args.insert("action".into(), json!(if accept { "accept" } else { "dismiss" }));
                if let Some(t) = text {
                    args.insert("promptText".into(), json!(t));
                }
                self.call("handle_dialog", Value::Object(args)).await
            }
        }
    }

    pub async fn close(self) -> Result<()> {
        self.client.cancel().await?;
        Ok(())
    }
}
