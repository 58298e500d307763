//! Remote browsers (`unmodal mcp --cdp-endpoint`): the browser runs where no native host
//! is installed (the provider stand-in, `unmodal_e2e::remote`: the zip's contents loaded,
//! an empty HOME, reachable only through a WebSocket proxy that demands a token), and the
//! MCP process keeps the state itself, reaching the extension over that one URL. Playwright
//! MCP drives the same browser through the same proxy.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tempfile::TempDir;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::remote::RemoteBrowser;
use unmodal_e2e::{Agent, Driver, Peer, Reply, WebServer, eventually};

pub(crate) const LIMIT: Duration = Duration::from_secs(15);

const DRAFTS: &str = "<!doctype html><title>drafts</title>\
    <button onclick=\"document.querySelector('#out').textContent = 'confirm: ' + confirm('Delete the draft?')\">Delete</button>\
    <p id=out>none</p>";

/// How `unmodal mcp` is pointed at the stand-in.
pub(crate) enum Via {
    /// The token in the URL's query, as most providers hand it out.
    Query,
    /// A Bearer header (`--cdp-header`).
    Header,
}

pub(crate) struct Remote {
    pub(crate) browser: RemoteBrowser,
    pub(crate) agent: Agent,
    pub(crate) runtime: TempDir,
    /// `UNMODAL_DATA_DIR` of `unmodal mcp` (downloads are copied into `downloads/` here).
    pub(crate) data: TempDir,
    pub(crate) web: WebServer,
    pub(crate) art: Artifacts,
}

impl Remote {
    pub(crate) async fn start(via: Via) -> Result<Self> {
        Self::start_with_roots(via, &[]).await
    }

    /// A session whose MCP client offers `roots` (the only directories files may come from).
    pub(crate) async fn start_with_roots(via: Via, roots: &[std::path::PathBuf]) -> Result<Self> {
        Self::start_in(RemoteBrowser::launch().await?, via, roots).await
    }

    /// `unmodal mcp --cdp-endpoint … --extension-id <the ID the browser gave the zip>` on
    /// `browser`.
    pub(crate) async fn start_in(browser: RemoteBrowser, via: Via, roots: &[std::path::PathBuf]) -> Result<Self> {
        let art = Artifacts::find()?;
        let runtime = tempfile::Builder::new().prefix("unmodal-remote-rt-").tempdir()?;
        let data = tempfile::Builder::new().prefix("unmodal-remote-data-").tempdir()?;
        let mut cmd = tokio::process::Command::new(&art.host);
        cmd.arg("mcp").env("UNMODAL_RUNTIME_DIR", runtime.path()).env("UNMODAL_DATA_DIR", data.path());
        // The answerer's test hook (`answerer.rs`); nothing else changes with it.
        cmd.env("UNMODAL_TEST_ANSWERER", "1");
        cmd.args(["--extension-id", browser.extension_id()]);
        match via {
            Via::Query => cmd.args(["--cdp-endpoint", &browser.ws_url()]),
            Via::Header => {
                cmd.args(["--cdp-endpoint", &browser.ws_url_needing_header(), "--cdp-header", &browser.header()])
            }
        };
        let agent = Agent::start_command(cmd, roots).await?;
        Ok(Self { browser, agent, runtime, data, web: WebServer::start()?, art })
    }

    /// `unmodal pilot <action>` in a terminal beside the agent, as a person types it.
    pub(crate) fn pilot(&self, action: &str) -> Result<String> {
        let out = std::process::Command::new(&self.art.host)
            .args(["pilot", action])
            .env("UNMODAL_RUNTIME_DIR", self.runtime.path())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        ensure!(out.status.success(), "`unmodal pilot {action}`: {text}{}", String::from_utf8_lossy(&out.stderr));
        Ok(text)
    }

    pub(crate) async fn pilot_on(&self) -> Result<()> {
        let said = self.pilot("on")?;
        ensure!(said.contains("AI Web Pilot is on"), "`unmodal pilot on` said: {said}");
        let tabs = self.agent.ok("observe", json!({"what": "tabs"})).await?;
        ensure!(tabs["pilot_enabled"] == json!(true), "the pilot is not on: {tabs}");
        Ok(())
    }

    /// A session with the pilot on and a tab (opened over the test's own connection)
    /// showing `html` at `path`: the URL, the page and its tab id.
    pub(crate) async fn with_page(
        via: Via,
        path: &str,
        html: &str,
    ) -> Result<(Self, String, unmodal_e2e::page::Page, i64)> {
        let r = Self::start(via).await?;
        r.pilot_on().await?;
        let url = r.web.page(path, html, &[]);
        let page = r.browser.new_page(&url).await?;
        let tab = r.tab_of(&url).await?;
        Ok((r, url, page, tab))
    }

