//! The one way tests wait: poll a condition until it holds, never sleep a fixed time.

use anyhow::{Result, bail};
use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is checked.
const POLL: Duration = Duration::from_millis(20);

/// Checks `check` until it returns `Some`, for at most `limit`. A check that fails (the
/// page navigated away mid-call, the host is restarting) counts as "not yet"; if time runs
/// out, the error names `what` and the last failure.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let start = Instant::now();
    let mut last_error = None;
    loop {
        // The last check's outcome is what the error must lead with: "not yet" after an
        // earlier failure is not that failure.
        let not_yet = match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => true,
            Err(e) => {
                last_error = Some(e);
                false
            }
        };
        if start.elapsed() > limit {
            match (last_error, not_yet) {
                (Some(e), false) => bail!("{what} did not happen within {limit:?}; last error: {e:#}"),
                (Some(e), true) => {
                    bail!(
                        "{what} did not happen within {limit:?}; the last checks said not yet, an earlier one failed: {e:#}"
                    )
                }
                (None, _) => bail!("{what} did not happen within {limit:?}"),
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `eventually` for code that cannot await (a `Drop`): checks `done` until it holds, for at
/// most `limit`; whether it held.
pub fn blocking_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
