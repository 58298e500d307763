//! End-to-end harness: real headless Chromium, the built extension, the real `unmodal`
//! host and a real MCP client. Used by the tests in `tests/tests/`, the demo and the bench.

pub mod activation;
pub mod agent;
pub mod artifacts;
pub mod bluetooth;
pub mod browser;
pub mod cdp;
pub mod chooser;
pub mod chromium_group;
pub mod framed;
pub mod frameworks;
pub mod idp;
pub mod json_schema;
pub mod markdown;
pub mod page;
pub mod peer;
pub mod remote;
pub mod session;
pub mod slow_scripts;
/// A listener run as another user (uid 65534), for the squatted runtime directory's test:
/// the host's unit tests use the same file.
#[path = "../../native-host/src/platform/squatter.rs"]
pub mod squatter;
pub mod started;
pub mod wait;
pub mod web;

pub use agent::{Agent, Reply};
pub use browser::{Browser, Options};
pub use peer::{Driver, Peer, PeerReply};
pub use session::{PageCall, Session};
pub use wait::eventually;
pub use web::WebServer;

/// A temporary directory only this user can enter (mode 0700), as a host makes its runtime
/// directory: a client refuses one open to others, even its own.
pub fn private_dir(prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    Ok(tempfile::Builder::new().prefix(prefix).permissions(std::fs::Permissions::from_mode(0o700)).tempdir()?)
}
