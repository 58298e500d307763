//! File choosers: a trusted click on `<input type=file>` to the page's `change`, with a 1 MB
//! file given by a file_chooser rule (the tab's debugger intercepts the chooser, the host's
//! rule answers, the worker sets the file), against the same click in a browser without
//! Unmodal whose CDP client intercepts the chooser and sets the file itself, as a driver's
//! upload tool does (the browser's own cost); and the rule's cancel. Interleaved, same run.

use super::{RUNS, row, stats};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use unmodal_e2e::agent::Agent;
use unmodal_e2e::browser::Browser;
use unmodal_e2e::page::Page;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The page notes when the click reached it and when the chooser ended (`change` or `cancel`).
const PAGE: &str = "<!doctype html><title>upload</title><input type=file id=f style='width:300px;height:60px'>
<script>window.ends = [];
  f.addEventListener('click', () => window.t0 = performance.now());
  for (const t of ['change', 'cancel']) f.addEventListener(t, () => ends.push([t, performance.now() - t0, f.files.length ? f.files[0].size : 0]));
</script>";

/// Clicks the input and waits for the chooser's end: (event, ms from click to it, file size).
async fn timed_click(page: &Page, eval: &impl AsyncFn(&str) -> Result<Value>) -> Result<(String, f64, u64)> {
    // Emptied first: the same file picked again ends in `cancel`, as Chromium does for a
    // person who picks what the input already holds.
    let before = eval("f.value = ''; ends.length").await?.as_u64().unwrap_or(0) as usize;
    page.click("#f").await?;
    let end = eventually(LIMIT, "the chooser's end", || async {
        let ends = eval("ends").await?;
        Ok(ends.get(before).cloned())
    })
    .await?;
    Ok((end[0].as_str().unwrap_or_default().into(), end[1].as_f64().unwrap_or(f64::NAN), end[2].as_u64().unwrap_or(0)))
}

pub async fn rows() -> Result<()> {
    println!("\nFile choosers: a click on <input type=file> to its change, a 1 MB file ({RUNS} runs, interleaved):");
    let work = tempfile::tempdir()?;
    let file = work.path().join("one-mb.bin");
    std::fs::write(&file, vec![7u8; 1 << 20])?;
    let (s, _) = Session::with_pilot("/upload", PAGE).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    let (_plain, plain) = Browser::plain_page(&s.web.page("/plain-upload", PAGE, &[]), "upload").await?;
    let driver = driver_sets(&plain, &file).await?;
    let ours = async |expr: &str| s.page_value(expr).await;
    let theirs = async |expr: &str| plain.eval(expr).await;
    let give = json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "files": [file], "once": false});
    let cancel = json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "accept": false, "once": false});

    let (mut base_ms, mut rule_ms, mut cancel_ms) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        agent.ok("interact", give.clone()).await?;
        let (end, ms, size) = timed_click(&s.page, &ours).await?;
        anyhow::ensure!(end == "change" && size == 1 << 20, "the rule's file did not arrive: {end} {size}");
        rule_ms.push(ms);
        agent.ok("interact", cancel.clone()).await?;
        let (end, ms, _) = timed_click(&s.page, &ours).await?;
        anyhow::ensure!(end == "cancel", "the rule's cancel: {end}");
        cancel_ms.push(ms);
        let (end, ms, size) = timed_click(&plain, &theirs).await?;
        anyhow::ensure!(end == "change" && size == 1 << 20, "the driver's file did not arrive: {end} {size}");
        base_ms.push(ms);
    }
    driver.abort();
    let rule = stats(rule_ms);
    row("click -> change, a CDP client sets the file (baseline)", &stats(base_ms), "ms");
    row("click -> change, file_chooser rule's file", &rule, "ms");
    row("click -> cancel, file_chooser rule's cancel", &stats(cancel_ms), "ms");
    println!("  goal: the rule's file in the page's change <= 50 ms from the click (median {:.1} ms)", rule.median);
    Ok(())
}

/// A driver on the plain browser's page: intercepts its choosers and answers each with `file`.
async fn driver_sets(page: &Page, file: &std::path::Path) -> Result<tokio::task::JoinHandle<()>> {
    let mut events = page.events();
    page.call("Page.enable", json!({})).await?;
    page.call("Page.setInterceptFileChooserDialog", json!({"enabled": true})).await?;
    let page = Page { cdp: page.cdp.clone(), session: page.session.clone(), target_id: page.target_id.clone() };
    let file = file.to_str().context("a UTF-8 path")?.to_owned();
    Ok(tokio::spawn(async move {
        while let Ok(e) = events.recv().await {
            if e.method == "Page.fileChooserOpened" {
                let node = e.params["backendNodeId"].clone();
                let _ = page.call("DOM.setFileInputFiles", json!({"files": [file], "backendNodeId": node})).await;
            }
        }
    }))
}
