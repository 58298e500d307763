//! Another user made the runtime directory first and listens in it: `/tmp/unmodal-<uid>`,
//! where a user without `XDG_RUNTIME_DIR` (containers, cron, su) has it by default. The real
//! `unmodal mcp`, `unmodal pilot status` and `unmodal doctor` refuse to talk there, say whose
//! it is and what to do, and the squatter gets nothing, not even a connection. No browser
//! needed. Linux as root: the squatter runs as uid 65534.

use anyhow::{Result, ensure};
use serde_json::json;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::squatter::{self, Received, Squatter};
use unmodal_e2e::{Agent, Reply};

/// What the squatter is after: an agent answering an auth challenge.
const PASSWORD: &str = "hunter2-squatted";

/// What every client says of the squatted directory.
fn says_why_and_what_to_do(text: &str, dir: &Path) -> Result<()> {
    let dir = dir.display().to_string();
    for part in
        [dir.as_str(), &format!("uid {}", squatter::UID), "mode 0777", "UNMODAL_RUNTIME_DIR", "nothing was sent"]
    {
        ensure!(text.contains(part), "{part:?} not said: {text}");
    }
    ensure!(!text.contains(PASSWORD), "{text}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_refuse_a_runtime_dir_another_user_made_and_send_it_nothing() -> Result<()> {
    if !Squatter::possible() {
        eprintln!("skipped: only root can run a listener as another user (uid {})", squatter::UID);
        return Ok(());
    }
    let art = Artifacts::find()?;
    // A /tmp of its own (1777, as /tmp is), where the squatter makes the directory this user's
    // clients look for by default, open to all, and listens in it.
    let tmp = tempfile::tempdir()?;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o1777))?;
    // SAFETY: geteuid has no preconditions.
    let dir = tmp.path().join(format!("unmodal-{}", unsafe { libc::geteuid() }));
    std::fs::create_dir(&dir)?;
    chown(&dir, Some(squatter::UID), Some(squatter::UID))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
    let socket = dir.join("host-1.sock");
    let squatter = Squatter::listen(&socket)?;

    // `unmodal mcp` finding it by default: no UNMODAL_RUNTIME_DIR, no XDG_RUNTIME_DIR.
    let mut mcp = tokio::process::Command::new(&art.host);
    mcp.arg("mcp").env_remove("UNMODAL_RUNTIME_DIR").env_remove("XDG_RUNTIME_DIR").env("TMPDIR", tmp.path());
    let agent = Agent::start_command(mcp, &[]).await?;
    for (tool, args) in [
        ("observe", json!({"what": "tabs"})),
        ("interact", json!({"action": "handle_dialog", "dialog_id": 1, "username": "me", "password": PASSWORD})),
    ] {
        let error = match agent.call(tool, args).await? {
            Reply::Failed(v) => v["error"].clone(),
            other => anyhow::bail!("{tool}: expected untrusted_runtime_dir, got {other:?}"),
        };
        ensure!(error["code"] == "untrusted_runtime_dir", "{tool}: {error}");
        says_why_and_what_to_do(error["message"].as_str().unwrap_or_default(), &dir)?;
    }
    agent.close().await?;

    // A person's commands, the directory named.
    let run = |args: &[&str]| Command::new(&art.host).args(args).env("UNMODAL_RUNTIME_DIR", &dir).output();
    let started = Instant::now();
    let pilot = run(&["pilot", "status"])?;
    let stderr = String::from_utf8_lossy(&pilot.stderr);
    ensure!(!pilot.status.success(), "{stderr}");
    says_why_and_what_to_do(&stderr, &dir)?;
    ensure!(started.elapsed() < Duration::from_secs(2), "at once, not after waiting for a browser: {stderr}");
    let doctor = run(&["doctor"])?;
    let stdout = String::from_utf8_lossy(&doctor.stdout);
    ensure!(!doctor.status.success() && stdout.contains("MISS browser connected"), "{stdout}");
    says_why_and_what_to_do(&stdout, &dir)?;

    let received = squatter.received()?;
    ensure!(received == Received { connections: 0, bytes: 0 }, "the squatter got {received:?}");
    ensure!(socket.exists(), "nothing of theirs removed");
    Ok(())
}
