//! File choosers (dialog_type "file_chooser"): `<input type=file>`. Headless Chromium cancels
//! each at once (MODAL-FACTS 1a); a headful one opens the OS file dialog. In a tab with a
//! file_chooser rule or under must_respond (pilot on), the tab's debugger session intercepts
//! choosers: a rule's files, or the agent's, reach the page as a person's pick (trusted
//! `input` and `change`, real files); a cancel is the input's own trusted `cancel`. Files
//! come only from inside the MCP client's roots. Elsewhere choosers stay the browser's.

use serde_json::{Value, json};
use unmodal_e2e::agent::Agent;
use unmodal_e2e::browser::Browser;
use unmodal_e2e::page::Page;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

const PAGE: &str = "<!doctype html><title>files</title><button id=b>b</button>
<label for=f>Your CV</label><input type=file id=f accept='.txt,text/plain'>
<input type=file id=m multiple aria-label='Photos'>
<input type=file id=d webkitdirectory name=folder>
<script>
  window.seen = []; window.got = []; window.texts = [];
  for (const id of ['f', 'm', 'd']) for (const t of ['input', 'change', 'cancel']) {
    document.getElementById(id).addEventListener(t, (e) => {
      const files = [...e.target.files];
      got.push([id, t, e.isTrusted, files.map((f) => [f.name, f.webkitRelativePath, f.size])]);
      if (t === 'change') Promise.all(files.map((f) => f.text())).then((x) => texts.push(x));
    });
  }
  document.getElementById('b').onclick = () => seen.push('click');
</script>";

/// A session on the page, pilot on, with an agent whose MCP client offers `work` as a root.
async fn session(work: &std::path::Path) -> anyhow::Result<(Session, Agent)> {
    let (s, _) = Session::with_pilot("/files", PAGE).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.to_owned()]).await?;
    Ok((s, agent))
}

/// The page's events from the `from`-th on, once there are at least `n` more.
async fn events(s: &Session, from: usize, n: usize) -> anyhow::Result<Vec<Value>> {
    eventually(LIMIT, &format!("{n} file input event(s)"), || async {
        let got = s.page_value("got").await?;
        let got = got.as_array().cloned().unwrap_or_default();
        Ok((got.len() >= from + n).then(|| got[from..].to_vec()))
    })
    .await
}

fn files_dir() -> anyhow::Result<tempfile::TempDir> {
    let work = tempfile::tempdir()?;
    std::fs::write(work.path().join("cv.txt"), "hello from unmodal")?;
    std::fs::write(work.path().join("b.txt"), "second")?;
    std::fs::create_dir_all(work.path().join("folder/sub"))?;
    std::fs::write(work.path().join("folder/one.txt"), "1")?;
    std::fs::write(work.path().join("folder/sub/two.txt"), "22")?;
    Ok(work)
}

