//! Print (dialog_type "print"): window.print() in any frame. Without Unmodal, headless
//! Chromium starts a print job that never ends: no `afterprint`, and Page.printToPDF fails
//! ("Page is already being printed") until the page navigates (MODAL-FACTS 2). With the
//! pilot on the page hook answers print() as a person's cancel of the preview, without the
//! browser's print(); the host records it (rule, policy, agent, watchdog). A print rule
//! with accept: true (or the agent's accept) prints the page to a PDF file, only inside the
//! MCP client's roots or Unmodal's prints directory.

use serde_json::{Value, json};
use unmodal_e2e::agent::Agent;
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::page::Page;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

const PAGE: &str = "<!doctype html><title>print</title><button id=b>b</button>
<script>
  window.seen = [];
  for (const e of ['beforeprint', 'afterprint']) addEventListener(e, () => seen.push(e));
  document.getElementById('b').onclick = () => seen.push('click');
</script>";

async fn session(pilot: bool) -> anyhow::Result<Session> {
    let s = Session::start().await?;
    s.open("/print", PAGE, &[]).await?;
    if pilot {
        s.enable_pilot().await?;
    }
    Ok(s)
}

/// Whether the page can be printed to PDF now (a print job left behind forbids it).
async fn printable(page: &Page) -> anyhow::Result<Result<(), String>> {
    Ok(match page.call("Page.printToPDF", json!({})).await {
        Ok(v) if v["data"].as_str().is_some_and(|d| d.starts_with("JVBER")) => Ok(()),
        Ok(v) => Err(format!("no PDF: {v}")),
        Err(e) => Err(e.to_string()),
    })
}

