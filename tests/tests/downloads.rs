//! Downloads (dialog_type "download"): a page's download link or attachment. Without Unmodal
//! the browser saves it to the download directory and the agent never hears of it
//! (MODAL-FACTS 4). With the pilot on each download waits while the browser asks for its
//! name: saved by default and recorded (name, type, size, path, state); a rule or the agent
//! cancels it (nothing written) or has the saved file moved into a directory inside the
//! MCP client's roots; must_respond holds it; the watchdog cancels.

use serde_json::{Value, json};
use unmodal_e2e::agent::Agent;
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);
const BODY: &str = "id,total\n1,42\n";

/// A session whose browser saves downloads into `dir` (never the user's own directory), on
/// a page with a download link and an attachment link; the attachment's URL.
async fn session(dir: &std::path::Path, pilot: bool) -> anyhow::Result<(Session, String)> {
    session_asking(dir, pilot, false).await
}

/// As `session`, with the profile's "Ask where to save each file" as `ask`.
async fn session_asking(dir: &std::path::Path, pilot: bool, ask: bool) -> anyhow::Result<(Session, String)> {
    let prefs = json!({"download": {"default_directory": dir, "prompt_for_download": ask}});
    let s = Session::start_with(Options { preferences: Some(prefs), ..Default::default() }).await?;
    let file = s.web.page(
        "/report.csv",
        BODY,
        &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment; filename=report.csv")],
    );
    let page = format!(
        "<!doctype html><title>downloads</title><button id=b>b</button><a id=get href='{file}'>get</a><button id=open onclick=\"window.open('{file}')\">open</button>
         <script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');</script>"
    );
    s.open("/downloads", &page, &[]).await?;
    if pilot {
        s.enable_pilot().await?;
    }
    Ok((s, file))
}

/// The `n`-th download record once its download ended (complete, cancelled or failed).
async fn ended(s: &Session, n: usize) -> anyhow::Result<Value> {
    eventually(LIMIT, &format!("download {n} ended"), || async {
        let d = s.dialogs().await?;
        let recs: Vec<Value> =
            d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "download").cloned().collect();
        Ok(recs.get(n).filter(|r| r["download_state"] != "in_progress" && r["state"] == "closed").cloned())
    })
    .await
}

/// The directory's names once the browser has removed its own temporary files
/// (`.org.chromium.Chromium.*`): it removes the one of a cancelled or moved download a
/// little after reporting it ended, later still on a busy machine.
pub(crate) async fn settled(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    eventually(LIMIT, &format!("the browser's temporary files in {} to go", dir.display()), || async {
        let v = names(dir);
        Ok((!v.iter().any(|n| n.starts_with(".org.chromium."))).then_some(v))
    })
    .await
}