    pub(crate) async fn tab_of(&self, url: &str) -> Result<i64> {
        self.agent.wait_for_tab_listed(url).await
    }

    /// The records of tab `tab`, once `ready` holds of them.
    pub(crate) async fn records(&self, tab: i64, what: &str, ready: impl Fn(&[Value]) -> bool) -> Result<Vec<Value>> {
        eventually(LIMIT, what, || async {
            let d = self.agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
            let recent: Vec<Value> = d["recent_dialogs"].as_array().cloned().unwrap_or_default();
            Ok(ready(&recent).then_some(recent))
        })
        .await
        .with_context(|| format!("browser log: {}", self.browser.log_tail()))
    }

    /// The prompt or dialog of tab `tab` held for the agent, once there is one (what
    /// blocks the tab: `pending_dialogs` also lists answered records not yet acknowledged).
    pub(crate) async fn held(&self, tab: i64) -> Result<Value> {
        eventually(LIMIT, "a prompt held for the agent", || async {
            let v = self.agent.ok("observe", json!({"what": "tabs"})).await?;
            let held = v["dialogs_blocking"]["dialogs"].as_array().cloned().unwrap_or_default();
            Ok(held.into_iter().find(|d| d["tab_id"] == tab))
        })
        .await
    }

    pub(crate) async fn rule(&self, args: Value) -> Result<Value> {
        let mut a = json!({"action": "handle_dialog", "setup": true});
        a.as_object_mut().context("an object")?.extend(args.as_object().cloned().unwrap_or_default());
        self.agent.ok("interact", a).await
    }
}

pub(crate) fn code(r: &Reply) -> Option<&str> {
    match r {
        Reply::Failed(v) => v["error"]["code"].as_str(),
        _ => None,
    }
}

#[tokio::test]
async fn a_rule_answers_the_confirm_a_drivers_click_raises_over_the_providers_url() -> Result<()> {
    let r = Remote::start(Via::Header).await?;
    r.pilot_on().await?;
    let peer = Peer::start_at(Driver::PlaywrightMcp, &r.browser.ws_url(), &[]).await?;
    let url = r.web.page("/drafts", DRAFTS, &[]);
    peer.navigate(&url).await?;
    let tab = r.tab_of(&url).await?;
    let set = r.rule(json!({"dialog_type": "confirm", "accept": true, "tab_id": tab})).await?;
    ensure!(set["rule_id"].is_u64(), "{set}");
    let click = tokio::time::timeout(LIMIT, peer.click_button(&url, "Delete")).await.context("the click hung")??;
    ensure!(
        !click.is_error && !click.text.to_lowercase().contains("modal state"),
        "the driver saw a modal: {}",
        click.text
    );
    let out = r.browser.cdp().call(None, "Target.getTargets", json!({})).await?;
    ensure!(out["targetInfos"].is_array());
    let recs = r.records(tab, "the confirm's record", |recs| !recs.is_empty()).await?;
    assert_eq!(
        (recs[0]["type"].as_str(), recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool()),
        (Some("confirm"), Some("rule"), Some(true)),
        "{recs:?}"
    );
    let text = peer.evaluate(&url, "() => document.querySelector('#out').textContent").await?;
    ensure!(text.text.contains("confirm: true"), "the page got: {}", text.text);
    peer.close().await?;
    Ok(())
}

#[tokio::test]
async fn must_respond_holds_the_dialog_and_the_agent_answers_it() -> Result<()> {
    let (r, _url, page, tab) = Remote::with_page(Via::Query, "/drafts", DRAFTS).await?;
    r.agent
        .ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60, "tab_id": tab}))
        .await?;
    // The click runs after this call returns: the page then waits on the held dialog.
    page.eval("setTimeout(() => document.querySelector('button').click(), 0); 0").await?;
    let held = r.held(tab).await?;
    ensure!(held["message"] == "Delete the draft?", "{held}");
    let id = held["dialog_id"].as_u64().context("a dialog_id")?;
    r.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    let out = eventually(LIMIT, "the page going on", || async {
        let v = page.eval("document.querySelector('#out').textContent").await?;
        Ok((v != "none").then_some(v))
    })
    .await?;
    assert_eq!(out, json!("confirm: true"));
    let recs = r.records(tab, "the closed record", |recs| recs.iter().any(|x| x["state"] == "closed")).await?;
    assert_eq!(recs[0]["closed_by"], "agent", "{recs:?}");
    Ok(())
}