fn setup(files: &[std::path::PathBuf]) -> Value {
    json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "once": false,
        "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>()})
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_rule_the_browser_cancels_and_nothing_is_intercepted() -> anyhow::Result<()> {
    let work = files_dir()?;
    let (s, _agent) = session(work.path()).await?;
    s.page.click("#f").await?;
    assert_eq!(events(&s, 0, 1).await?, [json!(["f", "cancel", true, []])], "the browser's own cancel");
    s.takes_input().await?;
    assert_eq!(s.records_caught_up().await?, Vec::<Value>::new(), "nothing recorded");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_gives_its_files_as_a_persons_pick() -> anyhow::Result<()> {
    let work = files_dir()?;
    let (s, agent) = session(work.path()).await?;
    let real = work.path().canonicalize()?;
    let v = agent.ok("interact", setup(&[work.path().join("cv.txt"), work.path().join("b.txt")])).await?;
    assert_eq!(v["rules_in_force"], true, "{v}");
    // A single input takes the first file; the page reads it back.
    s.page.click("#f").await?;
    let got = events(&s, 0, 2).await?;
    assert_eq!(got[0], json!(["f", "input", true, [["cv.txt", "", 18]]]));
    assert_eq!(got[1], json!(["f", "change", true, [["cv.txt", "", 18]]]));
    eventually(LIMIT, "the file read back", || async {
        Ok((s.page_value("texts").await? == json!([["hello from unmodal"]])).then_some(()))
    })
    .await?;
    let r = &s.closed_records("file_chooser", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");
    assert_eq!(
        (r["mode"].as_str(), r["label"].as_str(), r["accept_types"].as_str()),
        (Some("single"), Some("Your CV"), Some(".txt,text/plain"))
    );
    assert_eq!(
        r["files"],
        json!([{"path": real.join("cv.txt").display().to_string(), "size": 18}]),
        "names and sizes: {r}"
    );
    assert!(!r.to_string().contains("hello from unmodal"), "never the contents: {r}");
    // A multiple input takes both.
    s.page.click("#m").await?;
    let got = events(&s, 2, 2).await?;
    assert_eq!(got[1], json!(["m", "change", true, [["cv.txt", "", 18], ["b.txt", "", 6]]]));
    // A folder input takes a directory: its files, with their paths inside it.
    agent.ok("interact", setup(&[work.path().join("folder")])).await?;
    s.page.click("#d").await?;
    let got = events(&s, 4, 2).await?;
    let mut picked: Vec<Value> = got[1][3].as_array().cloned().unwrap_or_default();
    picked.sort_by_key(|v| v[1].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        picked,
        [json!(["one.txt", "folder/one.txt", 1]), json!(["two.txt", "folder/sub/two.txt", 2])],
        "{got:?}"
    );
    s.takes_input().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn files_outside_the_roots_never_reach_the_page() -> anyhow::Result<()> {
    let work = files_dir()?;
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY")?;
    std::os::unix::fs::symlink(outside.path().join("id_rsa"), work.path().join("key"))?;
    let (s, agent) = session(work.path()).await?;
    let real = work.path().canonicalize()?.display().to_string();
    for bad in [outside.path().join("id_rsa"), work.path().join("key"), work.path().join("missing.txt")] {
        let reply = format!("{:?}", agent.call("interact", setup(std::slice::from_ref(&bad))).await?);
        assert!(reply.contains("files") && reply.contains(&real), "{bad:?}: {reply}");
        assert!(!reply.contains("PRIVATE KEY"), "{reply}");
    }
    // The agent without roots cannot name the directory either.
    let reply = format!("{:?}", s.agent.call("interact", setup(&[work.path().join("cv.txt")])).await?);
    assert!(reply.contains("outside the allowed directories"), "{reply}");
    // No rule took: the browser's own cancel, and the page got no file.
    s.page.click("#f").await?;
    assert_eq!(events(&s, 0, 1).await?, [json!(["f", "cancel", true, []])]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn must_respond_holds_it_for_the_agent_and_the_watchdog_cancels() -> anyhow::Result<()> {
    let work = files_dir()?;
    let (s, agent) = session(work.path()).await?;
    s.policy("must_respond", 2).await?;
    s.page.click("#f").await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "file_chooser", "{held:?}");
    assert!(held[0]["message"].as_str().is_some_and(|m| m.contains("Your CV") && m.contains(".txt")), "{held:?}");
    assert_eq!(s.page_value("got").await?, json!([]), "the page waits, as for a person");
    s.takes_input().await?;
    let id = held[0]["dialog_id"].clone();
    agent
        .ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "files": [work.path().join("cv.txt")]}))
        .await?;
    assert_eq!(events(&s, 0, 2).await?[1], json!(["f", "change", true, [["cv.txt", "", 18]]]));
    // The agent cancels the next one: the input's own trusted cancel, and no click.
    s.page.click("#m").await?;
    let id = s.held(1).await?[0]["dialog_id"].clone();
    agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": false})).await?;
    assert_eq!(events(&s, 2, 1).await?, [json!(["m", "cancel", true, []])]);
    // Nobody answers the third: the watchdog cancels it.
    s.page.click("#f").await?;
    s.held(1).await?;
    assert_eq!(events(&s, 3, 1).await?, [json!(["f", "cancel", true, [["cv.txt", "", 18]]])]);
    let recs = s.closed_records("file_chooser", 3).await?;
    let by: Vec<_> = recs.iter().map(|r| r["closed_by"].as_str().unwrap_or_default()).collect();
    assert_eq!(by, ["agent", "agent", "watchdog"], "{recs:?}");
    assert_eq!(s.page_value("got.length").await?, json!(4), "nothing more reached the page");
    Ok(())
}

/// A once-rule that cancels is spent by its chooser, and the tab's debugger session goes
/// while that cancel still runs; the next chooser on the same input, at once under
/// must_respond, is held all the same (it was lost for good: taken for the cancel's own).
#[tokio::test(flavor = "multi_thread")]
async fn a_chooser_right_after_a_spent_cancel_rule_is_held() -> anyhow::Result<()> {
    let work = files_dir()?;
    let (s, agent) = session(work.path()).await?;
    agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "accept": false}),
        )
        .await?;
    s.page.click("#f").await?;
    assert_eq!(events(&s, 0, 1).await?, [json!(["f", "cancel", true, []])]);
    s.closed_records("file_chooser", 1).await?;
    s.policy("must_respond", 60).await?;
    s.page.click("#f").await?;
    let id = s.held(1).await?[0]["dialog_id"].clone();
    agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": false})).await?;
    assert_eq!(events(&s, 1, 1).await?, [json!(["f", "cancel", true, []])]);
    assert_eq!(s.closed_records("file_chooser", 2).await?[1]["closed_by"], "agent");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_file_access_off_a_rule_is_refused_and_doctor_says_where_to_switch_it_on() -> anyhow::Result<()> {
    let work = files_dir()?;
    let id = "bikfjgnmfngjaklooejgpomkebgnmckk";
    let prefs = json!({"extensions": {"settings": {id: {"newAllowFileAccess": false}}}});
    let s =
        Session::start_with(unmodal_e2e::browser::Options { preferences: Some(prefs), ..Default::default() }).await?;
    s.open("/files", PAGE, &[]).await?;
    s.enable_pilot().await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    let reply = eventually(LIMIT, "the rule refused for file access", || async {
        let r = format!("{:?}", agent.call("interact", setup(&[work.path().join("cv.txt")])).await?);
        Ok(r.contains("Allow access to file URLs").then_some(r))
    })
    .await?;
    assert!(reply.contains("chrome://extensions"), "{reply}");
    let doctor = std::process::Command::new(&s.browser.art.host)
        .arg("doctor")
        .env("UNMODAL_RUNTIME_DIR", &s.browser.runtime)
        .output()?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("MISS file choosers can be given files") && text.contains("Allow access to file URLs"),
        "{text}"
    );
    // No rule took: the browser's own cancel.
    s.page.click("#f").await?;
    assert_eq!(events(&s, 0, 1).await?, [json!(["f", "cancel", true, []])]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_a_rule_does_nothing() -> anyhow::Result<()> {
    let work = files_dir()?;
    let s = Session::start().await?;
    s.open("/files", PAGE, &[]).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    let v = agent.ok("interact", setup(&[work.path().join("cv.txt")])).await?;
    assert_eq!((v["pilot_enabled"].as_bool(), v["rules_in_force"].as_bool()), (Some(false), Some(false)), "{v}");
    // No session intercepts: the browser's own cancel, and nothing is recorded.
    s.page.click("#f").await?;
    assert_eq!(events(&s, 0, 1).await?, [json!(["f", "cancel", true, []])]);
    s.takes_input().await?;
    assert_eq!(s.records_caught_up().await?, Vec::<Value>::new());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_under_a_strict_csp_gets_the_file() -> anyhow::Result<()> {
    let work = files_dir()?;
    let site = WebServer::other_site()?;
    let (s, widget) = Session::framed(&site, "", true).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    let v = agent.ok("interact", setup(&[work.path().join("cv.txt")])).await?;
    assert_eq!(v["rules_in_force"], true, "{v}");
    // The frame's input covers the whole frame, so a click on the frame lands on it.
    let ready = s
        .in_frame(
            "document.body.innerHTML = \"<input type=file id=f title=Upload style='position:fixed;inset:0;width:100%;height:100%'>\";
             window.got = []; f.onchange = async (e) => got.push([e.isTrusted, await f.files[0].text()]); 'armed'",
        )
        .await?;
    assert_eq!(ready, "armed");
    s.page.click("iframe").await?;
    eventually(LIMIT, "the frame's change", || async {
        Ok((s.in_frame("window.got").await? == json!([[true, "hello from unmodal"]])).then_some(()))
    })
    .await?;
    let r = &s.closed_records("file_chooser", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["label"].as_str()), (Some("rule"), Some("Upload")), "{r}");
    assert_eq!(r["url"].as_str(), Some(widget.as_str()), "the frame's own URL: {r}");
    assert_eq!(s.page_value("violations").await?, json!([]), "no CSP violation");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_page_sees_no_call_of_ours_and_a_flood_is_counted() -> anyhow::Result<()> {
    let work = files_dir()?;
    let (s, agent) = session(work.path()).await?;
    // Everything Unmodal reads or calls on an input, trapped in the page: none of it may run
    // (it runs in an isolated world, whose prototypes the page cannot reach).
    let armed = s
        .page_value(
            "window.trapped = 0;
         const trap = (o, k) => { const d = Object.getOwnPropertyDescriptor(o, k);
           Object.defineProperty(o, k, { ...d, ...(d.get
             ? { get() { trapped++; return d.get.call(this); } }
             : { value: function (...a) { trapped++; return d.value.apply(this, a); } }) }); };
         for (const k of ['labels', 'accept', 'multiple', 'webkitdirectory', 'showPicker', 'name']) trap(HTMLInputElement.prototype, k);
         trap(HTMLElement.prototype, 'title'); trap(Element.prototype, 'getAttribute'); trap(Element.prototype, 'id');
         trap(Node.prototype, 'textContent'); trap(Node.prototype, 'ownerDocument'); trap(Document.prototype, 'URL');
         trap(EventTarget.prototype, 'dispatchEvent');
         for (const k of ['url', 'mode', 'label', 'files', 'objectId']) Object.defineProperty(Object.prototype, k, { get() { trapped++; }, set() { trapped++; } });
         trapped",
        )
        .await?;
    assert_eq!(armed, 0);
    let cancel = json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "accept": false, "once": false});
    agent.ok("interact", cancel).await?;
    const CLICKS: usize = 20;
    for _ in 0..CLICKS {
        s.page.click("#f").await?;
    }
    // Every chooser opened is recorded and cancelled once: the page's cancel events and the
    // records agree, to the last.
    let got_recs = eventually(LIMIT, "every chooser cancelled and recorded", || async {
        let got = s.page_value("got").await?.as_array().cloned().unwrap_or_default();
        let d = s.dialogs().await?;
        let recs = d["recent_dialogs"].as_array().cloned().unwrap_or_default();
        let closed = recs.iter().filter(|r| r["type"] == "file_chooser" && r["state"] == "closed").count();
        let pending = d["pending_dialogs"].as_array().is_some_and(|p| !p.is_empty());
        Ok((!got.is_empty() && got.len() == closed && !pending).then_some((got, closed)))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}"));
    let (got, recs) = match (got_recs, s.page_value("got").await, s.dialogs().await) {
        (Ok(v), ..) => v,
        (Err(e), got, d) => anyhow::bail!("{e}: page {got:?}, host {d:?}"),
    };
    assert!(got.iter().all(|e| *e == json!(["f", "cancel", true, []])), "{got:?}");
    assert!((1..=CLICKS).contains(&recs), "{recs} records for {CLICKS} clicks");
    s.takes_input().await?;
    assert_eq!(s.page_value("trapped").await?, 0, "the page saw no call of ours");
    Ok(())
}

/// Everything a page can see of a chooser's end, on a page that also checks that the
/// input's functions are the browser's own.
const WATCH: &str = "<!doctype html><title>watch</title><input type=file id=f><button id=b>b</button>
<script>window.seen = []; window.got = [];
  for (const t of ['click', 'input', 'change', 'cancel']) addEventListener(t, (e) => {
    if (e.target.id === 'f') got.push([e.type, e.isTrusted, e.bubbles, e.cancelable, e.composed, e.eventPhase, f.files.length, f.value]);
  }, true);
  document.getElementById('b').onclick = () => seen.push('click');
  window.natives = () => ['click', 'showPicker'].map((k) => Function.prototype.toString.call(HTMLInputElement.prototype[k]))
    .concat([Object.keys(HTMLInputElement.prototype).length, String(Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'files').get)]);
