//! `unmodal extension --zip`: the zip a hosted browser fleet takes. The real binary writes
//! it (the same bytes twice), it is unpacked as a provider would, and Chromium loads it with
//! `--load-extension`, in an empty HOME, with no native host anywhere: the worker starts
//! under an ID of the browser's own (no `key`), a page's content script gets the worker's
//! answer to its hello, and a confirm() still reaches the browser's own dialog and gets the
//! driver's answer, as in a browser without Unmodal's host.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::cdp::{self, Event};
use unmodal_e2e::{Browser, Options, WebServer, eventually};

/// Runs `unmodal extension --zip FILE`; returns its bytes.
fn write_zip(host: &Path, file: &Path) -> Result<Vec<u8>> {
    let out = std::process::Command::new(host).arg("extension").arg("--zip").arg(file).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.success(), "unmodal extension --zip failed: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(file)?;
    ensure!(stdout.contains(&format!("{} bytes", bytes.len())), "it says the size: {stdout}");
    Ok(bytes)
}

/// Unpacks as a provider does, refusing names that would leave `dir`.
fn unzip(bytes: &[u8], dir: &Path) -> Result<Vec<String>> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    let mut names = Vec::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i)?;
        let rel = f.enclosed_name().context("a name outside the zip's root")?;
        let path = dir.join(&rel);
        std::fs::create_dir_all(path.parent().context("a file has a parent")?)?;
        std::io::copy(&mut f, &mut std::fs::File::create(&path)?)?;
        names.push(rel.to_string_lossy().into_owned());
    }
    Ok(names)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_zip_loads_in_a_browser_with_no_host_and_its_page_hook_runs() -> Result<()> {
    let art = Artifacts::find()?;
    let tmp = tempfile::tempdir()?;
    let bytes = write_zip(&art.host, &tmp.path().join("unmodal.zip"))?;
    ensure!(write_zip(&art.host, &tmp.path().join("again.zip"))? == bytes, "two runs write the same bytes");
    let sha: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    eprintln!("extension zip: {} bytes, sha256 {sha}", bytes.len());

    let ext = tmp.path().join("ext");
    let names = unzip(&bytes, &ext)?;
    for built in std::fs::read_dir(&art.extension)? {
        let name = built?.file_name().to_string_lossy().into_owned();
        ensure!(names.contains(&name), "{name} is in the zip: {names:?}");
    }
    let manifest: Value = serde_json::from_slice(&std::fs::read(ext.join("manifest.json"))?)?;
    ensure!(manifest.get("key").is_none() && manifest["manifest_version"] == 3, "{manifest}");

    let home = tmp.path().join("home");
    std::fs::create_dir(&home)?;
    let browser = Browser::launch(Options {
        extension: false,
        other_extension: Some(ext.clone()),
        env: vec![("HOME".into(), home.display().to_string())],
        ..Options::default()
    })
    .await?;

    // The worker, under the ID the browser derives from the path (no key).
    let worker_url = eventually(Duration::from_secs(15), "the zip's service worker starting", || async {
        let targets = browser.cdp.call(None, "Target.getTargets", json!({})).await?;
        Ok(targets["targetInfos"].as_array().into_iter().flatten().find_map(|t| {
            let url = t["url"].as_str()?;
            (t["type"] == "service_worker" && url.starts_with("chrome-extension://") && url.ends_with("/background.js"))
                .then(|| url.to_owned())
        }))
    })
    .await
    .with_context(|| browser.log_tail())?;
    let id = worker_url.trim_start_matches("chrome-extension://").trim_end_matches("/background.js").to_owned();
    ensure!(id.len() == 32 && id != art.extension_id, "a keyless ID, not the keyed {}: {id}", art.extension_id);

    let web = WebServer::start()?;
    let url = web.page("/page", "<!doctype html><title>remote</title><p>work</p>", &[]);
    let page = browser.new_page("about:blank").await?;
    let mut events = page.events();
    page.goto(&url).await?;

    // The content script's world in the page, and in it the worker's answer to its hello:
    // the pilot-off config (no host said otherwise).
    let me = page.session.clone();
    let world = cdp::wait_event(&mut events, Duration::from_secs(15), |e: &Event| {
        e.session.as_deref() == Some(&me)
            && e.method == "Runtime.executionContextCreated"
            && e.params["context"]["origin"] == format!("chrome-extension://{id}").as_str()
    })
    .await
    .context("the extension's content script world in the page")?;
    let context = world.params["context"]["id"].clone();
    let config = eventually(Duration::from_secs(15), "the worker answering the page's hello", || async {
        let r = page
            .call(
                "Runtime.evaluate",
                json!({"expression": "globalThis.__unmodalBridge?.config", "contextId": context, "returnByValue": true}),
            )
            .await?;
        Ok(r["result"]["value"].as_str().map(str::to_owned))
    })
    .await?;
    ensure!(config == "U1", "the pilot-off config: {config}");

    // A confirm: the browser's own dialog, answered by the driver, as without the host.
    let (cdp, session) = (page.cdp.clone(), page.session.clone());
    let asked = tokio::spawn(async move {
        cdp.call(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "confirm('Still the browser\\'s?')", "returnByValue": true, "awaitPromise": true}),
        )
        .await
    });
    let opened = cdp::wait_event(&mut events, Duration::from_secs(15), |e: &Event| {
        e.session.as_deref() == Some(&me) && e.method == "Page.javascriptDialogOpening"
    })
    .await
    .context("the browser's own dialog")?;
    ensure!(
        opened.params["type"] == "confirm" && opened.params["message"] == "Still the browser's?",
        "{}",
        opened.params
    );
    page.call("Page.handleJavaScriptDialog", json!({"accept": true})).await?;
    let r = tokio::time::timeout(Duration::from_secs(15), asked).await???;
    ensure!(r["result"]["value"] == true, "the page got the driver's answer: {r}");
    Ok(())
}