#[tokio::test]
async fn print_app_links_passkeys_and_auth_are_answered_over_the_bridge() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.pilot_on().await?;
    let secret = r.web.protected("/admin", b"ADMIN", "text/plain", "staff", "ada", "pw1");
    let url = r.web.page("/kinds", "<!doctype html><title>kinds</title><p>kinds</p>", &[]);
    let page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    r.rule(json!({"dialog_type": "auth", "username": "ada", "password": "pw1", "tab_id": tab})).await?;
    // The defaults: print cancelled, an app link cancelled, a passkey refused.
    assert_eq!(page.eval("[print(), 'printed'][1]").await?, json!("printed"));
    page.eval("location.href = 'myapp://open'; 0").await?;
    let passkey = page
        .eval(
            "navigator.credentials.create({publicKey: {rp: {name: 'R'}, user: {id: new Uint8Array(4), name: 'u', \
             displayName: 'U'}, challenge: new Uint8Array(32), pubKeyCredParams: [{type: 'public-key', alg: -7}]}}) \
             .then(() => 'created', (e) => e.name)",
        )
        .await?;
    assert_eq!(passkey, json!("NotAllowedError"));
    let fetched = page.eval(&format!("fetch('{secret}').then((r) => r.text())")).await?;
    assert_eq!(fetched, json!("ADMIN"), "the auth rule's credentials reached the server");
    let recs = r
        .records(tab, "four kinds recorded", |recs| {
            ["print", "app_link", "passkey", "auth"].iter().all(|k| recs.iter().any(|x| x["type"] == *k))
        })
        .await?;
    let by = |k: &str| recs.iter().find(|x| x["type"] == k).map(|x| x["decided_by"].clone());
    assert_eq!(
        [by("print"), by("app_link"), by("passkey"), by("auth")],
        [
            Some(json!("default_policy")),
            Some(json!("default_policy")),
            Some(json!("default_policy")),
            Some(json!("rule"))
        ],
        "{recs:?}"
    );
    // No password in any answer.
    ensure!(!serde_json::to_string(&recs)?.contains("pw1"));
    Ok(())
}

#[tokio::test]
async fn the_pilot_tools_work_once_a_person_switched_the_pilot_on_in_a_terminal() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    let url = r.web.page("/p", "<!doctype html><title>p</title><h1>hi</h1>", &[]);
    let _page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    let run = json!({"script": "document.querySelector('h1').textContent", "tab_id": tab});
    let off = r.agent.call("execute_javascript", run.clone()).await?;
    let off_text = format!("{off:?}");
    ensure!(off_text.contains("ai_web_pilot_disabled"), "with the pilot off: {off_text}");
    r.pilot_on().await?;
    let on = r.agent.ok("execute_javascript", run).await?;
    assert_eq!((on["success"].as_bool(), &on["result"]), (Some(true), &json!("hi")), "{on}");
    let lit = r.agent.ok("highlight_element", json!({"selector": "h1", "tab_id": tab})).await?;
    ensure!(lit["success"] == true || lit["highlighted"].is_number() || lit.get("error").is_none(), "{lit}");
    Ok(())
}

/// Code the agent's driver runs in the worker (the binding is a global there) cannot
/// switch the pilot on, nor make the host take its word for the agent's answer.
#[tokio::test]
async fn code_run_in_the_worker_cannot_switch_the_pilot_or_answer_for_the_agent() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    let url = r.web.page("/drafts", DRAFTS, &[]);
    let _page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    // As a driver does: its own session on the worker, over the provider's URL.
    let (cdp, session) = r.browser.worker_session().await?;
    let forge = |expr: String| {
        let cdp = cdp.clone();
        let session = session.clone();
        async move { cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": expr, "returnByValue": true})).await }
    };
    let sent = forge(
        "typeof unmodalToHost === 'function' && (unmodalToHost(JSON.stringify({type: 'pilot', on: true, via: 'popup', id: 7})), \
         unmodalToHost(JSON.stringify({type: 'pilot', on: true, via: 'page'})), true)"
            .into(),
    )
    .await?;
    ensure!(sent["result"]["value"] == true, "the binding is there for a driver to call: {sent}");
    // And the host's own words to the worker, forged: the worker's cache says on.
    forge("unmodalFromHost(JSON.stringify([{type: 'pilot', on: true, rev: 999999}]))".into()).await?;
    let run = json!({"script": "1 + 1", "tab_id": tab});
    // The host (outside the browser) keeps the switch: still off, for the agent's tools too.
    let tabs = r.agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(tabs["pilot_enabled"] == json!(false), "{tabs}");
    let refused = format!("{:?}", r.agent.call("execute_javascript", run).await?);
    ensure!(refused.contains("ai_web_pilot_disabled"), "{refused}");
    // A forged "the held dialog closed" is recorded as closed by someone else over CDP,
    // never as the agent's answer.
    r.pilot_on().await?;
    r.agent
        .ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60, "tab_id": tab}))
        .await?;
    _page.eval("setTimeout(() => confirm('held for the agent'), 0); 0").await?;
    eventually(LIMIT, "the held dialog listed", || async {
        let d = r.agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
        Ok(d["pending_dialogs"].as_array().is_some_and(|p| !p.is_empty()).then_some(()))
    })
    .await?;
    forge(format!(
        "for (let hold = 0; hold < 8; hold++) unmodalToHost(JSON.stringify({{type: 'held_closed', tab_id: {tab}, hold, \
         accepted: true, text: '', gone: false}})); 0"
    ))
    .await?;
    let recs = r
        .records(tab, "the forged close recorded", |recs| {
            recs.iter().any(|x| x["message"] == "held for the agent" && x["state"] == "closed")
        })
        .await?;
    let rec = recs.iter().find(|x| x["message"] == "held for the agent").context("the record")?;
    ensure!(
        rec["closed_by"] != "agent" && rec["decided_by"] != "agent",
        "a forged close passed for the agent's answer: {rec}"
    );
    Ok(())
}

