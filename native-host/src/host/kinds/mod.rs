//! The kinds of browser prompt (what the browser shows and the host decides), one file
//! each, and the one list of them. A kind owns what is its own: its wire request's
//! `PromptKind` (how it is described, which rules fit it, its answer to each policy, its
//! pilot-off sentence) and its `Spec` (what its record says once it is answered, gone or
//! expired, what an agent's accept must carry). The pipeline (`prompt.rs`), the held
//! prompts (`held.rs`) and the sentences (`explain.rs`) ask this registry and never name
//! a kind.

pub(crate) mod app_link;
pub mod args;
pub(crate) mod auth;
pub(crate) mod device_chooser;
pub(crate) mod download;
pub mod rule;
pub(in crate::host) use download::names_for;
pub(crate) mod file_chooser;
pub(crate) mod held_in_page;
pub(crate) mod passkey;
pub(crate) mod permission;
pub(crate) mod print;
pub(crate) mod sign_in;

use crate::api::MatchArg;
use crate::host::answerer::{Act, PickError, Seen, Want};
use crate::host::protocol::{Carried, KindFields, KindMessage, PromptDecision, ToBrowser};
use crate::host::record::{DecidedBy, Details, DialogRecord};
use crate::host::rules::{self, RuleStore};
use crate::host::state::Rule;
use crate::host::state::State;
use crate::host::transport::{Outcome, Report};
use crate::kind::Kind;
use crate::redact::Redactor;
pub(crate) use args::Api;
pub use rule::{Carry, DialogCall, DialogType, RuleSpec};
use serde::Serialize;
use std::time::Duration;
use unmodal_engine::Policy;

/// Every kind's `Spec`, once.
static ALL: [&dyn Spec; 12] = [
    &auth::Auth,
    &permission::Permission,
    &device_chooser::DeviceChooser,
    &app_link::AppLink,
    &passkey::Passkey,
    &print::Print,
    &sign_in::SIGN_IN,
    &held_in_page::PAYMENT,
    &held_in_page::STORAGE_ACCESS,
    &held_in_page::EYE_DROPPER,
    &file_chooser::FileChooser,
    &download::Download,
];

/// What a `Kind` knows through the registry (`kind.rs` imports nothing of the host).
impl Kind {
    /// The kind named `name` on the wire: a page dialog or one of the registry's.
    pub(crate) fn from_wire(name: &str) -> Option<Self> {
        Self::all().find(|k| k.as_str() == name)
    }

    /// Every kind: the page dialogs, then the browser prompts in the registry's order.
    pub fn all() -> impl Iterator<Item = Self> {
        unmodal_engine::DialogKind::ALL.into_iter().map(Self::from).chain(all())
    }

    /// Open with no watchdog, what an agent must know: no answer reaches it (the kind's own
    /// words, `Spec::unanswerable`).
    pub fn unanswerable(self) -> Option<&'static str> {
        unanswerable(self)
    }
}

impl<'de> serde::Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Self::from_wire(&name).ok_or_else(|| {
            let names: Vec<String> = Self::all().map(|k| format!("`{}`", k.as_str())).collect();
            serde::de::Error::custom(format!("unknown variant `{name}`, expected one of {}", names.join(", ")))
        })
    }
}

impl schemars::JsonSchema for Kind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Kind".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Self::all().map(Self::as_str).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// Every browser prompt's kind, in the registry's order.
pub(crate) fn all() -> impl Iterator<Item = Kind> {
    ALL.iter().map(|k| k.kind())
}

/// What an agent must know of `kind` held open with no watchdog (`Spec::unanswerable`).
pub(crate) fn unanswerable(kind: Kind) -> Option<&'static str> {
    spec(kind).and_then(|k| k.unanswerable())
}

/// The kind a rule is of (none: a page dialog's rule).
fn owner(rule: &RuleSpec) -> Option<&'static dyn Spec> {
    rule.kind().and_then(spec)
}

/// A rule that gives the page files: refused while the extension cannot reach them.
pub(in crate::host) fn needs_file_access(rule: &RuleSpec) -> bool {
    owner(rule).is_some_and(|k| k.needs_file_access(rule))
}

