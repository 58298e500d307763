//! Per-frame start-up: what Unmodal adds to every frame, against the platform's floor (an
//! extension with the same two content scripts, both empty), and frame-heavy pages with and
//! without the extension.
//!
//! The share is measured in one browser and one page: copies of both extensions, each
//! scoped to an origin of its own (ports of 127.0.0.1: one site, one renderer), are loaded
//! side by side, and the page makes frames in three child documents in turn (`plain`: no
//! content script, `floor`, `ours`), timing each batch. About:blank frames get content
//! scripts by their creator's origin; the documents set `document.domain` (with
//! `Origin-Agent-Cluster: ?0`) so the top page can script all three synchronously. Frames from different browsers differ by more than the share itself
//! on this machine kind (a frame costs 5–10 ms, runs spread by ±2 ms); back-to-back batches
//! in one renderer share that noise, and it cancels in their differences.

use super::{Stats, row, stats};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::page::Page;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

/// Frames per timed batch, rounds in all (each round times one batch per scope), and
/// at most this many batches per evaluation (one evaluation must end well within the
/// harness's 20 s, also with variants beside ours on a loaded machine).
const PER_BATCH: usize = 4;
const ROUNDS: usize = 200;
const BATCHES_PER_CALL: usize = 75;
/// Main-thread CPU time: frames per batch (one batch per evaluation), rounds.
const CPU_BATCH: usize = 8;
const CPU_ROUNDS: usize = 100;
/// The trace: frames per evaluation, rounds (one evaluation per scope each).
const TRACE_BATCH: usize = 20;
const TRACE_ROUNDS: usize = 20;
/// Evaluations for the CPU profile.
const CALLS: usize = 8;
/// Runs of the frame-heavy pages.
const HEAVY_RUNS: usize = 9;
const SHARED_DOMAIN: [(&str, &str); 1] = [("Origin-Agent-Cluster", "?0")];
const SET_DOMAIN: &str = "<script>document.domain = '127.0.0.1'</script>";

/// A copy of the extension in `from` whose content scripts run only in frames of `origin`
/// (about:blank frames go by their creator's origin).
/// `empty`: both scripts empty (the floor, which has no worker). The copy has no key (two copies of one ID cannot load side by side), and
/// its pilot script is static, as it is while the human has the pilot on.
fn scoped_copy(from: &Path, origin: &str, name: &str, empty: bool) -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix(&format!("unmodal-{name}-")).tempdir()?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), dir.path().join(e.file_name()))?;
        }
    }
    let mut manifest: Value = serde_json::from_str(&std::fs::read_to_string(from.join("manifest.json"))?)?;
    let m = manifest.as_object_mut().context("manifest is not an object")?;
    m.remove("key");
    m.insert("name".into(), json!(format!("unmodal-bench-{name}")));
    let scripts = m.get_mut("content_scripts").and_then(Value::as_array_mut).context("no content_scripts")?;
    if !empty {
        let isolated = scripts.iter().find(|s| s["world"] == "ISOLATED").context("no ISOLATED content script")?;
        // As this build's worker registers it (pilot_switch.js; background.js before issue
        // 37): in every frame, or (since the work on issue 14) in frames with a URL of their
        // own only.
        let registers = ["pilot_switch.js", "background.js"]
            .iter()
            .find_map(|f| std::fs::read_to_string(from.join(f)).ok().filter(|s| s.contains("PILOT_SCRIPT_SPEC")))
            .context("no worker file registers the pilot script")?;
        let own_url_only = registers.contains("matchOriginAsFallback: false");
        let mut pilot = isolated.clone();
        pilot["js"] = json!(["pilot.js"]);
        if own_url_only {
            pilot["match_about_blank"] = json!(false);
            pilot["match_origin_as_fallback"] = json!(false);
        }
        scripts.push(pilot);
    }
    for s in scripts.iter_mut() {
        s["matches"] = json!([format!("{origin}/*")]);
    }
    if empty {
        for key in ["background", "action"] {
            m.remove(key);
        }
        std::fs::write(dir.path().join("content.js"), "")?;
        std::fs::write(dir.path().join("inject.js"), "")?;
    }
    std::fs::write(dir.path().join("manifest.json"), serde_json::to_string_pretty(&manifest)?)?;
    Ok(dir)
}

