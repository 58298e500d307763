//! The host's CDP answerer in real Chromium, driven through its interface by the test hook
//! (no agent-facing shape yet: issue 51 gives each kind its answer). A browser with a
//! DevTools port, as `unmodal mcp --browser` starts one: the host's own connection goes
//! through the profile's `DevToolsActivePort`.

use anyhow::{Result, ensure};
use serde_json::json;
use std::time::Duration;
use unmodal_e2e::bluetooth::{self, Bluetooth, answerer_hook};
use unmodal_e2e::idp::Idp;
use unmodal_e2e::{Options, Session, activation, eventually};

const PAGE: &str = r#"<!doctype html><title>bt</title>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => document.title = 'got ' + d.name, (e) => { window.why = e.message; document.title = 'error ' + e.name; })">pair</button>"#;

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
    // What `device_picks::with_the_pilot_off_nothing_is_picked` reads as false, true here.
    let covers = answerer_hook(runtime, json!({"op": "covers", "which": "devices", "url": url})).await?;
    ensure!(covers == json!({"covered": true, "attaching": true}), "{covers}");
    let open = activation::click_until(&s.page, "#b", "the answerer's chooser", || async {
        let now = answerer_hook(runtime, json!({"op": "prompts"})).await?;
        Ok(now["prompts"].as_array().is_some_and(|p| !p.is_empty()).then_some(now))
    })
    .await?;
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

/// A relying party (on `localhost`) whose button asks the loopback provider for a token.
fn rp_page(config_url: &str) -> String {
    format!(
        r#"<!doctype html><title>rp</title>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.credentials.get({{identity: {{providers: [{{configURL: '{config_url}', clientId: 'c1', nonce: 'n1'}}]}}}}).then((c) => document.title = 'token ' + c.token, (e) => document.title = 'error ' + e.name)">sign in</button>"#
    )
}

/// The FedCM account list as the browser shows it (two accounts, with their emails), and the
/// account the answerer picks is the one the provider is asked for: the page gets its token.
#[tokio::test]
async fn the_answerer_lists_the_fedcm_accounts_and_picks_one() -> Result<()> {
    let s = session().await?;
    let rp = unmodal_e2e::WebServer::other_site()?;
    let idp = Idp::start(&rp.origin)?;
    let url = rp.page("/rp.html", &rp_page(&idp.config_url()), &[]);
    s.page.goto(&url).await?;
    s.page.bring_to_front().await?;
    s.agent.wait_for_tab(&url).await?;
    s.enable_pilot().await?;
    // A rule that leaves the sign-in to the browser lets the call through; the kind picks
    // nothing (the sign-in kind's own picks: `sign_in_picks.rs`).
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "sign_in", "accept": true}))
        .await?;
    let runtime = &s.browser.runtime;
    answerer_hook(runtime, json!({"op": "want", "accounts": true})).await?;
    answerer_hook(runtime, json!({"op": "wait", "which": "accounts", "for": "covered", "url": url})).await?;
    s.page.click("#b").await?;
    let open = answerer_hook(runtime, json!({"op": "wait", "which": "accounts"})).await?;
    let p = &open["prompts"][0];
    ensure!(p["dialog_type"] == "AccountChooser", "{open}");
    let listed: Vec<(&str, &str)> = p["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["account_id"].as_str().unwrap_or_default(), a["email"].as_str().unwrap_or_default()))
        .collect();
    ensure!(listed == [("u1", "one@idp.test"), ("u2", "two@idp.test")], "{open}");
    ensure!(p["accounts"][1]["config_url"] == idp.config_url().as_str(), "{open}");
    ensure!(idp.asserted.lock().unwrap().is_empty(), "nothing asserted before the pick");
    let n = p["prompt"].clone();
    let wrong = answerer_hook(runtime, json!({"op": "select_account", "prompt": n, "account_id": "u9"})).await;
    ensure!(wrong.as_ref().is_err_and(|e| e.to_string().contains("no account")), "{wrong:?}");
    answerer_hook(runtime, json!({"op": "select_account", "prompt": n, "account_id": "u2"})).await?;
    let got = eventually(Duration::from_secs(10), "the page got its token", || async {
        Ok((title(&s).await? == "token token-for-u2").then_some(()))
    })
    .await;
    ensure!(got.is_ok(), "the page's title: {:?}", title(&s).await);
    ensure!(*idp.asserted.lock().unwrap() == ["u2"], "the provider was asked for u2 alone");
    Ok(())
}

