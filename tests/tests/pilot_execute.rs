//! AI Web Pilot's `execute_javascript` end to end: the human's switch gates all three pilot
//! tools, scripts run in the page's own world (strict CSP, Trusted Types, another site's
//! frame), values JSON cannot carry are described, throws come back with their stack, a
//! runaway script is really stopped, and a held dialog refuses the call at once. Every
//! failure of `execute_javascript` is a result `{success: false, error, code, …}` (seed 004's
//! shape), never a tool error; the other pilot tools answer tool errors.

use anyhow::Context;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use unmodal_e2e::{Reply, Session, WebServer, eventually};

const PAGE: &str = "<!doctype html><title>pilot page</title><p id=p>hello</p>";
/// A call that should answer within its own budget: longer than this, it hung.
const HUNG: Duration = Duration::from_secs(20);

fn failed(r: Reply) -> Value {
    match r {
        Reply::Failed(v) => v["error"].clone(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

/// `execute_javascript`'s failure: a result (not `isError`) `{success: false, error: <a
/// sentence>, code, …}`.
#[track_caller]
fn unsuccessful(r: Reply, code: &str) -> Value {
    match r {
        Reply::Ok(v)
            if v["success"] == false && v["code"] == code && v["error"].as_str().is_some_and(|e| e.contains(' ')) =>
        {
            v
        }
        other => panic!("expected {{success: false, code: {code:?}, error}}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_pilot_tool_is_listed_and_refused_until_a_human_switches_it_on() -> anyhow::Result<()> {
    let s = Session::start().await?;
    s.open("/off", PAGE, &[]).await?;
    let mut names = s.agent.tool_names().await?;
    names.sort();
    assert_eq!(names, ["configure", "execute_javascript", "highlight_element", "interact", "manage_state", "observe"]);
    let calls = [
        ("execute_javascript", json!({"script": "1 + 1"})),
        // Even a script that would flip the switch never runs.
        ("execute_javascript", json!({"script": "chrome.storage.local.set({pilot: true})"})),
        ("highlight_element", json!({"selector": "#p"})),
        ("manage_state", json!({"action": "save", "snapshot_name": "x"})),
        ("manage_state", json!({"action": "list"})),
    ];
    for (tool, args) in calls {
        let r = s.agent.call(tool, args.clone()).await?;
        let message = if tool == "execute_javascript" {
            unsuccessful(r, "ai_web_pilot_disabled")["error"].clone()
        } else {
            let e = failed(r);
            assert_eq!(e["code"], "ai_web_pilot_disabled", "{tool} {args}: {e}");
            e["message"].clone()
        };
        assert!(message.as_str().unwrap().contains("`unmodal pilot on`"), "{message}");
    }
    // No parameter turns it on either.
    let e = unsuccessful(
        s.agent.call("execute_javascript", json!({"script": "1", "pilot": true})).await?,
        "invalid_params",
    );
    assert_eq!(e["param"], "pilot");
    assert_eq!(s.agent.ok("observe", json!({"what": "tabs"})).await?["pilot_enabled"], false);

    s.enable_pilot().await?;
    let v = s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
    assert_eq!((v["success"].as_bool(), &v["result"]), (Some(true), &json!(2)), "{v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn scripts_answer_values_and_throws_and_name_the_tab() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/exec", PAGE).await?;
    let v = s.agent.ok("execute_javascript", json!({"script": "1 + 1"})).await?;
    assert_eq!(v["success"], true);
    assert_eq!(v["result"], json!(2));
    assert_eq!(v["tab"]["url"], url.as_str(), "the answer names the tab: {v}");
    let tab = v["tab"]["id"].as_i64().unwrap();

    // Statements, page globals, awaited promises, an explicit tab.
    let v = s
        .agent
        .ok(
            "execute_javascript",
            json!({"script": "const p = document.querySelector('#p'); ({text: p.textContent, title: document.title})", "tab_id": tab}),
        )
        .await?;
    assert_eq!(v["result"], json!({"text": "hello", "title": "pilot page"}));
    let v = s
        .agent
        .ok("execute_javascript", json!({"script": "new Promise((r) => setTimeout(() => r('later'), 50))"}))
        .await?;
    assert_eq!(v["result"], "later");

    let v = s.agent.ok("execute_javascript", json!({"script": "throw new Error('test')"})).await?;
    assert_eq!((v["success"].as_bool(), v["error"].as_str()), (Some(false), Some("Error: test")), "{v}");
    let stack = v["stack"].as_str().unwrap();
    assert!(stack.starts_with("Error: test") && stack.contains("    at "), "{stack}");
    let v = s.agent.ok("execute_javascript", json!({"script": "Promise.reject(new TypeError('nope'))"})).await?;
    assert_eq!((v["success"].as_bool(), v["error"].as_str()), (Some(false), Some("TypeError: nope")), "{v}");

    let v = s.agent.call("execute_javascript", json!({"script": "1", "tab_id": 999_999})).await?;
    unsuccessful(v, "tab_not_found");
    let e = unsuccessful(
        s.agent.call("execute_javascript", json!({"script": "1", "timeout_ms": 0})).await?,
        "invalid_params",
    );
    assert_eq!(e["param"], "timeout_ms");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn values_json_cannot_carry_are_described_and_big_ones_cut() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/values", PAGE).await?;
    let script = "const o = {name: 'o'}; o.self = o; \
        [undefined, NaN, Infinity, 12345678901234567890n, document.querySelector('#p'), () => 1, o, new Map([[1, 'one']]), null, 'ok']";
    let v = s.agent.ok("execute_javascript", json!({"script": script})).await?;
    let r = v["result"].as_array().unwrap_or_else(|| panic!("{v}"));
    let kind = |i: usize| r[i]["$type"].as_str().unwrap_or_default().to_owned();
    assert_eq!(r.len(), 10, "nothing dropped: {v}");
    assert_eq!(kind(0), "undefined");
    assert_eq!((kind(1), &r[1]["$value"]), ("number".into(), &json!("NaN")));
    assert_eq!(r[2]["$value"], "Infinity");
    assert_eq!((kind(3), &r[3]["$value"]), ("bigint".into(), &json!("12345678901234567890")));
    assert_eq!((kind(4), &r[4]["$description"]), ("node".into(), &json!("<p id=\"p\">")));
    assert_eq!(kind(5), "function");
    assert_eq!((r[6]["name"].as_str(), r[6]["self"]["$type"].as_str()), (Some("o"), Some("reference")), "{v}");
    assert_eq!(r[7], json!({"$type": "map", "$entries": [[1, "one"]]}));
    assert_eq!((&r[8], &r[9]), (&Value::Null, &json!("ok")));
    assert!(v["described_values"].as_u64().unwrap() >= 7, "{v}");
    let v = s.agent.ok("execute_javascript", json!({"script": "undefined"})).await?;
    assert_eq!(v["result"], json!({"$type": "undefined"}));

    let v = s.agent.ok("execute_javascript", json!({"script": "'x'.repeat(1000000)"})).await?;
    assert_eq!(v["truncated"], true, "a clear flag when cut");
    assert!(v["result"].as_str().unwrap().len() < 100_000);
    // Page content passes through the host's redaction, as dialog text does.
    let v = s.agent.ok("execute_javascript", json!({"script": "'mail ada@example.com please'"})).await?;
    assert!(!v["result"].as_str().unwrap().contains("ada@example.com"), "{v}");
    assert_eq!(v["redacted"], json!(["email"]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn runaway_scripts_are_stopped_and_the_page_keeps_working() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/loop", PAGE).await?;
    s.page.eval("window.ticks = 0; setInterval(() => { ticks += 1; }, 10); 0").await?;
    for script in [
        "while (true) {}",
        "(async () => { await null; while (true) {} })()",
        // The loop starts in a later task of the page's, while the call waits.
        "(async () => { await new Promise((r) => setTimeout(r, 50)); while (true) {} })()",
        "new Promise(() => {})",
    ] {
        let start = Instant::now();
        let call = s.agent.call("execute_javascript", json!({"script": script, "timeout_ms": 500}));
        let r = tokio::time::timeout(HUNG, call).await.with_context(|| format!("{script}: the call hung"))??;
        let took = start.elapsed();
        let e = unsuccessful(r, "script_timeout");
        assert!(e["error"].as_str().unwrap().contains("500 ms"), "{e}");
        assert!(took >= Duration::from_millis(500), "{script}: stopped before its budget: {took:?}");
        // The page answers again, its own timers run, and so do later scripts.
        assert_eq!(s.page.eval("1 + 1").await?, json!(2), "{script}");
        let before = s.page.eval("ticks").await?.as_i64().unwrap();
        eventually(Duration::from_secs(5), "the page's timer ticking again", || async {
            Ok((s.page.eval("ticks").await?.as_i64().unwrap() > before).then_some(()))
        })
        .await?;
        let v = s.agent.ok("execute_javascript", json!({"script": "document.title"})).await?;
        assert_eq!(v["result"], "pilot page", "{script}");
    }
    Ok(())
}

// The probe is a script of the page's own origin ('self'): it proves the policy is in force
// and counts violations from then on.
const PROBE: &str = "window.violations = []; \
    window.markerPolicy = trustedTypes.createPolicy('marker', {createScriptURL: (u) => u}); \
    try { eval('1'); window.evalBlocked = false; } catch (e) { window.evalBlocked = true; } \
    try { document.body.innerHTML = '<i>x</i>'; window.ttEnforced = false; } catch (e) { window.ttEnforced = true; } \
    window.violations.length = 0; \
    document.addEventListener('securitypolicyviolation', (e) => violations.push([e.violatedDirective, e.blockedURI, e.sourceFile].join(' ')));";

#[tokio::test(flavor = "multi_thread")]
async fn strict_csp_and_trusted_types_pages_run_scripts_with_no_violation() -> anyhow::Result<()> {
    let s = Session::start().await?;
    s.web.page("/probe.js", PROBE, &[]);
    let html = "<!doctype html><title>strict</title><body><p id=p>strict</p><script src=/probe.js></script></body>";
    let strict = "script-src 'self'; report-uri /csp-report";
    let tt = "script-src 'self'; require-trusted-types-for 'script'; trusted-types marker; report-uri /csp-report";
    s.open("/strict", html, &[("Content-Security-Policy", strict)]).await?;
    s.enable_pilot().await?;
    let mut reports_before = 0;
    for (path, policy, trusted_types) in [("/strict", strict, false), ("/tt", tt, true)] {
        if path == "/tt" {
            s.open(path, html, &[("Content-Security-Policy", policy)]).await?;
        }
        assert_eq!(
            s.page.eval("[window.evalBlocked, window.ttEnforced]").await?,
            json!([true, trusted_types]),
            "{path}"
        );
        let v = s
            .agent
            .ok("execute_javascript", json!({"script": "[eval('6 * 7'), new Function('return 1')(), document.title]"}))
            .await?;
        assert_eq!(v["result"], json!([42, 1, "strict"]), "{path}: {v}");
        // A violation of the page's own marks the end: once its event is in, one the call
        // caused would be in too. The probe's own violations (its file) are the page's.
        s.page
            .eval("document.head.append(Object.assign(document.createElement('script'), {src: markerPolicy.createScriptURL('http://127.0.0.2:9/marker.js')})); 0")
            .await?;
        let not_probe = "violations.filter((v) => !v.includes('/probe.js'))";
        eventually(Duration::from_secs(10), "the marker's violation", || async {
            Ok((s.page.eval(&format!("{not_probe}.length")).await? != json!(0)).then_some(()))
        })
        .await?;
        let seen = s.page.eval(not_probe).await?;
        assert_eq!(seen.as_array().map(Vec::len), Some(1), "{path}: only the marker: {seen}");
        assert!(seen[0].as_str().unwrap().contains("127.0.0.2"), "{seen}");
        // Each violation the page saw is reported once; the call added none.
        let all = s.page.eval("violations.length").await?.as_u64().unwrap() as usize;
        eventually(Duration::from_secs(10), "every violation's report", || async {
            Ok((s.web.hits("/csp-report") >= reports_before + all).then_some(()))
        })
        .await?;
        assert_eq!(s.web.hits("/csp-report"), reports_before + all, "{path}: one report per violation the page saw");
        reports_before += all;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frame_from_another_site_is_reached_by_its_url() -> anyhow::Result<()> {
    let other = WebServer::other_site()?;
    let inner = other.page("/inner", "<!doctype html><title>inner</title><p id=q>from the other site</p>", &[]);
    let html = format!(
        "<!doctype html><title>outer</title><iframe src=\"{inner}\"></iframe><iframe srcdoc=\"<p>same</p>\"></iframe>"
    );
    let (s, _) = Session::with_pilot("/outer", &html).await?;
    eventually(Duration::from_secs(10), "the frame loading", || async {
        let loaded = "document.querySelector('iframe').contentDocument === null"; // cross-origin: no access
        Ok((s.page.eval(loaded).await? == json!(true)).then_some(()))
    })
    .await?;
    let v = s
        .agent
        .ok("execute_javascript", json!({"script": "[location.origin, document.querySelector('#q').textContent]", "frame_url_contains": "/inner"}))
        .await?;
    assert_eq!(v["result"], json!([other.origin, "from the other site"]), "{v}");
    assert_eq!(v["frame_url"], inner.as_str());
    // The top document by default.
    let v = s.agent.ok("execute_javascript", json!({"script": "document.title"})).await?;
    assert_eq!(v["result"], "outer");
    let r = s.agent.call("execute_javascript", json!({"script": "1", "frame_url_contains": "/nowhere"})).await?;
    unsuccessful(r, "frame_not_found");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_dialog_refuses_pilot_calls_at_once_with_the_dialog() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/held", PAGE).await?;
    s.policy("must_respond", 60).await?;
    s.page_later("window.got = confirm('Delete everything?')").await?;
    let held = s.held(1).await?;
    let id = held[0]["dialog_id"].as_u64().unwrap();
    for (tool, args) in [
        ("execute_javascript", json!({"script": "1 + 1"})),
        ("highlight_element", json!({"selector": "#p"})),
        ("manage_state", json!({"action": "save", "snapshot_name": "held"})),
    ] {
        // At once: not after the 60 s watchdog, which a deadline far below it shows.
        let r =
            tokio::time::timeout(HUNG, s.agent.call(tool, args)).await.with_context(|| format!("{tool} waited"))??;
        let (e, message) = if tool == "execute_javascript" {
            let e = unsuccessful(r, "dialog_blocking");
            assert_eq!(e["dialogs_blocking"]["dialogs"][0]["dialog_id"].as_u64(), Some(id), "{e}");
            let message = e["error"].clone();
            (e, message)
        } else {
            let e = failed(r);
            assert_eq!(e["code"], "dialog_blocking", "{tool}: {e}");
            let message = e["message"].clone();
            (e, message)
        };
        assert_eq!(
            (e["dialog"]["dialog_id"].as_u64(), e["dialog"]["type"].as_str(), e["dialog"]["message"].as_str()),
            (Some(id), Some("confirm"), Some("Delete everything?"))
        );
        assert!(message.as_str().unwrap().contains(&format!("dialog_id:{id}")), "{e}");
    }
    s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    let v = s.agent.ok("execute_javascript", json!({"script": "window.got"})).await?;
    assert_eq!(v["result"], true);
    Ok(())
}

// The call's commands follow the attach without waiting for it: when the attach is refused
// the answer says so, and the tab is usable once it shows a web page again.
#[tokio::test(flavor = "multi_thread")]
async fn a_tab_the_debugger_cannot_attach_to_is_a_clear_error() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/attach", PAGE).await?;
    s.page.goto("chrome://version/").await?;
    let tab = s.agent.wait_for_tab_listed("chrome://version/").await?;
    let e = unsuccessful(
        s.agent.call("execute_javascript", json!({"script": "1 + 1", "tab_id": tab})).await?,
        "pilot_failed",
    );
    assert!(e["error"].as_str().unwrap().contains("could not attach"), "{e}");
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    let v = s.agent.ok("execute_javascript", json!({"script": "document.title", "tab_id": tab})).await?;
    assert_eq!(v["result"], "pilot page", "{v}");
    Ok(())
}

// Seed 004's scenario 5 as an agent that tests `success` meets it: a runaway script under a
// small budget, then the same call once the person switched the pilot off.
#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_and_the_pilot_off_answer_success_false_with_a_code() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/budget", PAGE).await?;
    let start = Instant::now();
    let call = s.agent.call("execute_javascript", json!({"script": "while(true){}", "timeout_ms": 200}));
    let r = tokio::time::timeout(HUNG, call).await.context("the call hung")??;
    let took = start.elapsed();
    let v = unsuccessful(r, "script_timeout");
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("200 ms") && error.contains("timeout_ms"), "says what happened and what to do: {v}");
    assert_eq!(v["tab"]["url"], url.as_str(), "names the tab: {v}");
    assert!(v.get("result").is_none() && v.get("stack").is_none(), "{v}");
    assert!(took >= Duration::from_millis(200), "stopped before its budget: {took:?}");
    let v = s.agent.ok("execute_javascript", json!({"script": "document.title"})).await?;
    assert_eq!((v["success"].as_bool(), &v["result"]), (Some(true), &json!("pilot page")), "{v}");

    let said = s.pilot_command("off")?;
    assert!(said.contains("AI Web Pilot is off"), "{said}");
    let v =
        unsuccessful(s.agent.call("execute_javascript", json!({"script": "1 + 1"})).await?, "ai_web_pilot_disabled");
    assert!(v["error"].as_str().unwrap().contains("`unmodal pilot on`"), "{v}");
    assert_eq!(v["pilot_enabled"], false, "{v}");
    Ok(())
}
