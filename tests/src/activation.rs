//! Calls the browser gates on a user gesture (device choosers, the eye dropper, file and
//! directory pickers), made from a real click, on a machine that may be busy.
//!
//! Two outcomes of such a call are the browser racing itself, with or without Unmodal, and
//! say nothing of the code under test:
//! - **no activation**: the click's activation reached the page's frame (its handler ran
//!   and made the call) but not yet the browser process, which checks it again and refuses
//!   ("Must be handling a user gesture…", "EyeDropper is not available"). Seen under
//!   `cargo xtask repeat --load 2` and in fresh-clone runs beside other work.
//! - **closed at once**: Chromium closes a chooser by itself as it opens, and the page gets
//!   the chooser's cancel (`chooser::open_kept_open` knows when a test needs it kept open).
//!
//! A test makes such a call through `until_not_raced`: a try whose outcome is one of these
//! is made again (in a fresh document where the test's try loads one), each try printed,
//! at most `TRIES`. Every other outcome goes to the test's assertions, so a wrapper that
//! lost the gesture still fails: it gives the same refusal on every try. `click_until` is
//! the common case: a button whose handler makes the call, on a page that keeps a refusal's
//! message in `window.why`.

use crate::page::Page;
use crate::wait::eventually;
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;

/// How many tries a call gets before its races count as a failure.
pub const TRIES: usize = 8;

/// What a try came to.
pub enum Try<T> {
    /// An outcome for the test to judge.
    Done(T),
    /// The browser raced itself; why, as printed.
    Raced(String),
}

/// The browser's own "no activation" refusals, as the page reads them.
const NO_ACTIVATION: [&str; 2] =
    ["Must be handling a user gesture to show a permission request.", "EyeDropper is not available."];

/// Whether `outcome` (a page's settled value: a string, or an array or object of its
/// parts) is the browser refusing for want of an activation it had not yet seen.
pub fn no_activation(outcome: &Value) -> bool {
    let text = outcome.to_string();
    NO_ACTIVATION.iter().any(|m| text.contains(m))
}

/// `Try::Raced` for a "no activation" outcome, else `Try::Done`.
pub fn judge(outcome: Value) -> Try<Value> {
    if no_activation(&outcome) {
        Try::Raced(format!("the browser refused for want of the click's activation ({outcome})"))
    } else {
        Try::Done(outcome)
    }
}

/// Runs `attempt` (given the try's number, from 1) until it is not raced, `TRIES` at most,
/// printing each raced try as `activation: <what>: try N: <why>`.
pub async fn until_not_raced<T, F, Fut>(what: &str, mut attempt: F) -> Result<T>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<Try<T>>>,
{
    let mut raced = Vec::new();
    for n in 1..=TRIES {
        match attempt(n).await? {
            Try::Done(v) => return Ok(v),
            Try::Raced(why) => {
                eprintln!("activation: {what}: try {n} of {TRIES}: {why}; made again");
                raced.push(why);
            }
        }
    }
    bail!("{what}: the browser raced itself in every one of {TRIES} tries: {raced:?}")
}

/// How long `click_until` waits for what a click should bring.
pub const CLICK_LIMIT: Duration = Duration::from_secs(15);

/// Clicks `selector` in `page` until the browser does not refuse its call for want of the
/// click's activation, then waits (`CLICK_LIMIT`) until `seen` gives something. The page
/// keeps a refusal's message in `window.why`; a refused try is printed and the page's title
/// put back as it was before the click. A failure names what was awaited and the title.
pub async fn click_until<T, F, Fut>(page: &Page, selector: &str, what: &str, seen: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let title = || async { anyhow::Ok(page.eval("document.title").await?.as_str().unwrap_or_default().to_owned()) };
    until_not_raced(what, |_| async {
        let before = title().await?;
        page.eval("window.why = ''; 0").await?;
        page.click(selector).await?;
        let got = eventually(CLICK_LIMIT, what, || async {
            if no_activation(&page.eval("window.why").await?) {
                return Ok(Some(None));
            }
            Ok(seen().await?.map(Some))
        })
        .await;
        match got {
            Err(e) => bail!("{e} (the page's title: {:?})", title().await),
            Ok(Some(v)) => Ok(Try::Done(v)),
            Ok(None) => {
                let why = page.eval("window.why").await?;
                page.eval(&format!("document.title = {}; 0", json!(before))).await?;
                Ok(Try::Raced(why.to_string()))
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_browsers_refusals_for_want_of_activation_are_races_and_nothing_else_is() {
        for raced in [
            json!("SecurityError: Must be handling a user gesture to show a permission request."),
            json!([
                "error",
                "DOMException",
                "NotAllowedError",
                "Failed to execute 'open' on 'EyeDropper': EyeDropper is not available."
            ]),
        ] {
            assert!(no_activation(&raced), "{raced}");
        }
        for judged in [
            json!("NotFoundError: Bluetooth adapter not available."),
            json!("NotFoundError: Failed to execute 'requestDevice' on 'USB': No device selected."),
            json!("pending"),
            json!(null),
        ] {
            assert!(!no_activation(&judged), "{judged}");
        }
    }

    #[tokio::test]
    async fn a_try_is_made_again_only_while_raced_and_at_most_tries_times() {
        let got =
            until_not_raced(
                "t",
                |n| async move { Ok(if n < 3 { Try::Raced(format!("race {n}")) } else { Try::Done(n) }) },
            )
            .await
            .unwrap();
        assert_eq!(got, 3);
        let mut made = 0;
        let err = until_not_raced::<(), _, _>("always", |_| {
            made += 1;
            async { Ok(Try::Raced("race".into())) }
        })
        .await
        .unwrap_err();
        assert_eq!(made, TRIES);
        assert!(err.to_string().contains("every one of 8 tries"), "{err}");
    }
}