/// The isolated worlds created in one new frame under each child document, by name: proves
/// each scope gets exactly its own extension's scripts.
async fn check_scopes(page: &Page, scopes: &[String]) -> Result<()> {
    page.call("Runtime.enable", json!({})).await?;
    for scope in scopes {
        let mut events = page.events();
        let marker = format!("probe-{scope}");
        page.eval(&format!(
            "(() => {{ const d = frames['{scope}'].document; const f = d.createElement('iframe'); \
             d.body.append(f); f.contentWindow.document; f.remove(); console.debug('{marker}'); }})()"
        ))
        .await?;
        let mut worlds = Vec::new();
        loop {
            let e = tokio::time::timeout(std::time::Duration::from_secs(5), events.recv()).await??;
            if e.method == "Runtime.consoleAPICalled" && e.params["args"][0]["value"] == marker.as_str() {
                break;
            }
            if e.method == "Runtime.executionContextCreated" && e.params["context"]["auxData"]["type"] == "isolated" {
                worlds.push(e.params["context"]["name"].as_str().unwrap_or_default().to_owned());
            }
        }
        let want: Vec<String> = if scope == "plain" { Vec::new() } else { vec![format!("unmodal-bench-{scope}")] };
        if worlds != want {
            bail!("frames under /{scope}/ got the isolated worlds {worlds:?}, expected {want:?}");
        }
    }
    page.call("Runtime.disable", json!({})).await.map(drop)
}

/// Per-frame cost (ms) of each scope, one value per round; scopes alternate in every round.
async fn scope_costs(page: &Page, scopes: &[String]) -> Result<Vec<Vec<f64>>> {
    let names = serde_json::to_string(scopes)?;
    let per_call = (BATCHES_PER_CALL / scopes.len()).max(2);
    let probe = format!(
        "(() => {{ const kids = {names}.map((n) => frames[n].document); \
         const out = kids.map(() => []); const idx = kids.map((_, i) => i); \
         for (let r = 0; r < {per_call}; r++) {{ \
           for (const k of (r % 2 ? [...idx].reverse() : idx)) {{ \
             const d = kids[k]; const t0 = performance.now(); \
             for (let i = 0; i < {PER_BATCH}; i++) {{ const f = d.createElement('iframe'); d.body.append(f); f.contentWindow.document; }} \
             out[k].push((performance.now() - t0) / {PER_BATCH}); d.body.replaceChildren(); }} }} \
         return out; }})()"
    );
    page.eval(&probe).await?; // warm-up
    let mut out = vec![Vec::new(); scopes.len()];
    for _ in 0..ROUNDS.div_ceil(per_call) {
        let v = page.eval(&probe).await?;
        for (k, costs) in out.iter_mut().enumerate() {
            costs.extend(v[k].as_array().into_iter().flatten().map(|x| x.as_f64().unwrap_or(f64::NAN)));
        }
    }
    Ok(out)
}

/// The renderer main thread's CPU time (ms) so far, from DevTools' Performance metrics.
async fn thread_ms(page: &Page) -> Result<f64> {
    let m = page.call("Performance.getMetrics", json!({})).await?;
    let found = m["metrics"].as_array().into_iter().flatten().find(|x| x["name"] == "ThreadTime");
    found.and_then(|x| x["value"].as_f64()).map(|s| s * 1000.0).context("no ThreadTime metric")
}

/// Per-frame main-thread CPU time (ms) of each scope, one value per round: one batch per
/// evaluation, scopes alternating. CPU time leaves out the time the renderer waits while
/// other processes run, the bulk of the wall-clock noise on a shared machine; the work of
/// the evaluation itself is the same for every scope and cancels in the differences.
async fn scope_cpu_costs(page: &Page, scopes: &[String]) -> Result<Vec<Vec<f64>>> {
    page.call("Performance.enable", json!({"timeDomain": "threadTicks"})).await?;
    let mut out = vec![Vec::new(); scopes.len()];
    let batch = |scope: &str| {
        format!(
            "(() => {{ const d = frames['{scope}'].document; \
             for (let i = 0; i < {CPU_BATCH}; i++) {{ const f = d.createElement('iframe'); d.body.append(f); f.contentWindow.document; }} \
             d.body.replaceChildren(); }})()"
        )
    };
    for scope in scopes {
        page.eval(&batch(scope)).await?; // warm-up
    }
    for r in 0..CPU_ROUNDS {
        let order: Vec<usize> =
            if r % 2 == 0 { (0..scopes.len()).collect() } else { (0..scopes.len()).rev().collect() };
        for k in order {
            let t0 = thread_ms(page).await?;
            page.eval(&batch(&scopes[k])).await?;
            out[k].push((thread_ms(page).await? - t0) / CPU_BATCH as f64);
        }
    }
    page.call("Performance.disable", json!({})).await.map(drop).map(|()| out)
}

