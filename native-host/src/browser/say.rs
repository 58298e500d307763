//! What `unmodal browser` prints: where the browser is and the lines to paste into an
//! agent's MCP config or a script.

use super::Running;

/// The driver versions the README and the tests use.
pub const PLAYWRIGHT_MCP: &str = "@playwright/mcp@0.0.83";
pub const CHROME_DEVTOOLS_MCP: &str = "chrome-devtools-mcp@1.11.0";

/// Prints to stdout; a closed stdout (`| head`) is not an error worth a panic.
pub fn print(lines: &[String]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
    let _ = out.flush();
}

pub fn endpoint(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// MCP config entries for Unmodal and a driver attached to `endpoint`.
fn config_lines(endpoint: &str) -> Vec<String> {
    let exe = std::env::current_exe().map_or_else(|_| "unmodal".to_owned(), |p| p.display().to_string());
    vec![
        "MCP config (mcpServers), Unmodal beside your browser driver:".into(),
        format!("  \"unmodal\": {{ \"command\": {exe:?}, \"args\": [\"mcp\"] }},"),
        format!(
            "  \"playwright\": {{ \"command\": \"npx\", \"args\": [\"{PLAYWRIGHT_MCP}\", \"--cdp-endpoint\", \"{endpoint}\"] }}"
        ),
        format!(
            "  or \"chrome-devtools\": {{ \"command\": \"npx\", \"args\": [\"{CHROME_DEVTOOLS_MCP}\", \"--browserUrl\", \"{endpoint}\"] }}"
        ),
        format!(
            "Scripts: Playwright `chromium.connectOverCDP('{endpoint}')`, Puppeteer `puppeteer.connect({{ browserURL: '{endpoint}' }})`."
        ),
        format!(
            "Frameworks: browser-use `BrowserSession(cdp_url='{endpoint}')`; Stagehand `localBrowser.connect({{ cdpUrl: '{endpoint}' }})`, \
with this browser started with --remote-allow-origins node_modules/@browserbasehq/stagehand/dist/extension."
        ),
        "Rules and records from a script: `unmodal call interact '{\"action\": \"handle_dialog\", ...}'` (docs/frameworks.md).".into(),
    ]
}

pub fn started(r: &Running) -> Vec<String> {
    let mut lines = Vec::new();
    let how = if r.child.is_some() { "started" } else { "is already running on this profile" };
    lines.push(format!("Unmodal's browser {how} (pid {}, profile {}).", r.pid, r.profile.display()));
    lines.push(format!("DevTools endpoint: {}", r.endpoint));
    lines.extend(config_lines(&r.endpoint));
    let profile = r.profile.display();
    lines.push(match r.host {
        Some(true) => "Unmodal is connected; AI Web Pilot is on.".into(),
        Some(false) => format!(
            "Unmodal is connected; AI Web Pilot is off (dialogs are only reported): a person switches it on with \
`unmodal pilot on --user-data-dir {profile}`."
        ),
        None => format!(
            "The extension has not reached its host yet: `unmodal doctor` says what is missing (log: {profile}/unmodal-browser.log)."
        ),
    });
    if r.child.is_some() {
        lines.push("Ctrl-C closes the browser.".into());
    }
    lines
}