#[tokio::test]
async fn a_dropped_connection_comes_back_with_the_state_intact() -> Result<()> {
    let (r, _url, page, tab) = Remote::with_page(Via::Query, "/drafts", DRAFTS).await?;
    r.rule(json!({"dialog_type": "confirm", "accept": true, "once": false, "tab_id": tab})).await?;
    let before = r.browser.connections();
    let dropped = r.browser.drop_all().await;
    ensure!(dropped >= 1, "unmodal's connection was open");
    eventually(LIMIT, "unmodal connecting again", || async { Ok((r.browser.connections() > before).then_some(())) })
        .await?;
    // The rule is still in force (the state stayed in the MCP process), and the worker
    // reports over the new connection.
    assert_eq!(page.eval("confirm('after the drop')").await?, json!(true));
    let recs = r
        .records(tab, "the record after the drop", |recs| recs.iter().any(|x| x["message"] == "after the drop"))
        .await?;
    assert_eq!(recs[0]["decided_by"], "rule", "{recs:?}");
    let rules = r.agent.ok("interact", json!({"action": "handle_dialog", "status": true, "tab_id": tab})).await?;
    ensure!(rules.to_string().contains("\"confirm\""), "the rule is listed: {rules}");
    Ok(())
}

#[tokio::test]
async fn a_stopped_worker_is_reached_again_and_nothing_it_reported_is_lost() -> Result<()> {
    let (r, _url, _page, tab) = Remote::with_page(Via::Query, "/drafts", DRAFTS).await?;
    r.rule(json!({"dialog_type": "confirm", "accept": true, "once": false})).await?;
    r.browser.stop_worker().await?;
    // A page whose first script asks: its content script wakes the worker.
    let later = r.web.page(
        "/later",
        "<!doctype html><title>later</title><script>document.title = 'got ' + confirm('while the worker slept')</script>",
        &[],
    );
    let t0 = Instant::now();
    let page = r.browser.new_page(&later).await?;
    let tab2 = r.tab_of(&later).await?;
    let recs = r
        .records(tab2, "the new worker's report", |recs| recs.iter().any(|x| x["message"] == "while the worker slept"))
        .await?;
    eprintln!("the restarted worker's report reached the host {} ms after the page opened", t0.elapsed().as_millis());
    ensure!(recs[0]["type"] == "confirm", "{recs:?}");
    // The restarted worker had the binding before its first line: the bridge's
    // auto-attach held it at its start (or the session kept it, with Runtime.enable).
    let worker = r.browser.worker().await?.context("the worker runs again")?;
    let s = r
        .browser
        .cdp()
        .call(None, "Target.attachToTarget", json!({"targetId": worker["targetId"], "flatten": true}))
        .await?;
    let session = s["sessionId"].as_str().context("a session")?;
    // Asked with no connection number, the worker says who it is and changes nothing.
    let said = r
        .browser
        .cdp()
        .call(Some(session), "Runtime.evaluate", json!({"expression": "unmodalBridgeUp()", "returnByValue": true}))
        .await?;
    assert_eq!(said["result"]["value"]["binding_at_start"], json!(true), "{said}");
    let _ = (tab, page);
    Ok(())
}

#[tokio::test]
async fn a_killed_browser_is_a_clear_error_within_seconds() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    r.agent.ok("observe", json!({"what": "tabs"})).await?;
    r.browser.kill_browser();
    let t0 = Instant::now();
    let err = eventually(Duration::from_secs(30), "browser_gone", || async {
        let reply = r.agent.call("observe", json!({"what": "tabs"})).await?;
        Ok((code(&reply) == Some("browser_gone")).then_some(reply))
    })
    .await?;
    let text = format!("{err:?}");
    ensure!(!text.contains(r.browser.token()), "the token is withheld: {text}");
    ensure!(text.contains("--cdp-endpoint"), "says what to do next: {text}");
    eprintln!("browser_gone {} ms after the kill", t0.elapsed().as_millis());
    Ok(())
}

