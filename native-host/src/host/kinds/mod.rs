//! The kinds of browser prompt (what the browser shows and the host decides), one file
//! each, and the one list of them. A kind owns what is its own: its wire request's
//! `PromptKind` (how it is described, which rules fit it, its answer to each policy, its
//! pilot-off sentence) and its `Spec` (what its record says once it is answered, gone or
//! expired, what an agent's accept must carry). The pipeline (`prompt.rs`), the held
//! prompts (`held.rs`) and the sentences (`explain.rs`) ask this registry and never name
//! a kind.

mod app_link;
mod auth;
mod device_chooser;
mod download;
pub(in crate::host) use download::free_name;
mod file_chooser;
mod held_in_page;
mod passkey;
mod permission;
mod print;

use crate::api::{Credentials, RuleSpec};
use crate::host::protocol::{PasskeyArming, PromptAsk, PromptDecision};
use crate::host::record::{DecidedBy, Details, DialogRecord};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use std::time::Duration;
use unmodal_engine::Policy;

/// Every kind's `Spec`, once.
static ALL: [&dyn Spec; 11] = [
    &auth::Auth,
    &permission::Permission,
    &device_chooser::DeviceChooser,
    &app_link::AppLink,
    &passkey::Passkey,
    &print::Print,
    &held_in_page::SIGN_IN,
    &held_in_page::PAYMENT,
    &held_in_page::STORAGE_ACCESS,
    &file_chooser::FileChooser,
    &download::Download,
];

/// What kind `kind` is, if it is a browser prompt (page dialogs are the engine's).
pub(in crate::host) fn spec(kind: Kind) -> Option<&'static dyn Spec> {
    ALL.iter().copied().find(|s| s.kind() == kind)
}

/// `go` with the request's kind, as the pipeline takes it.
pub(in crate::host) fn asked<R>(ask: &PromptAsk, go: impl FnOnce(&dyn PromptKind) -> R) -> R {
    match ask {
        PromptAsk::Auth(a) => go(a),
        PromptAsk::Permission(p) => go(p),
        PromptAsk::DeviceChooser(c) => go(c),
        PromptAsk::AppLink(l) => go(l),
        PromptAsk::Passkey(p) => go(p),
        PromptAsk::Print(p) => go(p),
        PromptAsk::SignIn(ask) => go(&held_in_page::Asked { of: &held_in_page::SIGN_IN, ask }),
        PromptAsk::Payment(ask) => go(&held_in_page::Asked { of: &held_in_page::PAYMENT, ask }),
        PromptAsk::StorageAccess(ask) => go(&held_in_page::Asked { of: &held_in_page::STORAGE_ACCESS, ask }),
        PromptAsk::FileChooser(p) => go(p),
        PromptAsk::Download(p) => go(p),
    }
}

/// What a kind is once its prompt is recorded: known from the record's `Kind` alone.
pub(in crate::host) trait Spec: Sync {
    fn kind(&self) -> Kind;
    /// The answer a closed record names ("Closed by the agent after 3 ms: {this}.").
    fn closed(&self, accepted: bool) -> &'static str;
    /// The end of the explanation when the answer did not reach the prompt (`settled`: the
    /// browser's own prompt settled first).
    fn gone(&self, _settled: bool) -> &'static str {
        "The page was gone before the answer reached it."
    }
    /// The end of the explanation when the extension answered it on its own.
    fn expired(&self) -> &'static str {
        EXPIRED_CANCELLED
    }
    /// Why the agent cannot accept `held` as it tried (`carrying`: with a login or files).
    fn accept_refused(&self, _held: &DialogRecord, _carrying: bool) -> Option<String> {
        None
    }
    /// What an accept carries when the agent gave nothing more (a print's file: the prints
    /// directory; the passkeys of the record's relying party).
    fn accept_with(&self, _held: &DialogRecord) -> With {
        With::Nothing
    }
    /// The answer field this kind alone takes, if `with` is it: what the agent is told when
    /// it sends it to another kind, or when none of this kind is held.
    fn carries(&self, _with: &With) -> Option<Carries> {
        None
    }
    /// What a new rule will do, as the setup answers it, if `rule` is of this kind.
    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String>;
}

/// An answer field of one kind's own (`Spec::carries`).
pub(in crate::host) struct Carries {
    /// "save_to answers only a print".
    pub only: &'static str,
    /// Why nothing could take it: none of the kind is held for the agent.
    pub none_held: &'static str,
}

