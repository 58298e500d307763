//! One attached tab: evaluate script, navigate, click like a user.

use crate::cdp::{self, Cdp};
use crate::wait::eventually;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub struct Page {
    pub cdp: Arc<Cdp>,
    pub session: String,
    pub target_id: String,
}

impl Page {
    pub async fn attach(cdp: Arc<Cdp>, target_id: String) -> Result<Self> {
        let r = cdp.call(None, "Target.attachToTarget", json!({"targetId": target_id, "flatten": true})).await?;
        let session = r["sessionId"].as_str().context("attachToTarget without sessionId")?.to_owned();
        let page = Self { cdp, session, target_id };
        page.call("Page.enable", json!({})).await?;
        page.call("Runtime.enable", json!({})).await?;
        Ok(page)
    }

    pub async fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.cdp.call(Some(&self.session), method, params).await
    }

    /// Evaluates `expr` in the page's main world and returns its value (promises awaited).
    /// No user activation: tests that need one click for real (`click`).
    pub async fn eval(&self, expr: &str) -> Result<Value> {
        value_of(
            self.call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true, "awaitPromise": true}))
                .await?,
        )
    }

    pub fn events(&self) -> tokio::sync::broadcast::Receiver<cdp::Event> {
        self.cdp.events()
    }

    /// Navigates and waits for the load event.
    pub async fn goto(&self, url: &str) -> Result<()> {
        let mut ev = self.events();
        let r = self.call("Page.navigate", json!({"url": url})).await?;
        if let Some(err) = r.get("errorText").and_then(Value::as_str) {
            bail!("navigating to {url}: {err}");
        }
        let me = self.session.clone();
        cdp::wait_event(&mut ev, Duration::from_secs(20), |e| {
            e.method == "Page.loadEventFired" && e.session.as_deref() == Some(&me)
        })
        .await
        .with_context(|| format!("{url} did not load"))?;
        Ok(())
    }

    pub async fn bring_to_front(&self) -> Result<()> {
        self.call("Page.bringToFront", json!({})).await.map(drop)
    }

    /// A real mouse click (trusted event, user activation) on the centre of `selector`, made
    /// when the page can take it and checked to have reached it.
    ///
    /// Before: the document is parsed (its inline scripts ran: a click on a page still
    /// parsing found its handler's script not yet defined, `choosers::rules_belong_to_their_tab`
    /// under load) and `selector` is in it. After: the document saw a trusted click, or moved
    /// on (it navigated, or a dialog of the browser's own opened). Both are read in an
    /// isolated world of the test's own, so a hostile page's prototypes are never touched
    /// and the page sees nothing of it.
    pub async fn click(&self, selector: &str) -> Result<()> {
        self.click_within(selector, CLICK_LIMIT).await
    }

    /// `click`, waiting at most `limit` for each of its two conditions.
    pub async fn click_within(&self, selector: &str, limit: Duration) -> Result<()> {
        let world = self.isolated_world().await?;
        let sel = serde_json::to_string(selector)?;
        let locate = format!(
            "(() => {{ if (document.readyState === 'loading') return null; const e = document.querySelector({sel}); \
             if (!e) return null; const r = e.getBoundingClientRect(); \
             if (!window.__seen) {{ const seen = window.__seen = {{ clicks: 0 }}; \
             window.addEventListener('click', (ev) => {{ if (ev.isTrusted) seen.clicks++; }}, true); }} \
             const framed = e.tagName === 'IFRAME' || e.tagName === 'FRAME'; \
             return [r.x + r.width / 2, r.y + r.height / 2, window.__seen.clicks, framed]; }})()"
        );
        let at = eventually(limit, &format!("{selector} in a parsed document, for a click"), || async {
            let v = self.eval_in(world, &locate).await?;
            Ok((!v.is_null()).then_some(v))
        })
        .await?;
        let (x, y) = (at[0].as_f64().context("no x")?, at[1].as_f64().context("no y")?);
        let before = at[2].as_u64().unwrap_or(0);
        // A click on a frame lands in the frame's document, whose events stay there; the
        // activation it gives reaches this document too (HTML: activation notification
        // marks the ancestors), so that is what is read for it.
        let seen = if at[3] == true {
            "navigator.userActivation.hasBeenActive ? 1e9 : 0".to_owned()
        } else {
            "window.__seen ? window.__seen.clicks : -1".to_owned()
        };
        let mut events = self.events();
        self.call("Input.dispatchMouseEvent", json!({"type": "mouseMoved", "x": x, "y": y})).await?;
        // Press and release are sent together, in order, so the page gets them back to back:
        // sent one after the other's answer, a loaded machine can put seconds between them,
        // and the press's user activation (5 s in Chromium) can run out before the click
        // handler, which the release fires, uses it.
        let button = |kind: &str| json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
        let (press, release) = tokio::join!(
            self.call("Input.dispatchMouseEvent", button("mousePressed")),
            self.call("Input.dispatchMouseEvent", button("mouseReleased")),
        );
        press?;
        release?;
        let me = self.session.clone();
        let mut dialog = false;
        eventually(limit, &format!("the page seeing the click on {selector}"), || {
            while let Ok(e) = events.try_recv() {
                dialog |= e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me);
            }
            let done = dialog;
            let seen = &seen;
            async move {
                if done {
                    return Ok(Some(()));
                }
                // A page held by a dialog of the browser's own does not answer: not yet.
                let Ok(read) = tokio::time::timeout(Duration::from_secs(1), self.eval_in(world, seen)).await else {
                    return Ok(None);
                };
                match read {
                    // The click's document is gone: it navigated (or was replaced) on it.
                    Err(e) if gone(&e) => Ok(Some(())),
                    Err(e) => Err(e),
                    Ok(v) => Ok((v.as_f64().is_some_and(|n| n < 0.0 || n > before as f64)).then_some(())),
                }
            }
        })
        .await
    }

    /// A fresh isolated world of the test's own in the page's main frame: its id.
    async fn isolated_world(&self) -> Result<u64> {
        let r = self
            .call("Page.createIsolatedWorld", json!({"frameId": self.target_id, "worldName": "unmodal-e2e"}))
            .await?;
        r["executionContextId"].as_u64().context("createIsolatedWorld without executionContextId")
    }

    /// Evaluates `expr` in the execution context `context` and returns its value.
    async fn eval_in(&self, context: u64, expr: &str) -> Result<Value> {
        value_of(
            self.call("Runtime.evaluate", json!({"expression": expr, "contextId": context, "returnByValue": true}))
                .await?,
        )
    }
}

/// An evaluation's value, or what the page threw.
fn value_of(r: Value) -> Result<Value> {
    if let Some(ex) = r.get("exceptionDetails") {
        let text = ex["exception"]["description"].as_str().or(ex["text"].as_str()).unwrap_or("exception");
        bail!("page threw: {text}");
    }
    Ok(r["result"]["value"].clone())
}

/// Whether a command failed because its document is gone (navigated away, replaced).
fn gone(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}");
    text.contains("Cannot find context") || text.contains("Execution context was destroyed")
}

/// How long a click waits for the page to be ready for it, and then to see it.
const CLICK_LIMIT: Duration = Duration::from_secs(15);