/// An endpoint that is not a browser's (here the proxy's HTTP side, which has no
/// `/json/version`) is said plainly, with what to pass instead; an `http://` endpoint
/// that is a browser's (Chromium's own port) works.
#[tokio::test]
async fn endpoints_are_taken_in_both_forms_and_a_wrong_one_is_said_plainly() -> Result<()> {
    let browser = RemoteBrowser::launch().await?;
    let art = Artifacts::find()?;
    let runtime = tempfile::Builder::new().prefix("unmodal-remote-rt-").tempdir()?;
    let start = |endpoint: String, id: Option<&str>| {
        let mut cmd = tokio::process::Command::new(&art.host);
        cmd.args(["mcp", "--cdp-endpoint", &endpoint]).env("UNMODAL_RUNTIME_DIR", runtime.path());
        cmd.args(id.map(|id| ["--extension-id", id]).into_iter().flatten());
        Agent::start_command(cmd, &[])
    };
    let port = browser.direct_url().split(':').nth(2).and_then(|p| p.split('/').next()).context("the direct port")?;
    // Without --extension-id the bridge waits for Unmodal's keyed ID; the zip has no key, so
    // the browser named it otherwise: the error names the IDs it saw and the flag to pass.
    let unpinned = start(format!("http://127.0.0.1:{port}"), None).await?;
    let keyed = &Artifacts::find()?.extension_id;
    let err = eventually(Duration::from_secs(30), "the missing ID said", || async {
        let reply = unpinned.call("observe", json!({"what": "tabs"})).await?;
        let text = format!("{reply:?}");
        Ok((code(&reply) == Some("extension_not_connected") && text.contains(browser.extension_id())).then_some(text))
    })
    .await?;
    ensure!(
        err.contains(&format!("no worker of extension ID {keyed} found; workers seen: [{}", browser.extension_id()))
            && err.contains("pass --extension-id"),
        "{err}"
    );
    unpinned.close().await?;
    let direct = start(format!("http://127.0.0.1:{port}"), Some(browser.extension_id())).await?;
    // The bridge answers at once; the extension's worker says who it is a moment later
    // (later still on a busy machine).
    eventually(Duration::from_secs(30), "the extension reached over the http:// endpoint", || async {
        let tabs = direct.ok("observe", json!({"what": "tabs"})).await?;
        Ok(tabs["browsers"][0]["browser"]["extension_version"].is_string().then_some(()))
    })
    .await?;
    direct.close().await?;
    let wrong = start(browser.http_url(), Some(browser.extension_id())).await?;
    let err = eventually(Duration::from_secs(30), "the wrong endpoint said", || async {
        let reply = wrong.call("observe", json!({"what": "tabs"})).await?;
        Ok((code(&reply) == Some("browser_gone")).then_some(reply))
    })
    .await?;
    let text = format!("{err:?}");
    ensure!(text.contains("could not connect") && text.contains("404") && text.contains("ws(s)://"), "{text}");
    ensure!(!text.contains(browser.token()), "{text}");
    Ok(())
}

/// A download lands on the browser's machine; Unmodal copies it here over the same CDP
/// URL (a file input given the browser's path, its blob read in chunks) and the record
/// names both paths.
#[tokio::test]
async fn a_remote_download_is_copied_to_this_machine() -> Result<()> {
    let (r, _url, page, tab) =
        Remote::with_page(Via::Query, "/export", "<!doctype html><title>export</title><a href=/report.csv>report</a>")
            .await?;
    // Over three of the copy's 1 MB chunks, and not the same byte throughout.
    let body: String = (0..3_300_000u32).map(|i| char::from(b'a' + u8::try_from(i % 26).unwrap_or(0))).collect();
    r.web.page(
        "/report.csv",
        &body,
        &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment; filename=report.csv")],
    );
    page.eval("document.querySelector('a').click(); 0").await?;
    let recs = r
        .records(tab, "the download copied here", |recs| {
            recs.iter().any(|x| x["type"] == "download" && x["path"].is_string())
        })
        .await?;
    let rec = recs.iter().find(|x| x["type"] == "download").context("the record")?;
    let local = std::path::PathBuf::from(rec["path"].as_str().context("path")?);
    let remote = rec["remote_path"].as_str().context("remote_path")?;
    ensure!(local.starts_with(r.data.path().join("downloads")), "copied into the data dir: {rec}");
    ensure!(std::path::Path::new(remote).starts_with(r.browser.home()), "the browser's own copy in its HOME: {rec}");
    ensure!(std::fs::read(&local)? == body.as_bytes(), "the copy has the server's bytes");
    assert_eq!(rec["size"], json!(body.len()), "{rec}");
    Ok(())
}

