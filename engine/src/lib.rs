//! The dialog engine: which answer a page's `alert`/`confirm`/`prompt`/`beforeunload`
//! gets, decided synchronously from the agent's rules or the default policy.
//!
//! It is `no_std` and allocation-free so that the in-page build (wasm32 → wasm2js) stays
//! small and starts fast. The same crate encodes rules on the host (feature `encode`), so
//! the wire format has exactly one definition.

#![cfg_attr(not(any(test, feature = "encode")), no_std)]

mod decide;
mod kind;
pub mod matching;
pub mod rules;

#[cfg(target_arch = "wasm32")]
mod ffi;

pub use decide::{DecidedBy, Decision, Engine, NEEDS_MESSAGE, NEEDS_URL, Outcome, Subject};
pub use kind::{DialogKind, Policy, RuleTarget};
pub use rules::{LoadError, MAX_MATCH_UNITS, MAX_RULES, MAX_TEXT_UNITS};
