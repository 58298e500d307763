//! The person's own path, end to end: a headful Chromium that no program controls (no
//! remote debugging, so no CDP: the test sees it only through `unmodal mcp` and the host),
//! a real mouse click on the extension's toolbar button, a real click on the popup's
//! switch, and AI Web Pilot on. Then the same two clicks in a browser started with
//! `--remote-debugging-port`: refused, with the popup's sentence.
//!
//! The screen is an Xvfb display; its framebuffer is read from the file `-fbdir` keeps
//! (XWD), the clicks are xdotool's (XTest: the browser gets them as a person's). Where
//! Xvfb or xdotool is missing the tests say so on stderr and pass, except under `CI=true`,
//! where they fail: `cargo xtask test` installs both.

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::browser::{QUIET_ARGS, Slot, chromium_binary, log_tail, registered_profile, slot};
use unmodal_e2e::cdp::Cdp;
use unmodal_e2e::page::Page;
use unmodal_e2e::{Agent, Reply, WebServer, eventually};

const LIMIT: Duration = Duration::from_secs(20);
const PAGE: &str = "<!doctype html><title>work</title><p>A page a person works in.</p>";
/// The sentence the popup and the agent's logs give when the browser is open to DevTools
/// clients (`host/pilot_switch.rs`, quoted in docs/pilot.md, *Who can switch the pilot on*).
const REFUSED: &str = "A program can control this browser, so this switch cannot turn AI Web Pilot on. \
Run `unmodal pilot on` in a terminal.";

/// An Xvfb display of its own (`-displayfd` picks a free number, so tests can run side by
/// side), with its framebuffer in a file.
struct Display {
    xvfb: Child,
    // Xvfb wrote the display number here; kept open so it never meets a closed pipe.
    _stdout: ChildStdout,
    number: String,
    fb: TempDir,
}

impl Display {
    /// The display, or `None` (said loudly) when this machine lacks Xvfb or xdotool.
    async fn start() -> Result<Option<Self>> {
        let missing: Vec<&str> = [("Xvfb", "-help"), ("xdotool", "version")]
            .into_iter()
            .filter(|(tool, arg)| {
                Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_err()
            })
            .map(|(tool, _)| tool)
            .collect();
        if !missing.is_empty() {
            let why = format!(
                "{} not found: the headful popup tests need Debian's `xvfb` and `xdotool` (`cargo xtask test` installs \
them when run as root)",
                missing.join(" and ")
            );
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                bail!("{why}");
            }
            // Straight to stderr: the test harness keeps a passing test's eprintln! to itself.
            let _ = writeln!(std::io::stderr(), "SKIPPED popup_headful: {why}");
            return Ok(None);
        }
        let fb = tempfile::Builder::new().prefix("unmodal-xvfb-").tempdir()?;
        let mut xvfb = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-fbdir"])
            .arg(fb.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting Xvfb")?;
        let stdout = xvfb.stdout.take().context("Xvfb without stdout")?;
        // Xvfb writes the number once it takes clients, or exits (the read then ends).
        let read = tokio::task::spawn_blocking(move || {
            let mut reader = std::io::BufReader::new(stdout);
            let mut line = String::new();
            reader.read_line(&mut line).map(|_| (line.trim().to_owned(), reader.into_inner()))
        });
        let (number, stdout) = match tokio::time::timeout(LIMIT, read).await {
            Ok(Ok(Ok((n, out)))) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (n, out),
            other => {
                let _ = xvfb.kill();
                let _ = xvfb.wait();
                bail!("Xvfb did not name its display: {other:?}");
            }
        };
        Ok(Some(Self { xvfb, _stdout: stdout, number: format!(":{number}"), fb }))
    }

    fn screen(&self) -> Result<Screen> {
        Screen::from_xwd(&std::fs::read(self.fb.path().join("Xvfb_screen0"))?)
    }

    /// A person's click: the pointer moves there, then the button goes down and up.
    fn click(&self, (x, y): (u32, u32)) -> Result<()> {
        let out = Command::new("xdotool")
            .args(["mousemove", "--sync", &x.to_string(), &y.to_string(), "click", "1"])
            .env("DISPLAY", &self.number)
            .output()?;
        ensure!(out.status.success(), "xdotool failed: {}", String::from_utf8_lossy(&out.stderr));
        Ok(())
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.xvfb.kill();
        let _ = self.xvfb.wait();
    }
}

