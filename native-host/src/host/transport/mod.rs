//! How the host reaches the extension: the one interface both ways in share. Native
//! messaging (`native.rs`) is the default, on the browser's own machine; the CDP bridge
//! (`bridge.rs`) is the way in to a browser where no host can be installed. Either one
//! hands each frame from the browser to the `Inbox` and sends what the state puts in the
//! outbox, in order; everything past that (state, socket, saver, watchdogs) is the same.

pub mod bridge;
pub mod native;
pub(super) mod remote_files;
mod remote_uploads;

use super::protocol::ToBrowser;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What the state sends to the browser, in the order it made it.
pub type Outbox = mpsc::UnboundedReceiver<ToBrowser>;

/// What the host does with what a transport brings in (`host/mod.rs` implements it): the
/// transports know nothing of the state above them.
pub trait Sink: Send + Sync {
    /// One message from the extension, as its bytes came: parsed once, then applied. A
    /// frame that is not a message is logged and skipped, never fatal.
    fn frame(&self, bytes: &[u8]);
    /// A remote download's copy on this machine is made (or failed).
    fn fetched(&self, record: u64, result: Result<(PathBuf, u64), String>);
    /// The files an answer gives a remote browser's chooser could not be copied there: the
    /// answer to prompt `id` of tab `tab_id` (record `record`) did not go.
    fn upload_failed(&self, tab_id: i64, id: u64, record: u64, why: &str);
    /// What the host's own DevTools connection saw of the pages open (`host/sites.rs`).
    fn sites(&self, change: super::sites::Change);
    /// The host's CDP answerer, which the connection's owner feeds (`host/answerer/`).
    fn answerer(&self) -> Option<super::answerer::Answerer> {
        None
    }
}

/// Where a transport puts what the browser sent. Cheap to clone; callable from any thread.
#[derive(Clone)]
pub struct Inbox(pub Arc<dyn Sink>);

impl Inbox {
    pub fn frame(&self, bytes: &[u8]) {
        self.0.frame(bytes);
    }

    pub fn fetched(&self, record: u64, result: Result<(PathBuf, u64), String>) {
        self.0.fetched(record, result);
    }

    pub fn upload_failed(&self, tab_id: i64, id: u64, record: u64, why: &str) {
        self.0.upload_failed(tab_id, id, record, why);
    }

    pub fn sites(&self, change: super::sites::Change) {
        self.0.sites(change);
    }

    pub fn answerer(&self) -> Option<super::answerer::Answerer> {
        self.0.answerer()
    }
}

impl super::sites::Feed for Inbox {
    fn sites(&self, change: super::sites::Change) {
        self.0.sites(change);
    }

    fn answerer(&self) -> Option<super::answerer::Answerer> {
        self.0.answerer()
    }
}
