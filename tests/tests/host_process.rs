//! The real `unmodal` binary in host mode, fed native-messaging frames by hand (as Chrome
//! would, and as a broken browser might), and its registration.

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;
use unmodal_e2e::artifacts::{self, Artifacts};
use unmodal_e2e::{Agent, eventually};

fn frame(v: &Value) -> Vec<u8> {
    let body = v.to_string().into_bytes();
    let mut out = (body.len() as u32).to_ne_bytes().to_vec();
    out.extend(body);
    out
}

#[test]
fn install_registers_the_extension_id_derived_from_the_manifest_key() -> anyhow::Result<()> {
    let art = Artifacts::find()?;
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(art.extension.join("manifest.json"))?)?;
    let id = artifacts::extension_id(manifest["key"].as_str().unwrap())?;
    let dir = tempfile::tempdir()?;
    let st =
        Command::new(&art.host).args(["install", "--user-data-dir"]).arg(dir.path()).stdout(Stdio::null()).status()?;
    assert!(st.success());
    let host: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("NativeMessagingHosts/dev.unmodal.host.json"))?)?;
    assert_eq!(host["allowed_origins"], json!([format!("chrome-extension://{id}/")]));
    assert_eq!(host["path"], std::fs::canonicalize(&art.host)?.to_str().unwrap());
    let st = Command::new(&art.host)
        .args(["uninstall", "--user-data-dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .status()?;
    assert!(st.success());
    assert!(!dir.path().join("NativeMessagingHosts/dev.unmodal.host.json").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn host_survives_bad_frames_and_keeps_its_socket_private() -> anyhow::Result<()> {
    let art = Artifacts::find()?;
    let run = unmodal_e2e::private_dir("unmodal-rt-")?;
    let mut host = Command::new(&art.host)
        .arg(format!("chrome-extension://{}/", art.extension_id))
        .env("UNMODAL_RUNTIME_DIR", run.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = host.stdin.take().unwrap();
    let mut input = Vec::new();
    input.extend(frame(&json!({"type": "hello", "version": "test", "pilot": true})));
    input.extend(frame(&json!({"type": "tabs", "tracked": 5, "tabs": [{"id": 5, "url": "http://x/"}]})));
    // Not JSON, the wrong shapes, a forged dialog kind: each skipped, none fatal.
    input.extend(4u32.to_ne_bytes());
    input.extend(b"\xff\xfe{]");
    input.extend(frame(&json!([1, 2, 3])));
    input.extend(frame(&json!({"type": "dialog", "tab_id": 5, "report": {"seq": 1, "phase": "decided", "kind": "shout", "decided_by": "rule"}})));
    input.extend(frame(
        &json!({"type": "dialog", "tab_id": 5, "report": {"seq": 2, "phase": "decided", "kind": "confirm",
        "message": "x".repeat(100_000), "decided_by": "default_policy", "accepted": false}}),
    ));
    stdin.write_all(&input)?;
    // An oversize frame (64 MiB + 1): skipped without being held, the stream stays in sync.
    let big = 64 * 1024 * 1024 + 1u32;
    stdin.write_all(&big.to_ne_bytes())?;
    let chunk = vec![b' '; 1024 * 1024];
    for _ in 0..64 {
        stdin.write_all(&chunk)?;
    }
    stdin.write_all(b" ")?;
    stdin.write_all(&frame(&json!({"type": "pilot", "on": true})))?;
    stdin.flush()?;

    let agent = Agent::start(&art.host, run.path()).await?;
    let dialogs = eventually(Duration::from_secs(10), "the host answering", || async {
        Ok(Some(agent.ok("observe", json!({"what": "dialogs"})).await?))
    })
    .await?;
    let recent = dialogs["recent_dialogs"].as_array().unwrap();
    assert_eq!(recent.len(), 1, "only the valid report is kept: {dialogs}");
    assert_eq!(recent[0]["message"].as_str().unwrap().len(), 4096);
    assert_eq!(recent[0]["message_truncated"], true);
    assert_eq!(dialogs["tab"]["id"], 5);

    // A setup with the pilot off writes nothing to the browser: the rule waits in the host.
    let set = agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert"})).await?;
    assert_eq!((&set["rules_in_force"], &set["pilot_enabled"]), (&json!(false), &json!(false)), "{set}");
    // Frames before it: the redacted summary of the one valid report (for the popup).
    let mut stdout = host.stdout.take().unwrap();
    let mut read_frame = || -> anyhow::Result<Value> {
        let mut len = [0u8; 4];
        stdout.read_exact(&mut len)?;
        let mut body = vec![0u8; u32::from_ne_bytes(len) as usize];
        stdout.read_exact(&mut body)?;
        Ok(serde_json::from_slice(&body)?)
    };
    // The answer to hello: the pilot switch as the host keeps it (off: the worker's claim
    // is not taken), then nothing of this worker's reports yet.
    let pilot = read_frame()?;
    assert_eq!((&pilot["type"], &pilot["on"]), (&json!("pilot"), &json!(false)), "{pilot}");
    assert_eq!(read_frame()?, json!({"type": "resume", "upto": 0}));
    let first = read_frame()?;
    assert_eq!((first["type"].as_str(), first["message"].as_str().map(str::len)), (Some("recorded"), Some(4096)));

    let sockets: Vec<_> = std::fs::read_dir(run.path())?.filter_map(Result::ok).collect();
    assert_eq!(sockets.len(), 1);
    assert_eq!(sockets[0].metadata()?.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(run.path())?.permissions().mode() & 0o077, 0, "runtime dir is private");

    // The browser closes the port: the host exits and removes its socket. It wrote nothing
    // more (no config for the rule set with the pilot off): the stream just ends.
    drop(stdin);
    let status = host.wait()?;
    assert!(status.success(), "{status}");
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest)?;
    assert!(rest.is_empty(), "the host wrote more: {}", String::from_utf8_lossy(&rest));
    assert_eq!(std::fs::read_dir(run.path())?.count(), 0);
    agent.close().await
}
