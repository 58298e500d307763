//! The browser side as the attacker, in a real browser (issue 49; SECURITY.md names each
//! test here beside its actor). A raw CDP client, as any driver sharing the provider's URL
//! is, attaches to Unmodal's own service worker and speaks for it.

use crate::remote::{LIMIT, Remote, Via};
use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use unmodal_e2e::cdp::Cdp;
use unmodal_e2e::eventually;

const PASSWORD: &str = "pw-never-for-the-browser";

async fn eval(cdp: &Cdp, session: &str, expr: &str) -> Result<Value> {
    let v = cdp
        .call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        )
        .await?;
    ensure!(v.get("exceptionDetails").is_none(), "{expr}: {v}");
    Ok(v["result"]["value"].clone())
}

/// With the pilot off, a forged auth request from inside Unmodal's worker gets nothing: the
/// record says `pilot_off`, and the wrapped receiver hears no answer and no credential. The
/// agent's rule waited in the host: once a person switches the pilot on, the real challenge
/// is answered with it. On 892be98 the forged request (`native: false`) got the rule's
/// credentials back in clear.
#[tokio::test]
async fn code_in_unmodals_worker_gets_no_answer_and_no_secret_while_the_pilot_is_off() -> Result<()> {
    let r = Remote::start(Via::Query).await?;
    let admin = r.web.protected("/admin", b"ADMIN", "text/plain", "staff", "ada", PASSWORD);
    let url = r.web.page("/start", "<!doctype html><title>start</title><p>start</p>", &[]);
    let page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    let set = r.rule(json!({"dialog_type": "auth", "username": "ada", "password": PASSWORD, "tab_id": tab})).await?;
    ensure!(set["rules_in_force"] == false && set["pilot_enabled"] == false, "kept in the host only: {set}");

    let (cdp, session) = r.browser.worker_session().await?;
    // Everything the host sends the worker from here on, heard by the attacker's wrapper.
    let wrapped = eval(
        &cdp,
        &session,
        "(() => { if (typeof unmodalFromHost !== 'function') return false; globalThis.__heard = []; \
          const real = unmodalFromHost; globalThis.unmodalFromHost = (batch) => { __heard.push(batch); return real(batch); }; \
          return true; })()",
    )
    .await?;
    ensure!(wrapped == true, "the receiver is there to wrap");
    let forged = json!({"type": "prompt_request", "kind": "auth", "native": false, "tab_id": tab, "id": 777_777,
        "frame_id": 0, "url": admin, "request_id": "forged-1", "realm": "staff", "scheme": "basic",
        "challenger": {"host": "127.0.0.1", "port": 80}, "attempt": 1});
    eval(&cdp, &session, &format!("unmodalToHost({:?}); true", forged.to_string())).await?;
    let recs = r.records(tab, "the forged request recorded", |recs| recs.iter().any(|x| x["type"] == "auth")).await?;
    let rec = recs.iter().find(|x| x["type"] == "auth").context("its record")?;
    ensure!(rec["decided_by"] == "pilot_off" && rec["accepted"].is_null(), "{rec}");
    // The barrier: the host's `recorded` for it reaching the wrapper. The host sends it
    // after any answer it would send, on the one ordered bridge, so once it is heard every
    // answer would have been too (an `observe` returning said nothing of the bridge's way
    // to the worker: 1 failed run of many under load).
    let heard = eventually(LIMIT, "the wrapper hearing the host's `recorded`", || async {
        let heard = eval(&cdp, &session, "JSON.stringify(__heard)").await?;
        let heard = heard.as_str().unwrap_or_default().to_owned();
        Ok(heard.contains("recorded").then_some(heard))
    })
    .await?;
    ensure!(!heard.contains(PASSWORD) && !heard.contains("prompt_answer"), "an answer left the host: {heard}");

    // The real session works on: a person switches the pilot on, and the page's own fetch
    // of the protected URL is answered with the rule's login.
    r.pilot_on().await?;
    page.eval(&format!("fetch({admin:?}).then((r) => r.text()).then((t) => window.__got = t); 0")).await?;
    let got = eventually(LIMIT, "the page's fetch answered", || async {
        let v = page.eval("window.__got ?? null").await?;
        Ok((!v.is_null()).then_some(v))
    })
    .await?;
    ensure!(got == "ADMIN", "the page got {got}");
    Ok(())
}
