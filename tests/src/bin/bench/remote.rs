//! Remote browsers (issue 36): `unmodal mcp --cdp-endpoint` against the provider stand-in
//! (Chromium with the carried extension, no native host, reachable only through a token-only
//! WebSocket proxy), each figure beside the same thing done locally (`Session`: Chromium
//! with the native host) in the same run, interleaved. `cargo xtask bench -- --only-remote`.

use super::{CALLS, RUNS};
use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::page::Page;
use unmodal_e2e::remote::RemoteBrowser;
use unmodal_e2e::{Agent, Driver, Peer, Session, WebServer, eventually};

const LIMIT: Duration = Duration::from_secs(15);
/// Round trips timed per side.
const TRIES: usize = 50;
/// Process starts and driver clicks per side (each is seconds, not milliseconds).
const STARTS: usize = 10;

const PAGE: &str = "<!doctype html><title>remote</title>\
    <script>function plain(m) { return m.length > 3; }</script>\
    <button onclick=\"window.got = confirm(document.querySelector('#m').value)\">Ask</button>\
    <input id=m value=none>";

fn quantiles(mut xs: Vec<f64>) -> (f64, f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.1), at(0.9), at(0.95))
}

fn row(name: &str, xs: &[f64], unit: &str) -> f64 {
    let (p50, p10, p90, p95) = quantiles(xs.to_vec());
    println!("  {name:<56} median {p50:>8.2} {unit}   p95 {p95:.2}   (p10 {p10:.2}, p90 {p90:.2})");
    p50
}

fn ratio(remote: f64, local: f64) {
    println!("  {:<56} {:.2}x", "  ratio remote / local (medians)", remote / local.max(1e-6));
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// `unmodal mcp --cdp-endpoint <the proxy's URL, token in the query> --extension-id <the zip's>`.
fn remote_command(art: &Artifacts, browser: &RemoteBrowser, runtime: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&art.host);
    cmd.arg("mcp").args(["--cdp-endpoint", &browser.ws_url(), "--extension-id", browser.extension_id()]);
    cmd.env("UNMODAL_RUNTIME_DIR", runtime);
    cmd
}

fn local_command(art: &Artifacts, runtime: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&art.host);
    cmd.arg("mcp").env("UNMODAL_RUNTIME_DIR", runtime);
    cmd
}

/// Our children running `unmodal mcp` without `--cdp-endpoint` (the local ones).
fn local_mcp_children(host: &Path) -> Vec<u32> {
    let host = std::fs::canonicalize(host).unwrap_or_else(|_| host.to_owned());
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The fields after the command's closing parenthesis: state, ppid, ...
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).collect();
            ppid == Some(me) && exe == host && args.get(1) == Some(&&b"mcp"[..]) && args.len() == 2
        })
        .collect()
}

