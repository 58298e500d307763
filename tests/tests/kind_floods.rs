//! Floods of the kinds no other file floods: a page calling, in a loop, for permissions
//! (getUserMedia, Notification.requestPermission), device choosers and file pickers after one
//! gesture, and protected fetches that each raise HTTP auth. Each time every call settles,
//! the tab still takes input, and the host keeps up: its history holds at most 50 records,
//! every call is recorded (kept or evicted) or counted at most once, and it still answers.
//! (alert, getDisplayMedia, print, app links, passkeys, payment, storage access, sign-in, file
//! inputs and downloads have their floods in their own files.)

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::browser::Options;
use unmodal_e2e::{Session, eventually};

/// The host's history (native-host/src/host/state.rs `HISTORY`).
const HISTORY: usize = 50;
const SETTLE: Duration = Duration::from_secs(30);

/// A page whose `flood(n, call)` starts `n` calls of `call()` at once and tallies how each
/// settled (`tally`, `settled`); `#go` runs `window.pending` inside a click; `#b` shows the
/// tab takes input.
const PAGE: &str = "<!doctype html><title>floods</title>
<button id=go style='position: fixed; left: 0; top: 0; width: 120px; height: 40px'>go</button>
<button id=b style='position: fixed; left: 0; top: 60px; width: 120px; height: 40px'>b</button>
<script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');
  window.tally = {}; window.settled = 0;
  const note = (k) => { tally[k] = (tally[k] || 0) + 1; settled++; };
  window.flood = (n, call) => { for (let i = 0; i < n; i++) {
    let p; try { p = Promise.resolve(call()); } catch (e) { p = Promise.reject(e); }
    p.then((v) => note(Array.isArray(v) ? 'list ' + v.length : v && v.status ? 'status ' + v.status : 'ok'),
      (e) => note(e.name)); } return 0; };
  document.getElementById('go').onclick = () => window.pending && window.pending();</script>";

async fn session(args: Vec<String>) -> Result<Session> {
    let s = Session::start_with(Options { args, ..Options::default() }).await?;
    s.open("/floods", PAGE, &[]).await?;
    s.enable_pilot().await?;
    Ok(s)
}

/// Waits until the page's `n` calls all settled; their tally.
async fn all_settled(s: &Session, n: u64) -> Result<Value> {
    let done = eventually(SETTLE, &format!("all {n} calls settled"), || async {
        Ok((s.page.eval("settled").await? == json!(n)).then_some(()))
    })
    .await;
    let tally = s.page.eval("tally").await?;
    if let Err(e) = done {
        let d = s.dialogs().await?;
        let open: Vec<&Value> =
            d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["state"] != "closed").collect();
        let kept = d["recent_dialogs"].as_array().map_or(0, Vec::len);
        let ids: Vec<&Value> = d["recent_dialogs"].as_array().into_iter().flatten().map(|r| &r["request_id"]).collect();
        anyhow::bail!(
            "{e}: {tally}; open records: {open:?}; kept {kept}, evicted {}, folded {}; server hits {}; request ids {ids:?}",
            d["evicted"],
            d["folded_by_flood_limit"],
            s.web.hits("/api")
        );
    }
    Ok(tally)
}

/// After a flood of `calls` calls of `kind`: the tab takes input, the history is bounded,
/// every call was recorded or counted at most once (at least one was), the host still
/// answers. How many the host accounted for.
async fn host_kept_up(s: &Session, kind: &str, calls: u64) -> Result<u64> {
    let n = eventually(Duration::from_secs(15), &format!("a {kind} record"), || async {
        let n = s.recorded_or_counted(kind).await?;
        Ok((n >= 1).then_some(n))
    })
    .await?;
    s.takes_input().await?;
    let d = s.dialogs().await?;
    let kept = d["recent_dialogs"].as_array().map_or(0, Vec::len);
    ensure!(kept <= HISTORY, "{kept} records kept: {d}");
    let n = s.recorded_or_counted(kind).await?.max(n);
    ensure!(n <= calls, "{n} {kind} records or counts for {calls} calls: {d}");
    let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(tabs["pilot_enabled"] == true, "{tabs}");
    eprintln!("{kind}: {calls} calls, {n} recorded or counted, {kept} kept, folded {}", d["folded_by_flood_limit"]);
    Ok(n)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_of_permission_requests() -> Result<()> {
    const N: u64 = 300;
    let s = session(vec!["--use-fake-device-for-media-stream".into()]).await?;
    s.page_value(&format!(
        "flood({}, () => navigator.mediaDevices.getUserMedia({{video: true}})); \
         flood({}, () => Notification.requestPermission())",
        N / 2,
        N / 2
    ))
    .await?;
    let tally = all_settled(&s, N).await?;
    // Refused by default: the browser's own errors and answers, nothing else.
    let names: Vec<&str> = tally.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
    ensure!(names.iter().all(|k| ["NotAllowedError", "ok"].contains(k)), "{tally}");
    host_kept_up(&s, "permission", N).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_of_device_choosers_in_one_gesture() -> Result<()> {
    const N: u64 = 150;
    let s = session(Vec::new()).await?;
    s.page_value(&format!(
        "window.pending = () => {{ flood({n}, () => navigator.usb.requestDevice({{filters: []}})); \
           flood({n}, () => navigator.hid.requestDevice({{filters: []}})); \
           flood({n}, () => navigator.serial.requestPort()); }}; 0",
        n = N / 3
    ))
    .await?;
    s.page.click("#go").await?;
    let tally = all_settled(&s, N).await?;
    // Each gets the browser's own cancel: NotFoundError, or for HID an empty list.
    let names: Vec<&str> = tally.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
    ensure!(names.iter().all(|k| ["NotFoundError", "list 0"].contains(k)), "{tally}");
    host_kept_up(&s, "device_chooser", N).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_of_file_pickers_in_one_gesture() -> Result<()> {
    const N: u64 = 300;
    let s = session(Vec::new()).await?;
    s.page_value(&format!(
        "window.pending = () => {{ flood({n}, () => showOpenFilePicker()); flood({n}, () => showSaveFilePicker()); \
           flood({n}, () => showDirectoryPicker()); }}; 0",
        n = N / 3
    ))
    .await?;
    s.page.click("#go").await?;
    let tally = all_settled(&s, N).await?;
    // One gesture, one picker (a person's cancel); the browser refuses the rest.
    ensure!(tally["AbortError"] == json!(1), "{tally}");
    ensure!(tally["NotAllowedError"] == json!(N - 1), "{tally}");
    let n = host_kept_up(&s, "file_chooser", N).await?;
    ensure!(n == 1, "only the picker that opened is recorded: {n}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_of_fetches_that_each_raise_http_auth() -> Result<()> {
    const N: u64 = 100;
    let s = session(Vec::new()).await?;
    s.web.protected("/api", b"{\"ok\":true}", "application/json", "Flood", "u", "p");
    // All at once: the browser opens 6 connections to the site together. (The test web
    // server used to leave one of them unread now and then, and a request on it never
    // settled: tests/src/web.rs.)
    s.page_value(&format!("flood({N}, () => fetch('/api?' + Math.random(), {{cache: 'no-store'}}))")).await?;
    let tally = all_settled(&s, N).await?;
    // Cancelled by default: the page gets each 401 the server sent.
    ensure!(tally == json!({"status 401": N}), "{tally}");
    host_kept_up(&s, "auth", N).await?;
    Ok(())
}