/// The kind that alone takes `with`, and what it says of it.
pub(in crate::host) fn carrier(with: &With) -> Option<(Kind, Carries)> {
    ALL.iter().find_map(|k| k.carries(with).map(|c| (k.kind(), c)))
}

/// What a new rule of a browser prompt's kind will do, as the setup answers it.
pub(in crate::host) fn rule_set(rule: &RuleSpec, once: bool) -> String {
    ALL.iter().find_map(|k| k.rule_set(rule, once)).unwrap_or_default()
}

/// The setup's sentence for a rule: `what` it answers and what it `will` do.
pub(in crate::host) fn configured(what: &str, will: &str, once: bool) -> String {
    if once {
        format!("Auto-response configured for the next {what}: will {will}, then revert to default.")
    } else {
        format!("Auto-response configured for every {what} until cleared: will {will}.")
    }
}

pub(in crate::host) const EXPIRED_CANCELLED: &str = "The extension cancelled it: no answer came from the host in time.";
pub(in crate::host) const EXPIRED_REFUSED: &str = "The extension refused it: no answer came from the host in time.";

/// The pilot-off sentence: `what` the browser does itself.
pub(in crate::host) fn pilot_off(what: &str) -> String {
    format!("AI Web Pilot is off: {what}; a person must switch the pilot on (`unmodal pilot on` in a terminal)")
}