/// Per frame, the renderer main thread's time (µs) in each scope's content scripts, from
/// the browser's own trace (`EvaluateScript`: compiling and running one script), one value
/// per frame; scopes alternate, `TRACE_BATCH` frames per evaluation. This leaves out frame
/// creation itself, whose cost (and noise) every scope shares: what remains is what the
/// scripts themselves cost. `save`: where to write the whole trace (`UNMODAL_BENCH_TRACE`).
async fn script_times(page: &Page, scopes: &[String], save: Option<&std::ffi::OsStr>) -> Result<Vec<Vec<f64>>> {
    let cdp = &page.cdp;
    let mut events = cdp.events();
    let cats = ["devtools.timeline", "v8"];
    cdp.call(
        None,
        "Tracing.start",
        json!({"transferMode": "ReturnAsStream", "traceConfig": {"includedCategories": cats}}),
    )
    .await?;
    let made = async {
        for r in 0..TRACE_ROUNDS {
            let order: Vec<usize> =
                if r % 2 == 0 { (0..scopes.len()).collect() } else { (0..scopes.len()).rev().collect() };
            for k in order {
                page.eval(&format!(
                    "(() => {{ const d = frames['{}'].document; for (let i = 0; i < {TRACE_BATCH}; i++) {{ \
                     const f = d.createElement('iframe'); d.body.append(f); f.contentWindow.document; }} d.body.replaceChildren(); }})()",
                    scopes[k]
                ))
                .await?;
            }
        }
        anyhow::Ok(())
    }
    .await;
    // Ended, and its trace waited for, either way: a run made again (the page reloaded
    // under this one) starts a trace of its own and must not read this one's.
    cdp.call(None, "Tracing.end", json!({})).await?;
    let stream = loop {
        let e = tokio::time::timeout(std::time::Duration::from_secs(60), events.recv()).await??;
        if e.method == "Tracing.tracingComplete" {
            break e.params["stream"].as_str().context("trace without a stream")?.to_owned();
        }
    };
    if let Err(e) = made {
        cdp.call(None, "IO.close", json!({"handle": stream})).await.ok();
        return Err(e);
    }
    let mut data = String::new();
    loop {
        let r = cdp.call(None, "IO.read", json!({"handle": stream, "size": 1 << 20})).await?;
        data += r["data"].as_str().unwrap_or_default();
        if r["eof"] == true {
            break;
        }
    }
    cdp.call(None, "IO.close", json!({"handle": stream})).await?;
    if let Some(out) = save {
        std::fs::write(out, &data)?;
    }
    // One event a line; only those naming an extension's script are read.
    let ext_of =
        |url: &str| url.strip_prefix("chrome-extension://").and_then(|u| u.split('/').next()).map(str::to_owned);
    let mut scope_of = std::collections::HashMap::new(); // extension ID -> scope index
    let mut per_frame = std::collections::HashMap::<(String, String), f64>::new(); // (extension, frame) -> µs
    for line in data.lines().filter(|l| l.contains("chrome-extension://")) {
        let Ok(e) = serde_json::from_str::<Value>(line.trim_end_matches(',')) else { continue };
        let args = &e["args"];
        let url = args["data"]["url"].as_str().or(args["fileName"].as_str()).unwrap_or_default();
        let Some(ext) = ext_of(url) else { continue };
        let world = args["worldName"].as_str().and_then(|w| w.strip_prefix("unmodal-bench-"));
        if let Some(k) = world.and_then(|w| scopes.iter().position(|s| s == w)) {
            scope_of.insert(ext.clone(), k);
        }
        if e["name"] == "EvaluateScript" {
            let frame = args["data"]["frame"].as_str().unwrap_or_default().to_owned();
            *per_frame.entry((ext, frame)).or_default() += e["tdur"].as_f64().unwrap_or(f64::NAN);
        }
    }
    let mut out = vec![Vec::new(); scopes.len()];
    for ((ext, _), us) in per_frame {
        if let Some(&k) = scope_of.get(&ext) {
            out[k].push(us);
        }
    }
    if let Some(k) = (1..scopes.len()).find(|&k| out[k].is_empty()) {
        bail!("the trace holds no script of the scope {}", scopes[k]);
    }
    Ok(out)
}

