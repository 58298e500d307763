//! End-to-end harness: real headless Chromium, the built extension, the real `unmodal`
//! host and a real MCP client. Used by the tests in `tests/tests/`, the demo and the bench.

pub mod agent;
pub mod artifacts;
pub mod browser;
pub mod cdp;
pub mod chooser;
pub mod chromium_group;
pub mod framed;
pub mod page;
pub mod peer;
pub mod remote;
pub mod session;
pub mod slow_scripts;
pub mod wait;
pub mod web;

pub use agent::{Agent, Reply};
pub use browser::{Browser, Options};
pub use peer::{Driver, Peer, PeerReply};
pub use session::{PageCall, Session};
pub use wait::eventually;
pub use web::WebServer;