/// A second `unmodal mcp --cdp-endpoint` on the same browser (the first one gone) is a new
/// connection to the worker, which says `hello` to it: the tabs are there.
#[tokio::test]
async fn a_second_process_on_the_same_browser_is_heard() -> Result<()> {
    let (r, url, _page, _tab) = Remote::with_page(Via::Query, "/p", "<!doctype html><title>p</title>").await?;
    r.agent.ok("observe", json!({"what": "tabs"})).await?;
    let runtime = tempfile::Builder::new().prefix("unmodal-remote-rt-").tempdir()?;
    let mut cmd = tokio::process::Command::new(&r.art.host);
    cmd.args(["mcp", "--cdp-endpoint", &r.browser.ws_url(), "--extension-id", r.browser.extension_id()])
        .env("UNMODAL_RUNTIME_DIR", runtime.path());
    let second = Agent::start_command(cmd, &[]).await?;
    second.wait_for_tab_listed(&url).await?;
    Ok(())
}

/// Permission prompts cross the bridge too: the page hook holds the call, the host in the
/// MCP process decides it (here the default: deny), the worker sets the browser's own
/// setting, and the page gets the browser's refusal.
#[tokio::test]
async fn permission_prompts_are_decided_over_the_bridge() -> Result<()> {
    let (r, _url, page, tab) = Remote::with_page(Via::Query, "/perm", "<!doctype html><title>perm</title>").await?;
    let notifications = page.eval("Notification.requestPermission().then((r) => [r, Notification.permission])").await?;
    assert_eq!(notifications, json!(["denied", "denied"]));
    let geolocation = page
        .eval(
            "new Promise((done) => navigator.geolocation.getCurrentPosition(() => done('position'), \
             (e) => done(e.code), {timeout: 3000}))",
        )
        .await?;
    assert_eq!(geolocation, json!(1), "PERMISSION_DENIED");
    let recs = r
        .records(tab, "both prompts recorded", |recs| recs.iter().filter(|x| x["type"] == "permission").count() >= 2)
        .await?;
    for rec in recs.iter().filter(|x| x["type"] == "permission") {
        assert_eq!(
            (rec["decided_by"].as_str(), rec["accepted"].as_bool()),
            (Some("default_policy"), Some(false)),
            "{rec}"
        );
    }
    Ok(())
}

const FILES: &str = "<!doctype html><title>files</title>
<input type=file id=f><input type=file id=m multiple><input type=file id=d webkitdirectory>
<script>
  window.got = [];
  for (const id of ['f', 'm', 'd']) for (const t of ['change', 'cancel']) {
    document.getElementById(id).addEventListener(t, async (e) => {
      const files = [...e.target.files];
      const texts = await Promise.all(files.map((f) => f.text()));
      got.push([id, t, e.isTrusted, files.map((f, i) => [f.name, f.webkitRelativePath, f.size, texts[i]])]);
    });
  }
</script>";

/// The page's file input events from the `from`-th on, once there are `n` more.
async fn file_events(page: &unmodal_e2e::page::Page, from: usize, n: usize) -> Result<Vec<Value>> {
    eventually(Duration::from_secs(30), &format!("{n} file input event(s)"), || async {
        let got = page.eval("got").await?;
        let got = got.as_array().cloned().unwrap_or_default();
        Ok((got.len() >= from + n).then(|| got[from..].to_vec()))
    })
    .await
}

