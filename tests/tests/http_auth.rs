//! HTTP auth (dialog_type "auth"): a 401 with `WWW-Authenticate: Basic` answered by a rule,
//! cancelled by default (the page gets the 401 at once), held for the agent under
//! must_respond, cancelled by the watchdog, never retried with refused credentials, left to
//! the browser while the pilot is off; credentials never in an answer, a log or a file.

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use unmodal_e2e::browser::Options;
use unmodal_e2e::web::{GIF, UNAUTHORIZED};
use unmodal_e2e::{Reply, Session, eventually};

const PAGE: &str = "<!doctype html><title>portal</title><p>portal</p>";
const SECRET_PAGE: &str = "<!doctype html><title>admin</title><p id=p>welcome, admin</p>";
const REALM: &str = "Staff only";
const USER: &str = "ada";
const PASSWORD: &str = "Tr0ub4dor-&-3-unique-0xC0FFEE";

/// A session on an open page of the site, with `/admin` and friends protected.
async fn session() -> anyhow::Result<Session> {
    let (s, _) = Session::with_pilot("/portal", PAGE).await?;
    protect(&s);
    Ok(s)
}

/// Each in its own directory: the browser sends credentials it has for a directory with
/// every later request under it, without a challenge.
fn protect(s: &Session) {
    // And each its own realm: the browser also answers a challenge itself when it has
    // credentials for the realm.
    s.web.protected("/n/admin", SECRET_PAGE.as_bytes(), "text/html; charset=utf-8", "Staff (page)", USER, PASSWORD);
    s.web.protected("/f/api", b"{\"ok\":true}", "application/json", REALM, USER, PASSWORD);
    s.web.protected("/x/api", b"{\"ok\":true}", "application/json", "Staff (xhr)", USER, PASSWORD);
    s.web.protected("/m/api", b"{\"ok\":true}", "application/json", "Staff (more)", USER, PASSWORD);
    s.web.protected("/i/pixel.gif", GIF, "image/gif", "Staff (image)", USER, PASSWORD);
}

fn rule(extra: Value) -> Value {
    let mut a = json!({"action": "handle_dialog", "setup": true, "dialog_type": "auth", "username": USER,
        "password": PASSWORD});
    a.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    a
}

const FETCH: &str = "fetch('/f/api').then((r) => r.status)";
const XHR: &str = "new Promise((done) => { const x = new XMLHttpRequest(); x.open('GET', '/x/api'); \
x.onloadend = () => done(x.status); x.send(); })";
const IMAGE: &str = "new Promise((done) => { const i = new Image(); i.onload = () => done('load'); \
i.onerror = () => done('error'); i.src = '/i/pixel.gif'; })";