/// (VmRSS, VmHWM) of `pid`, in KiB.
fn memory_kib(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<u64> {
        let line = status.lines().find(|l| l.starts_with(name)).with_context(|| format!("no {name} for {pid}"))?;
        Ok(line.split_whitespace().nth(1).unwrap_or("0").parse()?)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

fn pilot_on(art: &Artifacts, runtime: &Path) -> Result<()> {
    let out =
        std::process::Command::new(&art.host).args(["pilot", "on"]).env("UNMODAL_RUNTIME_DIR", runtime).output()?;
    let said = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.success() && said.contains("AI Web Pilot is on"), "`unmodal pilot on` said: {said}");
    Ok(())
}

async fn tab_of(agent: &Agent, url: &str) -> Result<i64> {
    agent.wait_for_tab_listed(url).await
}

/// The dialogs a tab holds for the agent.
async fn pending(agent: &Agent, tab: i64) -> Result<Vec<Value>> {
    let d = agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
    Ok(d["pending_dialogs"].as_array().cloned().unwrap_or_default())
}

async fn set_policy(agent: &Agent, tab: i64, policy: &str) -> Result<()> {
    let v = agent
        .ok("configure", json!({"action": "dialog_policy", "policy": policy, "timeout_s": 60, "tab_id": tab}))
        .await?;
    ensure!(v["policy_in_force"] == json!(true), "policy {policy} not in force: {v}");
    Ok(())
}

/// Waits until process `pid` has exited; ends it (ours) if it lingers.
async fn gone(pid: u32) {
    let exited = eventually(Duration::from_secs(10), "the MCP process exiting", || async {
        Ok((!Path::new(&format!("/proc/{pid}")).exists()).then_some(()))
    });
    if exited.await.is_err() {
        let _ = std::process::Command::new("kill").arg(pid.to_string()).status();
    }
}

/// From spawning `cmd` to a rule set on the tab showing `url` being answered (the tab
/// acknowledged its config): (MCP handshake done, tab listed, rule answered) in ms, and
/// whether the answer said the rule is in force. The process is closed before returning.
async fn start_to_rule(
    cmd: tokio::process::Command,
    url: &str,
    pid_of: impl Fn(&Value) -> Option<u32>,
) -> Result<[f64; 4]> {
    let t = Instant::now();
    let agent = Agent::start_command(cmd, &[]).await?;
    let handshake = ms(t);
    let last = std::sync::Mutex::new(Value::Null);
    let (tab, pid) = eventually(LIMIT, "the tab listed by a new MCP process", || async {
        let reply = agent.call("observe", json!({"what": "tabs"})).await?;
        let v = match reply {
            unmodal_e2e::Reply::Ok(v) => v,
            other => {
                *last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = json!(format!("{other:?}"));
                return Ok(None);
            }
        };
        *last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = v.clone();
        let tab = v["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url).and_then(|t| t["id"].as_i64());
        Ok(tab.map(|t| (t, pid_of(&v))))
    })
    .await
    .with_context(|| {
        format!("{url}: the last answer: {}", last.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    })?;
    let listed = ms(t);
    let set = agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert", "tab_id": tab}))
        .await?;
    let ruled = ms(t);
    let in_force = f64::from(u8::from(set["rules_in_force"] != json!(false)));
    agent.close().await?;
    if let Some(pid) = pid {
        gone(pid).await;
    }
    Ok([handshake, listed, ruled, in_force])
}

/// Figure 3: Playwright MCP clicks a button whose handler calls confirm() under
/// `must_respond`; the moment the click returns, the agent asks once. The click's ms, and
/// whether that first answer listed it (`None`: not listed within `LIMIT` at all).
async fn clicks(agent: &Agent, peer: &Peer, url: &str, tab: i64, i: usize) -> Result<(f64, Option<bool>)> {
    let marker = format!("driver probe {i}");
    peer.ok(
        "browser_evaluate",
        json!({"function": format!("() => {{ document.querySelector('#m').value = '{marker}'; }}")}),
    )
    .await?;
    // Playwright MCP learns of the last close (answered through Unmodal) a moment later.
    eventually(LIMIT, "Playwright MCP seeing the last dialog closed", || async {
        Ok((!peer.call("browser_snapshot", json!({})).await?.is_error).then_some(()))
    })
    .await?;
    let t = Instant::now();
    let r = peer.click_button(url, "Ask").await?;
    let click = ms(t);
    ensure!(r.text.contains("confirm"), "Playwright MCP did not report the dialog: {}", r.text);
    let first = pending(agent, tab).await?;
    let listed = first.iter().any(|d| d["message"] == marker.as_str());
    let held = eventually(LIMIT, "the held dialog listed", || async {
        Ok(pending(agent, tab).await?.into_iter().find(|d| d["message"] == marker.as_str()))
    })
    .await;
    match held {
        Ok(held) => {
            let id = held["dialog_id"].as_u64().context("a dialog_id")?;
            agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
        }
        // Never listed: a figure, not the end of the run. The driver answers it instead.
        Err(e) => {
            eprintln!("  {marker}: {e:#}");
            peer.answer_dialog(true, None).await?;
            return Ok((click, None));
        }
    }
    Ok((click, Some(listed)))
}

/// µs per call of `body`, `CALLS` times in the page, and the page's `sink`.
async fn batch(page: &Page, body: &str) -> Result<(f64, Value)> {
    let expr = format!(
        "(() => {{ let sink = 0; const t0 = performance.now(); for (let i = 0; i < {CALLS}; i++) {{ {body} }} \
         return [(performance.now() - t0) * 1000 / {CALLS}, sink]; }})()"
    );
    let v = page.eval(&expr).await?;
    Ok((v[0].as_f64().unwrap_or(f64::NAN), v[1].clone()))
}

pub async fn rows() -> Result<()> {
    println!("\nRemote browsers: `unmodal mcp --cdp-endpoint` through a token-only WebSocket proxy (remote)");
    println!("beside `unmodal mcp` + native host (local), same run, interleaved:");
    let art = Artifacts::find()?;
    let web = WebServer::start()?;
    let remote_url = web.page("/remote", PAGE, &[]);
    let browser = RemoteBrowser::launch().await?;
    let _remote_page = browser.new_page(&remote_url).await?;
    // Another section's session may have its own `unmodal mcp` running: ours is the new one.
    let others = local_mcp_children(&art.host);
    let (s, local_url) = Session::with_pilot("/local", PAGE).await?;
    let local_agent_pid = local_mcp_children(&art.host)
        .into_iter()
        .find(|p| !others.contains(p))
        .context("the session's `unmodal mcp` process")?;

    // Figure 2: from spawning `unmodal mcp` to a rule on the tab answered.
    let rt = tempfile::Builder::new().prefix("unmodal-bench-remote-rt-").tempdir()?;
    let own_pid = |v: &Value| v["browsers"][0]["browser"]["host_pid"].as_u64().and_then(|p| u32::try_from(p).ok());
    let (mut r_start, mut l_start) = (Vec::new(), Vec::new());
    for run in 0..STARTS {
        // A fresh provider session each time (one process per browser session, as the docs
        // say): a second process on the same browser is not what is measured here.
        let fresh = RemoteBrowser::launch().await?;
        let url = web.page(&format!("/remote-start-{run}"), PAGE, &[]);
        let _tab = fresh.new_page(&url).await?;
        let remote = start_to_rule(remote_command(&art, &fresh, rt.path()), &url, own_pid).await;
        r_start.push(remote.with_context(|| format!("remote start {run}"))?);
        drop(fresh);
        let before = local_mcp_children(&art.host);
        let cmd = local_command(&art, &s.browser.runtime);
        // The new local process is the child that was not there before.
        let host = art.host.clone();
        let new_pid = move |_: &Value| local_mcp_children(&host).into_iter().find(|p| !before.contains(p));
        l_start.push(start_to_rule(cmd, &local_url, new_pid).await.with_context(|| format!("local start {run}"))?);
    }
    let col = |xs: &[[f64; 4]], k: usize| xs.iter().map(|x| x[k]).collect::<Vec<_>>();
    println!(
        "\nFrom spawning `unmodal mcp` to a rule on a tab answered ({STARTS} starts each; 20 ms polling for the tab):"
    );
    let l = row("local: MCP handshake done", &col(&l_start, 0), "ms");
    let r = row("remote: MCP handshake done", &col(&r_start, 0), "ms");
    ratio(r, l);
    let l = row("local: the tab listed", &col(&l_start, 1), "ms");
    let r = row("remote: the tab listed (bridge attached, worker reported)", &col(&r_start, 1), "ms");
    ratio(r, l);
    let l = row("local: rule answered (tab acknowledged)", &col(&l_start, 2), "ms");
    let r = row("remote: rule answered (tab acknowledged)", &col(&r_start, 2), "ms");
    ratio(r, l);
    let in_force = |xs: &[[f64; 4]]| xs.iter().filter(|x| x[3] > 0.5).count();
    println!(
        "  rules_in_force in the answer: local {} of {STARTS}, remote {} of {STARTS}",
        in_force(&l_start),
        in_force(&r_start)
    );
    println!(
        "  (each remote start on a fresh stand-in browser; locally the native host already runs with its browser)"
    );

    // The remote session the rest of the figures use.
    let runtime = tempfile::Builder::new().prefix("unmodal-bench-remote-rt-").tempdir()?;
    let agent = Agent::start_command(remote_command(&art, &browser, runtime.path()), &[]).await?;
    pilot_on(&art, runtime.path())?;
    let rtab = tab_of(&agent, &remote_url).await?;
    let ltab = tab_of(&s.agent, &local_url).await?;

    // Figure 1: round trips. A rule set on a tab is answered once the tab acknowledged its
    // config (host -> worker -> tab -> worker -> host); under must_respond, observe first
    // sends `sync` to the worker and waits for `synced` (the barrier).
    println!("\nThe round trip to the extension's worker ({TRIES} calls each, interleaved):");
    let (mut l_obs, mut r_obs, mut l_rule, mut r_rule) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let rule = |tab: i64| json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert", "once": false, "tab_id": tab});
    let clear = |tab: i64| json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert", "clear": true, "tab_id": tab});
    for _ in 0..TRIES {
        for (a, tab, obs, set) in [(&s.agent, ltab, &mut l_obs, &mut l_rule), (&agent, rtab, &mut r_obs, &mut r_rule)] {
            let t = Instant::now();
            pending(a, tab).await?;
            obs.push(ms(t));
            let t = Instant::now();
            let v = a.ok("interact", rule(tab)).await?;
            set.push(ms(t));
            ensure!(v["rules_in_force"] != json!(false), "the rule was not acknowledged: {v}");
            a.ok("interact", clear(tab)).await?;
        }
    }
    let (mut l_sync, mut r_sync) = (Vec::new(), Vec::new());
    set_policy(&s.agent, ltab, "must_respond").await?;
    set_policy(&agent, rtab, "must_respond").await?;
    for _ in 0..TRIES {
        for (a, tab, obs) in [(&s.agent, ltab, &mut l_sync), (&agent, rtab, &mut r_sync)] {
            let t = Instant::now();
            pending(a, tab).await?;
            obs.push(ms(t));
        }
    }
    let l = row("local: observe, no barrier (the MCP side alone)", &l_obs, "ms");
    let r = row("remote: observe, no barrier (the MCP side alone)", &r_obs, "ms");
    ratio(r, l);
    let l = row("local: observe under must_respond (sync -> synced)", &l_sync, "ms");
    let r = row("remote: observe under must_respond (sync -> synced)", &r_sync, "ms");
    ratio(r, l);
    let l = row("local: rule set on a tab (config acknowledged)", &l_rule, "ms");
    let r = row("remote: rule set on a tab (config acknowledged)", &r_rule, "ms");
    ratio(r, l);

    // Figure 3: a held dialog listed before the driver's click returns.
    let lpeer = Peer::start(Driver::PlaywrightMcp, s.browser.debugging_port()?).await?;
    let rpeer = Peer::start_at(Driver::PlaywrightMcp, &browser.ws_url(), &[]).await?;
    let lclick_url = s.web.page("/local-click", PAGE, &[]);
    let rclick_url = web.page("/remote-click", PAGE, &[]);
    lpeer.navigate(&lclick_url).await?;
    rpeer.navigate(&rclick_url).await?;
    let lctab = tab_of(&s.agent, &lclick_url).await?;
    let rctab = tab_of(&agent, &rclick_url).await?;
    set_policy(&s.agent, lctab, "must_respond").await?;
    set_policy(&agent, rctab, "must_respond").await?;
    let (mut l_click, mut r_click, mut l_hits, mut r_hits, mut l_never, mut r_never) =
        (Vec::new(), Vec::new(), 0, 0, 0, 0);
    for i in 0..STARTS {
        let (ms, hit) = clicks(&s.agent, &lpeer, &lclick_url, lctab, i).await.context("local")?;
        l_click.push(ms);
        l_hits += usize::from(hit == Some(true));
        l_never += usize::from(hit.is_none());
        let (ms, hit) = clicks(&agent, &rpeer, &rclick_url, rctab, i).await.context("remote")?;
        r_click.push(ms);
        r_hits += usize::from(hit == Some(true));
        r_never += usize::from(hit.is_none());
    }
    println!("\nPlaywright MCP clicks a button that calls confirm() (must_respond; {STARTS} clicks each):");
    let l = row("local: snapshot + click calls (dialog opens)", &l_click, "ms");
    let r = row("remote: snapshot + click calls, through the proxy", &r_click, "ms");
    ratio(r, l);
    println!(
        "  the first observe after the click returned listed the dialog: local {l_hits} of {STARTS}, remote {r_hits} of {STARTS}"
    );
    if l_never + r_never > 0 {
        println!("  never listed within {LIMIT:?} (answered by the driver): local {l_never}, remote {r_never}");
    }
    for (a, tabs) in [(&s.agent, [ltab, lctab]), (&agent, [rtab, rctab])] {
        for tab in tabs {
            set_policy(a, tab, "auto").await?;
        }
    }
    lpeer.close().await?;
    rpeer.close().await?;

    // Figure 5: the page's per-dialog cost, in-page in both.
    let ldec_url = s.web.page("/local-decision", PAGE, &[]);
    let rdec_url = web.page("/remote-decision", PAGE, &[]);
    let lpage = s.browser.new_page(&ldec_url).await?;
    let rpage = browser.new_page(&rdec_url).await?;
    let ldtab = tab_of(&s.agent, &ldec_url).await?;
    let rdtab = tab_of(&agent, &rdec_url).await?;
    for (a, tab) in [(&s.agent, ldtab), (&agent, rdtab)] {
        a.ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false, "tab_id": tab}),
        )
        .await?;
    }
    let (mut l_dec, mut r_dec, mut l_plain, mut r_plain) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..RUNS {
        // Each side goes first in turn.
        let order = if run % 2 == 0 { [(&lpage, 0), (&rpage, 1)] } else { [(&rpage, 1), (&lpage, 0)] };
        for (page, side) in order {
            let (us, sink) = batch(page, "sink += confirm('Delete?') ? 1 : 0;").await?;
            ensure!(sink == json!(CALLS), "the rule did not answer every call: {sink}");
            let (base, _) = batch(page, "sink += plain('Delete?') ? 1 : 0;").await?;
            if side == 0 {
                l_dec.push(us);
                l_plain.push(base);
            } else {
                r_dec.push(us);
                r_plain.push(base);
            }
        }
    }
    println!("\nDecision time per confirm() answered by a rule ({RUNS} runs of {CALLS} calls, in turns):");
    row("local: plain JS function call (baseline)", &l_plain, "us");
    row("remote: plain JS function call (baseline)", &r_plain, "us");
    let l = row("local: confirm() answered by a rule", &l_dec, "us");
    let r = row("remote: confirm() answered by a rule", &r_dec, "us");
    ratio(r, l);

    // Figure 4: memory of the processes that hold a session, after the work above.
    let tabs = agent.ok("observe", json!({"what": "tabs"})).await?;
    let remote_pid = own_pid(&tabs).context("the remote MCP process's pid")?;
    let host_pid = own_pid(&s.agent.ok("observe", json!({"what": "tabs"})).await?).context("the native host's pid")?;
    let (r_rss, r_hwm) = memory_kib(remote_pid)?;
    let (m_rss, m_hwm) = memory_kib(local_agent_pid)?;
    let (h_rss, h_hwm) = memory_kib(host_pid)?;
    println!("\nMemory per session after the work above (KiB; Chromium not counted):");
    println!(
        "  remote: `unmodal mcp --cdp-endpoint` (pid {remote_pid})            VmRSS {r_rss:>7}   VmHWM {r_hwm:>7}"
    );
    println!(
        "  local:  `unmodal mcp` (pid {local_agent_pid})                          VmRSS {m_rss:>7}   VmHWM {m_hwm:>7}"
    );
    println!("  local:  native host (pid {host_pid})                          VmRSS {h_rss:>7}   VmHWM {h_hwm:>7}");
    println!(
        "  local pair: VmRSS {}   VmHWM {}   (remote / local pair, VmRSS: {:.2}x)",
        m_rss + h_rss,
        m_hwm + h_hwm,
        r_rss as f64 / (m_rss + h_rss).max(1) as f64
    );
    drop((lpage, rpage));
    faults_and_files().await
}