pub(crate) fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_saves_it_and_tells_the_agent() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (s, file) = session(dir.path(), true).await?;
    s.page.click("#get").await?;
    let r = ended(&s, 0).await?;
    let saved = dir.path().canonicalize()?.join("report.csv");
    assert_eq!(
        (r["decided_by"].as_str(), r["download_state"].as_str(), r["path"].as_str()),
        (Some("default_policy"), Some("complete"), saved.to_str()),
        "{r}"
    );
    assert_eq!(
        (r["file_name"].as_str(), r["mime"].as_str(), r["size"].as_u64()),
        (Some("report.csv"), Some("text/csv"), Some(BODY.len() as u64))
    );
    assert_eq!(r["url"].as_str(), Some(file.as_str()));
    assert_eq!(std::fs::read_to_string(&saved)?, BODY, "the server's bytes");
    s.takes_input().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_cancels_or_saves_into_a_directory_of_the_agents() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    let (s, _) = session(dir.path(), true).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "accept": false}))
        .await?;
    s.page.click("#get").await?;
    let r = ended(&s, 0).await?;
    assert_eq!((r["decided_by"].as_str(), r["download_state"].as_str()), (Some("rule"), Some("cancelled")), "{r}");
    assert_eq!(settled(dir.path()).await?, Vec::<String>::new(), "nothing written");
    // Outside the roots: refused, naming them; nothing set.
    let outside = json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "save_dir": dir.path()});
    let reply = format!("{:?}", agent.call("interact", outside).await?);
    assert!(
        reply.contains("save_dir") && reply.contains(&work.path().canonicalize()?.display().to_string()),
        "{reply}"
    );
    let inside = json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "save_dir": work.path()});
    agent.ok("interact", inside).await?;
    s.page.click("#get").await?;
    let r = ended(&s, 1).await?;
    let moved = work.path().canonicalize()?.join("report.csv");
    assert_eq!((r["decided_by"].as_str(), r["path"].as_str()), (Some("rule"), moved.to_str()), "{r}");
    assert_eq!(std::fs::read_to_string(&moved)?, BODY);
    assert_eq!(settled(dir.path()).await?, Vec::<String>::new(), "moved, not copied");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn must_respond_holds_it_for_the_agent_and_the_watchdog_cancels() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    let (s, _) = session(dir.path(), true).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    s.policy("must_respond", 2).await?;
    s.page.click("#get").await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "download", "{held:?}");
    s.takes_input().await?;
    agent
        .ok("interact", json!({"action": "handle_dialog", "dialog_id": held[0]["dialog_id"], "save_dir": work.path()}))
        .await?;
    let r = ended(&s, 0).await?;
    assert_eq!(r["closed_by"], "agent", "{r}");
    assert_eq!(std::fs::read_to_string(work.path().join("report.csv"))?, BODY);
    s.page.click("#get").await?;
    s.held(1).await?;
    let r = ended(&s, 1).await?;
    assert_eq!((r["closed_by"].as_str(), r["download_state"].as_str()), (Some("watchdog"), Some("cancelled")), "{r}");
    assert_eq!(settled(dir.path()).await?, Vec::<String>::new(), "nothing left in the browser's directory");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_saves_it_and_it_is_recorded() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (s, _) = session(dir.path(), false).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "accept": false}))
        .await?;
    s.page.click("#get").await?;
    let r = ended(&s, 0).await?;
    assert_eq!((r["decided_by"].as_str(), r["download_state"].as_str()), (Some("pilot_off"), Some("complete")), "{r}");
    assert_eq!(std::fs::read_to_string(dir.path().join("report.csv"))?, BODY);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_under_a_strict_csp_and_twelve_in_a_row_counted_exactly() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let site = WebServer::other_site()?;
    let file = site.page("/export.csv", BODY, &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment")]);
    let prefs = json!({"download": {"default_directory": dir.path(), "prompt_for_download": false}});
    let s = Session::start_with(Options { preferences: Some(prefs), ..Default::default() }).await?;
    let (top, _) = unmodal_e2e::framed::serve(&s.web, &site, "");
    s.page.goto(&top).await?;
    s.agent.wait_for_tab(&top).await?;
    s.enable_pilot().await?;
    let armed = s
        .in_frame(&format!(
            "document.body.innerHTML = \"<a id=get href='{file}' style='position:fixed;inset:0'>get</a>\"; 'armed'"
        ))
        .await?;
    assert_eq!(armed, "armed");
    // One download after another, each from a trusted click: each recorded once, complete,
    // naming its own file.
    const CLICKS: usize = 12;
    let mut paths = Vec::new();
    for n in 0..CLICKS {
        s.page.click("iframe").await?;
        let r = ended(&s, n).await?;
        assert_eq!((r["download_state"].as_str(), r["url"].as_str()), (Some("complete"), Some(file.as_str())), "{r}");
        paths.push(r["path"].as_str().unwrap_or_default().rsplit('/').next().unwrap_or_default().to_owned());
    }
    paths.sort();
    assert_eq!(paths, settled(dir.path()).await?, "each record names its own file, and nothing else was saved");
    let d = s.dialogs().await?;
    let count = d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "download").count();
    assert_eq!(count, CLICKS, "one record each");
    assert_eq!(s.page_value("violations").await?, json!([]), "no CSP violation");
    s.takes_input().await?;
    Ok(())
}

/// What a page can see of a download it started: its events and where it stays.
const WATCH: &str = "<!doctype html><title>watch</title><a id=get href='/w.csv'>get</a>
<script>window.got = [];
  // Focus is left out: it follows which window the harness brought to the front.
  for (const t of ['beforeunload', 'pagehide', 'visibilitychange']) addEventListener(t, (e) => got.push([e.type, e.isTrusted]));
  window.after = () => [got, location.pathname, document.readyState, document.hidden];
</script>";

#[tokio::test(flavor = "multi_thread")]
async fn the_page_sees_what_it_sees_without_unmodal() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (s, _) = session(dir.path(), true).await?;
    s.web.page("/w.csv", BODY, &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment; filename=w.csv")]);
    let url = s.web.page("/watch", WATCH, &[]);
    s.page.goto(&url).await?;
    s.page.click("#get").await?;
    ended(&s, 0).await?;
    let ours = s.page_value("after()").await?;
    let plain_dir = tempfile::tempdir()?;
    let prefs = json!({"download": {"default_directory": plain_dir.path(), "prompt_for_download": false}});
    let plain = Browser::launch(Options { extension: false, preferences: Some(prefs), ..Default::default() }).await?;
    let page = plain.new_page(&url).await?;
    eventually(LIMIT, "the plain page", || async { Ok((page.eval("document.title").await? == "watch").then_some(())) })
        .await?;
    page.click("#get").await?;
    eventually(LIMIT, "the plain browser's download", || async {
        Ok(names(plain_dir.path()).contains(&"w.csv".to_string()).then_some(()))
    })
    .await?;
    assert_eq!(ours, page.eval("after()").await?, "the same events, the page stays");
    Ok(())
}