/// The screen's pixels, RGB.
struct Screen {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Screen {
    /// Xvfb's `-fbdir` file: an XWD header (big-endian), a colour map, then the pixels.
    fn from_xwd(bytes: &[u8]) -> Result<Self> {
        let field = |i: usize| -> Result<usize> {
            let b: [u8; 4] = bytes.get(i * 4..i * 4 + 4).context("XWD header cut short")?.try_into()?;
            Ok(u32::from_be_bytes(b) as usize)
        };
        ensure!(field(1)? == 7 && field(2)? == 2, "not an XWD v7 ZPixmap");
        let (header, width, height) = (field(0)?, field(4)?, field(5)?);
        let (lsb_first, bits, line) = (field(7)? == 0, field(11)?, field(12)?);
        let masks = [field(14)? as u32, field(15)? as u32, field(16)? as u32];
        ensure!(bits == 32 && masks.iter().all(|m| *m != 0), "expected 32 bits per pixel, true colour");
        let start = header + field(19)? * 12;
        let data = bytes.get(start..start + line * height).context("XWD pixels cut short")?;
        let mut rgb = Vec::with_capacity(width * height);
        for y in 0..height {
            for x in 0..width {
                let b: [u8; 4] = data[y * line + x * 4..][..4].try_into()?;
                let p = if lsb_first { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) };
                rgb.push(masks.map(|m| ((p & m) >> m.trailing_zeros()) as u8));
            }
        }
        Ok(Self { width, height, rgb })
    }

    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        self.rgb[y * self.width + x]
    }

    fn dark(&self, x: usize, y: usize) -> bool {
        let [r, g, b] = self.at(x, y);
        (r as u32 * 30 + g as u32 * 59 + b as u32 * 11) / 100 < 190
    }

    /// The square shapes of dark pixels (connected, 8 ways) in rows `rows`, side 12–28 px.
    /// Icons and check boxes are such shapes; letters and lines are not.
    fn squares(&self, rows: std::ops::Range<usize>) -> Vec<Shape> {
        let rows = rows.start..rows.end.min(self.height);
        let mut seen = vec![false; self.width * self.height];
        let mut found = Vec::new();
        for y0 in rows.clone() {
            for x0 in 0..self.width {
                if seen[y0 * self.width + x0] || !self.dark(x0, y0) {
                    continue;
                }
                let (mut min, mut max, mut count) = ((x0, y0), (x0, y0), 0usize);
                let mut stack = vec![(x0, y0)];
                seen[y0 * self.width + x0] = true;
                while let Some((x, y)) = stack.pop() {
                    count += 1;
                    min = (min.0.min(x), min.1.min(y));
                    max = (max.0.max(x), max.1.max(y));
                    for (dx, dy) in [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)] {
                        let (nx, ny) = (x as isize + dx, y as isize + dy);
                        if nx < 0 || ny < 0 || nx as usize >= self.width || !rows.contains(&(ny as usize)) {
                            continue;
                        }
                        let (nx, ny) = (nx as usize, ny as usize);
                        if !seen[ny * self.width + nx] && self.dark(nx, ny) {
                            seen[ny * self.width + nx] = true;
                            stack.push((nx, ny));
                        }
                    }
                }
                let (w, h) = (max.0 - min.0 + 1, max.1 - min.1 + 1);
                if (12..=28).contains(&w) && w.abs_diff(h) <= 1 {
                    let centre = (((min.0 + max.0) / 2) as u32, ((min.1 + max.1) / 2) as u32);
                    let mut colours = std::collections::HashMap::new();
                    for y in min.1..=max.1 {
                        for x in min.0..=max.0 {
                            *colours.entry(self.at(x, y)).or_insert(0usize) += 1;
                        }
                    }
                    let most = colours.values().max().copied().unwrap_or_default();
                    let area = (w * h) as f64;
                    found.push(Shape { centre, side: w, fill: count as f64 / area, one_colour: most as f64 / area });
                }
            }
        }
        found
    }

    /// The extension's toolbar button: it has no icon of its own, so Chromium draws a
    /// square of one grey with the name's first letter in white, the only such shape at the
    /// top of the window (a page's favicon is lines, with gaps between).
    fn action_button(&self) -> Option<(u32, u32)> {
        let filled = |s: &Shape| s.fill > 0.8 && s.one_colour > 0.6;
        match self.squares(0..120).into_iter().filter(filled).collect::<Vec<_>>()[..] {
            [Shape { centre, .. }] => Some(centre),
            _ => None,
        }
    }

    /// The popup's switch (a check box: an outlined square, light inside), once the popup's
    /// script has asked the worker how things stand (its badge reads "host connected").
    fn popup_switch(&self) -> Option<(u32, u32)> {
        let green = self.rgb.iter().filter(|p| near(**p, [0xd8, 0xf5, 0xdd])).count();
        if green < 200 {
            return None;
        }
        let boxes: Vec<_> = self
            .squares(100..self.height)
            .into_iter()
            .filter(|&Shape { centre: (cx, cy), side, fill, .. }| {
                let inset = side / 2 - 3;
                let inside = |dx: usize, dy: usize| !self.dark(cx as usize - inset + dx, cy as usize - inset + dy);
                fill < 0.4 && (0..2 * inset).all(|d| (0..2 * inset).all(|e| inside(d, e)))
            })
            .collect();
        match boxes[..] {
            [Shape { centre, .. }] => Some(centre),
            _ => None,
        }
    }

    /// Written for a failure to show what the screen looked like.
    fn save_png(&self, path: &Path) -> Result<()> {
        let mut enc = png::Encoder::new(std::fs::File::create(path)?, self.width as u32, self.height as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()?.write_image_data(&self.rgb.concat())?;
        Ok(())
    }
}

