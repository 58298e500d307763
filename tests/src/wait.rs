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
        match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_error = Some(e),
        }
        if start.elapsed() > limit {
            match last_error {
                Some(e) => bail!("{what} did not happen within {limit:?}; last error: {e:#}"),
                None => bail!("{what} did not happen within {limit:?}"),
            }
        }
        tokio::time::sleep(POLL).await;
    }
}