/// A remote page's file chooser gets the agent's files, although `DOM.setFileInputFiles`
/// takes a path on the browser's machine: the bridge copies them there first (a download
/// in a browser context of its own). The page gets a person's pick (trusted `change`, the
/// real bytes), from a rule, for a `multiple` input and a folder input, and from the agent's
/// answer to a held chooser. (A copy that fails is a unit test: `host/file_chooser.rs`.)
#[tokio::test]
async fn a_remote_file_chooser_gets_the_agents_files() -> Result<()> {
    let work = tempfile::tempdir()?;
    let cv = work.path().join("cv.txt");
    std::fs::write(&cv, "hello from unmodal")?;
    // Over three of the copy's 768 KiB chunks, not the same byte throughout.
    let big: String = (0..2_500_000u32).map(|i| char::from(b'a' + u8::try_from(i % 26).unwrap_or(0))).collect();
    std::fs::write(work.path().join("big.txt"), &big)?;
    std::fs::create_dir_all(work.path().join("folder/sub"))?;
    std::fs::write(work.path().join("folder/one.txt"), "1")?;
    std::fs::write(work.path().join("folder/sub/two.txt"), "22")?;
    let r = Remote::start_with_roots(Via::Query, &[work.path().to_owned()]).await?;
    r.pilot_on().await?;
    let url = r.web.page("/files", FILES, &[]);
    let page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    let files = |names: &[&str]| names.iter().map(|n| work.path().join(n).display().to_string()).collect::<Vec<_>>();
    let v =
        r.rule(json!({"dialog_type": "file_chooser", "once": false, "files": files(&["cv.txt", "big.txt"])})).await?;
    ensure!(v["rules_in_force"] == json!(true), "{v}");

    page.click("#m").await?;
    let got = file_events(&page, 0, 1).await?;
    ensure!(got[0][0] == "m" && got[0][1] == "change" && got[0][2] == true, "a person's pick: {got:?}");
    ensure!(got[0][3][0] == json!(["cv.txt", "", 18, "hello from unmodal"]), "{got:?}");
    ensure!(got[0][3][1][0] == "big.txt" && got[0][3][1][3] == json!(big), "the big file's bytes, unchanged");
    let recs = r.records(tab, "the rule's record", |recs| recs.iter().any(|x| x["type"] == "file_chooser")).await?;
    let rec = &recs[0];
    assert_eq!((rec["decided_by"].as_str(), rec["accepted"].as_bool()), (Some("rule"), Some(true)), "{rec}");

    // A folder input: each file in its place.
    r.rule(json!({"dialog_type": "file_chooser", "once": false, "files": files(&["folder"])})).await?;
    page.click("#d").await?;
    let got = file_events(&page, 1, 1).await?;
    let mut picked = got[0][3].as_array().cloned().unwrap_or_default();
    picked.sort_by_key(|v| v[1].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        picked,
        [json!(["one.txt", "folder/one.txt", 1, "1"]), json!(["two.txt", "folder/sub/two.txt", 2, "22"])]
    );

    // Held for the agent: its answer's files arrive the same way.
    r.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "clear": true, "dialog_type": "file_chooser"}))
        .await?;
    r.agent
        .ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60, "tab_id": tab}))
        .await?;
    page.click("#f").await?;
    let held = r.held(tab).await?;
    let id = held["dialog_id"].as_u64().context("a dialog_id")?;
    let fresh = work.path().join("fresh.txt");
    std::fs::write(&fresh, "answered by the agent")?;
    let answer = json!({"action": "handle_dialog", "dialog_id": id, "files": [fresh.display().to_string()]});
    // The copy may outlast the call's wait: then the call says the answer is on its way.
    match r.agent.call("interact", answer).await? {
        Reply::Ok(_) => {}
        other => ensure!(code(&other) == Some("answer_pending"), "{other:?}"),
    }
    let got = file_events(&page, 2, 1).await?;
    assert_eq!(got[0], json!(["f", "change", true, [["fresh.txt", "", 21, "answered by the agent"]]]));
    let recs = r.records(tab, "the agent's record", |recs| recs.iter().any(|x| x["closed_by"] == "agent")).await?;
    ensure!(recs[0]["accepted"] == json!(true), "{recs:?}");
    Ok(())
}

/// A second extension that plays issue 49's attack: its worker says what Unmodal's says
/// (`unmodalBridgeUp`), counts every call the bridge makes into it, and sends a forged tab
/// list into any binding it is given; its content script wakes it with each page.
const ROGUE_MANIFEST: &str = r#"{"manifest_version": 3, "name": "Rogue", "version": "0.1.0",
  "background": {"service_worker": "background.js"},
  "content_scripts": [{"matches": ["<all_urls>"], "js": ["wake.js"], "run_at": "document_start"}]}"#;
const ROGUE_WORKER: &str = "
globalThis.started = Date.now();
globalThis.asked = 0;
globalThis.told = 0;
globalThis.forged = 0;
globalThis.unmodalBridgeUp = () => (asked++, { unmodal: 1, version: '0.1.0', binding_at_start: true });
globalThis.unmodalFromHost = () => (told++, 0);
function forge() {
  if (typeof globalThis.unmodalToHost !== 'function') return;
  forged++;
  unmodalToHost(JSON.stringify({ type: 'hello', version: '0.1.0', session: 'rogue', worker: 'rogue', held: [] }));
  unmodalToHost(JSON.stringify({ type: 'tabs', tabs: [{ id: 424242, url: 'https://rogue.example/' }] }));
}
forge();
setInterval(forge, 100);
chrome.runtime.onMessage.addListener(() => {});
";