/// The rule store's slots and limits: a page dialog's rules by target, a kind's as it says.
impl rules::Rule for RuleSpec {
    fn group(&self) -> &'static str {
        match self {
            Self::Dialog { .. } => "dialog",
            rule => owner(rule).map_or("", |k| k.group()),
        }
    }

    fn same_slot(&self, other: &Self) -> bool {
        self.matcher() == other.matcher()
            && match (self, other) {
                (Self::Dialog { target: a, .. }, Self::Dialog { target: b, .. }) => a == b,
                (a, b) => owner(a).is_some_and(|k| b.kind() == Some(k.kind()) && k.same_slot(a, b)),
            }
    }
}

/// A rule of any kind as answers show it: what it answers, never a password.
#[derive(Serialize)]
pub struct RuleView<'a> {
    rule_id: u32,
    dialog_type: &'static str,
    accept: bool,
    once: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    /// The kind's own fields (`Spec::view`).
    #[serde(flatten)]
    own: serde_json::Map<String, serde_json::Value>,
    #[serde(rename = "match", skip_serializing_if = "MatchArg::is_empty")]
    matcher: &'a MatchArg,
}

impl<'a> From<&'a Rule> for RuleView<'a> {
    fn from(r: &'a Rule) -> Self {
        let mut v = RuleView {
            rule_id: r.id,
            dialog_type: r.rule.dialog_type(),
            accept: r.rule.accept(),
            once: r.once,
            text: None,
            own: serde_json::Map::new(),
            matcher: r.rule.matcher(),
        };
        match &r.rule {
            RuleSpec::Dialog { text, .. } => v.text = text.as_deref(),
            rule => {
                if let Some(k) = owner(rule) {
                    k.view(rule, &mut v.own);
                }
            }
        }
        v
    }
}

/// What kind `kind` is, if it is a browser prompt (page dialogs are the engine's).
pub(in crate::host) fn spec(kind: Kind) -> Option<&'static dyn Spec> {
    ALL.iter().copied().find(|s| s.kind() == kind)
}

/// `go` with the request of `kind` its `fields` make, as the pipeline takes it. `Err`
/// refuses the message whole: not a browser prompt's kind, or fields its kind cannot read.
pub(in crate::host) fn asked<R>(
    kind: Kind,
    fields: serde_json::Map<String, serde_json::Value>,
    go: impl FnOnce(&dyn PromptKind) -> Result<R, String>,
) -> Result<R, String> {
    let spec = spec(kind).ok_or_else(|| format!("{} is not a browser prompt", kind.as_str()))?;
    let ask = spec.ask(serde_json::Value::Object(fields)).map_err(|e| {
        format!("{} {} request the host cannot read: {e}", crate::api::article(kind.as_str()), kind.as_str())
    })?;
    go(&*ask)
}

/// The host's view of the tabs changed: each kind hears of it.
pub(in crate::host) fn tabs_changed(s: &mut State) {
    for k in ALL {
        k.tabs_changed(s);
    }
}

/// The pilot just went off: each kind lets go of what only the pilot allowed (a chooser the
/// answerer watched for a pick). What to send the browser.
pub(in crate::host) fn pilot_went_off(s: &mut State) -> Vec<ToBrowser> {
    ALL.iter().flat_map(|k| k.pilot_went_off(s)).collect()
}

/// The kinds' own dialogs open in the browser that nothing answers: (record, tab, opened).
pub(in crate::host) fn shown(s: &State) -> Vec<(u64, i64, std::time::Instant)> {
    ALL.iter().flat_map(|k| k.shown(s)).collect()
}

/// Why record `id`, not held, cannot be answered, if a kind knows it.
pub(in crate::host) fn not_held(s: &State, id: u64) -> Option<String> {
    ALL.iter().find_map(|k| k.not_held(s, id))
}

/// As the host starts: each kind opens what it keeps in the data directory.
pub(in crate::host) fn open(s: &mut State, data_dir: &std::path::Path) {
    for k in ALL {
        k.open(s, data_dir);
    }
}

