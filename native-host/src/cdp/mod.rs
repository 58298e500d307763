//! A small CDP client for `unmodal mcp --cdp-endpoint`: where the remote browser is
//! (`endpoint`), where its URL and headers are read from (`sources`) and one WebSocket
//! connection to it (`conn`). What goes over it is the bridge's business
//! (`host/transport/bridge.rs`).

pub mod conn;
pub mod endpoint;
#[cfg(test)]
pub mod fake;
pub mod sources;
#[cfg(test)]
mod tls_tests;

pub use conn::{CdpError, Conn, Event};
pub use endpoint::Endpoint;
pub use sources::Given;
