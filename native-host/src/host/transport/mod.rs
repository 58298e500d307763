//! How the host reaches the extension: the one interface both ways in share. Native
//! messaging (`native.rs`) is the default, on the browser's own machine; the CDP bridge
//! (`bridge.rs`) is the way in to a browser where no host can be installed. Either one
//! hands each frame from the browser to the `Inbox` and sends what the state puts in the
//! outbox, in order; everything past that (state, socket, saver, watchdogs) is the same.

pub mod bridge;
pub mod native;
mod remote_files;

use super::Shared;
use super::protocol::{FromBrowser, ToBrowser};
use std::sync::Arc;
use tokio::sync::mpsc;

/// What the state sends to the browser, in the order it made it.
pub type Outbox = mpsc::UnboundedReceiver<ToBrowser>;

/// Where a transport puts what the browser sent. Cheap to clone; callable from any thread.
#[derive(Clone)]
pub struct Inbox {
    pub(super) shared: Arc<Shared>,
    pub(super) rt: tokio::runtime::Handle,
}

impl Inbox {
    /// One message from the extension, as its bytes came: parsed once, then applied. A frame
    /// that is not a message is logged and skipped, never fatal.
    pub fn frame(&self, bytes: &[u8]) {
        let msg = match FromBrowser::parse(bytes) {
            Ok(m) => m,
            Err(e) => return tracing::warn!(error = %e, "unreadable frame from the browser skipped"),
        };
        if let FromBrowser::PilotResult(r) = msg {
            return self.shared.pilot.finish(r);
        }
        super::on_browser_message(&self.shared, &self.rt, msg);
    }

    /// A remote download's copy on this machine is made (or failed): its record says so.
    pub fn fetched(&self, record: u64, result: Result<(std::path::PathBuf, u64), String>) {
        self.shared.state().file_fetched(record, result);
        self.shared.changed.notify_one();
    }
}
