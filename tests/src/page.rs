//! One attached tab: evaluate script, navigate, click like a user.

use crate::cdp::{self, Cdp};
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
        let r = self
            .call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true, "awaitPromise": true}))
            .await?;
        if let Some(ex) = r.get("exceptionDetails") {
            let text = ex["exception"]["description"].as_str().or(ex["text"].as_str()).unwrap_or("exception");
            bail!("page threw: {text}");
        }
        Ok(r["result"]["value"].clone())
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

    /// A real mouse click (trusted event, user activation) on the centre of `selector`.
    pub async fn click(&self, selector: &str) -> Result<()> {
        let expr = format!(
            "(() => {{ const r = document.querySelector({}).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            serde_json::to_string(selector)?
        );
        let at = self.eval(&expr).await?;
        let (x, y) = (at[0].as_f64().context("no x")?, at[1].as_f64().context("no y")?);
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
        release.map(drop)
    }
}
