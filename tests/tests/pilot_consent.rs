//! Only a person switches AI Web Pilot on. In a browser open to DevTools clients the
//! agent's own driver (Playwright MCP, chrome-devtools-mcp) can open and click the popup
//! page, write the extension's storage, message its worker and run code inside the worker;
//! each way is refused, recorded, and leaves the pilot off. `unmodal pilot on` in a terminal
//! switches it on; off works from anywhere; restarts never turn it on by themselves.

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::page::Page;
use unmodal_e2e::{Driver, Peer, Reply, Session, eventually};

const PAGE: &str = "<!doctype html><title>work</title><p id=p>work</p>";
const LIMIT: Duration = Duration::from_secs(10);

fn popup_url(s: &Session) -> String {
    format!("chrome-extension://{}/popup.html", s.browser.art.extension_id)
}

/// The pilot is off as the agent sees it: the host says so and a pilot tool is refused.
async fn assert_off(s: &Session, after: &str) -> Result<()> {
    let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(tabs["pilot_enabled"] == false, "after {after}: the pilot is on: {tabs}");
    // execute_javascript answers its failures as results: {success: false, error, code}.
    match s.agent.call("execute_javascript", json!({"script": "1 + 1"})).await? {
        Reply::Ok(v) if v["success"] == false && v["code"] == "ai_web_pilot_disabled" => Ok(()),
        other => anyhow::bail!("after {after}: execute_javascript was not refused: {other:?}"),
    }
}

/// Waits until the host logged a refusal whose summary contains `words`.
async fn refusal_logged(s: &Session, words: &str) -> Result<Value> {
    eventually(LIMIT, &format!("a refusal mentioning {words:?} in the logs"), || async {
        // Entries about the whole browser are in every tab's logs; the driver may have
        // taken the tracked tab to an extension page.
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        let tab = tabs["tabs"][0]["id"].clone();
        let logs = s.agent.ok("observe", json!({"what": "logs", "tab_id": tab})).await?;
        Ok(logs["logs"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| {
                e["type"] == "pilot"
                    && e["summary"].as_str().is_some_and(|t| t.starts_with("Refused") && t.contains(words))
            })
            .cloned())
    })
    .await
}

/// What the popup page at hand shows under the switch.
async fn popup_says(popup: &Page, words: &str) -> Result<String> {
    eventually(LIMIT, &format!("the popup saying {words:?}"), || async {
        let why = popup.eval("document.querySelector('#why').textContent").await?;
        Ok(why.as_str().filter(|t| t.contains(words)).map(str::to_owned))
    })
    .await
}

async fn started(driver: Driver) -> Result<(Session, Peer)> {
    let s = Session::start().await?;
    s.open("/work", PAGE, &[]).await?;
    // chrome-devtools-mcp opens extension pages only with its extension tools on.
    let extra: &[&str] = if driver == Driver::ChromeDevtoolsMcp { &["--categoryExtensions"] } else { &[] };
    let peer = Peer::start_with(driver, s.browser.debugging_port()?, extra).await?;
    Ok((s, peer))
}