/// What each kind keeps for a later host of this browser session, by its name.
pub(in crate::host) fn saved(s: &State) -> std::collections::BTreeMap<String, serde_json::Value> {
    ALL.iter().filter_map(|k| Some((k.kind().as_str().to_owned(), k.saved(s)?))).collect()
}

/// Gives each kind back what it saved (a name no kind has is left alone).
pub(in crate::host) fn restore(s: &mut State, saved: std::collections::BTreeMap<String, serde_json::Value>) {
    for (name, value) in saved {
        if let Some(k) = ALL.iter().find(|k| k.kind().as_str() == name) {
            k.restore(s, value);
        }
    }
}

/// Each kind adds its fields to a tab's config message.
impl rules::TabConfig for RuleSpec {
    fn tab_config(rules: &RuleStore<RuleSpec>, tab: i64, policy: Policy) -> (KindFields, bool) {
        let mut fields = KindFields::new();
        let mut debugger = false;
        for k in ALL {
            debugger |= k.tab_config(rules, tab, policy, &mut fields);
        }
        (fields, debugger)
    }
}

/// A kind's own message, to the kind whose `type` it is. `Err` refuses it whole.
pub(in crate::host) fn on_message(s: &mut State, m: KindMessage) -> Result<Vec<ToBrowser>, String> {
    let kind = ALL
        .iter()
        .find(|k| k.message() == Some(m.name.as_str()))
        .ok_or_else(|| format!("no message of type {:?}", m.name))?;
    kind.on_message(s, serde_json::Value::Object(m.fields))
        .map_err(|e| format!("a {} message the host cannot read: {e}", m.name))
}

/// A request of kind `T` read from what the worker sent.
fn read<'a, T: serde::de::DeserializeOwned + PromptKind + 'a>(
    fields: serde_json::Value,
) -> Result<Box<dyn PromptKind + 'a>, serde_json::Error> {
    Ok(Box::new(T::deserialize(fields)?))
}