/// The same in a remote browser behind the WS-only proxy: the answerer rides on the
/// bridge's connection in `unmodal mcp --cdp-endpoint`.
#[tokio::test]
async fn behind_the_proxy_the_answerer_picks_a_fedcm_account_over_the_bridge() -> Result<()> {
    use super::remote::{Remote, Via};
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let rp = unmodal_e2e::WebServer::other_site()?;
    let idp = Idp::start(&rp.origin)?;
    let url = rp.page("/rp.html", &rp_page(&idp.config_url()), &[]);
    let page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    r.rule(json!({"dialog_type": "sign_in", "accept": true, "tab_id": tab})).await?;
    let runtime = r.runtime.path();
    let held = answerer_hook(runtime, json!({"op": "want", "accounts": true})).await?;
    ensure!(held["held"] == true, "the bridge's connection is the answerer's: {held}");
    answerer_hook(runtime, json!({"op": "wait", "which": "accounts", "for": "covered", "url": url})).await?;
    page.click("#b").await?;
    let open = answerer_hook(runtime, json!({"op": "wait", "which": "accounts"})).await?;
    let p = &open["prompts"][0];
    ensure!(p["accounts"].as_array().is_some_and(|a| a.len() == 2), "{open}");
    answerer_hook(runtime, json!({"op": "select_account", "prompt": p["prompt"], "account_id": "u1"})).await?;
    let title =
        || async { Ok::<_, anyhow::Error>(page.eval("document.title").await?.as_str().unwrap_or_default().to_owned()) };
    let got = eventually(Duration::from_secs(10), "the page got its token", || async {
        Ok((title().await? == "token token-for-u1").then_some(()))
    })
    .await;
    ensure!(got.is_ok(), "the page's title: {:?}", title().await);
    ensure!(*idp.asserted.lock().unwrap() == ["u1"]);
    Ok(())
}

/// A driver connected with Playwright's defaults took the default context's downloads
/// (`allowAndName` into its own directory, the file named by its GUID): the extension sees
/// nothing of them (892be98). The answerer, through a browser context of its own, hears
/// each download and where the finished file is, and the driver still gets its file.
#[tokio::test]
async fn the_answerer_sees_a_download_a_playwright_defaults_driver_took() -> Result<()> {
    let s = session().await?;
    let body = "x".repeat(4321);
    s.web.page("/file.bin", &body, &[("Content-Disposition", "attachment; filename=\"file.bin\"")]);
    let page = r#"<!doctype html><title>dl</title><a id=d href="/file.bin" download style="position: fixed; top: 10px; left: 10px">get</a>"#;
    let url = s.open("/dl.html", page, &[]).await?;
    s.enable_pilot().await?;
    let driver_dir = tempfile::tempdir()?;
    // What Playwright's `connectOverCDP` sends as it connects (`CRBrowserContext.initialize`).
    let p = json!({"behavior": "allowAndName", "downloadPath": driver_dir.path(), "eventsEnabled": true});
    s.browser.cdp.call(None, "Browser.setDownloadBehavior", p).await?;
    let runtime = &s.browser.runtime;
    let watched = answerer_hook(runtime, json!({"op": "watch_downloads", "on": true})).await?;
    ensure!(watched["watched"] == true, "{watched}");
    s.page.click("#d").await?;
    let seen = answerer_hook(runtime, json!({"op": "downloads"})).await?;
    let d = &seen["downloads"][0];
    ensure!(d["state"] == "completed", "{seen}");
    ensure!(
        d["url"].as_str().is_some_and(|u| u.ends_with("/file.bin")) && d["suggested_filename"] == "file.bin",
        "{seen}"
    );
    let file = std::path::PathBuf::from(d["file_path"].as_str().unwrap_or_default());
    ensure!(file.parent() == Some(driver_dir.path()), "in the driver's directory: {seen}");
    ensure!(file.file_name().and_then(|n| n.to_str()) == d["guid"].as_str(), "named by its GUID: {seen}");
    ensure!(std::fs::metadata(&file)?.len() == body.len() as u64, "the driver's file is whole");
    ensure!(url.starts_with("http://127.0.0.1"), "{url}");
    Ok(())
}