/// The share as whole-frame cost: wall-clock time, then main-thread CPU time.
async fn whole_frame_rows(page: &Page, scopes: &[String], variants: &[PathBuf]) -> Result<()> {
    let costs = scope_costs(page, scopes).await?;
    let (plain, floor, ours) = (&costs[0], &costs[1], &costs[2]);
    row("frame, no content script (baseline)", &stats(plain.clone()), "ms");
    row("frame, both content scripts empty", &stats(floor.clone()), "ms");
    row("frame, Unmodal", &stats(ours.clone()), "ms");
    row("the floor: empty scripts over baseline", &paired(floor, plain), "ms");
    row("Unmodal's own share: ours over the floor", &paired(ours, floor), "ms");
    row("Unmodal in total: ours over baseline", &paired(ours, plain), "ms");
    for (v, c) in variants.iter().zip(&costs[3..]) {
        row(&format!("variant {}: over the floor", v.display()), &paired(c, floor), "ms");
    }
    println!(
        "  the same in the renderer main thread's CPU time ({} frames each, {CPU_BATCH} per batch):",
        CPU_BATCH * CPU_ROUNDS
    );
    let cpu = scope_cpu_costs(page, scopes).await?;
    let (plain, floor, ours) = (&cpu[0], &cpu[1], &cpu[2]);
    row("CPU: frame, no content script (baseline)", &stats(plain.clone()), "ms");
    row("CPU: the floor over baseline", &paired(floor, plain), "ms");
    row("CPU: Unmodal's own share over the floor", &paired(ours, floor), "ms");
    row("CPU: Unmodal in total over baseline", &paired(ours, plain), "ms");
    for (v, c) in variants.iter().zip(&cpu[3..]) {
        row(&format!("CPU: variant {}: over the floor", v.display()), &paired(c, floor), "ms");
    }
    Ok(())
}

fn paired(a: &[f64], b: &[f64]) -> Stats {
    stats(a.iter().zip(b).map(|(x, y)| x - y).collect())
}

/// The floor, Unmodal's share over it, and the total, from one run; `variants` (other
/// builds of the extension) are measured beside ours in the same page.
pub async fn share(extension: &Path, web: &WebServer, variants: &[PathBuf], trace_only: bool) -> Result<()> {
    println!(
        "\nStart-up cost per frame, one page ({} script-made frames each, alternating; page shows no dialog):",
        PER_BATCH * ROUNDS
    );
    let mut scopes = vec!["plain".to_string(), "floor".to_string(), "ours".to_string()];
    let servers: Vec<WebServer> =
        (0..scopes.len() + variants.len()).map(|_| WebServer::start()).collect::<Result<_>>()?;
    for (i, _) in variants.iter().enumerate() {
        scopes.push(format!("v{i}"));
    }
    let mut frames = String::new();
    for (scope, server) in scopes.iter().zip(&servers) {
        let url = server.page("/doc", &format!("<!doctype html>{SET_DOMAIN}<body></body>"), &SHARED_DOMAIN);
        frames += &format!("<iframe name='{scope}' src='{url}'></iframe>");
    }
    let top = web.page(
        "/startup-top",
        &format!("<!doctype html><title>start-up</title>{SET_DOMAIN}{frames}"),
        &SHARED_DOMAIN,
    );
    let mut dirs = vec![
        scoped_copy(extension, &servers[1].origin, "floor", true)?,
        scoped_copy(extension, &servers[2].origin, "ours", false)?,
    ];
    for (i, v) in variants.iter().enumerate() {
        dirs.push(scoped_copy(v, &servers[3 + i].origin, &format!("v{i}"), false)?);
    }
    let list = dirs.iter().map(|d| d.path().display().to_string()).collect::<Vec<_>>().join(",");
    let browser = Browser::launch(Options {
        extension: false,
        args: vec![format!("--load-extension={list}"), format!("--disable-extensions-except={list}")],
        ..Options::default()
    })
    .await?;
    let page = browser.first_page().await?;
    // A copy's worker restarts a top document it finds loading as it starts and that never
    // says hello (`manifest/stalled.js`). Since stalled.js judges only the pages its
    // manifest's `matches` cover, this build's copies leave this top page alone; a
    // `--variant` built before that may reload it in the middle of a run, once (each worker
    // restarts a tab at most once, and only right after the browser started). The run is
    // then made again.
    for attempt in 1.. {
        match measure(&page, &top, &scopes, variants, trace_only).await {
            Err(e) if attempt < 3 && format!("{e:#}").contains("Inspected target navigated or closed") => {
                println!("  (a worker reloaded the page during the run: measured again)");
            }
            done => return done,
        }
    }
    unreachable!("the loop returns")
}

