//! App links (dialog_type "app_link"): a navigation to a scheme the OS handles. Without
//! Unmodal, headless Chromium raises an invisible "Open …?" dialog for any scheme but
//! mailto: and drops every input to the tab from then on (MODAL-FACTS 5). With the pilot on
//! the page hook cancels the navigation first and asks: the default leaves it cancelled, a
//! rule or the agent can open it (the hook navigates again), the watchdog leaves it.

use serde_json::{Value, json};
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

/// Links of both kinds, a button to prove input still arrives, and what the page saw.
const PAGE: &str = "<!doctype html><title>links</title>
<a id=app href='myapp://open?token=s3cret'>app</a> <a id=mail href='mailto:ada@example.com'>mail</a>
<button id=b>b</button>
<script>
  window.seen = [];
  addEventListener('beforeunload', () => seen.push('beforeunload'));
  addEventListener('blur', () => seen.push('blur'));
  document.getElementById('b').onclick = () => seen.push('click');
</script>";

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

async fn session(pilot: bool) -> anyhow::Result<Session> {
    let s = Session::start().await?;
    s.open("/links", PAGE, &[]).await?;
    if pilot {
        s.enable_pilot().await?;
    }
    Ok(s)
}

fn setup(extra: Value) -> Value {
    let mut a = json!({"action": "handle_dialog", "setup": true, "dialog_type": "app_link"});
    a.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    a
}