/// What the rogue's worker saw, read by the test's own session on it (attached and let go
/// each time, so that a restart of the worker is a new target the bridge attaches to
/// paused): `[typeof unmodalToHost, asked, told, forged, started]`, once it runs.
async fn rogue_state(r: &Remote, id: &str) -> Result<Option<Value>> {
    let Some(target) = r.browser.worker_of(id).await? else { return Ok(None) };
    let cdp = r.browser.cdp();
    let s = cdp.call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true})).await?;
    let session = s["sessionId"].as_str().context("a session")?.to_owned();
    let expression = "typeof started === 'number' ? [typeof unmodalToHost, asked, told, forged, started] : null";
    let v =
        cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": expression, "returnByValue": true})).await;
    cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session})).await?;
    let v = v?["result"]["value"].clone();
    Ok((!v.is_null()).then_some(v))
}

/// Issue 49 (trust): another extension cannot pass for Unmodal. On 892be98 this failed: the
/// bridge added its binding to every extension worker it attached to and took the worker's
/// own word for who it was, so the rogue below got `unmodalToHost`, was asked and told, and
/// `observe` listed its forged tab only (the agent's setup for the real tab failed with
/// `tab_not_found`). Now the bridge knows Unmodal's worker by the ID in its target URL, which
/// the browser sets: the rogue is let run and let go with nothing added, asked or heard,
/// also when it restarts (auto-attach holds it paused; it must be let run all the same).
#[tokio::test]
async fn another_extension_cannot_pass_for_unmodal() -> Result<()> {
    let rogue = tempfile::Builder::new().prefix("unmodal-rogue-ext-").tempdir()?;
    std::fs::write(rogue.path().join("manifest.json"), ROGUE_MANIFEST)?;
    std::fs::write(rogue.path().join("background.js"), ROGUE_WORKER)?;
    std::fs::write(rogue.path().join("wake.js"), "chrome.runtime.sendMessage('wake').catch(() => {});")?;
    let rogue_id = unmodal_e2e::remote::chromium_extension_id(&std::fs::canonicalize(rogue.path())?);
    let browser = RemoteBrowser::launch_beside(&[rogue.path().to_owned()]).await?;
    eventually(LIMIT, "the rogue's worker running beside Unmodal's", || async {
        Ok(browser.worker_of(&rogue_id).await?.map(|_| ()))
    })
    .await?;
    let r = Remote::start_in(browser, Via::Query, &[]).await?;
    r.pilot_on().await?;

    // The real session works: its tab is listed, a rule answers its confirm.
    let url = r.web.page("/drafts", DRAFTS, &[]);
    let page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    r.rule(json!({"dialog_type": "confirm", "accept": true, "once": false, "tab_id": tab})).await?;
    assert_eq!(page.eval("confirm('real one')").await?, json!(true));
    let recs = r.records(tab, "the real confirm", |recs| recs.iter().any(|x| x["message"] == "real one")).await?;
    assert_eq!(recs[0]["decided_by"], "rule", "{recs:?}");

    // The rogue was given, asked and told nothing, and forged nothing that was heard.
    let first = eventually(LIMIT, "the rogue's state", || rogue_state(&r, &rogue_id)).await?;
    assert_eq!(first.as_array().map(|a| a[..4].to_vec()), Some(vec![json!("undefined"), json!(0), json!(0), json!(0)]));
    let tabs = r.agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(!tabs.to_string().contains("424242") && !tabs.to_string().contains("rogue.example"), "{tabs}");
    ensure!(tabs["tabs"].as_array().is_some_and(|t| t.iter().any(|t| t["url"] == url)), "{tabs}");

    // Restarted, the rogue starts paused under the bridge's auto-attach: it is let run (it
    // sets `started` anew), still with nothing added.
    let target = r.browser.worker_of(&rogue_id).await?.context("the rogue's target")?;
    let closed = r.browser.cdp().call(None, "Target.closeTarget", json!({"targetId": target["targetId"]})).await?;
    ensure!(closed["success"] != false, "{closed}");
    let woken_by = r.web.page("/again", "<!doctype html><title>again</title>", &[]);
    let _again = r.browser.new_page(&woken_by).await?;
    let restarted = eventually(Duration::from_secs(30), "the rogue started again and running", || async {
        Ok(rogue_state(&r, &rogue_id).await?.filter(|v| v[4] != first[4]))
    })
    .await?;
    assert_eq!(
        restarted.as_array().map(|a| a[..4].to_vec()),
        Some(vec![json!("undefined"), json!(0), json!(0), json!(0)])
    );

    // And the real session still works, in a tab opened after the restart too.
    let tab2 = r.tab_of(&woken_by).await?;
    assert_eq!(page.eval("confirm('still real')").await?, json!(true));
    r.records(tab, "the second real confirm", |recs| recs.iter().any(|x| x["message"] == "still real")).await?;
    let tabs = r.agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(!tabs.to_string().contains("424242"), "{tabs}");
    ensure!(tabs["tabs"].as_array().is_some_and(|t| t.iter().any(|t| t["id"] == tab2)), "{tabs}");
    Ok(())
}
