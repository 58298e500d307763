//! The eye dropper (dialog_type "eye_dropper"): `EyeDropper.prototype.open()`. Measured on
//! Chromium 156 without Unmodal: after a click, headless, the call never settles; headful, the
//! eye dropper covers the screen and takes every click until a person picks a colour (the
//! page gets `{sRGBHex}`) or presses Escape (AbortError "…The user canceled the selection.").
//! Every failure (no gesture, a wrong receiver, a bad or aborted signal, one already open)
//! settles within a microtask. With the pilot on, the page hook lets the browser make the
//! call and asks about one still pending two microtasks later: the default refuses it as a
//! person's Escape and closes the browser's eye dropper, so the next call is asked again.

use serde_json::{Value, json};
use unmodal_e2e::activation::{self, Try};
use unmodal_e2e::browser::Browser;
use unmodal_e2e::page::Page;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

/// `#e` opens the eye dropper (`call()`, which a test may replace) and keeps each outcome in
/// `out`, in order; `#b` counts clicks (`seen`, for `takes_input`).
const PAGE: &str = "<!doctype html><title>eye dropper</title>
<style>button { position: fixed; left: 0; width: 120px; height: 40px }</style>
<button id=b style='top: 0'>b</button><button id=e style='top: 50px'>e</button>
<script>
window.seen = []; document.getElementById('b').onclick = () => seen.push('click');
window.out = []; window.call = () => new EyeDropper().open();
const facts = (e) => [e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack'), String(e.stack)];
document.getElementById('e').onclick = () => {
  const i = out.length;
  out.push('pending');
  let p;
  try { p = call(); } catch (e) { out[i] = ['threw', ...facts(e)]; return; }
  p.then((v) => { out[i] = ['ok', JSON.stringify(v)]; }, (e) => { out[i] = ['error', ...facts(e)]; });
};
</script>";

const CANCELLED: &str = "Failed to execute 'open' on 'EyeDropper': The user canceled the selection.";

/// What the page gets from a refused eye dropper: a person's Escape, no frame of ours.
fn escape() -> Value {
    json!(["error", "DOMException", "AbortError", CANCELLED, true, format!("AbortError: {CANCELLED}")])
}

async fn session(site: &WebServer, pilot: bool) -> anyhow::Result<Session> {
    Session::showing(&site.page("/eye", PAGE, &[]), pilot).await
}

/// The browser drops a call (`EyeDropper is not available`) when its process has not seen
/// the click's activation that the page's frame saw: before it opens an eye dropper it
/// checks the activation again, and consumes it (Chromium's `EyeDropperChooserImpl::Create`).
/// Under load the click's activation can reach it after the call (1 fresh-clone run at
/// 5517a58, the hostile test's first call, in a fresh document); and a second call in one
/// click's activation finds it consumed by the first. Such a call is made again with a new
/// click, as a person would, through `activation::until_not_raced`.
///
/// The index in `out` of the next call `#e` makes.
async fn next_call(page: &Page) -> anyhow::Result<usize> {
    let n = page.eval("out.length").await?.as_u64().ok_or_else(|| anyhow::anyhow!("no `out` in the page"))?;
    Ok(n as usize)
}

/// Clicks `#e` and waits for its call's outcome to be other than pending; a call the
/// browser dropped for want of the activation is made again.
async fn open(page: &Page) -> anyhow::Result<Value> {
    activation::until_not_raced("an eye dropper call", |_| async {
        let n = next_call(page).await?;
        page.click("#e").await?;
        Ok(activation::judge(settled(page, n).await?))
    })
    .await
}

async fn settled(page: &Page, n: usize) -> anyhow::Result<Value> {
    eventually(LIMIT, &format!("call {n} settled"), || async {
        let v = page.eval(&format!("out[{n}] ?? null")).await?;
        Ok((v.is_array()).then_some(v))
    })
    .await
}

/// The eye-dropper calls the host knows of: recorded, counted or held for the agent.
async fn known(s: &Session) -> anyhow::Result<u64> {
    let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    let held = tabs["dialogs_blocking"]["dialogs"].as_array().into_iter().flatten();
    let held = held.filter(|d| d["type"] == "eye_dropper").count() as u64;
    Ok(s.recorded_or_counted("eye_dropper").await? + held)
}

/// Clicks `#e` and waits until the host knows of its call (asked two microtasks after it
/// was made; a call the browser drops has failed by then, its failure being on its way
/// before the question), then requires it still pending; a dropped call is made again.
/// Returns its index in `out`.
async fn open_pending(s: &Session) -> anyhow::Result<usize> {
    activation::until_not_raced("an eye dropper call held pending", |_| async {
        let n = next_call(&s.page).await?;
        let before = known(s).await?;
        s.page.click("#e").await?;
        eventually(LIMIT, &format!("call {n} known to the host"), || async {
            Ok((known(s).await? > before).then_some(()))
        })
        .await?;
        let v = s.page.eval(&format!("out[{n}] ?? null")).await?;
        if v == json!("pending") {
            return Ok(Try::Done(n));
        }
        match activation::judge(v) {
            Try::Done(v) => anyhow::bail!("call {n} is not pending: {v}"),
            Try::Raced(why) => Ok(Try::Raced(why)),
        }
    })
    .await
}

/// The newest eye-dropper record, once every one is closed.
async fn newest(s: &Session) -> anyhow::Result<Value> {
    let recs = s.closed_records("eye_dropper", 1).await?;
    Ok(recs.last().cloned().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_refuses_as_a_persons_escape_and_the_next_one_is_asked_again() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    assert_eq!(open(&s.page).await?, escape());
    let r = &newest(&s).await?;
    assert_eq!(
        (r["decided_by"].as_str(), r["accepted"].as_bool(), r["message"].as_str()),
        (
            Some("default_policy"),
            Some(false),
            Some("eye dropper (EyeDropper.open): the page asks for a colour from the screen")
        ),
        "{r}"
    );
    // The browser's eye dropper was closed with it: the next call opens one again (left
    // open, it would fail at once as "already open") and is asked about.
    assert_eq!(open(&s.page).await?, escape());
    s.closed_records("eye_dropper", 2).await?;
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_leaves_it_to_the_browser_and_must_respond_holds_it_for_the_agent_or_the_watchdog() -> anyhow::Result<()>
{
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let rule = json!({"action": "handle_dialog", "setup": true, "dialog_type": "eye_dropper", "accept": true});
    s.agent.ok("interact", rule).await?;
    let n = open_pending(&s).await?;
    let r = &newest(&s).await?;
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");
    // Left to the browser: its eye dropper, which never settles headless; and while it is
    // open, the browser fails the next call at once, unasked.
    assert_eq!(s.page_value(&format!("out[{n}]")).await?, json!("pending"));
    let again = open(&s.page).await?;
    assert_eq!(
        json!([again[2], again[3]]),
        json!(["InvalidStateError", "Failed to execute 'open' on 'EyeDropper': EyeDropper is already open."])
    );
    s.takes_input().await?;

    // A fresh document: no eye dropper open.
    let url = site.page("/eye-held", PAGE, &[]);
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    s.policy("must_respond", 2).await?;
    let n = open_pending(&s).await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "eye_dropper");
    assert_eq!(s.page_value(&format!("out[{n}]")).await?, json!("pending"), "the page's call waits");
    s.takes_input().await?;
    s.answer(&held[0], false).await?;
    assert_eq!(settled(&s.page, n).await?, escape());
    assert_eq!(newest(&s).await?["closed_by"], "agent");
    // Nobody answers the next one: the watchdog refuses it (and it could open: the first
    // one's eye dropper was closed).
    let n = open_pending(&s).await?;
    assert_eq!(settled(&s.page, n).await?, escape());
    assert_eq!(newest(&s).await?["closed_by"], "watchdog");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_has_it_and_a_flood_is_counted() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, false).await?;
    let n = open_pending(&s).await?;
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("eye_dropper"), Some("pilot_off")), "{d}");
    assert_eq!(
        s.page_value(&format!("out[{n}]")).await?,
        json!("pending"),
        "the browser's own: it never settles headless"
    );

    let site2 = WebServer::other_site()?;
    let s = session(&site2, true).await?;
    // One click, then the page opens it again as soon as each is refused (the browser
    // keeps the click's activation for 5 s): every call settles, each one asked is recorded
    // or counted, and the tab still takes input.
    s.page_value(
        "window.call = async () => {
           const names = [];
           const until = performance.now() + 3000;
           while (names.length < 300 && performance.now() < until) {
             names.push(await new EyeDropper().open().then(() => 'ok', (e) => e.name + ': ' + e.message));
           }
           return names;
         }; 0",
    )
    .await?;
    s.page.click("#e").await?;
    let names = settled(&s.page, 0).await?;
    let names = names[1].as_str().map(serde_json::from_str::<Vec<String>>).transpose()?.unwrap_or_default();
    // Right after one closed, the browser may fail the next call itself ("not available",
    // as it does without Unmodal when a page reopens an eye dropper it just aborted). That
    // failure comes later than two microtasks, so the call was asked about (or counted) and
    // the browser's own answer settled it first.
    let busy = "OperationError: Failed to execute 'open' on 'EyeDropper': EyeDropper is not available.";
    let refused = names.iter().filter(|n| *n == &format!("AbortError: {CANCELLED}")).count();
    assert!(refused >= 20 && names.iter().all(|n| n.starts_with("AbortError") || n == busy), "{names:?}");
    s.all_accounted("eye_dropper", names.len() as u64).await?;
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_under_a_strict_csp() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let (s, widget) = Session::framed(&site, "", true).await?;
    // The frame's button covers the whole frame, so a click on the frame lands on it.
    let ready = s
        .in_frame(
            "document.body.innerHTML = \"<button id=e style='position:fixed;inset:0;width:100%;height:100%'>e</button>\";
             window.got = null;
             e.onclick = () => new EyeDropper().open().then(() => { got = 'ok'; }, (err) => { got = [err.name, err.message]; });
             'armed'",
        )
        .await?;
    assert_eq!(ready, "armed");
    let got = activation::until_not_raced("the frame's eye dropper call", |_| async {
        s.in_frame("got = null; 'reset'").await?;
        s.page.click("iframe").await?;
        // Asked as text: `in_frame` waits for a value, and `null` (not settled yet) is none.
        let got = eventually(LIMIT, "the frame's call settled", || async {
            let v: Value =
                serde_json::from_str(s.in_frame("JSON.stringify(window.got)").await?.as_str().unwrap_or("null"))?;
            Ok((!v.is_null()).then_some(v))
        })
        .await?;
        Ok(activation::judge(got))
    })
    .await?;
    assert_eq!(got, json!(["AbortError", CANCELLED]));
    let r = &newest(&s).await?;
    assert_eq!(r["url"].as_str(), Some(widget.as_str()), "the frame's own URL: {r}");
    s.takes_input().await?;
    assert_eq!(s.page_value("violations").await?, json!([]), "no CSP violation");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wrapper_looks_and_fails_like_the_browsers_own_and_a_hostile_page_sees_nothing() -> anyhow::Result<()> {
    let probe = "(() => {
        const f = EyeDropper.prototype.open;
        const d = Object.getOwnPropertyDescriptor(EyeDropper.prototype, 'open');
        return [String(f), f.name, f.length, 'prototype' in f, d.writable, d.enumerable, d.configurable,
                Function.prototype.toString.call(f), Object.getOwnPropertyNames(EyeDropper.prototype)];
      })()";
    // Each fails before any eye dropper opens; evaluated without a gesture, so the last
    // one fails for want of one.
    let failures = "(async () => {
        const facts = (e) => [e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack')];
        const run = async (f) => { let p; try { p = f(); } catch (e) { return ['threw', ...facts(e)]; }
          return p.then(() => 'ok', (e) => facts(e)); };
        return [
          await run(() => EyeDropper.prototype.open.call({})),
          await run(() => new EyeDropper().open({signal: 5})),
          await run(() => new EyeDropper().open({signal: AbortSignal.abort()})),
          await run(() => new EyeDropper().open()),
          await run(() => new EyeDropper().open(undefined)),
        ];
      })()";
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let (_plain, page) = Browser::plain_page(&site.page("/plain-eye", PAGE, &[]), "eye dropper").await?;
    assert_eq!(s.page_value(probe).await?, page.eval(probe).await?);
    let ours = s.page_value(failures).await?;
    assert_eq!(ours, page.eval(failures).await?, "the browser's own failures, value for value");
    assert_eq!(ours[3][1], "NotAllowedError", "{ours}");
    assert_eq!(s.records_caught_up().await?, Vec::<Value>::new(), "nothing opened, nothing asked");
    // A frame removed from its page: the browser without Unmodal has no `EyeDropper` there
    // (the page never used it); ours, made as the frame started, fails as the browser does
    // any call of a window that is gone (docs/limits.md).
    let removed = "(() => { const f = document.createElement('iframe'); document.body.append(f);
        const w = f.contentWindow; f.remove();
        try { return typeof w.EyeDropper === 'function' ? new w.EyeDropper().open().then(() => 'ok', (e) => [e.name, e.message]) : 'none'; }
        catch (e) { return ['threw', e.name]; } })()";
    assert_eq!(page.eval(removed).await?, json!("none"));
    assert_eq!(
        s.page_value(removed).await?,
        json!([
            "InvalidStateError",
            "Failed to execute 'open' on 'EyeDropper': The object is no longer associated with a window."
        ])
    );

    // A page that sets traps where a careless wrapper would read, write or call.
    let url = site.page("/eye-hostile", PAGE, &[]);
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    let armed = s
        .page_value(
            "window.trapped = 0;
         for (const name of ['signal', 'request', 'kind', 'what', 'method', 'detail', 'settled']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped++; }, set() { trapped++; }, configurable: true });
         }
         window.DOMException = function () { trapped++; };
         window.CustomEvent = function () { trapped++; };
         const AC = AbortController;
         const signalOf = Object.getOwnPropertyDescriptor(AC.prototype, 'signal').get;
         Object.defineProperty(AC.prototype, 'signal', { get() { trapped++; return signalOf.call(this); }, configurable: true });
         AC.prototype.abort = function () { trapped++; };
         window.AbortController = function () { trapped++; };
         const then = Promise.prototype.then;
         Promise.prototype.then = function (...a) { if (new Error().stack.includes('chrome-extension')) trapped++; return then.apply(this, a); };
         Object.defineProperty(Promise.prototype, 'constructor', { get() { if (new Error().stack.includes('chrome-extension')) trapped++; return Promise; }, configurable: true });
         trapped",
        )
        .await?;
    assert_eq!(armed, 0);
    assert_eq!(open(&s.page).await?, escape());
    // Closed through the natives taken at start: the next one opens and is refused too.
    assert_eq!(open(&s.page).await?, escape());
    assert_eq!(s.page_value("trapped").await?, json!(0));
    Ok(())
}