async fn seen(s: &Session) -> anyhow::Result<Value> {
    s.page_value("seen").await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_cancels_and_the_tab_keeps_taking_input() -> anyhow::Result<()> {
    let s = session(true).await?;
    let url = s.page_value("location.href").await?;
    s.page.click("#app").await?;
    // The same from script, without a gesture: cancelled too.
    s.page_value("location.href = 'web+foo:bar'; 0").await?;
    let recs = s.closed_records("app_link", 2).await?;
    // Page text: redacted as a dialog's message is.
    let targets = [("myapp", "myapp://open?token=[redacted:password]"), ("web+foo", "web+foo:bar")];
    for (r, (scheme, target)) in recs.iter().zip(targets) {
        assert_eq!(
            (r["decided_by"].as_str(), r["closed_by"].as_str(), r["accepted"].as_bool()),
            (Some("default_policy"), Some("default_policy"), Some(false)),
            "{r}"
        );
        assert_eq!((r["scheme"].as_str(), r["target"].as_str()), (Some(scheme), Some(target)), "{r}");
        assert!(r["explanation"].as_str().unwrap_or("").contains("cancelled by the default policy"), "{r}");
    }
    s.takes_input().await?;
    assert_eq!(s.page_value("location.href").await?, url, "the page stays where it is");
    assert_eq!(seen(&s).await?, json!(["click"]), "no leave prompt, no lost focus: nothing reached the browser");
    // What nobody chose waits for the agent's acknowledgement, as a default-answered dialog.
    let v = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert!(v["pending_dialogs"].as_array().is_some_and(|p| p.iter().any(|d| d["type"] == "app_link")), "{v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_opens_its_scheme_once_and_the_rest_stays_cancelled() -> anyhow::Result<()> {
    let s = session(true).await?;
    let v = s.agent.ok("interact", setup(json!({"match": {"scheme": "mailto"}}))).await?;
    assert_eq!((v["dialog_type"].as_str(), v["rules_in_force"].as_bool()), (Some("app_link"), Some(true)), "{v}");
    s.page.click("#app").await?;
    s.page.click("#mail").await?;
    let recs = s.closed_records("app_link", 2).await?;
    assert_eq!((recs[0]["scheme"].as_str(), recs[0]["decided_by"].as_str()), (Some("myapp"), Some("default_policy")));
    assert_eq!(
        (recs[1]["scheme"].as_str(), recs[1]["decided_by"].as_str(), recs[1]["accepted"].as_bool()),
        (Some("mailto"), Some("rule"), Some(true)),
        "{}",
        recs[1]
    );
    assert_eq!(recs[1]["rule_id"], v["rule_id"]);
    // Opened: the page navigated to it again, so the browser's leave check ran (and the
    // browser kept the page, as for any mailto:).
    eventually(LIMIT, "the page's beforeunload for the opened link", || async {
        Ok(seen(&s).await?.as_array().is_some_and(|a| a.contains(&json!("beforeunload"))).then_some(()))
    })
    .await?;
    let after = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(after["auto_responses"], json!([]), "a once-rule is spent");
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn must_respond_holds_it_for_the_agent_then_the_watchdog_leaves_it() -> anyhow::Result<()> {
    let s = session(true).await?;
    s.policy("must_respond", 2).await?;
    s.page.click("#mail").await?;
    let held = s.held(1).await?;
    assert_eq!(
        (held[0]["type"].as_str(), held[0]["message"].as_str()),
        (Some("app_link"), Some("mailto:[redacted:email]"))
    );
    // The navigation waits cancelled; the tab is free meanwhile.
    s.takes_input().await?;
    let id = held[0]["dialog_id"].clone();
    let v = s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    assert_eq!(
        (v["dialog"]["accepted"].as_bool(), v["agent_answer_applied"].as_bool()),
        (Some(true), Some(true)),
        "{v}"
    );
    eventually(LIMIT, "the page's beforeunload for the opened link", || async {
        Ok(seen(&s).await?.as_array().is_some_and(|a| a.contains(&json!("beforeunload"))).then_some(()))
    })
    .await?;
    // The browser ends an extension's debugger session when its tab hands a URL to the OS:
    // the tab falls back to auto, and says why.
    let v = eventually(LIMIT, "the fallback to auto after the opened link", || async {
        let v = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
        Ok((v["dialog_policy"]["policy"] == "auto").then_some(v))
    })
    .await?;
    assert!(v["dialog_policy"]["message"].as_str().unwrap_or("").contains("handed a link to the OS"), "{v}");
    // Nobody answers the next one: the watchdog leaves it cancelled.
    s.policy("must_respond", 2).await?;
    s.page.click("#app").await?;
    let recs = s.closed_records("app_link", 2).await?;
    assert_eq!(
        (recs[1]["closed_by"].as_str(), recs[1]["accepted"].as_bool()),
        (Some("watchdog"), Some(false)),
        "{}",
        recs[1]
    );
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_has_it_and_it_is_recorded() -> anyhow::Result<()> {
    // mailto: only: any other scheme would wedge this tab, as without Unmodal.
    let s = session(false).await?;
    s.page.click("#mail").await?;
    eventually(LIMIT, "the page's beforeunload: the browser took the link", || async {
        Ok(seen(&s).await?.as_array().is_some_and(|a| a.contains(&json!("beforeunload"))).then_some(()))
    })
    .await?;
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("app_link"), Some("pilot_off")), "{d}");
    assert!(d["explanation"].as_str().unwrap_or("").contains("pilot on"), "{d}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_and_a_strict_csp_page() -> anyhow::Result<()> {
    let other = WebServer::other_site()?;
    let widget = other.page(
        "/widget",
        "<!doctype html><script>onmessage = () => { location.href = 'myapp://from-frame'; };
         parent.postMessage('ready', '*');</script>",
        &[],
    );
    let csp = "default-src 'none'; script-src 'nonce-t'; frame-src *";
    let top = format!(
        "<!doctype html><title>framed</title><button id=b>b</button><iframe src='{widget}'></iframe>
<script nonce=t>window.seen = []; window.violations = [];
  addEventListener('message', (e) => {{ if (e.data === 'ready') window.frameReady = true; }});
  document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
  document.getElementById('b').onclick = () => seen.push('click');</script>"
    );
    let s = Session::start().await?;
    s.open("/framed", &top, &[("Content-Security-Policy", csp)]).await?;
    s.enable_pilot().await?;
    eventually(LIMIT, "the frame loaded", || async {
        Ok((s.page_value("window.frameReady === true").await? == json!(true)).then_some(()))
    })
    .await?;
    s.page_value("frames[0].postMessage('go', '*'); 0").await?;
    let r = &s.closed_records("app_link", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["target"].as_str()), (Some("default_policy"), Some("myapp://from-frame")));
    assert!(r["url"].as_str().unwrap_or("").starts_with(&other.origin), "the frame's own URL: {r}");
    assert_ne!(r["frame_id"], json!(0), "{r}");
    s.takes_input().await?;
    assert_eq!(s.page_value("violations").await?, json!([]), "no CSP violation");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_page_cannot_see_or_stop_the_hook() -> anyhow::Result<()> {
    let s = session(true).await?;
    // Traps on what the hook might touch after start; each counts what it sees.
    s.page_value(
        "window.trapped = 0;
         const d = Object.getOwnPropertyDescriptor(Event.prototype, 'cancelable');
         Object.defineProperty(Event.prototype, 'cancelable', { get() { trapped++; return d.get.call(this); }, configurable: true });
         for (const [proto, name] of [[Event.prototype, 'preventDefault'], [EventTarget.prototype, 'addEventListener'],
                                      [String.prototype, 'indexOf'], [String.prototype, 'slice'], [Object, 'getOwnPropertyDescriptor'],
                                      [Object, 'getPrototypeOf'], [Function.prototype, 'toString']]) {
           const f = proto[name];
           proto[name] = function (...a) { trapped++; return f.apply(this, a); };
         }
         for (const name of ['url', 'get']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped++; }, set() { trapped++; }, configurable: true });
         }
         0",
    )
    .await?;
    s.page.click("#app").await?;
    let r = &s.closed_records("app_link", 1).await?[0];
    assert_eq!(r["decided_by"], "default_policy", "{r}");
    s.takes_input().await?;
    // The engine, built on the first app link after the traps, answers dialogs too.
    assert_eq!(s.page_value("confirm('after the traps?')").await?, json!(false));
    assert_eq!(s.page_value("trapped").await?, json!(0), "the hook used only what it captured at start");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_that_replaced_the_navigation_getters_first_keeps_the_browsers_way() -> anyhow::Result<()> {
    // The getters the hook reads an event with are looked up on the first such navigation,
    // and only if they are still the browser's: a page that replaced them before is never
    // called into, and its links go to the browser as without Unmodal (it can only harm
    // itself). mailto: here: another scheme would wedge this tab.
    let s = session(true).await?;
    s.page_value(
        "window.trapped = 0;
         for (const [proto, name] of [[NavigateEvent.prototype, 'destination'], [NavigationDestination.prototype, 'url']]) {
           const d = Object.getOwnPropertyDescriptor(proto, name);
           Object.defineProperty(proto, name, { get() { trapped++; return d.get.call(this); }, configurable: true });
         }
         0",
    )
    .await?;
    s.page.click("#mail").await?;
    eventually(LIMIT, "the page's beforeunload: the browser took the link", || async {
        Ok(seen(&s).await?.as_array().is_some_and(|a| a.contains(&json!("beforeunload"))).then_some(()))
    })
    .await?;
    assert_eq!(s.page_value("trapped").await?, json!(0));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_of_it_shows_against_a_browser_without_unmodal() -> anyhow::Result<()> {
    // Everything a page can read of the Navigation API, in a browser with Unmodal and one
    // without: the hook adds a listener and changes nothing a page can see.
    let probe = "(() => { const own = (o) => Object.getOwnPropertyNames(o).sort().map((n) => {
        const d = Object.getOwnPropertyDescriptor(o, n);
        return [n, typeof d.value, String(d.get), String(d.set), d.enumerable, d.configurable, d.writable];
      });
      return JSON.stringify([own(window.navigation), own(Navigation.prototype), own(NavigateEvent.prototype),
        own(NavigationDestination.prototype), String(EventTarget.prototype.addEventListener),
        String(Event.prototype.preventDefault), typeof window.navigation.onnavigate]); })()";
    let s = session(true).await?;
    let ours = s.page_value(probe).await?;
    let baseline =
        unmodal_e2e::browser::Browser::launch(unmodal_e2e::browser::Options { extension: false, ..Default::default() })
            .await?;
    let page = baseline.new_page(&s.web.page("/plain", PAGE, &[])).await?;
    eventually(LIMIT, "the page without Unmodal loaded", || async {
        Ok(matches!(page.eval("document.title").await, Ok(t) if t == "links").then_some(()))
    })
    .await?;
    let theirs = page.eval(probe).await?;
    assert_eq!(ours, theirs);
    // A page's own navigate listener still sees web navigations as before.
    let hash =
        "new Promise((done) => { navigation.addEventListener('navigate', (e) => done([e.destination.url.endsWith('#x'),
        e.cancelable, e.defaultPrevented]), {once: true}); location.hash = 'x'; })";
    assert_eq!(s.page_value(hash).await?, page.eval(hash).await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_app_links_is_counted_exactly_and_nothing_hangs() -> anyhow::Result<()> {
    let s = session(true).await?;
    s.page_value(
        "window.fired = 0; navigation.addEventListener('navigate', () => fired++);
         for (let i = 0; i < 1000; i++) location.href = 'myapp://flood/' + i; 0",
    )
    .await?;
    // Chromium throttles a page's navigations (200 in 10 s); each it let through is counted.
    let fired = s.page_value("window.fired").await?.as_u64().unwrap_or(0);
    assert!(fired >= 100, "the page's own listener saw {fired} navigations");
    s.all_accounted("app_link", fired).await?;
    let folded = s.dialogs().await?["folded_by_flood_limit"].as_u64().unwrap_or(0);
    assert!(folded > fired / 2, "{folded} counted of {fired}: the flood limit held");
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frame_its_parent_navigates_is_reported_blocking_until_the_tab_goes_to_another_site() -> anyhow::Result<()> {
    let s = session(true).await?;
    // A srcdoc frame's own script: its document fires `navigate`, the hook cancels it.
    s.page_value(
        "{ const f = document.createElement('iframe');
           f.srcdoc = '<script>location.href = \"myapp://srcdoc\"</scr' + 'ipt>'; document.body.append(f); } 0",
    )
    .await?;
    let r = &s.closed_records("app_link", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["target"].as_str()), (Some("default_policy"), Some("myapp://srcdoc")));
    s.takes_input().await?;
    // A frame its parent points at an app link fires no `navigate` the hook could cancel:
    // the browser shows its dialog, and Unmodal says so.
    let blurs = "seen.filter((e) => e === 'blur').length";
    let blurred = s.page_value(blurs).await?.as_u64().unwrap_or(0);
    s.page_value(
        "document.body.insertAdjacentHTML('beforeend', '<iframe src=\"myapp://framed?token=s3cret\"></iframe>'); 0",
    )
    .await?;
    let shown = eventually(LIMIT, "the browser's dialog reported", || async {
        let v = s.dialogs().await?;
        let open = v["pending_dialogs"].as_array().into_iter().flatten().find(|d| d["state"] == "open").cloned();
        Ok(open)
    })
    .await?;
    assert_eq!(
        (shown["type"].as_str(), shown["decided_by"].as_str(), shown["target"].as_str()),
        (Some("app_link"), Some("remote"), Some("myapp://framed?token=[redacted:password]")),
        "{shown}"
    );
    assert!(shown["explanation"].as_str().unwrap_or("").contains("another site"), "{shown}");
    // Every answer says the tab is blocked, and how to clear it.
    let status = s.agent.call("interact", json!({"action": "handle_dialog", "status": true})).await?;
    let text = format!("{status:?}");
    assert!(text.contains("dialogs_blocking") && text.contains("navigate the tab to another site"), "{text}");
    // Nothing can answer it.
    let id = shown["dialog_id"].clone();
    let err = s.agent.call("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": false})).await?;
    assert!(format!("{err:?}").contains("no answer reaches it"), "{err:?}");
    // The browser shows its dialog once it has asked the system for the scheme's handler
    // (under load, after the navigation's end was reported): it takes the page's focus.
    // Navigating away before that would leave it over the next page.
    eventually(LIMIT, "the browser's dialog taking the page's focus", || async {
        Ok((s.page_value(blurs).await?.as_u64().unwrap_or(0) > blurred).then_some(()))
    })
    .await?;
    // The way out: another site.
    let other = WebServer::other_site()?;
    let away = other.page("/away", PAGE, &[]);
    s.page.goto(&away).await?;
    s.agent.wait_for_tab(&away).await?;
    let closed = eventually(LIMIT, "the dialog closed by the navigation", || async {
        let v = s.dialogs().await?;
        let r = v["recent_dialogs"].as_array().into_iter().flatten().find(|d| d["dialog_id"] == id).cloned();
        Ok(r.filter(|r| r["state"] == "closed"))
    })
    .await?;
    assert!(closed["explanation"].as_str().unwrap_or("").contains("went to another site"), "{closed}");
    let after = s.agent.call("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert!(!format!("{after:?}").contains("dialogs_blocking"), "{after:?}");
    s.takes_input().await
}
