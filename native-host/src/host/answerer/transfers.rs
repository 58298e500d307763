//! Transfers as the browser reports them to this connection, whoever handles them
//! (`docs/cdp-answers.md`): events are per client and the behaviour per browser context, so
//! `Browser.setDownloadBehavior {behavior: "default", eventsEnabled: true}` for a context
//! of the answerer's own makes the browser report every context's downloads here
//! (`downloadWillBegin`, `downloadProgress` with the finished file's `filePath`), and leaves
//! a driver's own set-up alone (Playwright's defaults: `allowAndName` into its artifacts
//! directory, the file named by its GUID). Calling it for the default context would take
//! the driver's downloads away from it (measured): never done.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Transfers kept, at most; the oldest go first.
const MAX_KEPT: usize = 256;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferView {
    pub guid: String,
    pub url: String,
    pub suggested_filename: String,
    /// The frame that started it (a CDP frame id: the target's, for a top frame).
    pub frame_id: String,
    /// That frame's URL as the answerer's own view of the targets had it when it began
    /// (empty: not a target it knows, such as a frame in its parent's process).
    pub page_url: String,
    /// `in_progress`, `completed`, `canceled`.
    pub state: String,
    pub received_bytes: u64,
    pub total_bytes: u64,
    /// Where the browser wrote the finished file (`completed` only).
    pub file_path: Option<String>,
}

#[derive(Debug, Default)]
pub struct Transfers {
    /// Wanted by the test hook (`watch_transfers`); by the kinds (`Want::transfers`).
    pub wanted: bool,
    pub kinds_want: bool,
    /// The answerer's own browser context, once the browser made it.
    pub context: Option<String>,
    pub asking: bool,
    order: Vec<String>,
    kept: BTreeMap<String, TransferView>,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().chars().take(2048).collect()
}

impl Transfers {
    /// A browser-level download event: the download as it stands now, if it is one.
    pub fn on_event(&mut self, method: &str, p: &Value, page_url: Option<String>) -> Option<TransferView> {
        let guid = text(&p["guid"]);
        if guid.is_empty() {
            return None;
        }
        match method {
            "Browser.downloadWillBegin" => {
                if !self.kept.contains_key(&guid) {
                    if self.order.len() >= MAX_KEPT {
                        let old = self.order.remove(0);
                        self.kept.remove(&old);
                    }
                    self.order.push(guid.clone());
                }
                let v = TransferView {
                    guid: guid.clone(),
                    url: text(&p["url"]),
                    suggested_filename: text(&p["suggestedFilename"]),
                    frame_id: text(&p["frameId"]),
                    page_url: page_url.unwrap_or_default(),
                    state: "in_progress".into(),
                    received_bytes: 0,
                    total_bytes: 0,
                    file_path: None,
                };
                self.kept.insert(guid.clone(), v);
            }
            "Browser.downloadProgress" => {
                let d = self.kept.get_mut(&guid)?;
                let state = text(&p["state"]);
                let changed = state != d.state;
                d.state = match state.as_str() {
                    "inProgress" => "in_progress".into(),
                    s => s.to_owned(),
                };
                d.received_bytes = p["receivedBytes"].as_f64().unwrap_or(0.0) as u64;
                d.total_bytes = p["totalBytes"].as_f64().unwrap_or(0.0) as u64;
                if let Some(f) = p["filePath"].as_str() {
                    d.file_path = Some(f.chars().take(4096).collect());
                }
                // Progress ticks are not news; a state change is.
                if !changed || d.state == "in_progress" {
                    return None;
                }
            }
            _ => return None,
        }
        self.kept.get(&guid).cloned()
    }

    pub fn list(&self) -> Vec<TransferView> {
        self.order.iter().filter_map(|g| self.kept.get(g).cloned()).collect()
    }

    pub fn forget_connection(&mut self) {
        self.context = None;
        self.asking = false;
    }
}
