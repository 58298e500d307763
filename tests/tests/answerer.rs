//! The host's CDP answerer in real Chromium, driven through its interface by the test hook
//! (no agent-facing shape yet: issue 51 gives each kind its answer). A browser with a
//! DevTools port, as `unmodal mcp --browser` starts one: the host's own connection goes
//! through the profile's `DevToolsActivePort`.

use anyhow::{Result, ensure};
use serde_json::json;
use std::time::Duration;
use unmodal_e2e::bluetooth::{self, Bluetooth, answerer_hook};
use unmodal_e2e::{Options, Session, eventually};

const PAGE: &str = r#"<!doctype html><title>bt</title>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => document.title = 'got ' + d.name, (e) => document.title = 'error ' + e.name)">pair</button>"#;

async fn session() -> Result<Session> {
    Session::start_with(Options {
        args: vec![bluetooth::SWITCH.into()],
        env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())],
        ..Options::default()
    })
    .await
}

async fn title(s: &Session) -> Result<String> {
    Ok(s.page.eval("document.title").await?.as_str().unwrap_or_default().to_owned())
}

/// The chooser lists the preconnected device, then one that advertises later (the same
/// chooser, kept current); a device not offered is refused with the chooser still open; the
/// one picked reaches the page.
#[tokio::test]
async fn the_answerer_lists_a_choosers_devices_and_picks_one() -> Result<()> {
    let s = session().await?;
    let url = s.open("/bt.html", PAGE, &[]).await?;
    s.enable_pilot().await?;
    // The chooser held for the agent (the page hook would cancel it otherwise).
    s.policy("must_respond", 60).await?;
    let bt = Bluetooth::emulate(&s.browser.cdp).await?;
    bt.preconnected("09:09:09:09:09:09", "Heart Rate").await?;
    let runtime = &s.browser.runtime;
    let held = answerer_hook(runtime, json!({"op": "want", "devices": true})).await?;
    ensure!(held["held"] == true, "the host holds a connection: {held}");
    answerer_hook(runtime, json!({"op": "wait", "which": "devices", "for": "covered", "url": url})).await?;
    s.page.click("#b").await?;
    let open = answerer_hook(runtime, json!({"op": "wait", "which": "devices"})).await?;
    let prompt = &open["prompts"][0];
    ensure!(prompt["url"] == url.as_str(), "{open}");
    ensure!(prompt["devices"][0]["id"] == "09:09:09:09:09:09", "{open}");
    let n = prompt["prompt"].clone();
    bt.advertise("08:08:08:08:08:08", "Thermo").await?;
    let two = answerer_hook(runtime, json!({"op": "wait", "which": "devices", "for": "devices", "count": 2})).await?;
    let mut ids: Vec<&str> =
        two["prompts"][0]["devices"].as_array().unwrap().iter().filter_map(|d| d["id"].as_str()).collect();
    ids.sort_unstable();
    ensure!(ids == ["08:08:08:08:08:08", "09:09:09:09:09:09"], "{two}");
    ensure!(two["prompts"][0]["prompt"] == n, "the same chooser, kept current: {two}");
    let gone =
        answerer_hook(runtime, json!({"op": "select_device", "prompt": n, "device_id": "07:07:07:07:07:07"})).await;
    ensure!(gone.as_ref().is_err_and(|e| e.to_string().contains("no device")), "{gone:?}");
    ensure!(title(&s).await? == "bt", "the chooser is still open");
    // The preconnected one, whose name the page can check (an advertised-only device reached
    // the page with `name` null).
    answerer_hook(runtime, json!({"op": "select_device", "prompt": n, "device_id": "09:09:09:09:09:09"})).await?;
    let got = eventually(Duration::from_secs(10), "the page got the device", || async {
        Ok((title(&s).await? == "got Heart Rate").then_some(()))
    })
    .await;
    ensure!(got.is_ok(), "the page's title: {:?}", title(&s).await);
    let after = answerer_hook(runtime, json!({"op": "prompts"})).await?;
    ensure!(after["prompts"].as_array().is_some_and(Vec::is_empty), "{after}");
    Ok(())
}

/// With the pilot off the answerer attaches to nothing, so it sees no chooser and picks
/// nothing; the page's chooser is the browser's own.
#[tokio::test]
async fn with_the_pilot_off_the_answerer_sees_and_picks_nothing() -> Result<()> {
    let s = session().await?;
    let url = s.open("/bt.html", PAGE, &[]).await?;
    let bt = Bluetooth::emulate(&s.browser.cdp).await?;
    bt.preconnected("09:09:09:09:09:09", "Heart Rate").await?;
    let runtime = &s.browser.runtime;
    answerer_hook(runtime, json!({"op": "want", "devices": true})).await?;
    let covered = answerer_hook(runtime, json!({"op": "wait", "which": "devices", "for": "covered", "url": url})).await;
    ensure!(covered.is_err(), "pilot off: nothing attached: {covered:?}");
    s.page.click("#b").await?;
    // The page's click ran (its chooser is the browser's now), and the answerer has none.
    let none = answerer_hook(runtime, json!({"op": "prompts"})).await?;
    ensure!(none["prompts"].as_array().is_some_and(Vec::is_empty), "{none}");
    let pick =
        answerer_hook(runtime, json!({"op": "select_device", "prompt": 1, "device_id": "09:09:09:09:09:09"})).await;
    ensure!(pick.is_err(), "{pick:?}");
    ensure!(title(&s).await? == "bt", "nothing reached the page");
    Ok(())
}
