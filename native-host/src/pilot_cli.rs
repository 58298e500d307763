//! `unmodal pilot on|off|status`: a person switches AI Web Pilot from a terminal. It reaches
//! each browser's host over the private socket; `unmodal mcp` has no such call, so an agent
//! with only its MCP tools cannot. Whoever can run commands as this user can.

use crate::ipc::{self, Tool};
use crate::paths;
use crate::reply::{ErrorCode, ToolError};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    On,
    Off,
    Status,
}

/// One connected browser, as its host describes it.
struct Found {
    socket: PathBuf,
    status: Value,
}

pub fn run(action: Action, user_data_dir: Option<&Path>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(switch(&paths::runtime_dir(), action, user_data_dir)).map(|lines| {
        for l in lines {
            println!("{l}");
        }
    })
}

/// What to print, one line per browser; an error says what to do instead.
pub async fn switch(dir: &Path, action: Action, user_data_dir: Option<&Path>) -> Result<Vec<String>> {
    let filter = json!({ "user_data_dir": user_data_dir });
    let mut found = Vec::new();
    for (socket, reply) in ipc::ask_each(dir, Tool::PilotSwitch, filter).await? {
        match reply {
            Ok(status) => found.push(Found { socket, status }),
            Err(e) if e.code == ErrorCode::OtherBrowser => {}
            Err(e) => tracing::warn!(socket = %socket.display(), error = %e, "host did not answer"),
        }
    }
    if found.is_empty() {
        match user_data_dir {
            Some(d) => bail!(
                "no browser with the Unmodal extension runs with the profile {}. `unmodal pilot status` lists the \
connected browsers.",
                d.display()
            ),
            None => bail!("{}", ToolError::not_connected().message),
        }
    }
    let on = match action {
        Action::Status => return Ok(found.iter().map(|f| describe(&f.status, None)).collect()),
        Action::On => true,
        Action::Off => false,
    };
    // Taking power away needs no aim; giving it does.
    if on && found.len() > 1 {
        let listed: Vec<String> = found.iter().map(|f| format!("  {}", describe(&f.status, None))).collect();
        bail!(
            "{} browsers with Unmodal are connected; pick one with --user-data-dir DIR:\n{}",
            found.len(),
            listed.join("\n")
        );
    }
    let mut lines = Vec::new();
    for f in &found {
        let args = json!({ "on": on, "user_data_dir": user_data_dir });
        let status = ipc::ask_socket(&f.socket, Tool::PilotSwitch, args).await?;
        lines.push(describe(&status, Some(on)));
    }
    Ok(lines)
}

/// "AI Web Pilot is on in the browser with profile /p (pid 12)." and what follows from it.
fn describe(status: &Value, switched: Option<bool>) -> String {
    let on = status["pilot_enabled"] == true;
    let browser = &status["browser"];
    let profile =
        browser["profile"].as_str().map_or_else(|| "an unknown profile".to_owned(), |p| format!("profile {p}"));
    let pid = browser["pid"].as_u64().map_or_else(String::new, |p| format!(", pid {p}"));
    let mut line = format!("AI Web Pilot is {} in the browser with {profile}{pid}.", if on { "on" } else { "off" });
    if switched.is_some() && status["applied"] != true {
        line += " The extension has not confirmed it yet (is its service worker running?).";
    }
    if switched.is_none() && browser["remote_control"].is_string() {
        line += " A program can control this browser: only this command switches the pilot on there.";
    }
    line
}
