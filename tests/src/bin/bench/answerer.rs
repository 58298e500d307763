//! The CDP answerer's cost per new page: a new tab to its `load`, with the answerer
//! attaching to every page (`DeviceAccess` and `FedCm` on) and without it (nothing wanted),
//! interleaved in one browser and host, as a ratio. The answerer never pauses a page; what
//! it can cost is the browser's work for one more session and two domains beside the load.

use super::{RUNS, row, stats};
use anyhow::Result;
use serde_json::json;
use std::time::{Duration, Instant};
use unmodal_e2e::bluetooth::answerer_hook;
use unmodal_e2e::browser::Options;
use unmodal_e2e::{Session, eventually};

/// New pages per run and setting.
const PAGES: usize = 5;

/// Opens a new tab on `url` and returns (wall-clock ms from `createTarget` to its `load`,
/// the page's own navigation-timing ms to `loadEventEnd`).
async fn one_page(s: &Session, url: &str) -> Result<(f64, f64)> {
    let t0 = Instant::now();
    let page = s.browser.new_page(url).await?;
    let load = "(() => { const n = performance.getEntriesByType('navigation')[0]; return n && n.loadEventEnd > 0 ? n.loadEventEnd : null; })()";
    let in_page =
        eventually(Duration::from_secs(10), "the new page's load", || async { Ok(page.eval(load).await?.as_f64()) })
            .await?;
    let wall = t0.elapsed().as_secs_f64() * 1000.0;
    s.browser.close_page(&page).await?;
    Ok((wall, in_page))
}

pub async fn rows() -> Result<()> {
    println!(
        "\nThe CDP answerer: a new page to its load, with the answerer attached and without ({RUNS} runs of {PAGES} pages each, interleaved):"
    );
    let s =
        Session::start_with(Options { env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())], ..Options::default() })
            .await?;
    s.open("/bench", "<!doctype html><title>bench</title>", &[]).await?;
    s.enable_pilot().await?;
    let url = s.web.page("/new", "<!doctype html><title>new</title><p>a new page</p>", &[]);
    let runtime = s.browser.runtime.clone();
    let (mut with_wall, mut with_page, mut without_wall, mut without_page) = (vec![], vec![], vec![], vec![]);
    let mut ratio_wall = Vec::new();
    for run in 0..RUNS {
        let mut sums = [0.0f64; 4];
        // Each setting goes first in turn.
        for k in 0..2 {
            let on = (k + run) % 2 == 0;
            answerer_hook(&runtime, json!({"op": "want", "devices": on, "accounts": on})).await?;
            for _ in 0..PAGES {
                let (wall, page) = one_page(&s, &url).await?;
                let i = if on { 0 } else { 2 };
                sums[i] += wall / PAGES as f64;
                sums[i + 1] += page / PAGES as f64;
            }
        }
        with_wall.push(sums[0]);
        with_page.push(sums[1]);
        without_wall.push(sums[2]);
        without_page.push(sums[3]);
        ratio_wall.push(sums[0] / sums[2].max(1e-3));
    }
    // The "with" setting did attach: a new page is covered.
    answerer_hook(&runtime, json!({"op": "want", "devices": true, "accounts": true})).await?;
    let page = s.browser.new_page(&url).await?;
    answerer_hook(&runtime, json!({"op": "wait", "which": "accounts", "for": "covered", "url": url})).await?;
    s.browser.close_page(&page).await?;
    let ratio_page: Vec<f64> = with_page.iter().zip(&without_page).map(|(a, b)| a / b.max(1e-3)).collect();
    row("new tab to load, answerer attached (wall)", &stats(with_wall), "ms");
    row("new tab to load, no answerer (wall)", &stats(without_wall), "ms");
    row("with / without (wall)", &stats(ratio_wall), "x");
    row("loadEventEnd in the page, answerer attached", &stats(with_page), "ms");
    row("loadEventEnd in the page, no answerer", &stats(without_page), "ms");
    row("with / without (in the page)", &stats(ratio_page), "x");
    Ok(())
}