/// The auth records of the tab, oldest first, once there are `n` and the last is closed.
async fn auth_records(s: &Session, n: usize) -> anyhow::Result<Vec<Value>> {
    let found = eventually(Duration::from_secs(10), &format!("{n} closed auth record(s)"), || async {
        let d = s.dialogs().await?;
        let recs: Vec<Value> =
            d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "auth").cloned().collect();
        let done = recs.len() >= n && recs.iter().all(|r| r["state"] == "closed" && r.get("outcome").is_some());
        Ok(done.then_some(recs))
    })
    .await;
    match found {
        Ok(recs) => Ok(recs),
        Err(e) => anyhow::bail!("{e}: {}", s.dialogs().await?),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_logs_in_a_navigation_a_fetch_an_xhr_and_an_image() -> anyhow::Result<()> {
    let s = session().await?;
    let v = s.agent.ok("interact", rule(json!({"once": false, "match": {"url_contains": "127.0.0.1"}}))).await?;
    assert_eq!((v["status"].as_str(), v["dialog_type"].as_str()), (Some("configured"), Some("auth")));
    assert_eq!((v["username"].as_str(), v["rules_in_force"].as_bool()), (Some(USER), Some(true)), "{v}");
    assert_eq!(v["auto_responses"][0]["match"]["url_contains"], "127.0.0.1");

    assert_eq!(s.page_value(FETCH).await?, json!(200));
    assert_eq!(s.page_value(XHR).await?, json!(200));
    assert_eq!(s.page_value(IMAGE).await?, json!("load"));
    s.page.goto(&format!("{}/n/admin", s.web.origin)).await?;
    assert_eq!(s.page_value("document.title").await?, json!("admin"));

    let recs = auth_records(&s, 4).await?;
    let types: Vec<&str> = recs.iter().filter_map(|r| r["request_type"].as_str()).collect();
    assert_eq!(types, ["xmlhttprequest", "xmlhttprequest", "image", "main_frame"], "{recs:?}");
    for r in &recs {
        assert_eq!(
            (r["decided_by"].as_str(), r["closed_by"].as_str(), r["accepted"].as_bool()),
            (Some("rule"), Some("rule"), Some(true)),
            "{r}"
        );
        assert_eq!((r["scheme"].as_str(), r["is_proxy"].as_bool()), (Some("basic"), Some(false)));
        assert!(r["realm"].as_str().unwrap().starts_with("Staff"), "{r}");
        assert_eq!((r["outcome"].as_str(), r["status_code"].as_u64()), (Some("authenticated"), Some(200)), "{r}");
        assert!(r["explanation"].as_str().unwrap().contains("auth rule"), "{r}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_rule_the_page_gets_the_401_at_once() -> anyhow::Result<()> {
    let s = session().await?;
    // "At once" is what the records below say: the default policy decided, no watchdog.
    assert_eq!(s.page_value(FETCH).await?, json!(401));
    s.page.goto(&format!("{}/n/admin", s.web.origin)).await?;
    assert_eq!(s.page_value("document.body.textContent").await?, json!(UNAUTHORIZED));
    let recs = auth_records(&s, 2).await?;
    for r in &recs {
        assert_eq!(
            (r["decided_by"].as_str(), r["accepted"].as_bool(), r["outcome"].as_str()),
            (Some("default_policy"), Some(false), Some("unauthorized")),
            "{r}"
        );
    }
    assert_eq!(s.web.auth_hits("/n/admin"), (0, 0, 1), "no credentials were sent");
    // Waiting for the agent's acknowledgement, as a default-answered dialog does.
    let d = s.dialogs().await?;
    assert!(d["pending_dialogs"].as_array().unwrap().iter().any(|p| p["type"] == "auth"), "{d}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn must_respond_holds_the_request_until_the_agent_logs_in() -> anyhow::Result<()> {
    let s = session().await?;
    s.policy("must_respond", 60).await?;
    s.page_later(&format!("window.got = {FETCH}")).await?;
    let held = s.held(1).await?;
    assert_eq!((held[0]["type"].as_str(), held[0]["message"].as_str()), (Some("auth"), Some(REALM)), "{held:?}");
    let d = s.dialogs().await?;
    let p = &d["pending_dialogs"][0];
    assert_eq!((p["state"].as_str(), p["realm"].as_str()), (Some("open"), Some(REALM)), "{d}");
    assert_eq!(p["url"], format!("{}/f/api", s.web.origin));
    assert!(d["dialogs_blocking"]["message"].as_str().unwrap().contains("username and password"), "{d}");
    // The request really waits: the server saw no credentials yet.
    assert_eq!(s.web.auth_hits("/f/api"), (0, 0, 1));

    // accept without credentials is refused, and the challenge still waits.
    match s.agent.call("interact", json!({"action": "handle_dialog", "accept": true})).await? {
        Reply::Failed(v) => assert_eq!(v["error"]["code"], "invalid_params", "{v}"),
        other => anyhow::bail!("accept without credentials must be refused: {other:?}"),
    }
    let id = held[0]["dialog_id"].as_u64().unwrap();
    let v = s
        .agent
        .ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "username": USER, "password": PASSWORD}))
        .await?;
    assert_eq!((v["status"].as_str(), v["agent_answer_applied"].as_bool()), (Some("dismissed"), Some(true)), "{v}");
    assert_eq!(s.page.eval("window.got").await?, json!(200));
    let r = &auth_records(&s, 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["closed_by"].as_str()), (Some("agent"), Some("agent")), "{r}");
    assert_eq!(s.web.auth_hits("/f/api"), (1, 0, 1));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watchdog_cancels_a_held_challenge() -> anyhow::Result<()> {
    let s = session().await?;
    s.policy("must_respond", 1).await?;
    let t = Instant::now();
    assert_eq!(s.page_value(FETCH).await?, json!(401));
    assert!(t.elapsed() >= Duration::from_millis(900), "cancelled before the watchdog: {:?}", t.elapsed());
    let r = &auth_records(&s, 1).await?[0];
    assert_eq!((r["closed_by"].as_str(), r["accepted"].as_bool()), (Some("watchdog"), Some(false)), "{r}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_credentials_are_not_tried_again() -> anyhow::Result<()> {
    let s = session().await?;
    let wrong = json!({"action": "handle_dialog", "setup": true, "dialog_type": "auth", "username": USER,
        "password": "not-it", "once": false});
    s.agent.ok("interact", wrong).await?;
    assert_eq!(s.page_value(FETCH).await?, json!(401));
    let recs = auth_records(&s, 2).await?;
    assert_eq!(recs.len(), 2, "one try with the rule, then a cancel: {recs:?}");
    assert_eq!((recs[0]["decided_by"].as_str(), recs[0]["outcome"].as_str()), (Some("rule"), Some("refused")));
    assert_eq!((recs[1]["attempt"].as_u64(), recs[1]["decided_by"].as_str()), (Some(2), Some("default_policy")));
    assert_eq!(recs[1]["outcome"], "unauthorized");
    assert_eq!(s.web.auth_hits("/f/api"), (0, 1, 1), "the wrong password went once");
    // Under must_respond the agent may try other credentials on the second challenge.
    s.policy("must_respond", 30).await?;
    s.page_later("window.got = fetch('/m/api').then((r) => r.status)").await?;
    // The rule answered the first challenge; the second waits for the agent.
    assert_eq!(s.held(1).await?[0]["type"], "auth");
    let v = s.agent.ok("interact", json!({"action": "handle_dialog", "username": USER, "password": PASSWORD})).await?;
    assert_eq!(v["agent_answer_applied"], true, "{v}");
    assert_eq!(s.page.eval("window.got").await?, json!(200));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_same_site_frame_is_answered_and_another_sites_frame_gets_its_401() -> anyhow::Result<()> {
    let s = session().await?;
    s.web.protected("/s/framed", SECRET_PAGE.as_bytes(), "text/html; charset=utf-8", "Staff (frame)", USER, PASSWORD);
    s.agent.ok("interact", rule(json!({"once": false}))).await?;
    let frame = |src: &str| {
        format!("<!doctype html><title>outer</title><iframe src='{src}' onload='window.framed = true'></iframe>")
    };
    s.open("/outer", &frame("/s/framed"), &[]).await?;
    let r = &auth_records(&s, 1).await?[0];
    assert_eq!((r["request_type"].as_str(), r["decided_by"].as_str()), (Some("sub_frame"), Some("rule")), "{r}");
    assert_eq!(r["outcome"], "authenticated");
    assert_eq!(s.web.auth_hits("/s/framed"), (1, 0, 1));
    assert_eq!(s.page_value("document.querySelector('iframe').contentDocument.title").await?, json!("admin"));

    // A frame from another site: Chromium asks nobody (measured: onAuthRequired does not
    // fire), so the frame shows the 401 at once, and there is nothing to answer or record.
    let other = unmodal_e2e::web::WebServer::other_site()?;
    let framed = other.protected("/framed", SECRET_PAGE.as_bytes(), "text/html; charset=utf-8", REALM, USER, PASSWORD);
    s.open("/outer2", &frame(&framed), &[]).await?;
    eventually(Duration::from_secs(10), "the other site's frame loading", || async {
        Ok((s.page_value("window.framed === true").await? == json!(true)).then_some(()))
    })
    .await?;
    assert_eq!(other.auth_hits("/framed"), (0, 0, 1), "asked once, no credentials sent");
    assert_eq!(auth_records(&s, 1).await?.len(), 1, "nothing new recorded");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn pilot_off_leaves_the_challenge_to_the_browser_and_reports_it() -> anyhow::Result<()> {
    let s = Session::start().await?;
    s.open("/portal", PAGE, &[]).await?;
    protect(&s);
    // A rule is stored, but the pilot is off: nothing answers for the agent.
    s.agent.ok("interact", rule(json!({}))).await?;
    // The browser's own login prompt opens (invisible in headless) and the request waits
    // for a human: Unmodal only reports it.
    s.page_later(&format!("window.got = {FETCH}")).await?;
    let open = eventually(Duration::from_secs(10), "the challenge reported as open", || async {
        let d = s.dialogs().await?;
        Ok(d["pending_dialogs"].as_array().into_iter().flatten().find(|p| p["type"] == "auth").cloned())
    })
    .await?;
    assert_eq!((open["state"].as_str(), open["decided_by"].as_str()), (Some("open"), Some("pilot_off")), "{open}");
    assert!(open["explanation"].as_str().unwrap().contains("Pilot is off"), "{open}");
    assert_eq!(s.web.auth_hits("/f/api"), (0, 0, 1), "no credentials were sent");
    // The page goes elsewhere: the request ends, and the record closes as remote.
    s.open("/elsewhere", PAGE, &[]).await?;
    let r = &auth_records(&s, 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["closed_by"].as_str()), (Some("pilot_off"), Some("remote")), "{r}");
    assert_eq!(r["outcome"], "failed", "{r}");
    assert_eq!(s.web.auth_hits("/f/api"), (0, 0, 1), "still no credentials");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_never_reach_an_answer_a_log_or_a_file() -> anyhow::Result<()> {
    let opts = Options { env: vec![("UNMODAL_LOG".into(), "trace".into())], ..Options::default() };
    let s = Session::start_with(opts).await?;
    s.open("/portal", PAGE, &[]).await?;
    s.enable_pilot().await?;
    protect(&s);
    let mut answers = Vec::new();
    answers.push(s.agent.ok("interact", rule(json!({"once": false, "match": {"url_contains": "/f/"}}))).await?);
    assert_eq!(s.page_value(FETCH).await?, json!(200));
    s.policy("must_respond", 30).await?;
    s.page_later("window.got = fetch('/x/api').then((r) => r.status)").await?;
    answers.push(json!(s.held(1).await?));
    answers.push(
        s.agent.ok("interact", json!({"action": "handle_dialog", "username": USER, "password": PASSWORD})).await?,
    );
    assert_eq!(s.page.eval("window.got").await?, json!(200));
    // A password of the wrong type is refused without being repeated.
    match s.agent.call("interact", json!({"action": "handle_dialog", "username": USER, "password": 918273645})).await? {
        Reply::Failed(v) => {
            assert!(!v.to_string().contains("918273645"), "{v}");
            answers.push(v);
        }
        other => anyhow::bail!("a number as password must be refused: {other:?}"),
    }
    for what in ["dialogs", "logs", "tabs"] {
        answers.push(s.agent.ok("observe", json!({"what": what})).await?);
    }
    answers.push(s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?);
    auth_records(&s, 2).await?;
    let popup = s.open_popup().await?;
    answers.push(popup.eval("chrome.runtime.sendMessage({type: 'status'})").await?);

    let mut places = vec![("answers".to_string(), serde_json::to_string(&answers)?)];
    places.push(("the host's log".into(), std::fs::read_to_string(&s.browser.log)?));
    for f in std::fs::read_dir(&s.browser.runtime)? {
        let f = f?.path();
        if f.is_file() {
            places.push((f.display().to_string(), String::from_utf8_lossy(&std::fs::read(&f)?).into_owned()));
        }
    }
    assert!(places.iter().any(|(p, _)| p.contains("state-")), "the state file exists: {places:?}");
    assert!(places[1].1.contains("unmodal"), "the host logged (at trace) into the browser's log");
    for (place, text) in &places {
        assert!(!text.contains(PASSWORD), "the password is in {place}");
    }
    // The username the agent gave shows in its rule (documented), never with the password.
    assert!(places[0].1.contains(USER));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_logs_in_a_hundred_fetches_started_at_once() -> anyhow::Result<()> {
    const N: u64 = 100;
    let s = session().await?;
    s.agent.ok("interact", rule(json!({"once": false}))).await?;
    // All at once: the browser opens its 6 connections to the site together, and each
    // waiting request takes the next free one.
    s.page_value(&format!(
        "window.got = {{}}; for (let i = 0; i < {N}; i++) fetch('/f/api?' + i, {{cache: 'no-store'}})
           .then((r) => r.status, (e) => e.name).then((v) => {{ got[v] = (got[v] || 0) + 1; }}); 0"
    ))
    .await?;
    let all = eventually(Duration::from_secs(30), &format!("all {N} fetches settled"), || async {
        let got = s.page_value("got").await?;
        let n: u64 = got.as_object().into_iter().flatten().filter_map(|(_, v)| v.as_u64()).sum();
        Ok((n == N).then_some(got))
    })
    .await;
    let got = match all {
        Ok(got) => got,
        Err(e) => {
            let (hits, dialogs) = (s.web.hits("/f/api"), s.dialogs().await?);
            let open: Vec<&Value> =
                dialogs["pending_dialogs"].as_array().into_iter().flatten().filter(|p| p["type"] == "auth").collect();
            anyhow::bail!(
                "{e}: {}; the server saw {hits} requests; auth prompts still open: {open:?}",
                s.page_value("got").await?
            )
        }
    };
    assert_eq!(got, json!({"200": N}));
    // Each fetch reached the server with the credentials once; the browser sends what it
    // was given to later requests unasked, so only the first few were challenged.
    let (good, wrong, none) = s.web.auth_hits("/f/api");
    assert_eq!((good, wrong), (N as usize, 0), "{:?}", s.web.auth_hits("/f/api"));
    assert!((1..=N as usize).contains(&none), "{none} challenges");
    Ok(())
}
