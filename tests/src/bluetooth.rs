//! Emulated Bluetooth devices (`BluetoothEmulation`, on the browser target: it is refused
//! on a tab), so a chooser has something to list without hardware (CDP-FACTS 2). On Linux
//! the page sees `navigator.bluetooth` only with `SWITCH` on the browser's command line.

use crate::cdp::Cdp;
use anyhow::{Context, Result};
use serde_json::json;
use std::sync::Arc;

/// What a Linux test browser needs for `navigator.bluetooth` (Chrome elsewhere has it on).
pub const SWITCH: &str = "--enable-features=WebBluetooth";

pub struct Bluetooth {
    cdp: Arc<Cdp>,
    session: String,
}

impl Bluetooth {
    /// A powered-on LE adapter in the browser `cdp` reaches.
    pub async fn emulate(cdp: &Arc<Cdp>) -> Result<Self> {
        let s = cdp.call(None, "Target.attachToBrowserTarget", json!({})).await?;
        let session = s["sessionId"].as_str().context("no browser session")?.to_owned();
        cdp.call(Some(&session), "BluetoothEmulation.enable", json!({"state": "powered-on", "leSupported": true}))
            .await?;
        Ok(Self { cdp: cdp.clone(), session })
    }

    /// A device already connected to the system: listed as soon as a chooser opens.
    pub async fn preconnected(&self, address: &str, name: &str) -> Result<()> {
        let p = json!({"address": address, "name": name, "manufacturerData": [], "knownServiceUuids": []});
        self.cdp.call(Some(&self.session), "BluetoothEmulation.simulatePreconnectedPeripheral", p).await?;
        Ok(())
    }

    /// A device advertising now: an open chooser lists it from here on.
    pub async fn advertise(&self, address: &str, name: &str) -> Result<()> {
        let entry = json!({"deviceAddress": address, "rssi": -10, "scanRecord": {"name": name, "uuids": [],
            "appearance": 1, "txPower": 1, "manufacturerData": []}});
        self.cdp.call(Some(&self.session), "BluetoothEmulation.simulateAdvertisement", json!({"entry": entry})).await?;
        Ok(())
    }
}

/// The host's test hook on its CDP answerer (`Tool::TestAnswerer`; the browser, and so its
/// host, must run with `UNMODAL_TEST_ANSWERER=1`): one request on the host's socket in
/// `runtime`.
pub async fn answerer_hook(runtime: &std::path::Path, args: serde_json::Value) -> Result<serde_json::Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let socket = std::fs::read_dir(runtime)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("host-") && n.ends_with(".sock"))
        })
        .context("no host socket")?;
    let mut stream = tokio::net::UnixStream::connect(&socket).await?;
    let line = json!({"tool": "test_answerer", "args": args}).to_string() + "\n";
    stream.write_all(line.as_bytes()).await?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).await?;
    let v: serde_json::Value = serde_json::from_str(&answer)?;
    match v.get("ok") {
        Some(ok) => Ok(ok.clone()),
        None => anyhow::bail!("the hook refused: {}", v["error"]),
    }
}