/// How many drops, and how many file copies per size.
const DROPS: usize = 5;
const COPIES: usize = 3;

/// Figures 5 and 6: a dropped connection until rules work again, and files given to a
/// remote chooser (copied onto the browser's machine first) against the same file given
/// again (already there: no copy), in the same session.
pub async fn faults_and_files() -> Result<()> {
    let (art, web) = (&Artifacts::find()?, &WebServer::start()?);
    let work = tempfile::tempdir()?;
    let browser = RemoteBrowser::launch().await?;
    let runtime = tempfile::Builder::new().prefix("unmodal-bench-remote-rt-").tempdir()?;
    let roots = [work.path().to_owned()];
    let agent = Agent::start_command(remote_command(art, &browser, runtime.path()), &roots).await?;
    pilot_on(art, runtime.path())?;
    let url = web.page("/remote-files", FILES, &[]);
    let page = browser.new_page(&url).await?;
    let tab = tab_of(&agent, &url).await?;

    println!("\nFiles given to a remote file chooser by a rule, click → the page's change event ({COPIES} each):");
    for mb in [1usize, 10] {
        let name = format!("f{mb}.bin");
        let bytes: Vec<u8> = (0..mb * 1_000_000).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect();
        std::fs::write(work.path().join(&name), &bytes)?;
        let (mut first, mut again) = (Vec::new(), Vec::new());
        for i in 0..COPIES {
            // Touched: a changed file is copied anew.
            std::fs::write(work.path().join(&name), &bytes)?;
            let files = [work.path().join(&name).display().to_string()];
            agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "once": false, "files": files, "tab_id": tab})).await?;
            for out in [&mut first, &mut again] {
                // The same file picked again changes nothing and fires no `change`: empty it.
                let before = page.eval("f.value = ''; got.length").await?.as_u64().unwrap_or(0);
                let t = Instant::now();
                page.click("#f").await?;
                let got = eventually(Duration::from_secs(60), "the change event", || async {
                    let n = page.eval("got.length").await?.as_u64().unwrap_or(0);
                    Ok((n > before).then_some(()))
                })
                .await;
                got.with_context(|| format!("{mb} MB, try {i}"))?;
                out.push(ms(t));
                let size = page.eval("got[got.length - 1]").await?;
                ensure!(size == json!(bytes.len()), "the page got {size} bytes, not {}", bytes.len());
            }
        }
        let f = row(&format!("remote: {mb} MB, copied to the browser's machine first"), &first, "ms");
        let a = row(&format!("remote: {mb} MB, already there (baseline)"), &again, "ms");
        println!(
            "  {:<56} {:.2}x   ({:.1} MB/s for the copy)",
            "  ratio first / again (medians)",
            f / a.max(1e-6),
            mb as f64 / ((f - a).max(1e-6) / 1000.0)
        );
    }
    println!("\nThe proxy drops every connection; until a rule set on the tab is answered in force ({DROPS} drops):");
    let mut back = Vec::new();
    for i in 0..DROPS {
        browser.drop_all().await;
        let t = Instant::now();
        eventually(Duration::from_secs(30), "a rule in force after the drop", || async {
            let set =
                json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert", "once": false, "tab_id": tab});
            let v = agent.call("interact", set).await?;
            Ok(matches!(&v, unmodal_e2e::Reply::Ok(v) if v["rules_in_force"] == json!(true)).then_some(()))
        })
        .await
        .with_context(|| format!("drop {i}"))?;
        back.push(ms(t));
    }
    row("remote: drop → rule answered in force (backoff from 100 ms)", &back, "ms");

    Ok(())
}

const FILES: &str = "<!doctype html><title>files</title><input type=file id=f>\
    <script>window.got = []; f.addEventListener('change', (e) => got.push(e.target.files[0].size));</script>";