async fn baseline(web: &WebServer) -> anyhow::Result<(Browser, Page)> {
    Browser::plain_page(&web.page("/plain-print", PAGE, &[]), "print").await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_answers_as_a_cancel_and_leaves_no_print_job() -> anyhow::Result<()> {
    let s = session(true).await?;
    assert_eq!(s.page_value("[print(), window.print(), frames.length]").await?, json!([null, null, 0]));
    let recs = s.closed_records("print", 2).await?;
    assert_eq!(
        (recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool(), recs[0]["message"].as_str()),
        (Some("default_policy"), Some(false), Some("print the page (window.print)"))
    );
    assert_eq!(s.page_value("seen").await?, json!([]), "no preview was entered");
    s.page.click("#b").await?;
    eventually(LIMIT, "a click reaching the page", || async {
        Ok((s.page_value("seen").await? == json!(["click"])).then_some(()))
    })
    .await?;
    assert_eq!(printable(&s.page).await?, Ok(()), "no print job was left behind");
    // Printing to PDF runs the page's print layout, as the browser does it.
    assert_eq!(s.page_value("seen").await?, json!(["click", "beforeprint", "afterprint"]));
    // Without Unmodal, the same page cannot be printed to PDF after its print().
    let (_b, plain) = baseline(&s.web).await?;
    plain.eval("print(); 0").await?;
    let refused = printable(&plain).await?;
    assert!(refused.as_ref().is_err_and(|e| e.contains("already being printed")), "{refused:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_and_must_respond_with_the_agent_and_the_watchdog() -> anyhow::Result<()> {
    let s = session(true).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "print", "accept": false}))
        .await?;
    s.page_value("print(); 0").await?;
    assert_eq!(s.closed_records("print", 1).await?[0]["decided_by"], "rule");

    s.policy("must_respond", 2).await?;
    s.page_value("print(); 0").await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "print");
    let id = held[0]["dialog_id"].clone();
    let v = s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": false})).await?;
    assert_eq!(v["agent_answer_applied"], true, "{v}");
    s.page_value("print(); 0").await?;
    let recs = s.closed_records("print", 3).await?;
    let closed: Vec<Value> = recs.iter().map(|r| r["closed_by"].clone()).collect();
    assert_eq!(closed, [json!("rule"), json!("agent"), json!("watchdog")]);
    assert_eq!(printable(&s.page).await?, Ok(()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_prints() -> anyhow::Result<()> {
    let s = session(false).await?;
    s.page_value("print(); 0").await?;
    assert_eq!(s.page_value("seen").await?, json!(["beforeprint"]), "the browser's own print()");
    let refused = printable(&s.page).await?;
    assert!(refused.as_ref().is_err_and(|e| e.contains("already being printed")), "{refused:?}");
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("print"), Some("pilot_off")), "{d}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_frames_print_is_recorded_with_the_frames_own_url() -> anyhow::Result<()> {
    let s = session(true).await?;
    // Such a frame's messages name about:blank; the record must name the frame's document.
    let frame = s.web.page("/sandboxed-receipt", "<!doctype html><title>receipt</title>", &[]);
    s.page_value(&format!(
        "new Promise((done) => {{ const f = document.createElement('iframe');
           f.sandbox = 'allow-scripts allow-same-origin allow-modals'; f.src = {};
           f.onload = () => done(String(f.contentWindow.print())); document.body.append(f); }})",
        json!(frame)
    ))
    .await?;
    let r = &s.closed_records("print", 1).await?[0];
    assert_eq!((r["url"].as_str(), r["decided_by"].as_str()), (Some(frame.as_str()), Some("default_policy")), "{r}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_under_a_strict_csp() -> anyhow::Result<()> {
    let other = WebServer::other_site()?;
    let widget = other.page(
        "/receipt",
        "<!doctype html><script>onmessage = () => parent.postMessage(String(print()), '*');
         parent.postMessage('ready', '*');</script>",
        &[],
    );
    let top = format!(
        "<!doctype html><title>framed</title><iframe src='{widget}'></iframe>
<script nonce=t>window.violations = []; window.got = null;
  document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
  addEventListener('message', (e) => {{ if (e.data === 'ready') window.frameReady = true; else window.got = e.data; }});</script>"
    );
    let s = Session::start().await?;
    s.open("/framed", &top, &[("Content-Security-Policy", "default-src 'none'; script-src 'nonce-t'; frame-src *")])
        .await?;
    s.enable_pilot().await?;
    eventually(LIMIT, "the frame loaded", || async {
        Ok((s.page_value("window.frameReady === true").await? == json!(true)).then_some(()))
    })
    .await?;
    s.page_value("frames[0].postMessage('go', '*'); 0").await?;
    eventually(LIMIT, "the frame's print() returned", || async {
        Ok((s.page_value("window.got").await? == json!("undefined")).then_some(()))
    })
    .await?;
    let r = &s.closed_records("print", 1).await?[0];
    assert!(r["url"].as_str().unwrap_or("").starts_with(&other.origin), "the frame's own URL: {r}");
    assert_eq!(s.page_value("violations").await?, json!([]));
    assert_eq!(printable(&s.page).await?, Ok(()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn print_looks_and_fails_like_the_browsers_own() -> anyhow::Result<()> {
    let probe = "(() => { const d = Object.getOwnPropertyDescriptor(window, 'print');
        const err = (f) => { try { f(); return 'no error'; } catch (e) { return [e.constructor.name, e.message]; } };
        return JSON.stringify([String(print), print.name, print.length, 'prototype' in print, d.writable, d.enumerable,
          d.configurable, Function.prototype.toString.call(print), err(() => print.call({})), err(() => new print())]); })()";
    let s = session(true).await?;
    let ours = s.page_value(probe).await?;
    let (_b, plain) = baseline(&s.web).await?;
    assert_eq!(ours, plain.eval(probe).await?);
    // Traps set after start never see the hook at work.
    s.page_value(
        "window.trapped = 0;
         for (const name of ['window', 'request', 'kind', 'what', 'method']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped++; }, set() { trapped++; }, configurable: true });
         }
         0",
    )
    .await?;
    assert_eq!(s.page_value("[print(), trapped]").await?, json!([null, 0]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_prints_is_counted_exactly() -> anyhow::Result<()> {
    let s = session(true).await?;
    s.page_value("for (let i = 0; i < 1000; i++) print(); 0").await?;
    s.all_accounted("print", 1000).await?;
    assert_eq!(printable(&s.page).await?, Ok(()));
    Ok(())
}

/// The newest print record once it names its PDF file.
async fn printed(s: &Session, n: usize) -> anyhow::Result<Value> {
    eventually(LIMIT, "the print saved to a file", || async {
        let recs = s.closed_records("print", n).await?;
        Ok(recs.last().filter(|r| r["file"].is_string()).cloned())
    })
    .await
}

fn pdf_of(record: &Value) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(record["file"].as_str().unwrap_or_default())?;
    assert!(bytes.starts_with(b"%PDF"), "a PDF");
    assert_eq!(Some(bytes.len() as u64), record["size"].as_u64(), "{record}");
    Ok(bytes)
}

#[tokio::test(flavor = "multi_thread")]
async fn accepted_prints_become_pdf_files_only_inside_the_allowed_directories() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let env = vec![("UNMODAL_DATA_DIR".to_string(), data.path().display().to_string())];
    let s = Session::start_with(Options { env, ..Options::default() }).await?;
    s.open("/print", PAGE, &[]).await?;
    s.enable_pilot().await?;
    let work = tempfile::tempdir()?;
    let outside = tempfile::tempdir()?;
    std::os::unix::fs::symlink(outside.path(), work.path().join("out"))?;
    let roots = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    let rule = |to: &std::path::Path| json!({"action": "handle_dialog", "setup": true, "dialog_type": "print", "save_to": to.display().to_string()});
    // Outside the client's roots, through a link out of them, or relative: refused, naming them.
    for bad in [outside.path().join("a.pdf"), work.path().join("out/a.pdf")] {
        let err = format!("{:?}", roots.call("interact", rule(&bad)).await?);
        assert!(err.contains("save_to") && err.contains(&work.path().canonicalize()?.display().to_string()), "{err}");
    }
    // A client without roots cannot name the directory either.
    let err = format!("{:?}", s.agent.call("interact", rule(&work.path().join("a.pdf"))).await?);
    assert!(err.contains("outside the allowed directories"), "{err}");
    assert!(std::fs::read_dir(outside.path())?.next().is_none(), "nothing written outside");

    let v = roots.ok("interact", rule(&work.path().join("page.pdf"))).await?;
    assert_eq!(v["rules_in_force"], true, "{v}");
    assert_eq!(s.page_value("print()").await?, json!(null), "the call returns at once");
    let r = printed(&s, 1).await?;
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");
    assert_eq!(r["file"].as_str(), Some(work.path().canonicalize()?.join("page.pdf").to_str().unwrap_or("")));
    pdf_of(&r)?;
    // The browser printed it: the page's own print events, in the browser's order.
    eventually(LIMIT, "beforeprint and afterprint", || async {
        Ok((s.page_value("seen").await? == json!(["beforeprint", "afterprint"])).then_some(()))
    })
    .await?;

    // auto_accept with no file named: Unmodal's prints directory.
    s.policy("auto_accept", 10).await?;
    s.page_value("print(); 0").await?;
    let r = printed(&s, 2).await?;
    assert!(r["file"].as_str().unwrap_or("").starts_with(&data.path().join("prints").display().to_string()), "{r}");
    pdf_of(&r)?;

    // must_respond: the agent names the file when it answers.
    s.policy("must_respond", 30).await?;
    s.page_value("print(); 0").await?;
    let held = s.held(1).await?;
    let to = work.path().join("held.pdf");
    roots
        .ok(
            "interact",
            json!({"action": "handle_dialog", "dialog_id": held[0]["dialog_id"], "save_to": to.display().to_string()}),
        )
        .await?;
    let r = printed(&s, 3).await?;
    assert_eq!(
        (r["closed_by"].as_str(), r["file"].as_str()),
        (Some("agent"), work.path().canonicalize()?.join("held.pdf").to_str())
    );
    pdf_of(&r)?;
    assert_eq!(printable(&s.page).await?, Ok(()), "no print job left behind");
    Ok(())
}
