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
/// transports know nothing of the state above them, nor of any kind.
pub trait Sink: Send + Sync {
    /// One message from the extension, as its bytes came: parsed once, then applied. A
    /// frame that is not a message is logged and skipped, never fatal.
    fn frame(&self, bytes: &[u8]);
    /// How a job the host gave its transport went, for the kind that gave it. Apart from
    /// `frame` on purpose: the browser's messages (the worker's included) are untrusted, and
    /// none of them can be read as one of these.
    fn report(&self, report: Report);
    /// What the host's own DevTools connection saw of the pages open (`host/sites.rs`).
    fn sites(&self, change: super::sites::Change);
    /// The host's CDP answerer, which the connection's owner feeds (`host/answerer/`).
    fn answerer(&self) -> Option<super::answerer::Answerer> {
        None
    }
}

/// A report of the host's own transport on a job a kind gave it (a `FetchJob`, an answer
/// that carries files): made here only, never parsed from anything the browser sent (no
/// `Deserialize`), and routed through the registry to `kind` alone (`kinds::transport_report`).
#[derive(Debug)]
pub struct Report {
    pub kind: crate::kind::Kind,
    pub done: Outcome,
}

/// What became of the job.
#[derive(Debug)]
pub enum Outcome {
    /// The file of `record` on the browser's machine is copied here: where, how many bytes;
    /// or why not (`remote_files.rs`).
    Fetched { record: u64, result: Result<(PathBuf, u64), String> },
    /// The files the answer to prompt `id` of tab `tab_id` (record `record`) carries could not
    /// be copied to the browser's machine: the answer did not go (`remote_uploads.rs`).
    NotDelivered { tab_id: i64, id: u64, record: u64, why: String },
}

/// Where a transport puts what the browser sent. Cheap to clone; callable from any thread.
#[derive(Clone)]
pub struct Inbox(pub Arc<dyn Sink>);

impl Inbox {
    pub fn frame(&self, bytes: &[u8]) {
        self.0.frame(bytes);
    }

    pub fn report(&self, report: Report) {
        self.0.report(report);
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
