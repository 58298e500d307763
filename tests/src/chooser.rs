//! A device chooser the browser keeps open, for the tests that need one open: a call
//! pending, held for the agent, or cancelled by a second chooser.
//!
//! Under load Chromium sometimes closes a chooser by itself as it opens: the page's call
//! settles at once with the chooser's cancel result ("No device selected"), with and
//! without Unmodal. Seen in fresh-clone runs at ac973a6 and 587cd8c and under `cargo xtask
//! repeat --parallel 4 --load 2` (2–5 of 24 runs); why is not known (Chromium's chooser
//! bubble closes when its tab's activation changes: a guess, not measured). A try the
//! browser closed says nothing of a chooser left open, so it is made again in a fresh
//! document (`activation::until_not_raced`, which prints each try).

use crate::activation::{self, Try, until_not_raced};
use crate::page::Page;
use crate::wait::eventually;
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(15);

/// Loads `url` in `page` (a page whose button `#key` opens a chooser and whose `out[key]`
/// says what became of the call: null before the click, then "pending" or its outcome),
/// clicks the button with the tab focused, and returns once the call is pending. What it
/// returns: the outcomes of the tries the browser closed at once; each may have left a
/// record of its own, so a test reads the newest records.
pub async fn open_kept_open(page: &Page, url: &str, key: &str) -> Result<Vec<Value>> {
    open_kept_open_with(page, url, key, || async { Ok(()) }).await
}

/// `open_kept_open`, with `prepare` run in each fresh document before its click.
pub async fn open_kept_open_with<F, Fut>(page: &Page, url: &str, key: &str, prepare: F) -> Result<Vec<Value>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let read = format!("out[{}] ?? null", serde_json::to_string(key)?);
    let early = RefCell::new(Vec::new());
    until_not_raced(&format!("a {key} chooser kept open"), |_| async {
        page.goto(url).await?;
        prepare().await?;
        page.bring_to_front().await?;
        eventually(LIMIT, "the tab has the focus", || async {
            Ok((page.eval("document.hasFocus()").await? == true).then_some(()))
        })
        .await?;
        page.click(&format!("#{key}")).await?;
        let got = eventually(LIMIT, &format!("{key}: the click reached the page"), || async {
            let v = page.eval(&read).await?;
            Ok((!v.is_null()).then_some(v))
        })
        .await?;
        if got == json!("pending") {
            return Ok(Try::Done(()));
        }
        let why = match activation::judge(got.clone()) {
            Try::Raced(why) => why,
            Try::Done(_) => format!("the browser closed the chooser at once ({got})"),
        };
        early.borrow_mut().push(got);
        Ok(Try::Raced(why))
    })
    .await?;
    Ok(early.into_inner())
}

/// Clicks `#key` on a page like `CHOOSERS_PAGE` once its script has run, and waits until
/// the call settled. When it does not, it says which of two things happened: the click
/// never reached the page's handler (`out[key]` still null: a harness problem), or the
/// call stayed pending (a chooser left open that nobody cancelled: a product hang).
pub async fn click_and_settle(page: &Page, key: &str, limit: Duration) -> Result<Value> {
    // A page the test just opened may still be parsing: its buttons come before the script
    // that defines `out` and `ask`, and a click then throws in the page's handler (seen:
    // `choosers::rules_belong_to_their_tab`, 1 of 24 under `repeat --parallel 4 --load 2`).
    eventually(LIMIT, &format!("{key}: the page's script ran"), || async {
        let ready = page.eval("document.readyState === 'complete' && typeof out === 'object'").await?;
        Ok((ready == true).then_some(()))
    })
    .await?;
    page.click(&format!("#{key}")).await?;
    settle(page, key, limit).await
}

/// Waits until the page's call of `key` settled (see `click_and_settle` for what a
/// failure says).
pub async fn settle(page: &Page, key: &str, limit: Duration) -> Result<Value> {
    let read = format!("out[{}] ?? null", serde_json::to_string(key)?);
    let got = eventually(limit, &format!("the {key} chooser settling"), || async {
        let v = page.eval(&read).await?;
        Ok((!v.is_null() && v != json!("pending")).then_some(v))
    })
    .await;
    let Err(e) = got else { return got };
    let last = page.eval(&read).await.unwrap_or(Value::Null);
    let state = page
        .eval("JSON.stringify({url: location.href, ready: document.readyState, focus: document.hasFocus(), active: navigator.userActivation.hasBeenActive})")
        .await
        .unwrap_or_default();
    let which = if last.is_null() {
        "the click never reached the page's handler (a harness problem)"
    } else {
        "the call stayed pending: a chooser left open that nobody cancelled (a product hang)"
    };
    bail!("{which}; out.{key} = {last}; the page: {state}; {e:#}")
}