/// One run of the share in `page`, which loads `top` for it.
async fn measure(page: &Page, top: &str, scopes: &[String], variants: &[PathBuf], trace_only: bool) -> Result<()> {
    page.call("Page.enable", json!({})).await?; // a run before this one disabled it
    page.goto(top).await?;
    let names = serde_json::to_string(scopes)?;
    eventually(std::time::Duration::from_secs(10), "the child documents loaded", || async {
        let ready = page
            .eval(&format!("{names}.every((n) => {{ try {{ return frames[n].document.readyState === 'complete'; }} catch {{ return false; }} }})"))
            .await?;
        Ok((ready == true).then_some(()))
    })
    .await?;
    check_scopes(page, scopes).await.context("checking each scope's isolated worlds")?;
    page.call("Page.disable", json!({})).await?;
    if let Some(out) = std::env::var_os("UNMODAL_BENCH_PROFILE") {
        // A CPU profile of frames made under `ours` only (for working on the share).
        page.call("Profiler.enable", json!({})).await?;
        page.call("Profiler.setSamplingInterval", json!({"interval": 25})).await?;
        page.call("Profiler.start", json!({})).await?;
        let ours = serde_json::to_string(&["ours"])?;
        for _ in 0..CALLS {
            page.eval(&format!("(() => {{ const d = frames[{ours}[0]].document; for (let i = 0; i < 200; i++) {{ \
                const f = d.createElement('iframe'); d.body.append(f); f.contentWindow.document; if (i % 10 === 9) d.body.replaceChildren(); }} }})()")).await?;
        }
        let p = page.call("Profiler.stop", json!({})).await?;
        std::fs::write(out, serde_json::to_vec(&p["profile"])?)?;
    }
    if !trace_only {
        whole_frame_rows(page, scopes, variants).await?;
    }
    let save = std::env::var_os("UNMODAL_BENCH_TRACE");
    let traced = script_times(page, scopes, save.as_deref()).await.context("tracing the content scripts")?;
    println!(
        "  the content scripts' own time per frame, from the browser's trace ({} frames each, main-thread time):",
        TRACE_BATCH * TRACE_ROUNDS
    );
    let floor_us = stats(traced[1].clone());
    row("trace: the floor's two empty scripts", &floor_us, "us");
    let shares = std::iter::once(("Unmodal".to_string(), &traced[2]))
        .chain(variants.iter().zip(&traced[3..]).map(|(v, t)| (format!("variant {}", v.display()), t)));
    for (name, t) in shares {
        let s = stats(t.clone());
        row(&format!("trace: {name}'s scripts"), &s, "us");
        println!("  trace: {name}'s own share (median over the floor's) {:>8.0} us", s.median - floor_us.median);
    }
    Ok(())
}

/// Frame-heavy pages, with and without the extension (two browsers, runs interleaved):
/// 100 script-made frames, and a page with 20 frames from another site.
pub async fn heavy(s: &Session) -> Result<()> {
    println!("\nFrame-heavy pages ({HEAVY_RUNS} runs each, with and without the extension, interleaved):");
    let baseline = Browser::launch(Options { extension: false, ..Options::default() }).await?;
    let plain = baseline.first_page().await?;
    let other = WebServer::other_site()?;
    let widget = other.page("/widget", "<!doctype html><p>widget</p>", &[]);
    let twenty: String = (0..20).map(|i| format!("<iframe src='{widget}?{i}'></iframe>")).collect();
    let hundred = s.web.page("/hundred", "<!doctype html><title>frames</title><body></body>", &[]);
    let framed = s.web.page("/twenty", &format!("<!doctype html><title>twenty</title>{twenty}"), &[]);
    let make = "(() => { const t0 = performance.now(); for (let i = 0; i < 100; i++) { const f = document.createElement('iframe'); \
                document.body.append(f); f.contentWindow.document; } const dt = performance.now() - t0; \
                document.body.replaceChildren(); return dt; })()";
    let load = "performance.getEntriesByType('navigation')[0].loadEventStart";
    let (mut made, mut loaded) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for page in [&plain, &s.page] {
        page.goto(&hundred).await?;
        page.eval(make).await?; // warm-up
    }
    for run in 0..HEAVY_RUNS {
        let order: [usize; 2] = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        for k in order {
            let page = [&plain, &s.page][k];
            page.goto(&hundred).await?;
            made[k].push(page.eval(make).await?.as_f64().unwrap_or(f64::NAN));
            page.goto(&framed).await?;
            loaded[k].push(page.eval(load).await?.as_f64().unwrap_or(f64::NAN));
        }
    }
    let [made_without, made_with] = made;
    let [loaded_without, loaded_with] = loaded;
    row("100 script-made frames, without", &stats(made_without), "ms");
    row("100 script-made frames, with Unmodal", &stats(made_with), "ms");
    row("20 frames from another site: load, without", &stats(loaded_without), "ms");
    row("20 frames from another site: load, with Unmodal", &stats(loaded_with), "ms");
    Ok(())
}
