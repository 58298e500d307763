//! Everything a test needs at once: Chromium with the extension, its first tab, the page
//! server, and an agent connected to `unmodal mcp`.

use crate::agent::Agent;
use crate::browser::{Browser, Options};
use crate::cdp;
use crate::page::Page;
use crate::wait::eventually;
use crate::web::WebServer;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::time::Duration;

/// How long a test waits for something that should happen at once.
const LIMIT: Duration = Duration::from_secs(10);
/// The text a barrier alert starts with (`host_caught_up`).
const BARRIER: &str = "unmodal-e2e barrier";
/// How long one click may take to reach the page before another is sent (`takes_input`).
const CLICK_AGAIN: Duration = Duration::from_secs(2);

pub struct Session {
    pub agent: Agent,
    pub page: Page,
    pub web: WebServer,
    pub browser: Browser,
}

/// What a page-side call came back with.
#[derive(Debug, PartialEq)]
pub enum PageCall {
    /// The script finished with this value; no native dialog was shown.
    Returned(Value),
    /// A native dialog opened (type, message); the test answered it with `answer`.
    NativeDialog { kind: String, message: String, returned: Value },
}

impl Session {
    pub async fn start() -> Result<Self> {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(opts: Options) -> Result<Self> {
        let browser = Browser::launch(opts).await?;
        let page = browser.first_page().await?;
        let web = WebServer::start()?;
        let agent = Agent::start(&browser.art.host, &browser.runtime).await?;
        Ok(Self { agent, page, web, browser })
    }

    /// A session whose tab shows `html` (served at `path`) with the pilot on, as most tests
    /// start; also the page's URL.
    pub async fn with_pilot(path: &str, html: &str) -> Result<(Self, String)> {
        let s = Self::start().await?;
        let url = s.open(path, html, &[]).await?;
        s.enable_pilot().await?;
        Ok((s, url))
    }

    /// A session whose tab shows `url` (from any server: another site's, for a `localhost`
    /// page), tracked by the host, with the pilot on if asked.
    pub async fn showing(url: &str, pilot: bool) -> Result<Self> {
        let s = Self::start().await?;
        s.page.goto(url).await?;
        s.page.bring_to_front().await?;
        s.agent.wait_for_tab(url).await?;
        if pilot {
            s.enable_pilot().await?;
        }
        Ok(s)
    }

    /// A trusted click on the page's `#b` reaches it (its handler pushes `'click'` to
    /// `seen`, as the kinds' test pages do): the tab still takes input.
    pub async fn takes_input(&self) -> Result<()> {
        // A click the browser drops as it settles (a dialog closing, a navigation just
        // committed) is sent again every CLICK_AGAIN, each resend printed: what is checked
        // is that clicks reach the page within LIMIT, not that the first one did. A frozen
        // tab takes none.
        let start = std::time::Instant::now();
        let mut clicks = 0;
        loop {
            clicks += 1;
            let clicked = self.page.click_within("#b", CLICK_AGAIN).await;
            let seen = match clicked {
                Ok(()) => {
                    eventually(CLICK_AGAIN, "the page's handler seeing the click", || async {
                        Ok(self.page_value("seen.includes('click')").await?.as_bool().unwrap_or(false).then_some(()))
                    })
                    .await
                }
                Err(e) => Err(e),
            };
            match seen {
                Ok(()) => return Ok(()),
                Err(e) if start.elapsed() >= LIMIT => {
                    let page = self
                        .page_value(
                            "JSON.stringify({url: location.href, seen: typeof seen === 'undefined' ? null : seen})",
                        )
                        .await
                        .map_or_else(|e| format!("(unreadable: {e:#})"), |v| v.to_string());
                    return Err(e.context(format!(
                        "no click reached the page within {LIMIT:?} ({clicks} sent); the page: {page}"
                    )));
                }
                Err(e) => eprintln!("takes_input: click {clicks} not seen by the page ({e:#}); sent again"),
            }
        }
    }

    /// Serves `html` at `path`, opens it in the tab, and waits until the host tracks it.
    pub async fn open(&self, path: &str, html: &str, headers: &[(&str, &str)]) -> Result<String> {
        let url = self.web.page(path, html, headers);
        self.page.goto(&url).await?;
        self.page.bring_to_front().await?;
        self.agent.wait_for_tab(&url).await.with_context(|| self.browser.log_tail())?;
        Ok(url)
    }

    /// Opens the extension's popup as a page, once it is laid out (a click's coordinates
    /// are taken from the final layout).
    pub async fn open_popup(&self) -> Result<Page> {
        let url = format!("chrome-extension://{}/popup.html", self.browser.art.extension_id);
        let popup = self.browser.new_page(&url).await?;
        let rendered = "document.readyState === 'complete' && !!document.querySelector('#pilot')";
        eventually(LIMIT, "the popup rendering", || {
            let popup = &popup;
            async move { Ok((popup.eval(rendered).await? == json!(true)).then_some(())) }
        })
        .await?;
        Ok(popup)
    }

    /// Switches AI Web Pilot on the way a person does in a browser a program controls:
    /// `unmodal pilot on` in a terminal, aimed at this browser's profile.
    pub async fn enable_pilot(&self) -> Result<()> {
        let out = self.pilot_command("on")?;
        if !out.contains("AI Web Pilot is on") || out.contains("not confirmed") {
            bail!("`unmodal pilot on` said: {out}");
        }
        let here = self.page.eval("location.href").await?;
        self.agent.wait_for_tab(here.as_str().unwrap_or_default()).await?;
        // The command returns once the extension applied it; the host knew it before that.
        let tabs = self.agent.ok("observe", json!({"what": "tabs"})).await?;
        if tabs["pilot_enabled"] != json!(true) {
            bail!("the host does not have the pilot on after `unmodal pilot on`: {tabs}");
        }
        Ok(())
    }

    /// Stops the extension's service worker the way the browser does when it is idle or
    /// crashed; the browser starts it again for its next event.
    pub async fn stop_worker(&self) -> Result<()> {
        let id = self.worker_target().await?;
        self.browser.cdp.call(None, "Target.closeTarget", json!({"targetId": id})).await.map(drop)
    }

    /// The target id of the extension's service worker.
    pub async fn worker_target(&self) -> Result<Value> {
        let worker = format!("chrome-extension://{}/background.js", self.browser.art.extension_id);
        let targets = self.browser.cdp.call(None, "Target.getTargets", json!({})).await?;
        targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "service_worker" && t["url"] == worker.as_str())
            .map(|t| t["targetId"].clone())
            .context("no service worker target")
    }