/// The driver opens the popup page and clicks the switch, writes the switch into storage,
/// and messages the worker as the popup does: the pilot stays off each time.
async fn the_drivers_own_tools_cannot_switch_it_on(driver: Driver) -> Result<()> {
    let (s, peer) = started(driver).await?;
    let url = popup_url(&s);
    peer.navigate(&url).await?;
    let click = peer.click_role(&url, "switch", "AI Web Pilot").await?;
    ensure!(!click.is_error, "{driver:?} could not click the switch: {}", click.text);
    refusal_logged(&s, "popup page loaded in a tab").await?;
    assert_off(&s, "clicking the popup page's switch").await?;
    let why = peer.evaluate(&url, "() => document.querySelector('#why').textContent").await?;
    ensure!(why.text.contains("unmodal pilot on"), "the popup does not say why: {}", why.text);

    // Storage written by the extension page: refused, recorded, and put back.
    let wrote = peer.evaluate(&url, "() => chrome.storage.local.set({pilot: true}).then(() => 'written')").await?;
    ensure!(wrote.text.contains("written"), "{}", wrote.text);
    refusal_logged(&s, "storage").await?;
    eventually(LIMIT, "the worker putting its cache back", || async {
        let r = peer.evaluate(&url, "() => chrome.storage.local.get('pilot').then((r) => String(r.pilot))").await?;
        Ok(r.text.contains("false").then_some(()))
    })
    .await?;
    assert_off(&s, "a storage write from the popup page").await?;

    // The message the popup sends, from the page in a tab.
    let asked = peer
        .evaluate(&url, "() => chrome.runtime.sendMessage({type: 'pilot_switch', on: true}).then(JSON.stringify)")
        .await?;
    ensure!(asked.text.contains("refused") && asked.text.contains("unmodal pilot on"), "{}", asked.text);
    assert_off(&s, "the popup's message sent from a tab").await?;
    peer.close().await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_cannot_switch_it_on_through_the_popup_storage_or_messages() -> Result<()> {
    the_drivers_own_tools_cannot_switch_it_on(Driver::PlaywrightMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_cannot_switch_it_on_through_the_popup_storage_or_messages() -> Result<()> {
    the_drivers_own_tools_cannot_switch_it_on(Driver::ChromeDevtoolsMcp).await
}

/// `browser_run_code_unsafe` reaches Unmodal's own service worker and runs code there: a
/// storage write, and the host's own message (through a host it starts itself).
#[tokio::test(flavor = "multi_thread")]
async fn code_run_inside_the_worker_cannot_switch_it_on() -> Result<()> {
    let (s, peer) = started(Driver::PlaywrightMcp).await?;
    let worker = format!("chrome-extension://{}/background.js", s.browser.art.extension_id);
    let code = format!(
        "async (page) => {{
          const w = page.context().serviceWorkers().find((w) => w.url() === {worker:?});
          if (!w) return 'no worker';
          await w.evaluate(() => chrome.storage.local.set({{ pilot: true }}));
          return await w.evaluate(() => new Promise((resolve) => {{
            const heard = [];
            const port = chrome.runtime.connectNative('dev.unmodal.host');
            port.onMessage.addListener((m) => {{
              heard.push(m);
              if (m.type === 'pilot' && m.id === 1) {{ port.disconnect(); resolve(JSON.stringify(heard)); }}
            }});
            port.postMessage({{ type: 'hello', version: '0.1.0', pilot: true }});
            port.postMessage({{ type: 'pilot', on: true, via: 'popup', id: 1 }});
            setTimeout(() => resolve('no answer: ' + JSON.stringify(heard)), 15000);
          }}));
        }}"
    );
    let r = peer.call("browser_run_code_unsafe", json!({"code": code})).await?;
    ensure!(!r.is_error, "run_code failed: {}", r.text);
    // The host it started answered for itself: a program controls this browser, refused.
    ensure!(r.text.contains(r#"\"refused\":"#) && r.text.contains("remote-debugging-port"), "{}", r.text);
    ensure!(r.text.contains(r#"\"on\":false"#), "{}", r.text);
    refusal_logged(&s, "storage").await?;
    assert_off(&s, "code run in the worker").await?;
    peer.close().await
}

/// The popup page in a window of its own, and the real toolbar popup opened by
/// `chrome.action.openPopup()` from a driven extension page: a trusted click is refused in
/// both (a program can open and click either in this browser).
#[tokio::test(flavor = "multi_thread")]
async fn a_popup_window_and_the_toolbar_popup_opened_by_a_driver_refuse_too() -> Result<()> {
    let s = Session::start().await?;
    s.open("/work", PAGE, &[]).await?;
    let driven = s.open_popup().await?;
    let targets = |s: &Session| {
        let cdp = s.browser.cdp.clone();
        let url = popup_url(s);
        async move {
            let t = cdp.call(None, "Target.getTargets", json!({})).await?;
            Ok::<Vec<String>, anyhow::Error>(
                t["targetInfos"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|t| t["url"] == url.as_str())
                    .filter_map(|t| t["targetId"].as_str().map(str::to_owned))
                    .collect(),
            )
        }
    };
    for (how, open, words) in [
        (
            "a popup window",
            "chrome.windows.create({url: 'popup.html', type: 'popup'}).then(() => 'ok')",
            "tab or window",
        ),
        // The real popup: the worker sees DevTools on it (this test attaches), the host a
        // browser started with remote debugging; either refusal stands.
        (
            "the toolbar popup",
            "chrome.windows.getAll({windowTypes: ['normal']}).then((w) => chrome.action.openPopup({windowId: w[0].id})).then(() => 'ok')",
            "cannot turn",
        ),
    ] {
        let before = targets(&s).await?;
        ensure!(driven.eval(open).await? == json!("ok"), "{how} did not open");
        let id = eventually(LIMIT, &format!("{how} appearing"), || async {
            Ok(targets(&s).await?.into_iter().find(|t| !before.contains(t)))
        })
        .await?;
        let popup = Page::attach(s.browser.cdp.clone(), id).await?;
        eventually(LIMIT, "the popup rendering", || async {
            let ready = popup.eval("document.readyState === 'complete' && !!document.querySelector('#pilot')").await?;
            Ok((ready == json!(true)).then_some(()))
        })
        .await?;
        popup.click("#pilot").await?;
        let said = match popup_says(&popup, words).await {
            Ok(said) => said,
            Err(e) => {
                let now = popup
                    .eval("[document.querySelector('#why').textContent, document.querySelector('#pilot').checked]")
                    .await?;
                return Err(e.context(format!("{how}: the popup says {now}")));
            }
        };
        ensure!(said.contains("unmodal pilot on"), "{how}: {said}");
        ensure!(popup.eval("document.querySelector('#pilot').checked").await? == json!(false), "{how}: box left on");
        assert_off(&s, how).await?;
    }
    refusal_logged(&s, "popup page loaded in a tab or window").await?;
    Ok(())
}

/// The terminal command switches it on and the popup shows it; off is
/// taken from the terminal, from the popup page in a tab, and from a storage write.
#[tokio::test(flavor = "multi_thread")]
async fn the_terminal_command_switches_it_and_off_works_from_anywhere() -> Result<()> {
    let s = Session::start().await?;
    let url = s.open("/work", PAGE, &[]).await?;
    let popup = s.open_popup().await?;
    popup_says(&popup, "A program can control this browser").await?;
    s.page.bring_to_front().await?;
    s.agent.wait_for_tab(&url).await?;

    // How long it takes is the bench's figure (`pilot_on`), not this test's.
    let said = s.pilot_command("on")?;
    ensure!(said.contains("AI Web Pilot is on") && !said.contains("not confirmed"), "{said}");
    let v = s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
    ensure!(v["success"] == true && v["result"] == 2, "{v}");
    popup.eval("location.reload()").await?;
    eventually(LIMIT, "the popup showing the pilot on", || async {
        Ok((popup.eval("document.querySelector('#pilot')?.checked").await? == json!(true)).then_some(()))
    })
    .await?;
    let status = s.pilot_command("status")?;
    ensure!(status.contains("is on") && status.contains("A program can control this browser"), "{status}");

    // Off from the popup page in a tab (a click a driver could make: it only takes power away).
    popup.click("#pilot").await?;
    eventually(LIMIT, "the popup's click switching it off", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        Ok((tabs["pilot_enabled"] == false).then_some(()))
    })
    .await?;
    assert_off(&s, "the popup's off").await?;

    // Off by a storage write.
    s.pilot_command("on")?;
    popup.eval("chrome.storage.local.set({pilot: false})").await?;
    eventually(LIMIT, "a storage write switching it off", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        Ok((tabs["pilot_enabled"] == false).then_some(()))
    })
    .await?;

    // Off from the terminal.
    s.pilot_command("on")?;
    let said = s.pilot_command("off")?;
    ensure!(said.contains("AI Web Pilot is off"), "{said}");
    assert_off(&s, "`unmodal pilot off`").await?;
    Ok(())
}

/// Waits until a host other than `old` serves the browser; its pid.
async fn new_host(s: &Session, old: &Value) -> Result<Value> {
    eventually(Duration::from_secs(15), "a new host", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        let pid = tabs["browsers"][0]["browser"]["host_pid"].clone();
        Ok((!pid.is_null() && pid != *old && tabs["browsers"][0]["browser"]["extension_version"].is_string())
            .then_some(pid))
    })
    .await
}

async fn host_pid(s: &Session) -> Result<Value> {
    Ok(s.agent.ok("observe", json!({"what": "tabs"})).await?["browsers"][0]["browser"]["host_pid"].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_switch_survives_restarts_and_never_turns_itself_on() -> Result<()> {
    let (s, url) = Session::with_pilot("/work", PAGE).await?;
    // A stopped worker starts again on the browser's next event for it: a navigation.
    let restart = |what: &'static str| {
        let (s, url) = (&s, url.clone());
        async move {
            let old = host_pid(s).await?;
            if what == "worker" {
                s.stop_worker().await?;
            } else {
                std::process::Command::new("kill").args(["-9", &old.to_string()]).status()?;
            }
            s.page.goto(&url).await?;
            new_host(s, &old).await
        }
    };
    for what in ["worker", "host"] {
        restart(what).await?;
        let v = s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
        ensure!(v["success"] == true, "after a {what} restart the pilot is off: {v}");
    }

    // Off, with a forged "on" left in storage: neither restart reads it.
    s.pilot_command("off")?;
    let popup = s.open_popup().await?;
    for what in ["worker", "host"] {
        popup.eval("chrome.storage.local.set({pilot: true})").await?;
        restart(what).await?;
        assert_off(&s, &format!("a {what} restart")).await?;
    }
    Ok(())
}
