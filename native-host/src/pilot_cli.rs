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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A stand-in host on `socket` serving the profile `profile`: answers `pilot_switch` as a
    /// host does (the status, switched when asked; another profile is `other_browser`).
    fn fake_host(socket: PathBuf, profile: &'static str) {
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        tokio::spawn(async move {
            let mut on = false;
            while let Ok((stream, _)) = listener.accept().await {
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let req: Value = serde_json::from_str(&line).unwrap();
                    assert_eq!(req["tool"], "pilot_switch");
                    let dir = &req["args"]["user_data_dir"];
                    let answer = if !dir.is_null() && dir != profile {
                        json!({"error": {"code": "other_browser", "message": "not mine"}})
                    } else {
                        if let Some(v) = req["args"]["on"].as_bool() {
                            on = v;
                        }
                        json!({"ok": {"pilot_enabled": on, "applied": true,
                            "browser": {"pid": 1, "profile": profile, "remote_control": "started with --remote-debugging-port"}}})
                    };
                    w.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
                }
            }
        });
    }

    #[tokio::test]
    async fn on_needs_a_browser_named_when_several_run_and_off_takes_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let err = switch(dir.path(), Action::On, None).await.unwrap_err().to_string();
        assert!(err.contains("No browser with the Unmodal extension"), "{err}");

        // Sockets named after live processes (this one), so they are not taken for stale.
        fake_host(paths::socket_path(dir.path(), std::process::id()), "/p/a");
        fake_host(paths::socket_path(dir.path(), 1), "/p/b");
        let err = switch(dir.path(), Action::On, None).await.unwrap_err().to_string();
        assert!(err.contains("2 browsers") && err.contains("--user-data-dir") && err.contains("/p/b"), "{err}");

        let said = switch(dir.path(), Action::On, Some(Path::new("/p/b"))).await.unwrap();
        assert_eq!(said, ["AI Web Pilot is on in the browser with profile /p/b, pid 1."]);
        let status = switch(dir.path(), Action::Status, None).await.unwrap();
        assert_eq!(status.len(), 2);
        assert!(status.iter().any(|l| l.contains("is on") && l.contains("/p/b") && l.contains("only this command")));
        assert!(status.iter().any(|l| l.contains("is off") && l.contains("/p/a")));

        let said = switch(dir.path(), Action::Off, None).await.unwrap();
        assert_eq!(said.len(), 2);
        assert!(said.iter().all(|l| l.contains("is off")), "{said:?}");
        let err = switch(dir.path(), Action::On, Some(Path::new("/p/c"))).await.unwrap_err().to_string();
        assert!(err.contains("/p/c") && err.contains("unmodal pilot status"), "{err}");
    }
}