/// What a kind is once its prompt is recorded: known from the record's `Kind` alone.
pub(in crate::host) trait Spec: Sync {
    /// What it is called and what its record says, as data.
    fn words(&self) -> &Words;
    fn kind(&self) -> Kind {
        self.words().kind
    }
    /// Open with no watchdog, what an agent must know: no answer reaches it.
    fn unanswerable(&self) -> Option<&'static str> {
        None
    }
    /// The host's view of the tabs changed (closed, gone to another site).
    fn tabs_changed(&self, _s: &mut State) {}
    /// Dialogs of its own open in the browser that nothing answers: (record, tab, opened).
    fn shown(&self, _s: &State) -> Vec<(u64, i64, std::time::Instant)> {
        Vec::new()
    }
    /// Why record `id`, not held, cannot be answered, if it is one of its own still open.
    fn not_held(&self, _s: &State, _id: u64) -> Option<String> {
        None
    }
    /// Its part of `interact`: its own fields, its rule, its answer (`args.rs`).
    fn api(&self) -> Option<&Api> {
        None
    }
    /// Its request, read from the fields the worker sent (`manifest/prompts.js`).
    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error>;
    /// The `type` of the one message of its own the worker sends, if it has one.
    fn message(&self) -> Option<&'static str> {
        None
    }
    /// Its own message, read from the fields the worker sent.
    fn on_message(&self, _s: &mut State, _fields: serde_json::Value) -> Result<Vec<ToBrowser>, serde_json::Error> {
        Ok(Vec::new())
    }
    /// As the host starts: what it keeps in Unmodal's data directory.
    fn open(&self, _s: &mut State, _data_dir: &std::path::Path) {}
    /// What of its state a later host of this browser session takes over (in the
    /// session's state file, `persist.rs`).
    fn saved(&self, _s: &State) -> Option<serde_json::Value> {
        None
    }
    /// Takes back what `saved` gave, from the host before this one.
    fn restore(&self, _s: &mut State, _saved: serde_json::Value) {}
    /// What the worker must know of this kind for `tab` beside the page's rules, as fields of
    /// the tab's config message (they are sent again whenever `RuleSpec::in_config` rules
    /// change). `true`: they need the tab's debugger session.
    fn tab_config(&self, _rules: &RuleStore<RuleSpec>, _tab: i64, _policy: Policy, _fields: &mut KindFields) -> bool {
        false
    }
    /// Its rules' name in the rule store's per-tab limit.
    fn group(&self) -> &'static str {
        self.words().group
    }
    /// Whether two of its rules with the same match take one slot (the new replaces the old).
    fn same_slot(&self, _a: &RuleSpec, _b: &RuleSpec) -> bool {
        true
    }
    /// A rule's own fields as answers show it (never a password).
    fn view(&self, _rule: &RuleSpec, _v: &mut serde_json::Map<String, serde_json::Value>) {}
    /// A rule that gives the page files (refused while the extension cannot reach them).
    fn needs_file_access(&self, _rule: &RuleSpec) -> bool {
        false
    }
    /// The answer a closed record names ("Closed by the agent after 3 ms: {this}.").
    fn closed(&self, accepted: bool) -> &'static str {
        let (yes, no) = self.words().closed;
        if accepted { yes } else { no }
    }
    /// The end of the explanation when the answer did not reach the prompt (`settled`: the
    /// browser's own prompt settled first).
    fn gone(&self, _settled: bool) -> &'static str {
        "The page was gone before the answer reached it."
    }
    /// The end of the explanation when the extension answered it on its own.
    fn expired(&self) -> &'static str {
        self.words().expired
    }
    /// Why the agent cannot accept `held` as it tried (`carrying`: with a login or files).
    fn accept_refused(&self, _held: &DialogRecord, _carrying: bool) -> Option<String> {
        None
    }
    /// Why the host accepts no such prompt, whoever answered it (a rule, a policy, the
    /// agent): its own check of the record's `url` and `details` against what it knows
    /// itself (a passkey's relying party against the pages open), never the worker's word.
    fn host_refuses(&self, _s: &State, _url: &str, _details: &Details) -> Option<String> {
        None
    }
    /// What an accept carries when the agent gave nothing more (a print's file: the prints
    /// directory; the passkeys of the record's relying party).
    fn accept_with(&self, _held: &DialogRecord) -> With {
        With::Nothing
    }
    /// What the agent is told when it sends the answer field this kind alone takes to
    /// another kind, or when none of this kind is held.
    fn carries(&self) -> Option<Carries> {
        None
    }
    /// What a new rule will do, as the setup answers it, if `rule` is of this kind.
    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String>;
    /// What the setup's answer adds about where the rule cannot act in this set-up, if
    /// `rule` is of this kind (the host's own view of the browser, never the worker's).
    fn rule_caveat(&self, _s: &State, _rule: &RuleSpec) -> Option<String> {
        None
    }
    /// What it wants the host's CDP answerer to see (`answerer/`), from what is in force:
    /// its rules, policies and held prompts. Nothing, by default: nothing is attached.
    fn answerer_want(&self, _s: &State) -> Want {
        Want::NONE
    }
    /// A change the CDP answerer saw (a prompt opened, its choices changed, it closed; a
    /// download): the kind records it and says what to send and which answers to give.
    fn answerer_seen(&self, _s: &mut State, _seen: &Seen, _out: &mut Answered) {}
    /// What it made so far of what the CDP answerer saw, if anything (for the end-to-end
    /// tests' hook, `answerer_hook.rs`: the barrier after which the host has acted on it).
    fn answerer_settled(&self, _s: &State) -> Option<serde_json::Value> {
        None
    }
    /// Why the agent's accept of `held` with `with` cannot be given now, from what the host
    /// knows (a device the chooser does not offer): the prompt stays held.
    fn accept_check(&self, _s: &State, _held: &DialogRecord, _with: &With) -> Option<String> {
        None
    }
    /// A prompt of its own was just held (record `record`): what to send the browser at once.
    fn prompt_held(&self, _s: &mut State, _record: u64) -> Vec<ToBrowser> {
        Vec::new()
    }
    /// The pilot went off, in the same change of state (before the answerer lets its
    /// sessions go and before anything the browser says after): what to send the browser.
    fn pilot_went_off(&self, _s: &mut State) -> Vec<ToBrowser> {
        Vec::new()
    }
    /// A prompt of its own that was held closed as the worker reported (record `record`).
    fn prompt_closed(&self, _s: &mut State, _record: u64) {}
    /// How an answer it asked for (`Answered::acts`) went.
    fn answerer_acted(&self, _s: &mut State, _act: &Act, _result: &Result<(), PickError>, _out: &mut Answered) {}
    /// Whether held record `record` is a prompt the host's own CDP connection answers (a
    /// FedCM account chooser): the worker does not hold it, so what the worker says of it is
    /// not its answer, and the kind closes it.
    fn answered_on_connection(&self, _s: &State, _record: u64) -> bool {
        false
    }
    /// How a job it gave the host's own transport went (a copy from or to a remote
    /// browser's machine): the host's word, never the browser's. What to send the browser.
    fn transport_done(&self, _s: &mut State, _done: &Outcome) -> Vec<ToBrowser> {
        Vec::new()
    }
}