</script>";

async fn cancel_seen(page: &Page, eval: impl AsyncFn(&str) -> anyhow::Result<Value>) -> anyhow::Result<Value> {
    page.click("#f").await?;
    let got = eventually(LIMIT, "the chooser's cancel", || async {
        let got = eval("got").await?;
        Ok(got.as_array().is_some_and(|g| g.iter().any(|e| e[0] == "cancel")).then_some(got))
    })
    .await?;
    Ok(json!([got, eval("natives()").await?, eval("navigator.userActivation.hasBeenActive").await?]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rules_cancel_looks_as_the_browsers_own() -> anyhow::Result<()> {
    let work = files_dir()?;
    let (s, _) = Session::with_pilot("/watch", WATCH).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "accept": false}),
        )
        .await?;
    let ours = cancel_seen(&s.page, async |e: &str| s.page_value(e).await).await?;
    let (_plain, page) = Browser::plain_page(&s.web.page("/plain-watch", WATCH, &[]), "watch").await?;
    let theirs = cancel_seen(&page, async |e: &str| page.eval(e).await).await?;
    assert_eq!(ours, theirs, "the page sees the same events and natives as without Unmodal");
    assert_eq!(s.closed_records("file_chooser", 1).await?[0]["decided_by"], "rule");
    s.takes_input().await?;
    Ok(())
}

