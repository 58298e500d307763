//! Another site's frame inside a top page under a strict CSP, as the kinds' tests use it: the
//! frame runs each expression its parent posts and posts the result back; the top page
//! counts clicks on `#b` (`seen`) and CSP violations (`violations`).

use crate::session::Session;
use crate::wait::eventually;
use crate::web::WebServer;
use anyhow::Result;
use serde_json::{Value, json};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(15);

/// The CSP of the top page: nothing but its own nonce'd script, and frames.
pub const STRICT_CSP: &str = "default-src 'none'; script-src 'nonce-t'; frame-src *";

/// Serves the frame on `site` and the top page holding it (the frame's `allow` attribute:
/// `allow`) on `web`: the top page's URL and the frame's.
pub fn serve(web: &WebServer, site: &WebServer, allow: &str) -> (String, String) {
    let widget = site.page(
        "/widget",
        "<!doctype html><script>onmessage = (e) => e.data === 'ping' ? parent.postMessage('ready', '*')
           : Promise.resolve((0, eval)(e.data)).then((r) => parent.postMessage(r, '*'));
         parent.postMessage('ready', '*');</script>",
        &[],
    );
    let top = format!(
        "<!doctype html><title>framed</title><button id=b>b</button><iframe src='{widget}' allow='{allow}'></iframe>
<script nonce=t>window.seen = []; window.violations = []; window.got = null;
  document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
  addEventListener('message', (e) => {{ if (e.data === 'ready') window.frameReady = true; else window.got = e.data; }});
  document.getElementById('b').onclick = () => seen.push('click');</script>"
    );
    (web.page("/framed", &top, &[("Content-Security-Policy", STRICT_CSP)]), widget)
}

/// Runs `expr` in the frame of a page `eval` evaluates in (it waits until the frame is
/// loaded), and waits for its result.
pub async fn in_frame<F, Fut>(eval: F, expr: &str) -> Result<Value>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<Value>>,
{
    // The frame says `ready` as it starts, and again when pinged: a `ready` that came before
    // the top page listened is asked for again, never waited for in vain.
    eventually(LIMIT, "the frame loaded", || async {
        let ready = "window.frameReady === true || (frames[0] && frames[0].postMessage('ping', '*'), false)";
        Ok((eval(ready.into()).await? == json!(true)).then_some(()))
    })
    .await?;
    eval(format!("window.got = null; frames[0].postMessage({}, '*'); 0", json!(expr))).await?;
    eventually(LIMIT, "the frame's outcome", || async {
        let v = eval("window.got".into()).await?;
        Ok((!v.is_null()).then_some(v))
    })
    .await
}

impl Session {
    /// A session whose tab shows the framed page (`serve`, the frame on `site`), with the
    /// pilot on if asked; also the frame's URL.
    pub async fn framed(site: &WebServer, allow: &str, pilot: bool) -> Result<(Self, String)> {
        let s = Self::start().await?;
        let (top, widget) = serve(&s.web, site, allow);
        s.page.goto(&top).await?;
        s.agent.wait_for_tab(&top).await?;
        if pilot {
            s.enable_pilot().await?;
        }
        Ok((s, widget))
    }

    /// `in_frame` in this session's tab.
    pub async fn in_frame(&self, expr: &str) -> Result<Value> {
        in_frame(|e| async move { self.page_value(&e).await }, expr).await
    }
}