/// The kind that gave the transport its job hears how it went.
pub(in crate::host) fn transport_report(s: &mut State, report: &Report) -> Vec<ToBrowser> {
    spec(report.kind).map(|k| k.transport_done(s, &report.done)).unwrap_or_default()
}

/// What the kinds make of a change the CDP answerer saw.
#[derive(Default)]
pub(in crate::host) struct Answered {
    /// Messages for the browser, in order.
    pub to_browser: Vec<ToBrowser>,
    /// Answers for the answerer to give, with the kind that asked (it hears how each went).
    pub acts: Vec<(Kind, Act)>,
}

/// What the kinds want the CDP answerer to see now.
pub(in crate::host) fn answerer_want(s: &State) -> Want {
    ALL.iter().fold(Want::NONE, |w, k| w | k.answerer_want(s))
}

/// What each kind made so far of what the CDP answerer saw, by its name.
pub(in crate::host) fn answerer_settled(s: &State) -> serde_json::Map<String, serde_json::Value> {
    ALL.iter().filter_map(|k| Some((k.kind().as_str().to_owned(), k.answerer_settled(s)?))).collect()
}

/// Every kind hears of a change the CDP answerer saw.
pub(in crate::host) fn answerer_seen(s: &mut State, seen: &Seen) -> Answered {
    let mut out = Answered::default();
    for k in ALL {
        k.answerer_seen(s, seen, &mut out);
    }
    out
}

/// The kind that asked for `act` hears how it went.
pub(in crate::host) fn answerer_acted(
    s: &mut State,
    kind: Kind,
    act: &Act,
    result: &Result<(), PickError>,
) -> Answered {
    let mut out = Answered::default();
    if let Some(k) = spec(kind) {
        k.answerer_acted(s, act, result, &mut out);
    }
    out
}

/// What a kind is called and what its record says.
pub(in crate::host) struct Words {
    pub kind: Kind,
    /// Its rules' name in the rule store's per-tab limit ("file chooser").
    pub group: &'static str,
    /// A closed record's answer: (accepted, refused).
    pub closed: (&'static str, &'static str),
    /// The end of the explanation when the extension answered on its own
    /// (`EXPIRED_CANCELLED`, `EXPIRED_REFUSED`, or the kind's own).
    pub expired: &'static str,
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
    let With::Own(c) = with else { return None };
    spec(c.kind()).and_then(|k| Some((k.kind(), k.carries()?)))
}

/// What a new rule of a browser prompt's kind will do, as the setup answers it.
pub(in crate::host) fn rule_set(rule: &RuleSpec, once: bool) -> String {
    ALL.iter().find_map(|k| k.rule_set(rule, once)).unwrap_or_default()
}

