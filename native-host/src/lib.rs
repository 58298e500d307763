//! The `unmodal` binary: native-messaging host (state of record), MCP server, installer.
//! See ARCHITECTURE.md for how the parts fit.

pub mod api;
pub mod browser;
pub mod call;
pub mod call_cli;
pub mod cdp;
pub mod cli;
pub mod debuggable;
pub mod doctor;
pub mod extension;
pub mod extension_zip;
pub mod files;
pub mod frame;
pub mod host;
pub mod install;
pub mod ipc;
pub mod kind;
#[cfg(test)]
mod kind_names;
pub mod mcp;
pub mod parent_browser;
pub mod paths;
pub mod pilot_api;
pub mod pilot_cli;
pub mod platform;
pub mod redact;
pub mod reply;
pub mod rule;