/// A page that starts three downloads in one click, as export buttons do.
fn batch_page(s: &Session) -> String {
    for n in ["a", "b", "c"] {
        s.web.page(
            &format!("/{n}.csv"),
            BODY,
            &[("Content-Type", "text/csv"), ("Content-Disposition", &format!("attachment; filename={n}.csv"))],
        );
    }
    s.web.page(
        "/batch",
        "<!doctype html><title>batch</title><button id=all>all</button><button id=b>b</button>
         <script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');
           document.getElementById('all').onclick = () => { for (const n of ['a', 'b', 'c']) {
             const a = document.createElement('a'); a.href = '/' + n + '.csv'; a.download = ''; a.click(); } };</script>",
        &[],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn three_at_once_are_blocked_and_reported_unless_a_rule_grants_them() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (s, _) = session(dir.path(), true).await?;
    let url = batch_page(&s);
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    // Without a rule: the browser takes the first and blocks the rest; the agent is told.
    s.page.click("#all").await?;
    let r = ended(&s, 0).await?;
    assert_eq!(r["download_state"], "complete", "{r}");
    assert!(r["explanation"].as_str().is_some_and(|e| e.contains("blocks this site's automatic downloads")), "{r}");
    let logs = s.agent.ok("observe", json!({"what": "logs"})).await?;
    assert!(logs.to_string().contains("automatic-downloads"), "{logs}");
    assert_eq!(settled(dir.path()).await?, ["a.csv"], "only the first");
    // A grant, set before the page starts them: the whole batch, without a reload.
    let grant = json!({"action": "handle_dialog", "setup": true, "dialog_type": "permission", "permission": "automatic-downloads"});
    let v = s.agent.ok("interact", grant).await?;
    assert_eq!(v["rules_in_force"], true, "{v}");
    s.page.click("#all").await?;
    for n in 1..4 {
        assert_eq!(ended(&s, n).await?["download_state"], "complete");
    }
    assert_eq!(settled(dir.path()).await?, ["a (1).csv", "a.csv", "b.csv", "c.csv"], "all three, counted exactly");
    let d = s.dialogs().await?;
    let count = d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "download").count();
    assert_eq!(count, 4, "one record per download");
    // The once-rule is spent by its batch: the tab's next batch is the browser's again.
    let rules = s.agent.ok("interact", json!({"action": "handle_dialog", "status": true})).await?;
    assert_eq!(rules["auto_responses"], json!([]), "{rules}");
    s.takes_input().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_where_to_save_cancels_every_download_and_doctor_says_so() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (s, _) = session_asking(dir.path(), true, true).await?;
    s.page.click("#get").await?;
    let r = ended(&s, 0).await?;
    assert_eq!(r["download_state"], "cancelled", "{r}");
    assert!(r["explanation"].as_str().is_some_and(|e| e.contains("Ask where to save each file")), "{r}");
    let doctor = std::process::Command::new(&s.browser.art.host)
        .arg("doctor")
        .env("UNMODAL_RUNTIME_DIR", &s.browser.runtime)
        .output()?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains("MISS downloads can be saved") && text.contains("chrome://settings/downloads"), "{text}");
    assert_eq!(settled(dir.path()).await?, Vec::<String>::new());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn window_open_of_a_file_is_recorded_for_the_opening_tab() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (s, file) = session(dir.path(), true).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "accept": false}))
        .await?;
    s.page.click("#open").await?;
    let r = match ended(&s, 0).await {
        Ok(r) => r,
        Err(e) => anyhow::bail!("{e}: {:?} {}", names(dir.path()), s.dialogs().await?),
    };
    assert_eq!(
        (r["decided_by"].as_str(), r["download_state"].as_str(), r["url"].as_str()),
        (Some("rule"), Some("cancelled"), Some(file.as_str())),
        "{r}"
    );
    assert_eq!(settled(dir.path()).await?, Vec::<String>::new());
    s.takes_input().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_file_name_stays_inside_the_directory() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    let (s, _) = session(dir.path(), true).await?;
    let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
    // A name that climbs out, then one far too long (the browser gives up on it: its Save
    // dialog, which nobody answers); neither writes outside.
    for (n, name) in ["../../.ssh/authorized_keys", &format!("{}.csv", "x".repeat(400))].into_iter().enumerate() {
        let evil = s.web.page(
            &format!("/evil{n}"),
            BODY,
            &[("Content-Type", "text/csv"), ("Content-Disposition", &format!("attachment; filename=\"{name}\""))],
        );
        s.page.eval(&format!("document.getElementById('get').href = {}; 0", json!(evil))).await?;
        agent
            .ok(
                "interact",
                json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "save_dir": work.path()}),
            )
            .await?;
        s.page.click("#get").await?;
        let r = ended(&s, n).await?;
        let file_name = r["file_name"].as_str().unwrap_or_default();
        assert!(!file_name.contains('/') && file_name.chars().count() <= 256, "{r}");
        if n == 0 {
            let path = std::path::PathBuf::from(r["path"].as_str().unwrap_or_default());
            assert_eq!(path.parent(), Some(work.path().canonicalize()?.as_path()), "moved into save_dir itself: {r}");
            assert_eq!(std::fs::read_to_string(&path)?, BODY);
        } else {
            assert_ne!(r["download_state"], "complete", "{r}");
        }
    }
    assert!(!work.path().join("../.ssh").exists() && !dir.path().join("../.ssh").exists(), "nothing written outside");
    assert_eq!(settled(dir.path()).await?, Vec::<String>::new());
    assert_eq!(settled(work.path()).await?.len(), 1, "{:?}", names(work.path()));
    Ok(())
}