/// What the setup's answer adds about where a new rule cannot act now.
pub(in crate::host) fn rule_caveat(s: &State, rule: &RuleSpec) -> Option<String> {
    ALL.iter().find_map(|k| k.rule_caveat(s, rule))
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

/// What an accept carries to the worker besides the decision: nothing, or the kind's own
/// value (a login, the passkeys to arm, a PDF's file, a download's directory, files).
pub(in crate::host) enum With {
    Nothing,
    Own(Carry),
}

impl With {
    /// A kind's own value.
    pub fn own(c: impl rule::CarryOf) -> Self {
        Self::Own(Carry::new(c))
    }

    /// Applies what an answer to prompt `id` of `tab` (its record: `record`) carries: what
    /// goes to the worker, and what the kind keeps for the worker's result (where a print's
    /// PDF goes, a download's end).
    pub fn apply(self, s: &mut State, ids: (i64, u64, u64), accept: bool) -> Carried {
        match self {
            Self::Nothing => Carried::default(),
            Self::Own(c) => c.apply(s, ids, accept),
        }
    }

    /// What an accept gives the prompt, on its record (a file chooser's files).
    pub fn name_on(&self, details: &mut Details) {
        if let Self::Own(c) = self {
            c.name_on(details);
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

    /// An accept `refused` gives a reason for becomes a refusal that says why (the rule or
    /// policy that would have accepted it stays named).
    pub fn unless(self, refused: impl FnOnce() -> Option<String>) -> Self {
        let Self::Answer { decision: PromptDecision::Accept, by, rule, why, .. } = &self else { return self };
        match refused() {
            Some(reason) => Self::Answer {
                decision: PromptDecision::Refuse,
                with: With::Nothing,
                by: *by,
                rule: *rule,
                why: format!("{reason} (what would have accepted it: {why})"),
            },
            None => self,
        }
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
    pub details: Details,
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
            details: Details::default(),
        }
    }
}

#[cfg(test)]
pub(in crate::host) mod tests {
    use crate::api::MatchArg;
    use crate::host::kinds::{DialogType, RuleSpec};
    use crate::host::protocol::ToBrowser;
    use crate::host::state::in_config;
    use crate::host::state::tests::{dialog_rule, feed, state_with};
    use serde_json::json;
    use unmodal_engine::{Policy, RuleTarget};

    /// The registry reads a request's fields as its kind's: fields its kind cannot read,
    /// or a page dialog's kind, refuse the message whole and leave nothing behind.
    #[test]
    fn a_request_its_kind_cannot_read_is_refused_whole() {
        let mut s = state_with(Policy::MustRespond);
        let ask = |kind: &str, more: serde_json::Value| {
            let mut m = json!({"type":"prompt_request","tab_id":3,"id":1,"url":"http://a/","kind":kind});
            m.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
            m
        };
        let e = feed(&mut s, ask("passkey", json!({"rp_id":"a"}))).unwrap_err();
        assert!(e.contains("a passkey request the host cannot read") && e.contains("operation"), "{e}");
        let e = feed(&mut s, ask("file_chooser", json!({"mode":7}))).unwrap_err();
        assert!(e.contains("a file_chooser request the host cannot read"), "{e}");
        let e = feed(&mut s, ask("confirm", json!({}))).unwrap_err();
        assert_eq!(e, "confirm is not a browser prompt");
        assert!(s.held.is_empty() && ringbuf::traits::Observer::is_empty(&s.history), "nothing recorded or held");
        // The same request, readable, is held (must_respond).
        feed(&mut s, ask("passkey", json!({"rp_id":"a","operation":"get"}))).unwrap();
        assert_eq!(s.held.len(), 1);
    }

    /// One rule of every kind (and both sides of each kind's split), so a new kind cannot
    /// be forgotten: the match below has no wildcard.
    pub(in crate::host) fn one_of_each() -> Vec<RuleSpec> {
        use crate::host::kinds::device_chooser::ChooserApi;
        use crate::host::kinds::permission::PermissionName;
        let m = MatchArg::default;
        let rules = vec![
            dialog_rule(RuleTarget::All, true),
            RuleSpec::own(crate::host::kinds::auth::AuthRule { credentials: None, matcher: m() }),
            RuleSpec::own(crate::host::kinds::permission::PermissionRule {
                accept: true,
                permission: Some(PermissionName::AutomaticDownloads),
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::permission::PermissionRule {
                accept: false,
                permission: Some(PermissionName::AutomaticDownloads),
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::permission::PermissionRule {
                accept: true,
                permission: Some(PermissionName::Camera),
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::permission::PermissionRule {
                accept: true,
                permission: None,
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::device_chooser::DeviceChooserRule {
                chooser: Some(ChooserApi::Usb),
                pick: None,
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::device_chooser::DeviceChooserRule {
                chooser: None,
                pick: Some(crate::host::kinds::device_chooser::DevicePick::First),
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::app_link::AppLinkRule { accept: true, matcher: m() }),
            RuleSpec::own(crate::host::kinds::passkey::PasskeyRule { accept: true, keep: false, matcher: m() }),
            RuleSpec::own(crate::host::kinds::print::PrintRule { accept: false, save_to: None, matcher: m() }),
            RuleSpec::own(crate::host::kinds::sign_in::SignInRule { accept: false, account: None, matcher: m() }),
            RuleSpec::own(crate::host::kinds::held_in_page::HeldRule {
                kind: crate::host::kinds::held_in_page::PAYMENT_KIND,
                accept: false,
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::held_in_page::HeldRule {
                kind: crate::host::kinds::held_in_page::STORAGE_ACCESS_KIND,
                accept: false,
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::held_in_page::HeldRule {
                kind: crate::host::kinds::held_in_page::EYE_DROPPER_KIND,
                accept: false,
                matcher: m(),
            }),
            RuleSpec::own(crate::host::kinds::file_chooser::FileChooserRule { files: Vec::new(), matcher: m() }),
            RuleSpec::own(crate::host::kinds::download::DownloadRule { accept: false, save_dir: None, matcher: m() }),
        ];
        // Every kind of the registry has one.
        for k in super::all() {
            assert!(rules.iter().any(|r| r.kind() == Some(k)), "{k:?} has no rule here");
        }
        rules
    }

    #[test]
    fn in_config_is_exactly_what_changes_the_config() {
        for policy in [Policy::Auto, Policy::MustRespond] {
            for rule in one_of_each() {
                let mut s = state_with(policy);
                let without = s.config_at(3, 0);
                s.add_rule(3, false, rule.clone()).unwrap();
                let changed = s.config_at(3, 0) != without;
                // Under must_respond choosers are intercepted anyway: a file chooser's rule
                // is in the config but changes nothing there until the policy goes.
                let exact = policy == Policy::Auto;
                assert!(changed == in_config(&rule) || (!exact && !changed), "{rule:?} under {policy:?}");
                assert_eq!(s.configured_tabs().any(|t| t == 3), in_config(&rule) || s.policies.contains_key(&3));
            }
        }
    }

    #[test]
    fn clear_and_spend_resend_the_config_exactly_when_it_changes() {
        for rule in one_of_each() {
            let what = rule.kind().map_or(DialogType::ALL, DialogType::of);
            let mut s = state_with(Policy::Auto);
            s.add_rule(3, false, rule.clone()).unwrap();
            let (removed, msg) = s.clear_rules(3, what);
            assert_eq!((removed, msg.is_some()), (1, in_config(&rule)), "clear {rule:?} with {what:?}");
            if let Some(msg) = msg {
                assert_eq!(msg, s.config_at(3, s.config_rev), "the config without it");
            }
            let spent = s.add_rule(3, true, rule.clone()).unwrap().id;
            assert_eq!(s.spend_rule(3, spent).is_some(), in_config(&rule), "spend {rule:?}");
        }
    }

    #[test]
    fn a_cleared_download_grant_leaves_the_workers_config() {
        let mut s = state_with(Policy::Auto);
        let grant = &one_of_each()[2];
        s.add_rule(3, false, grant.clone()).unwrap();
        let downloads = |m: &ToBrowser| serde_json::to_value(m).unwrap()["downloads"].clone();
        assert_eq!(downloads(&s.config_message(3)), true);
        let (_, msg) = s.clear_rules(3, DialogType::of(crate::host::kinds::permission::KIND));
        let msg = msg.expect("the config again");
        assert!(matches!(msg, ToBrowser::Config { tab_id: 3, .. }), "{msg:?}");
        assert_eq!(downloads(&msg), serde_json::Value::Null, "{msg:?}");
    }
}
