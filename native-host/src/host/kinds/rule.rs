//! What an agent's `interact` call asks, in types that name no kind: its rule
//! (`crate::rule`), or an answer's extra field, one kind's own value (`CarryOf`). Built by
//! `args.rs` from the kinds' own parts of the call.

use crate::host::protocol::Carried;
use crate::host::record::Details;
use crate::host::state::State;
use crate::kind::Kind;
pub use crate::rule::{DialogType, KindRule, OwnRule, RuleSpec, camel};
use std::any::Any;
use std::fmt;

/// What an answer carries that only one kind takes (a login, a file to write, files to
/// give), or what a rule or a policy's accept carries to the worker: the kind's own value.
pub struct Carry(Box<dyn CarryOf>);

pub trait CarryOf: fmt::Debug + Send + Sync + Any {
    fn kind(&self) -> Kind;
    /// Applies it to an answer to prompt `id` of `tab` (its record: `record`): what goes to
    /// the worker, and what the kind keeps for the worker's result (where a print's PDF
    /// goes, a download's end).
    fn apply(self: Box<Self>, s: &mut State, ids: (i64, u64, u64), accept: bool) -> Carried;
    /// What an accept gives the prompt, on its record (a file chooser's files).
    fn name_on(&self, _details: &mut Details) {}
    /// Files it gives a page (refused while the extension cannot reach them).
    fn gives_files(&self) -> bool {
        false
    }
    fn clone_box(&self) -> Box<dyn CarryOf>;
    fn as_any(&self) -> &dyn Any;
    fn eq_dyn(&self, other: &dyn Any) -> bool;
}

impl Carry {
    pub fn new(c: impl CarryOf) -> Self {
        Self(Box::new(c))
    }

    pub fn kind(&self) -> Kind {
        self.0.kind()
    }

    pub fn gives_files(&self) -> bool {
        self.0.gives_files()
    }

    pub fn name_on(&self, details: &mut Details) {
        self.0.name_on(details)
    }

    pub fn apply(self, s: &mut State, ids: (i64, u64, u64), accept: bool) -> Carried {
        self.0.apply(s, ids, accept)
    }

    /// The kind's own value, if it is of type `T`.
    pub fn of<T: CarryOf>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

impl Clone for Carry {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl PartialEq for Carry {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(other.0.as_any())
    }
}

impl fmt::Debug for Carry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A validated `handle_dialog` call.
#[derive(Clone, Debug, PartialEq)]
pub enum DialogCall {
    /// A rule for future dialogs or prompts of one kind.
    Setup {
        tab: Option<i64>,
        once: bool,
        rule: RuleSpec,
    },
    /// Removes the tab's rules for `what` (`all`: every kind).
    Clear {
        tab: Option<i64>,
        what: DialogType,
    },
    Status {
        tab: Option<i64>,
    },
    Respond {
        tab: Option<i64>,
        accept: bool,
        text: Option<String>,
        dialog_id: Option<u64>,
    },
    /// Accepts a held prompt with what only its kind takes.
    Carrying {
        tab: Option<i64>,
        dialog_id: Option<u64>,
        with: Carry,
    },
}