    /// Runs `unmodal pilot <action> --user-data-dir <this browser's profile>`, as a person
    /// would in a terminal; what it printed (an error if it failed).
    pub fn pilot_command(&self, action: &str) -> Result<String> {
        let out = std::process::Command::new(&self.browser.art.host)
            .args(["pilot", action, "--user-data-dir"])
            .arg(self.browser.profile.path())
            .env("UNMODAL_RUNTIME_DIR", &self.browser.runtime)
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!("`unmodal pilot {action}` failed: {}{}", text, String::from_utf8_lossy(&out.stderr));
        }
        Ok(text)
    }

    /// Runs `expr` in the page. If a native dialog opens, the test answers it (accepting,
    /// with `native_answer` as prompt text) and reports it, so a test can never hang.
    pub async fn page_call(&self, expr: &str, native_answer: &str) -> Result<PageCall> {
        let mut ev = self.page.events();
        let eval = self.page.eval(expr);
        tokio::pin!(eval);
        let me = self.page.session.clone();
        let opened = cdp::wait_event(&mut ev, Duration::from_secs(20), |e| {
            e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me)
        });
        tokio::select! {
            r = &mut eval => Ok(PageCall::Returned(r?)),
            e = opened => {
                let e = e?;
                let kind = e.params["type"].as_str().unwrap_or("").to_owned();
                let message = e.params["message"].as_str().unwrap_or("").to_owned();
                self.page.call("Page.handleJavaScriptDialog", json!({"accept": true, "promptText": native_answer})).await?;
                let returned = eval.await?;
                Ok(PageCall::NativeDialog { kind, message, returned })
            }
        }
    }

    /// Runs `expr` and requires that no native dialog appeared.
    pub async fn page_value(&self, expr: &str) -> Result<Value> {
        match self.page_call(expr, "").await? {
            PageCall::Returned(v) => Ok(v),
            native => bail!("a native dialog appeared: {native:?}"),
        }
    }

    /// Sets the tracked tab's dialog policy and requires that it took effect.
    pub async fn policy(&self, policy: &str, timeout_s: u32) -> Result<Value> {
        let v = self
            .agent
            .ok("configure", json!({"action": "dialog_policy", "policy": policy, "timeout_s": timeout_s}))
            .await?;
        if v["policy_in_force"] != json!(true) {
            // The host answers after at most 3 s; a loaded machine's worker can take longer
            // to say the tab holds it. The agent would read `in_force` again, as here.
            eventually(LIMIT, &format!("policy {policy} in force (the answer said not yet: {v})"), || async {
                let d = self.dialogs().await?;
                let p = &d["dialog_policy"];
                Ok((p["policy"] == policy && p["in_force"] == json!(true)).then_some(()))
            })
            .await?;
        }
        Ok(v)
    }

    /// Waits until at least `n` dialogs are held open for the agent (as every answer's
    /// `dialogs_blocking` note lists them) and returns them.
    pub async fn held(&self, n: usize) -> Result<Vec<Value>> {
        let found = eventually(LIMIT, &format!("{n} dialog(s) held open"), || async {
            let v = self.agent.ok("observe", json!({"what": "tabs"})).await?;
            let held = v["dialogs_blocking"]["dialogs"].as_array().cloned().unwrap_or_default();
            Ok((held.len() >= n).then_some(held))
        })
        .await;
        match found {
            Ok(held) => Ok(held),
            Err(e) => bail!("{e}: {}", self.dialogs().await?),
        }
    }

    /// Runs `expr` in the page on a fresh task, so a dialog it opens can stay open.
    pub async fn page_later(&self, expr: &str) -> Result<()> {
        self.page.eval(&format!("setTimeout(() => {{ {expr} }}, 0); 0")).await.map(drop)
    }

    /// Whether the page's script is blocked (a dialog is open): it cannot evaluate `1` soon.
    /// Only for asserting that it is: a loaded machine can make a free page this slow.
    pub async fn page_blocked(&self) -> bool {
        tokio::time::timeout(Duration::from_millis(400), self.page.eval("1")).await.is_err()
    }

    /// The page's script runs (no dialog blocks it): it evaluates `1` within `LIMIT`.
    pub async fn page_runs(&self) -> Result<()> {
        match tokio::time::timeout(LIMIT, self.page.eval("1")).await {
            Ok(r) => r.map(drop),
            Err(_) => bail!("the page did not evaluate `1` within {LIMIT:?}: its script is blocked"),
        }
    }

    /// The records of type `kind` (`permission`, `device_chooser`, …) seen through `observe`,
    /// oldest first, once there are at least `n` and all are closed.
    pub async fn closed_records(&self, kind: &str, n: usize) -> Result<Vec<Value>> {
        let found = eventually(LIMIT, &format!("{n} closed {kind} record(s)"), || async {
            let d = self.dialogs().await?;
            let recs: Vec<Value> =
                d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == kind).cloned().collect();
            Ok((recs.len() >= n && recs.iter().all(|r| r["state"] == "closed")).then_some(recs))
        })
        .await;
        match found {
            Ok(recs) => Ok(recs),
            Err(e) => bail!("{e}: {}", self.dialogs().await?),
        }
    }

    /// Who closed each record of type `kind` (`rule`, `agent`, `watchdog`, …), oldest
    /// first, once there are at least `n` and all are closed.
    pub async fn closed_by(&self, kind: &str, n: usize) -> Result<Vec<String>> {
        let recs = self.closed_records(kind, n).await?;
        Ok(recs.iter().map(|r| r["closed_by"].as_str().unwrap_or("").to_string()).collect())
    }

    /// The agent's answer to a dialog held open for it (one of [`Self::held`]'s).
    pub async fn answer(&self, held: &Value, accept: bool) -> Result<Value> {
        let args = json!({"action": "handle_dialog", "dialog_id": held["dialog_id"], "accept": accept});
        self.agent.ok("interact", args).await
    }

    /// Who decided the first record of type `kind` in each of `tabs`, waiting until every
    /// tab has one.
    pub async fn decided_in_tabs(&self, kind: &str, tabs: &[Value]) -> Result<Vec<Value>> {
        eventually(LIMIT, &format!("a {kind} record in each of {} tab(s)", tabs.len()), || async {
            let mut out = Vec::new();
            for tab in tabs {
                let d = self.agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
                let rec = d["recent_dialogs"].as_array().into_iter().flatten().find(|r| r["type"] == kind);
                match rec {
                    Some(r) => out.push(r["decided_by"].clone()),
                    None => return Ok(None),
                }
            }
            Ok(Some(out))
        })
        .await
    }

    /// How many prompts of type `kind` the host recorded (kept or evicted from the history;
    /// a test's session raises one kind) plus those the flood limit counted instead.
    pub async fn recorded_or_counted(&self, kind: &str) -> Result<u64> {
        let d = self.dialogs().await?;
        let kept = d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == kind).count();
        Ok(kept as u64 + d["evicted"].as_u64().unwrap_or(0) + d["folded_by_flood_limit"].as_u64().unwrap_or(0))
    }

    /// Waits until exactly `n` prompts of type `kind` were recorded or counted (a flood).
    pub async fn all_accounted(&self, kind: &str, n: u64) -> Result<()> {
        eventually(Duration::from_secs(15), &format!("{n} {kind} prompts recorded or counted"), || async {
            Ok((self.recorded_or_counted(kind).await? == n).then_some(()))
        })
        .await
    }

    /// A barrier: returns once the host has seen every report this page sent before the
    /// call. The page raises an alert of its own text; its hook reports it the one ordered
    /// way each of this page's reports takes (hook, content script, worker, host), so once
    /// the host lists it, whatever the page reported before is in the host's state. Where
    /// the browser shows the alert itself (the pilot off), it is accepted through DevTools.
    /// What a "nothing was recorded" check waits on, instead of a time.
    ///
    /// Right after a flood the page hook's flood limit (10 reports a second per frame) may
    /// fold the alert into a count instead of reporting it: the count moving is that sign,
    /// and another alert is raised (each try printed) once it has.
    pub async fn host_caught_up(&self) -> Result<()> {
        const TRIES: usize = 10;
        for attempt in 1..=TRIES {
            match self.barrier_alert().await? {
                Barrier::Listed => return Ok(()),
                Barrier::Folded(n) => eprintln!(
                    "host_caught_up: try {attempt} of {TRIES}: the barrier alert was folded by the page's flood limit \
                     (count now {n}); raising another"
                ),
            }
        }
        bail!(
            "the page's barrier alert was folded by its flood limit {TRIES} times in a row: the page is still flooding"
        )
    }

    async fn barrier_alert(&self) -> Result<Barrier> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let text = format!("{BARRIER} {}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let folded = |d: &Value| d["folded_by_flood_limit"].as_u64().unwrap_or(0);
        let before = folded(&self.agent.ok("observe", json!({"what": "dialogs"})).await?);
        let mut events = self.page.events();
        self.page_later(&format!("alert({})", serde_json::to_string(&text)?)).await?;
        let me = self.page.session.clone();
        eventually(LIMIT, "the host listing the page's barrier alert", || {
            let native = std::iter::from_fn(|| events.try_recv().ok())
                .any(|e| e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me));
            let text = &text;
            async move {
                if native {
                    self.page.call("Page.handleJavaScriptDialog", json!({"accept": true})).await?;
                }
                // Closed, not only listed: with the pilot off the host lists the browser's own
                // alert as it opens, maybe before its event reached this client, and an alert
                // left open blocks the page's next evaluation.
                let d = self.agent.ok("observe", json!({"what": "dialogs"})).await?;
                let closed = |r: &Value| r["message"] == *text && r["state"] == "closed";
                if d["recent_dialogs"].as_array().into_iter().flatten().any(closed) {
                    return Ok(Some(Barrier::Listed));
                }
                Ok((folded(&d) > before).then(|| Barrier::Folded(folded(&d))))
            }
        })
        .await
    }

    /// The host's records once it has seen all this page reported (`host_caught_up`),
    /// barrier alerts left out.
    pub async fn records_caught_up(&self) -> Result<Vec<Value>> {
        self.host_caught_up().await?;
        Ok(self.dialogs().await?["recent_dialogs"].as_array().cloned().unwrap_or_default())
    }

    /// The host's `observe dialogs`, the harness's own barrier alerts (`host_caught_up`)
    /// left out of `recent_dialogs`.
    pub async fn dialogs(&self) -> Result<Value> {
        let mut d = self.agent.ok("observe", json!({"what": "dialogs"})).await?;
        if let Some(recent) = d["recent_dialogs"].as_array_mut() {
            recent.retain(|r| !r["message"].as_str().is_some_and(|m| m.starts_with(BARRIER)));
        }
        Ok(d)
    }

    /// The most recent dialog the host recorded for the tracked tab, waiting for it.
    pub async fn last_dialog(&self, count_at_least: usize) -> Result<Value> {
        self.last_dialog_where(count_at_least, |_| true).await
    }

    /// As `last_dialog`, waiting until the record satisfies `ready` (reports arrive async).
    pub async fn last_dialog_where(&self, count_at_least: usize, ready: impl Fn(&Value) -> bool) -> Result<Value> {
        let what = format!("{count_at_least} recorded dialog(s), the last one complete");
        let found = eventually(LIMIT, &what, || async {
            let recent = self.dialogs().await?["recent_dialogs"].as_array().cloned().unwrap_or_default();
            Ok((recent.len() >= count_at_least && recent.last().is_some_and(&ready)).then(|| recent.last().cloned()))
        })
        .await;
        match found {
            Ok(last) => Ok(last.unwrap_or_default()),
            Err(e) => bail!("{e}: {}", self.dialogs().await?),
        }
    }
}

/// How a barrier alert went (`Session::host_caught_up`).
enum Barrier {
    /// The host listed it closed.
    Listed,
    /// The page's flood limit counted it instead (the count now).
    Folded(u64),
}