/// A policy's answer, as data: the decision and why.
#[derive(Clone, Copy)]
pub(in crate::host) enum Says {
    Accept(&'static str),
    Refuse(&'static str),
}

/// A kind's answer to each policy when no rule fits it. `{name}` in the words is filled
/// in by `verdict_with`.
pub(in crate::host) struct Policies {
    /// `must_respond` holds it for the agent: why, and how to answer.
    pub hold: &'static str,
    /// The default policy's (`auto`).
    pub auto: Says,
    pub auto_accept: Says,
    pub auto_dismiss: Says,
}

impl Policies {
    pub fn verdict(&self, policy: Policy) -> Verdict {
        self.verdict_with(policy, &[])
    }

    pub fn verdict_with(&self, policy: Policy, fill: &[(&str, &str)]) -> Verdict {
        let words = |w: &str| fill.iter().fold(w.to_string(), |w, (name, value)| w.replace(name, value));
        let (says, by) = match policy {
            Policy::MustRespond => return Verdict::Hold { why: words(self.hold) },
            Policy::Auto => (self.auto, DecidedBy::DefaultPolicy),
            Policy::AutoAccept => (self.auto_accept, DecidedBy::Policy),
            Policy::AutoDismiss => (self.auto_dismiss, DecidedBy::Policy),
        };
        match says {
            Says::Accept(why) => Verdict::policy(PromptDecision::Accept, by, words(why)),
            Says::Refuse(why) => Verdict::policy(PromptDecision::Refuse, by, words(why)),
        }
    }
}

/// The extension waits this much longer than the watchdog before it refuses a held prompt
/// on its own (so the watchdog's answer, recorded, comes first).
pub(in crate::host) const HOLD_MARGIN: Duration = Duration::from_secs(5);

/// What an accept carries to the worker besides the decision.
pub(in crate::host) enum With {
    Nothing,
    /// HTTP auth's login.
    Login(Credentials),
    /// A passkey request's: the relying party's keys arm the virtual authenticator; `keep`:
    /// what it makes is kept for the profile.
    Passkeys {
        rp_id: String,
        keep: bool,
    },
    /// A print's: the PDF file to write (none: Unmodal's prints directory).
    Pdf {
        to: Option<std::path::PathBuf>,
    },
    /// A download's: the directory a saved download is moved to (none: where the browser
    /// saved it).
    SaveDir(Option<std::path::PathBuf>),
    /// A file chooser's: the files the page gets (checked against the allowed directories
    /// by `unmodal mcp`, canonical).
    Files(Vec<std::path::PathBuf>),
}

/// What an answer's message carries to the worker.
#[derive(Default)]
pub(in crate::host) struct Carried {
    pub credentials: Option<Credentials>,
    pub passkeys: Option<PasskeyArming>,
    pub files: Option<Vec<String>>,
}

impl With {
    /// Applies what an answer to prompt `id` of `tab` (its record: `record`) carries: what
    /// goes to the worker, and what the kind keeps for the worker's result (where a print's
    /// PDF goes, a download's end).
    pub fn apply(self, s: &mut State, (tab, id, record): (i64, u64, u64), accept: bool) -> Carried {
        let mut carried = Carried::default();
        match self {
            Self::Login(c) if accept => carried.credentials = Some(c),
            Self::Passkeys { rp_id, keep } if accept => carried.passkeys = Some(passkey::arming(s, &rp_id, keep)),
            Self::Pdf { to } if accept => print::leave_job(s, (tab, id, record), to),
            Self::Files(f) if accept => carried.files = Some(f.iter().map(|p| p.display().to_string()).collect()),
            Self::SaveDir(to) => s.track_download(tab, id, record, to.filter(|_| accept)),
            _ => {}
        }
        carried
    }

    /// What an accept gives the prompt, on its record (a file chooser's files).
    pub fn name_on(&self, details: &mut Option<Details>) {
        if let Self::Files(files) = self {
            file_chooser::name_files(details, files);
        }
    }
}

/// How a prompt is answered as it comes.
pub(in crate::host) enum Verdict {
    Answer {
        decision: PromptDecision,
        with: With,
        by: DecidedBy,
        rule: Option<u32>,
        why: String,
    },
    /// Held for the agent (`must_respond`).
    Hold {
        why: String,
    },
}

impl Verdict {
    /// The policy's answer, for kinds whose words are all the kind's own.
    pub fn policy(decision: PromptDecision, by: DecidedBy, why: impl Into<String>) -> Self {
        Self::Answer { decision, with: With::Nothing, by, rule: None, why: why.into() }
    }

    /// Rule `id`'s answer.
    pub fn rule(decision: PromptDecision, id: u32, why: String) -> Self {
        Self::Answer { decision, with: With::Nothing, by: DecidedBy::Rule, rule: Some(id), why }
    }

    /// The same answer, carrying `with` to the worker (a login, passkeys, a PDF's file).
    pub fn carrying(self, with: With) -> Self {
        match self {
            Self::Answer { decision, by, rule, why, .. } => Self::Answer { decision, with, by, rule, why },
            hold => hold,
        }
    }
}

/// What a prompt's record says of it (page text already cut and redacted).
pub(in crate::host) struct Described {
    pub message: String,
    pub truncated: bool,
    pub redacted: Vec<String>,
    /// The URL rules match and the record shows.
    pub url: String,
    pub details: Option<Details>,
}

/// What a kind of browser prompt brings to the pipeline: implemented by its wire request.
pub(in crate::host) trait PromptKind {
    /// Checks what the worker passed on; `Err` refuses the message whole.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// Runs as the request comes, before anything is decided (auth: a challenge that came
    /// again means the last answer was refused).
    fn arrived(&self, _s: &mut State) {}
    fn describe(&self, redactor: &Redactor, url: &str) -> Described;
    /// How specific `rule` is, if it answers this prompt.
    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize>;
    /// A fitting rule's answer.
    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict;
    /// The tab's policy's answer when no rule fits.
    fn by_policy(&self, policy: Policy) -> Verdict;
    /// With no rule fitting: an answer that needs no record (the browser would not prompt).
    fn unprompted(&self) -> Option<PromptDecision> {
        None
    }
    /// Why it is left to the browser while the pilot is off.
    fn pilot_off(&self) -> String;
    /// Left to the browser (sent `native`) because it shows nothing here: why, in words.
    fn not_shown(&self) -> Option<String> {
        None
    }
    /// Left to the browser unanswered (pilot off, or not shown), recorded as `record`.
    fn left_to_browser(&self, _s: &mut State, _tab: i64, _id: u64, _record: u64) {}
    /// Pilot off, the browser's own prompt stays open until the request ends (auth).
    fn open_until_done(&self) -> bool {
        false
    }
}

/// A rule's `url_contains`, case-insensitive; none matches every URL.
pub(in crate::host) fn url_fits(url_contains: Option<&String>, url: &str) -> bool {
    url_contains.is_none_or(|u| url.to_lowercase().contains(&u.to_lowercase()))
}

impl Described {
    /// A record with only the kind's own words and the frame's URL (no page text).
    pub fn plain(message: &str, url: &str) -> Self {
        Self {
            message: message.into(),
            truncated: false,
            redacted: Vec::new(),
            url: crate::host::record::clip(url, 2048).0,
            details: None,
        }
    }
}
