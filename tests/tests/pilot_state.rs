//! AI Web Pilot's `manage_state`: a tab's localStorage, sessionStorage and every kind of
//! cookie (HttpOnly, path-scoped, host-only and domain, SameSite, Secure, partitioned) saved
//! and made true again, the URL too; answers and logs carry no value.

use serde_json::{Value, json};
use unmodal_e2e::{Options, Reply, Session};

const APP: &str = "<!doctype html><title>app</title><p>app</p>";
/// Every stored value carries this mark, so a test can tell if one leaked.
const MARK: &str = "VAL-";

fn failed(r: Reply) -> Value {
    match r {
        Reply::Failed(v) => v["error"].clone(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

/// The browser's cookies for the test's site, as comparable strings.
async fn cookies(s: &Session) -> anyhow::Result<Vec<String>> {
    let all = s.browser.cdp.call(None, "Storage.getCookies", json!({})).await?;
    let mut out: Vec<String> = all["cookies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["domain"].as_str().unwrap_or("").ends_with("pilot.test"))
        .map(|c| {
            json!([
                c["name"],
                c["value"],
                c["domain"],
                c["path"],
                c["httpOnly"],
                c["secure"],
                c["sameSite"],
                c["session"],
                c["expires"].as_f64().map(|e| e.round()),
                c["partitionKey"]
            ])
            .to_string()
        })
        .collect();
    out.sort();
    Ok(out)
}

async fn set_cookie(s: &Session, c: Value) -> anyhow::Result<bool> {
    Ok(s.page.call("Network.setCookie", c).await?["success"] != json!(false))
}

#[tokio::test(flavor = "multi_thread")]
async fn state_round_trip_restores_storage_every_cookie_kind_and_the_url() -> anyhow::Result<()> {
    let args = vec!["--host-resolver-rules=MAP *.pilot.test 127.0.0.1".to_owned()];
    let s = Session::start_with(Options { args, ..Options::default() }).await?;
    let port = s.web.origin.rsplit(':').next().unwrap_or_default().to_owned();
    s.web.page("/app/", APP, &[]);
    s.web.page("/elsewhere", "<!doctype html><title>elsewhere</title>", &[]);
    let url = format!("http://app.pilot.test:{port}/app/");
    s.page.goto(&url).await?;
    s.page.bring_to_front().await?;
    s.agent.wait_for_tab(&url).await?;
    s.enable_pilot().await?;

    let http = format!("http://app.pilot.test:{port}/");
    let later = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs() + 3600) as f64;
    for c in [
        json!({"name": "sid", "value": "VAL-sid", "url": http, "httpOnly": true}),
        json!({"name": "pref", "value": "VAL-pref", "domain": ".pilot.test", "path": "/", "sameSite": "Strict", "expires": later}),
        json!({"name": "deep", "value": "VAL-deep", "url": http, "path": "/app/deep", "sameSite": "Lax"}),
        json!({"name": "sec", "value": "VAL-sec", "url": "https://app.pilot.test/", "secure": true, "sameSite": "None"}),
    ] {
        assert!(set_cookie(&s, c.clone()).await?, "{c}");
    }
    // Partitioned (CHIPS): Chromium 156 takes it (re-check if a browser refuses).
    let partitioned = set_cookie(
        &s,
        json!({"name": "chip", "value": "VAL-chip", "url": "https://app.pilot.test/", "secure": true, "sameSite": "None",
               "partitionKey": {"topLevelSite": "https://pilot.test", "hasCrossSiteAncestor": false}}),
    )
    .await?;
    assert!(partitioned, "the browser refused a partitioned cookie");
    s.page
        .eval("localStorage.clear(); localStorage.setItem('a', 'VAL-a'); localStorage.setItem('b', 'VAL-b'); sessionStorage.setItem('s', 'VAL-s'); 0")
        .await?;
    let saved_cookies = cookies(&s).await?;
    assert_eq!(saved_cookies.len(), 4 + usize::from(partitioned), "{saved_cookies:?}");

    let v = s.agent.ok("manage_state", json!({"action": "save", "snapshot_name": "logged_in"})).await?;
    assert!(!v.to_string().contains(MARK), "no value in an answer: {v}");
    assert_eq!(v["saved"], json!({"localStorage": 2, "sessionStorage": 1, "cookies": saved_cookies.len()}), "{v}");
    assert!(v["size_bytes"].as_u64().unwrap() > 100);
    assert_eq!(v["tab"]["url"], url.as_str());

    // Everything changes: values, extra entries, cookies gone and one added, another origin.
    s.page
        .eval("localStorage.setItem('a', 'changed'); localStorage.setItem('extra', '1'); sessionStorage.clear(); 0")
        .await?;
    s.page.call("Network.deleteCookies", json!({"name": "sid", "url": http})).await?;
    s.page.call("Network.deleteCookies", json!({"name": "deep", "url": http, "path": "/app/deep"})).await?;
    assert!(set_cookie(&s, json!({"name": "pref", "value": "other", "domain": ".pilot.test", "path": "/"})).await?);
    assert!(set_cookie(&s, json!({"name": "junk", "value": "1", "url": http})).await?);
    s.page.goto(&format!("http://other.pilot.test:{port}/elsewhere")).await?;

    let v = s.agent.ok("manage_state", json!({"action": "load", "snapshot_name": "logged_in"})).await?;
    assert!(!v.to_string().contains(MARK), "{v}");
    assert_eq!(v["restored"], json!({"localStorage": 2, "sessionStorage": 1, "cookies": saved_cookies.len()}), "{v}");
    assert_eq!(v["removed"]["cookies"], 1, "junk: {v}");
    assert_eq!(v["navigated"], true);
    assert_eq!(s.page.eval("location.href").await?, json!(url));
    let storage = "JSON.stringify([Object.entries(localStorage).sort(), Object.entries(sessionStorage)])";
    assert_eq!(s.page.eval(storage).await?, json!(r#"[[["a","VAL-a"],["b","VAL-b"]],[["s","VAL-s"]]]"#));
    assert_eq!(cookies(&s).await?, saved_cookies, "every cookie as it was: kind, flags, path, partition");

    // Loading again changes nothing: only what differs is written.
    let v = s
        .agent
        .ok("manage_state", json!({"action": "load", "snapshot_name": "logged_in", "include_url": false}))
        .await?;
    assert_eq!(v["written"], json!({"localStorage": 0, "sessionStorage": 0, "cookies": 0}), "{v}");
    assert_eq!(v["removed"], json!({"localStorage": 0, "sessionStorage": 0, "cookies": 0}), "{v}");
    assert_eq!(v["navigated"], false);

    let v = s.agent.ok("manage_state", json!({"action": "list"})).await?;
    let list = v["snapshots"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{v}");
    assert_eq!((list[0]["name"].as_str(), list[0]["url"].as_str()), (Some("logged_in"), Some(url.as_str())));
    assert!(list[0]["size_bytes"].as_u64().unwrap() > 100 && list[0]["timestamp"].as_str().unwrap().contains('T'));
    s.agent.ok("manage_state", json!({"action": "delete", "snapshot_name": "logged_in"})).await?;
    assert_eq!(s.agent.ok("manage_state", json!({"action": "list"})).await?["snapshots"], json!([]));
    let e = failed(s.agent.call("manage_state", json!({"action": "load", "snapshot_name": "logged_in"})).await?);
    assert_eq!(e["code"], "snapshot_not_found");
    let e = failed(s.agent.call("manage_state", json!({"action": "save", "snapshot_name": "../x"})).await?);
    assert_eq!((e["code"].as_str(), e["param"].as_str()), (Some("invalid_params"), Some("snapshot_name")));

    // Nothing of the values reached the host's log (Chromium's stderr carries it).
    let log = std::fs::read_to_string(&s.browser.log)?;
    assert!(!log.contains(MARK), "a value in the log");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_megabyte_of_storage_saves_and_an_oversized_state_is_refused() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/big", APP).await?;
    s.page.eval("localStorage.setItem('big', 'x'.repeat(1024 * 1024)); 0").await?;
    let v = s.agent.ok("manage_state", json!({"action": "save", "snapshot_name": "big"})).await?;
    assert!(v["size_bytes"].as_u64().unwrap() > 1024 * 1024, "{v}");
    s.page.eval("localStorage.clear(); 0").await?;
    let v = s.agent.ok("manage_state", json!({"action": "load", "snapshot_name": "big"})).await?;
    assert_eq!(v["written"]["localStorage"], 1);
    assert_eq!(s.page.eval("localStorage.getItem('big').length").await?, json!(1024 * 1024));
    // Over the cap (8 MiB serialized; a control character takes 6 bytes): a clear error,
    // nothing saved.
    s.page.eval("sessionStorage.setItem('s', '\\u0001'.repeat(1.5 * 1024 * 1024)); 0").await?;
    let e = failed(s.agent.call("manage_state", json!({"action": "save", "snapshot_name": "huge"})).await?);
    assert_eq!(e["code"], "snapshot_too_large", "{e}");
    let names: Vec<Value> = s.agent.ok("manage_state", json!({"action": "list"})).await?["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].clone())
        .collect();
    assert_eq!(names, [json!("big")]);
    Ok(())
}
