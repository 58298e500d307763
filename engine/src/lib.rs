//! The dialog engine: which answer a page's `alert`/`confirm`/`prompt`/`beforeunload`
//! gets, decided synchronously from the agent's rules or the default policy.
//!
//! It is `no_std` and allocation-free so that the in-page build (wasm32 → wasm2js) stays
//! small and starts fast. The same crate encodes configs on the host (feature `encode`),
//! so the wire format has exactly one definition; feature `serde` gives the host the names
//! agents see.

#![cfg_attr(not(any(test, feature = "encode")), no_std)]

pub mod config;
mod decide;
mod kind;
pub mod matching;

#[cfg(target_arch = "wasm32")]
mod ffi;

pub use config::{LoadError, MAX_MATCH_UNITS, MAX_RULES, MAX_TEXT_UNITS};
pub use decide::{DecidedBy, Decision, Engine, NEEDS_MESSAGE, NEEDS_URL, Outcome, Subject};
pub use kind::{DialogKind, Policy, RuleTarget};