/// A square shape on the screen.
#[derive(Debug)]
struct Shape {
    centre: (u32, u32),
    side: usize,
    /// The share of its box that is dark.
    fill: f64,
    /// The share of its box in its most common colour.
    one_colour: f64,
}

fn near(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 6)
}

/// A headful Chromium on `display`, with Unmodal loaded and pinned to the toolbar, as a
/// person starts it: no DevTools port unless `args` gives one.
struct Headful {
    child: Child,
    profile: TempDir,
    runtime: PathBuf,
    log: PathBuf,
    art: Artifacts,
}

impl Headful {
    fn launch(display: &Display, url: &str, args: &[&str]) -> Result<Self> {
        let art = Artifacts::find()?;
        let (profile, runtime) = registered_profile(&art, "unmodal-headful-")?;
        // Pinned, as a person pins it from the puzzle menu: its button sits in the toolbar.
        std::fs::create_dir_all(profile.path().join("Default"))?;
        let prefs = json!({"extensions": {"pinned_extensions": [art.extension_id]}});
        std::fs::write(profile.path().join("Default/Preferences"), prefs.to_string())?;
        let log = profile.path().join("chromium.log");
        let child = Command::new(chromium_binary()?)
            .args(QUIET_ARGS)
            .args(["--ozone-platform=x11", "--password-store=basic", "--window-position=0,0", "--window-size=1024,768"])
            .args(args)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--load-extension={}", art.extension.display()))
            .arg(format!("--disable-extensions-except={}", art.extension.display()))
            .arg(url)
            .env("DISPLAY", &display.number)
            .env_remove("WAYLAND_DISPLAY")
            .env("UNMODAL_RUNTIME_DIR", &runtime)
            .env("UNMODAL_LOG", std::env::var("UNMODAL_LOG").unwrap_or_else(|_| "info".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("starting Chromium")?;
        Ok(Self { child, profile, runtime, log, art })
    }

    fn log_tail(&self) -> String {
        log_tail(&self.log, 40)
    }
}

impl Drop for Headful {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `find` sees what it looks for on the screen; on time-out the screen is saved
/// as a PNG whose path the error names.
async fn on_screen(display: &Display, what: &str, find: fn(&Screen) -> Option<(u32, u32)>) -> Result<(u32, u32)> {
    let found = eventually(LIMIT, what, || async { Ok(find(&display.screen()?)) }).await;
    found.map_err(|e| {
        let path = std::env::temp_dir().join(format!(
            "unmodal-popup-headful-{}-{}.png",
            std::process::id(),
            &display.number[1..]
        ));
        let screen = display.screen();
        match screen.and_then(|s| s.save_png(&path).map(|()| s.squares(0..s.height))) {
            Ok(shapes) => e.context(format!("the screen: {}; its square shapes: {shapes:?}", path.display())),
            Err(saving) => e.context(format!("(the screen could not be saved: {saving:#})")),
        }
    })
}

/// The person's two clicks: the toolbar button, then the popup's switch.
async fn click_the_switch(display: &Display) -> Result<()> {
    let button = on_screen(display, "Unmodal's button in the toolbar", Screen::action_button).await?;
    display.click(button)?;
    let switch = on_screen(display, "the popup's switch, the host connected", Screen::popup_switch).await?;
    display.click(switch)
}

struct Setup {
    // Dropped in this order: the agent, the browser, then its display and the slot.
    agent: Agent,
    browser: Headful,
    display: Display,
    _web: WebServer,
    _slot: Arc<Slot>,
}

/// The display, the browser showing a page, and the agent once the extension reached the
/// host; `None` when the display cannot run here (said loudly).
async fn setup(args: &[&str]) -> Result<Option<Setup>> {
    // A headful browser is one of the machine's browsers too.
    let slot = slot().await;
    let Some(display) = Display::start().await? else { return Ok(None) };
    let web = WebServer::start()?;
    let url = web.page("/work", PAGE, &[]);
    let browser = Headful::launch(&display, &url, args)?;
    let agent = Agent::start(&browser.art.host, &browser.runtime).await?;
    if let Err(e) = agent.wait_for_tab(&url).await {
        bail!("{e:#}\nChromium's log:\n{}", browser.log_tail());
    }
    Ok(Some(Setup { agent, browser, display, _web: web, _slot: slot }))
}

async fn pilot_enabled(agent: &Agent) -> Result<Value> {
    Ok(agent.ok("observe", json!({"what": "tabs"})).await?["pilot_enabled"].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persons_click_in_the_toolbar_popup_switches_the_pilot_on() -> Result<()> {
    let Some(s) = setup(&[]).await? else { return Ok(()) };
    ensure!(pilot_enabled(&s.agent).await? == false, "the pilot is on before anyone clicked");
    click_the_switch(&s.display).await?;
    eventually(LIMIT, "the host switching the pilot on", || async {
        Ok((pilot_enabled(&s.agent).await? == true).then_some(()))
    })
    .await?;
    // The agent's pilot tools work now, in the page the person has open.
    let v = s.agent.ok("execute_javascript", json!({"script": "document.title"})).await?;
    ensure!(v["success"] == true && v["result"] == "work", "execute_javascript after the switch: {v}");
    // And the terminal command sees it on in this browser too.
    let out = Command::new(&s.browser.art.host)
        .args(["pilot", "status", "--user-data-dir"])
        .arg(s.browser.profile.path())
        .env("UNMODAL_RUNTIME_DIR", &s.browser.runtime)
        .output()?;
    let said = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.success() && said.contains("is on"), "`unmodal pilot status` said: {said}");
    s.agent.close().await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_click_in_a_browser_open_to_devtools_is_refused_with_the_readmes_sentence() -> Result<()> {
    let Some(s) = setup(&["--remote-debugging-port=0"]).await? else { return Ok(()) };
    click_the_switch(&s.display).await?;
    let logged = eventually(LIMIT, "the host recording the refusal", || async {
        let tab = s.agent.ok("observe", json!({"what": "tabs"})).await?["tracked_tab"].clone();
        let logs = s.agent.ok("observe", json!({"what": "logs", "tab_id": tab})).await?;
        Ok(logs["logs"].as_array().into_iter().flatten().find_map(|e| {
            let text = e["summary"].as_str().filter(|t| e["type"] == "pilot" && t.starts_with("Refused"))?;
            Some(text.to_owned())
        }))
    })
    .await?;
    let expected =
        format!("Refused to switch AI Web Pilot on: the browser was started with --remote-debugging-port. {REFUSED}");
    ensure!(logged == expected, "the refusal recorded:\n  {logged}\nnot\n  {expected}");
    ensure!(pilot_enabled(&s.agent).await? == false, "the pilot is on after a refused click");
    match s.agent.call("execute_javascript", json!({"script": "1 + 1"})).await? {
        Reply::Ok(v) if v["success"] == false && v["code"] == "ai_web_pilot_disabled" => {}
        other => bail!("execute_javascript after a refused click: {other:?}"),
    }

    // What the person reads under the switch. A DevTools client attaches to the popup only
    // now, after the click was decided (attached before, the worker refuses for that).
    let port = std::fs::read_to_string(s.browser.profile.path().join("DevToolsActivePort"))?;
    let mut lines = port.lines();
    let (port, path) = (lines.next().context("no port")?, lines.next().context("no path")?);
    let cdp = Cdp::connect(&format!("ws://127.0.0.1:{port}{path}")).await?;
    let popup_url = format!("chrome-extension://{}/popup.html", s.browser.art.extension_id);
    let targets = cdp.call(None, "Target.getTargets", json!({})).await?;
    let popup = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["url"] == popup_url.as_str())
        .and_then(|t| t["targetId"].as_str())
        .context("the popup is not open")?;
    let popup = Page::attach(cdp.clone(), popup.to_owned()).await?;
    // The popup shows the backquoted command as code.
    let expected = format!("the browser was started with --remote-debugging-port. {REFUSED}").replace('`', "");
    let shown = eventually(LIMIT, "the popup showing the refusal", || async {
        let why = popup.eval("document.querySelector('#why').textContent").await?;
        Ok((why == expected.as_str()).then_some(()))
    });
    if let Err(e) = shown.await {
        let why = popup.eval("document.querySelector('#why').textContent").await?;
        bail!("{e:#}: it says {why}, not {expected:?}");
    }
    let checked = popup.eval("document.querySelector('#pilot').checked").await?;
    ensure!(checked == false, "the popup's switch shows on after the refusal");
    s.agent.close().await
}
