//! What a new user sees: `unmodal doctor` names what is missing and the fix; the popup
//! shows the host connection and the last dialogs with what answered them.

use serde_json::json;
use std::process::Command;
use std::time::Duration;
use unmodal_e2e::{Session, eventually};

/// `unmodal` with `home` as its home directory, and so `home/.config` as the configuration
/// directory the browsers' manifests are looked for in (an inherited `XDG_CONFIG_HOME` would
/// point elsewhere, so it is removed).
fn unmodal(home: &std::path::Path) -> anyhow::Result<Command> {
    let art = unmodal_e2e::artifacts::Artifacts::find()?;
    let mut cmd = Command::new(&art.host);
    cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME");
    Ok(cmd)
}

fn doctor(home: &std::path::Path, runtime: &std::path::Path) -> anyhow::Result<(bool, String)> {
    let out = unmodal(home)?.arg("doctor").env("UNMODAL_RUNTIME_DIR", runtime).output()?;
    Ok((out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_says_what_is_missing_until_nothing_is() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let nowhere = unmodal_e2e::private_dir("unmodal-rt-")?;
    let (ok, text) = doctor(home.path(), nowhere.path())?;
    assert!(!ok, "{text}");
    assert!(text.contains("MISS Chromium host registration"), "{text}");
    assert!(text.contains("`unmodal install --browser chromium`"), "{text}");
    assert!(text.contains("MISS browser connected") && text.contains("unmodal install"), "{text}");

    let s = Session::start().await?;
    s.open("/doctor", "<!doctype html><title>doctor</title>", &[]).await?;
    assert!(unmodal(home.path())?.args(["install", "--browser", "chromium"]).status()?.success());
    let (ok, text) = doctor(home.path(), &s.browser.runtime)?;
    assert!(!ok, "{text}");
    assert!(text.contains("ok   Chromium host registration"), "{text}");
    assert!(text.contains("ok   browser connected"), "{text}");
    assert!(text.contains("MISS AI Web Pilot switched on") && text.contains("popup"), "{text}");
    assert!(text.contains("ai_web_pilot_disabled"), "what off means for the pilot tools: {text}");

    s.enable_pilot().await?;
    let (ok, text) = doctor(home.path(), &s.browser.runtime)?;
    assert!(ok, "{text}");
    assert!(text.contains("ok   AI Web Pilot switched on") && text.contains("execute_javascript allowed"), "{text}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn popup_shows_host_and_recent_dialogs() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/popup", "<!doctype html><title>popup</title>").await?;
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm"})).await?;
    s.page_value("confirm('Delete the draft?'); alert('Done')").await?;
    s.last_dialog(2).await?;
    let popup = s.open_popup().await?;
    // The popup fills itself in once the worker answered.
    eventually(Duration::from_secs(10), "the popup listing the dialogs", || async {
        Ok((popup.eval("document.querySelectorAll('#recent li').length").await? == json!(2)).then_some(()))
    })
    .await?;
    assert_eq!(popup.eval("document.getElementById('host').textContent").await?, json!("host connected"));
    // The switch says in plain words what it allows.
    let says = popup.eval("document.querySelector('.switch-row small').textContent").await?;
    let says = says.as_str().unwrap_or_default();
    for word in ["dialogs", "highlight", "cookies and storage", "JavaScript", "Only you"] {
        assert!(says.contains(word), "{word}: {says}");
    }
    let items = popup.eval("[...document.querySelectorAll('#recent li')].map((li) => li.textContent)").await?;
    let items: Vec<String> = serde_json::from_value(items)?;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].contains("alert") && items[0].contains("default policy"), "{items:?}");
    assert!(items[1].contains("Delete the draft?") && items[1].contains("accepted by rule"), "{items:?}");
    Ok(())
}

/// The three lines `unmodal doctor` prints about the browser whose profile is `profile`.
fn about_browser(text: &str, port: u16, profile: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let head = format!("open to CDP drivers at http://127.0.0.1:{port} (profile {})", profile.display());
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("       ")).collect();
    let at = lines.iter().position(|l| l.contains(&head)).ok_or_else(|| anyhow::anyhow!("no `{head}` in:\n{text}"))?;
    Ok(lines[at..(at + 4).min(lines.len())].iter().map(|l| (*l).to_owned()).collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_recognises_a_browser_started_for_a_cdp_driver() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    // Started as docs/browsers.md says: --remote-debugging-port, --user-data-dir, --load-extension,
    // --silent-debugger-extension-api, and `unmodal install --user-data-dir`.
    let s = Session::start().await?;
    let (_, text) = doctor(home.path(), &s.browser.runtime)?;
    let ours = about_browser(&text, s.browser.debugging_port()?, s.browser.profile.path())?;
    assert!(ours[0].starts_with("ok   browser pid"), "{ours:?}");
    assert!(ours[1].starts_with("ok") && ours[1].contains("Unmodal loaded in it"), "{ours:?}");
    assert!(ours[2].starts_with("ok") && ours[2].contains("--silent-debugger-extension-api"), "{ours:?}");
    assert!(ours[3].starts_with("ok") && ours[3].contains("host registered for that profile"), "{ours:?}");

    // Without the extension and the registration, it says so.
    let bare = unmodal_e2e::Browser::launch(unmodal_e2e::Options { extension: false, ..Default::default() }).await?;
    let (_, text) = doctor(home.path(), &s.browser.runtime)?;
    let theirs = about_browser(&text, bare.debugging_port()?, bare.profile.path())?;
    assert!(theirs[1].starts_with("MISS") && theirs[1].contains("Unmodal loaded"), "{theirs:?}");
    assert!(theirs[3].starts_with("MISS") && theirs[3].contains("host registered"), "{theirs:?}");
    assert!(text.contains(&format!("unmodal install --user-data-dir {}", bare.profile.path().display())), "{text}");
    Ok(())
}
