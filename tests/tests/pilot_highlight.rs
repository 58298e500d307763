//! AI Web Pilot's `highlight_element`: the browser's inspector overlay shows in a
//! screenshot, goes away after `duration_ms`, is replaced by the next highlight, and leaves
//! nothing in the page's DOM (no MutationObserver record).

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use unmodal_e2e::{Reply, Session, WebServer, eventually};

const PAGE: &str = r#"<!doctype html><title>highlight</title>
<style>body { margin: 0; background: #fff; } button { position: absolute; width: 120px; height: 40px; border: 0; background: #ddd; }</style>
<button id=a class=many style="left: 40px; top: 40px">A</button>
<button id=b class=many style="left: 240px; top: 40px">B</button>
<button id=c class=many style="left: 440px; top: 40px">C</button>
<div hidden id=gone>hidden</div>"#;

/// A screenshot of the viewport, decoded (a clipped capture leaves the overlay out).
struct Shot {
    width: usize,
    rgba: Vec<u8>,
}

impl Shot {
    async fn take(s: &Session) -> anyhow::Result<Self> {
        use base64::Engine;
        let r = s.page.call("Page.captureScreenshot", json!({"format": "png"})).await?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(r["data"].as_str().unwrap_or_default())?;
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info()?;
        let mut rgba = vec![0; reader.output_buffer_size().unwrap_or_default()];
        let info = reader.next_frame(&mut rgba)?;
        anyhow::ensure!(info.color_type == png::ColorType::Rgba || info.color_type == png::ColorType::Rgb, "{info:?}");
        let px = if info.color_type == png::ColorType::Rgba { 4 } else { 3 };
        let rgba = rgba.chunks(px).flat_map(|c| [c[0], c[1], c[2], 255]).collect();
        Ok(Self { width: info.width as usize, rgba })
    }

    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 4;
        [self.rgba[i], self.rgba[i + 1], self.rgba[i + 2]]
    }
}

/// Pixels of a button (left edge at `left`, top 40, 120 x 40): just inside its border box,
/// and its centre.
fn button(shot: &Shot, left: usize) -> [[u8; 3]; 2] {
    [shot.at(left + 1, 41), shot.at(left + 60, 60)]
}

/// Whether the button looks as it did in `plain`, polled until `want` holds.
async fn button_is(s: &Session, left: usize, plain: [[u8; 3]; 2], want_plain: bool, what: &str) -> anyhow::Result<()> {
    let found = eventually(Duration::from_secs(10), what, || async {
        let now = button(&Shot::take(s).await?, left);
        Ok(((now == plain) == want_plain).then_some(now))
    })
    .await?;
    if !want_plain {
        // Drawn in red over the grey button.
        assert!(found.iter().all(|p| p[0] > p[1] && p[0] > p[2]), "{what}: {found:?}");
    }
    Ok(())
}

fn failed(r: Reply) -> Value {
    match r {
        Reply::Failed(v) => v["error"].clone(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_highlight_shows_in_a_screenshot_goes_away_and_leaves_no_dom_trace() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/hl", PAGE).await?;
    s.page
        .eval(
            "window.records = 0; new MutationObserver((l) => { records += l.length; }).observe(document, \
             {subtree: true, childList: true, attributes: true, characterData: true}); 0",
        )
        .await?;
    let plain = Shot::take(&s).await?;
    let (plain_a, plain_b) = (button(&plain, 40), button(&plain, 240));
    assert!(plain_a.iter().all(|p| p[0] == p[1] && p[1] == p[2]), "grey before: {plain_a:?}");

    let start = Instant::now();
    let v = s.agent.ok("highlight_element", json!({"selector": "#a", "duration_ms": 1500})).await?;
    assert_eq!(
        (v["success"].as_bool(), v["selector"].as_str(), v["matched"].as_u64()),
        (Some(true), Some("#a"), Some(1))
    );
    assert_eq!(v["bounds"], json!({"x": 40.0, "y": 40.0, "width": 120.0, "height": 40.0}), "{v}");
    assert_eq!(v["tab"]["url"], url.as_str());
    button_is(&s, 40, plain_a, false, "the highlight in a screenshot").await?;
    button_is(&s, 40, plain_a, true, "the highlight going away").await?;
    assert!(start.elapsed() >= Duration::from_millis(1400), "shown for its duration: {:?}", start.elapsed());

    // A new highlight replaces the previous one.
    let v = s.agent.ok("highlight_element", json!({"selector": ".many", "duration_ms": 30000})).await?;
    assert_eq!(v["matched"], 3, "{v}");
    button_is(&s, 40, plain_a, false, "the first match highlighted").await?;
    s.agent.ok("highlight_element", json!({"selector": "#b"})).await?;
    button_is(&s, 240, plain_b, false, "B highlighted").await?;
    button_is(&s, 40, plain_a, true, "A no longer").await?;
    assert_eq!(s.page.eval("records").await?, json!(0), "the page saw no DOM change");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn selectors_that_match_nothing_or_are_invalid_are_clear_errors() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/hl-errors", PAGE).await?;
    let e = failed(s.agent.call("highlight_element", json!({"selector": "#missing"})).await?);
    assert_eq!(e["code"], "element_not_found", "{e}");
    let e = failed(s.agent.call("highlight_element", json!({"selector": "##"})).await?);
    assert_eq!(e["code"], "invalid_selector", "{e}");
    let e = failed(s.agent.call("highlight_element", json!({"selector": "#gone"})).await?);
    assert_eq!(e["code"], "element_not_found", "not rendered: {e}");
    assert!(e["message"].as_str().unwrap().contains("not rendered"), "{e}");
    let e = failed(s.agent.call("highlight_element", json!({"selector": "#a", "duration_ms": 60001})).await?);
    assert_eq!(e["param"], "duration_ms");
    // After the errors, a good call still works (nothing left attached half-way).
    s.agent.ok("highlight_element", json!({"selector": "#c", "duration_ms": 100})).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn elements_in_frames_are_found_by_the_frame_url() -> anyhow::Result<()> {
    let other = WebServer::other_site()?;
    let inner = other.page("/inner", "<!doctype html><button id=deep>deep</button>", &[]);
    let html = format!(
        "<!doctype html><title>frames</title><iframe src=\"{inner}\"></iframe><iframe srcdoc=\"<b id=near>near</b>\"></iframe>"
    );
    let (s, _) = Session::with_pilot("/hl-frames", &html).await?;
    let v = eventually(Duration::from_secs(10), "the other site's frame loaded", || async {
        match s.agent.call("highlight_element", json!({"selector": "#deep", "frame_url_contains": "/inner"})).await? {
            Reply::Ok(v) => Ok(Some(v)),
            _ => Ok(None),
        }
    })
    .await?;
    assert_eq!((v["matched"].as_u64(), v["frame_url"].as_str()), (Some(1), Some(inner.as_str())), "{v}");
    let v = s.agent.ok("highlight_element", json!({"selector": "#near", "frame_url_contains": "srcdoc"})).await?;
    assert_eq!(v["matched"], 1, "{v}");
    let e = failed(s.agent.call("highlight_element", json!({"selector": "#deep"})).await?);
    assert_eq!(e["code"], "element_not_found", "the top document has no #deep: {e}");
    Ok(())
}