/// A page whose buttons call the File System Access pickers on a trusted click: `#one` one
/// picker, `#two` two at once; `outcomes` what each call settled with, as the page sees it.
const PICKERS: &str = "<!doctype html><title>pickers</title><button id=one>one</button><button id=two>two</button><button id=b>b</button>
<script>window.seen = []; window.outcomes = []; window.missed = 0;
  const see = (p) => p.then((v) => ['ok', String(v)], (e) => [e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack')]).then((o) => outcomes.push(o));
  // A click whose user activation ran out before its handler (a starved renderer) is not
  // the gesture the test means: counted, and the test clicks again.
  const gesture = (f) => () => { if (navigator.userActivation.isActive) f(); else missed++; };
  document.getElementById('one').onclick = gesture(() => see(showOpenFilePicker()));
  document.getElementById('two').onclick = gesture(() => { see(showSaveFilePicker({suggestedName: 'a.txt'})); see(showDirectoryPicker()); });
  document.getElementById('b').onclick = () => seen.push('click');
  window.shape = () => ['showOpenFilePicker', 'showSaveFilePicker', 'showDirectoryPicker'].map((k) => {
    const d = Object.getOwnPropertyDescriptor(window, k);
    return [Function.prototype.toString.call(window[k]), window[k].name, window[k].length, d.writable, d.enumerable, d.configurable, 'prototype' in window[k]];
  }).concat([Object.keys(window).indexOf('showOpenFilePicker') - Object.keys(window).indexOf('showSaveFilePicker')]);
</script>";

/// What a page sees of the pickers: their shape, a call without a gesture, one after a click,
/// two at once after another.
async fn pickers_seen(page: &Page, eval: impl AsyncFn(&str) -> anyhow::Result<Value>) -> anyhow::Result<Value> {
    let shape = eval("shape()").await?;
    let bare = eval("showOpenFilePicker().then(() => 'ok', (e) => [e.name, e.message])").await?;
    let mut after = Vec::new();
    for (button, n) in [("#one", 1), ("#two", 3)] {
        let clicks = std::sync::atomic::AtomicU64::new(eval("missed").await?.as_u64().unwrap_or(0));
        let base = eval("outcomes.length").await?.as_u64().unwrap_or(0);
        eventually(LIMIT, "the pickers' outcomes after a click with its activation", || async {
            let (missed, done) = (eval("missed").await?.as_u64(), eval("outcomes.length").await?.as_u64() >= Some(n));
            // The browser process can miss an activation its renderer saw (under load, in the
            // browser without Unmodal: every picker of the click refused "User activation
            // required"): not the gesture the test means either, so it clicks again.
            let unseen = format!(
                "outcomes.slice({base}).every((o) => o[1] === 'NotAllowedError' && o[2].endsWith('User activation required.'))"
            );
            if done && eval(&unseen).await? == true {
                eval(&format!("outcomes.length = {base}; 0")).await?;
                clicks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                page.click(button).await?;
                return Ok(None);
            }
            // Clicked again only when the last click reached its handler without activation.
            if !done && missed.unwrap_or(0) >= clicks.load(std::sync::atomic::Ordering::Relaxed) {
                clicks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                page.click(button).await?;
            }
            Ok(done.then_some(()))
        })
        .await?;
        // Two at once settle in either order, in the browser too.
        after.push(eval("outcomes.map((o) => o.join(' | ')).sort()").await?);
    }
    Ok(json!([shape, bare, after]))
}

#[tokio::test(flavor = "multi_thread")]
async fn pickers_are_refused_as_the_browser_refuses_them() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/pickers", PICKERS).await?;
    let ours = pickers_seen(&s.page, async |e: &str| s.page_value(e).await).await?;
    let (_plain, page) = Browser::plain_page(&s.web.page("/plain-pickers", PICKERS, &[]), "pickers").await?;
    let mut theirs = pickers_seen(&page, async |e: &str| page.eval(e).await).await?;
    // Two pickers in one gesture: which one the browser lets take the activation is not
    // fixed (a fresh-clone CI run saw the directory picker take it before the save picker
    // called first). Unmodal gives it to the first call, one of the browser's two orders.
    let swapped = |v: &Value| {
        let text =
            v.to_string().replace("showSaveFilePicker", "@save@").replace("showDirectoryPicker", "showSaveFilePicker");
        let mut back: Value = serde_json::from_str(&text.replace("@save@", "showDirectoryPicker")).unwrap_or_default();
        if let Some(list) = back.as_array_mut() {
            list.sort_by_key(|x| x.to_string());
        }
        back
    };
    if theirs[2][1] != ours[2][1] && swapped(&theirs[2][1]) == ours[2][1] {
        theirs[2][1] = ours[2][1].clone();
    }
    assert_eq!(ours, theirs, "the page sees what it sees without Unmodal");
    assert_eq!(
        ours[2][0][0],
        "DOMException | AbortError | Failed to execute 'showOpenFilePicker' on 'Window': The user aborted a request. | true"
    );
    // The first picker of each gesture is recorded, refused by the default; the browser
    // answers the rest itself (no gesture, or the gesture taken), opening nothing.
    let recs = s.closed_records("file_chooser", 2).await?;
    let said: Vec<_> = recs
        .iter()
        .map(|r| (r["mode"].as_str().unwrap_or_default(), r["decided_by"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(said, [("open_picker", "default_policy"), ("save_picker", "default_policy")], "{recs:?}");
    s.takes_input().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_picker_held_under_must_respond_and_a_hostile_page() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/pickers", PICKERS).await?;
    let armed = s
        .page_value(
            "window.trapped = 0;
             for (const k of ['request', 'kind', 'what', 'method', 'detail']) Object.defineProperty(Object.prototype, k, { get() { trapped++; }, set() { trapped++; } });
             const then = Promise.prototype.then; Promise.prototype.then = function (...a) { trapped++; return then.apply(this, a); };
             const watch = (p) => { then.call(p, () => outcomes.push(['ok']), (e) => outcomes.push([e.name, e.message])); };
             document.getElementById('one').onclick = () => watch(showOpenFilePicker());
             document.getElementById('two').onclick = () => { watch(showSaveFilePicker()); watch(showDirectoryPicker()); };
             trapped",
        )
        .await?;
    assert_eq!(armed, 0);
    s.policy("must_respond", 2).await?;
    s.page.click("#one").await?;
    let held = s.held(1).await?;
    assert_eq!(
        (held[0]["type"].as_str(), held[0]["message"].as_str()),
        (Some("file_chooser"), Some("file picker: showOpenFilePicker()")),
        "{held:?}"
    );
    let id = held[0]["dialog_id"].clone();
    let refused = s.agent.call("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    assert!(format!("{refused:?}").contains("File System Access picker"), "{refused:?}");
    s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": false})).await?;
    // Two in one gesture: the second gets the browser's NotAllowedError at once, the first
    // waits for the watchdog.
    s.page.click("#two").await?;
    let recs = s.closed_records("file_chooser", 2).await?;
    let by: Vec<_> = recs.iter().map(|r| r["closed_by"].as_str().unwrap_or_default()).collect();
    assert_eq!(by, ["agent", "watchdog"], "{recs:?}");
    let outcomes = eventually(LIMIT, "three outcomes", || async {
        let o = s.page_value("outcomes").await?;
        Ok((o.as_array().map_or(0, Vec::len) == 3).then_some(o))
    })
    .await?;
    assert_eq!(outcomes[0][0], "AbortError", "{outcomes}");
    assert_eq!(
        outcomes[1],
        json!(["NotAllowedError", "Failed to execute 'showDirectoryPicker' on 'Window': User activation required."])
    );
    assert_eq!(outcomes[2][0], "AbortError", "{outcomes}");
    assert_eq!(s.page_value("trapped").await?, 0, "no trap ran for us");
    Ok(())
}
