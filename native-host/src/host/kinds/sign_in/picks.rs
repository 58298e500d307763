//! A sign-in's account picked in the browser's FedCM account chooser, through the host's
//! CDP answerer (`answerer/`). The call was let through for a pick (`Pick`, carried by the
//! accept); the chooser the answerer then sees at the frame's URL is this call's
//! (`Answerer::find`'s matching: the URL it sees itself, never the page's word), and:
//! - a rule's pick is given at once (`Act::SelectAccount`), or, no account fitting, the
//!   chooser is closed (the page gets NetworkError); the let-through record lists the
//!   accounts and names the pick;
//! - under `must_respond` the call was held for the agent before the provider was asked;
//!   the agent's accept let it through (`Choice`), and the chooser is held for the agent as
//!   a record of its own (the watchdog armed), answered with `account_id` (`Choice`); it is
//!   closed here once the answerer saw it close. The worker never held it: what it says of it is not its answer
//!   (`Spec::answered_on_connection`).
//! - the other dialogs: `Error` is closed with its "got it" button (the page gets the
//!   provider's error), `ConfirmIdpLogin` (the provider wants a person to log in, in a
//!   window of its own) is closed, `AutoReauthn` (the browser signs a returning account in
//!   by itself) is left to go on for a rule whose account it is, closed otherwise.
//!
//! Names and emails are personal data: the record shows them through the redactor.

use super::{AccountPick, SIGN_IN_KIND, SignInRule};
use crate::host::answerer::{Account, Act, Answerer, ClosedBy, DialogButton, PickError, PilotOn, PromptView, Seen};
use crate::host::kinds::Answered;
use crate::host::kinds::rule::CarryOf;
use crate::host::protocol::{Carried, ToBrowser};
use crate::host::record::{self, DecidedBy, DialogRecord, DialogState, HeldDialog};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use unmodal_engine::Policy;

/// How long a call let through waits for its chooser to be seen (the provider's answers
/// come within a second on loopback; a provider that never answers leaves the browser's own
/// NetworkError).
const PENDING_FOR: Duration = Duration::from_secs(60);
/// Accounts a record lists, at most.
const MAX_ROWS: usize = 32;
/// Calls let through that wait for their chooser, at most (a page that floods sign-ins
/// under a rule that picks: the browser shows one chooser at a time and refuses the rest
/// itself); the oldest are forgotten first.
const MAX_PENDING: usize = 64;

/// Who picks once the chooser shows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PickBy {
    Rule { rule: u32, account: AccountPick },
    Agent,
}

/// An accept that lets the call through for a pick: the frame's URL, who picks.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pick {
    pub url: String,
    pub by: PickBy,
}

impl CarryOf for Pick {
    fn kind(&self) -> Kind {
        SIGN_IN_KIND
    }
    fn apply(self: Box<Self>, s: &mut State, (tab, hold, record): (i64, u64, u64), accept: bool) -> Carried {
        if accept {
            let p = s.kinds.get::<Picker>();
            p.pending.push(Pending { record, tab, hold, url: self.url, by: self.by, at: Instant::now() });
            p.trim();
        }
        Carried::default()
    }
    crate::own_plumbing!(carry);
}

/// The agent's (or the watchdog's) answer to a held chooser: the account (none: the only
/// one offered, on an accept).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Choice(pub Option<String>);

impl CarryOf for Choice {
    fn kind(&self) -> Kind {
        SIGN_IN_KIND
    }
    fn apply(self: Box<Self>, s: &mut State, (tab, hold, record): (i64, u64, u64), accept: bool) -> Carried {
        if is_chooser(s, record) {
            answer_chooser(s, record, accept, self.0);
            return Carried::default();
        }
        // The agent's accept of the sign-in call held under must_respond: where the answerer
        // covers its frame, it goes through for the agent's pick (its chooser held next);
        // elsewhere it is left to the browser, as before.
        let url = s.held.iter().find(|h| h.record.id == record).map(|h| h.record.url.clone()).unwrap_or_default();
        if accept && super::covers(s.pilot, Some(&s.answerer), &url) {
            let p = s.kinds.get::<Picker>();
            p.pending.push(Pending { record, tab, hold, url, by: PickBy::Agent, at: Instant::now() });
            p.trim();
        }
        Carried::default()
    }
    crate::own_plumbing!(carry);
}

/// What the kind keeps: calls let through whose chooser is not seen yet, and the choosers
/// it answers.
#[derive(Debug, Default)]
pub(super) struct Picker {
    pending: Vec<Pending>,
    choosers: Vec<Chooser>,
    /// Accounts picked whose provider may still answer with an error: the browser then
    /// shows its `Error` dialog, a new one, after the chooser closed (measured: nobody
    /// closing it, the page waits for ever).
    picked: Vec<Picked>,
}

#[derive(Debug)]
struct Picked {
    url: String,
    /// The record that says how the call went.
    record: u64,
    at: Instant,
}

impl Picker {
    fn trim(&mut self) {
        let over = self.pending.len().saturating_sub(MAX_PENDING);
        self.pending.drain(..over);
        let over = self.picked.len().saturating_sub(MAX_PENDING);
        self.picked.drain(..over);
    }

    /// Account picked for `record` at `url`: its provider's error dialog is this kind's.
    fn picked(&mut self, url: &str, record: u64) {
        self.picked.push(Picked { url: url.to_owned(), record, at: Instant::now() });
        self.trim();
    }
}

#[derive(Debug)]
struct Pending {
    /// The let-through record.
    record: u64,
    tab: i64,
    /// The worker's number for the call (long answered): a held chooser's `hold`.
    hold: u64,
    url: String,
    by: PickBy,
    at: Instant,
}

#[derive(Debug)]
struct Chooser {
    /// The answerer's number for it.
    prompt: u64,
    /// The record that lists it: the let-through one (a rule's pick), or its own, held.
    record: u64,
    held: bool,
    /// The browser signs a returning account in by itself (`AutoReauthn`): it closes the
    /// dialog itself, and no client can stop it.
    auto: bool,
}

/// What a sign-in's record says besides a dialog's fields.
#[derive(Default, Serialize, Deserialize)]
pub(super) struct SignInDetails {
    /// The browser's dialog: `AccountChooser`, `ConfirmIdpLogin`, `Error`, `AutoReauthn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_dialog: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<AccountRow>,
    /// The account picked (its `account_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked_account: Option<String>,
    /// The provider answered the picked account's assertion with an error (the browser's
    /// `Error` dialog followed, closed with "got it").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_error: bool,
    /// The returning account the browser signed in by itself (`AutoReauthn`), whoever was
    /// to pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_reauthn_account: Option<String>,
}

/// An account as the record lists it (name and email redacted like page text).
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct AccountRow {
    account_id: String,
    name: String,
    email: String,
    config_url: String,
    login_state: String,
}

/// Whether the answerer should see FedCM dialogs: a rule picks an account, a tab holds
/// for the agent, or a call let through waits for its chooser.
pub(super) fn wanted(s: &State) -> bool {
    let picks = |t| s.rules.of(t).iter().any(|r| r.rule.of::<SignInRule>().is_some_and(|r| r.account.is_some()));
    s.rules.tabs().any(picks)
        || s.policies.values().any(|p| p.policy == Policy::MustRespond)
        || s.kinds.peek::<Picker>().is_some_and(|p| {
            // A pick's error dialog comes within a second or so; an old pick wants nothing.
            let fresh = p.picked.iter().any(|x| x.at.elapsed() < PENDING_FOR);
            !p.pending.is_empty() || !p.choosers.is_empty() || fresh
        })
}

/// Why no pick can come, in words.
pub(super) fn why_no_pick(answerer: Option<&Answerer>) -> &'static str {
    if answerer.is_some_and(Answerer::held) {
        "Unmodal's own DevTools connection does not cover this frame (its target is not attached with FedCm on), so \
nothing can be picked"
    } else {
        "Unmodal holds no DevTools connection to this browser (unmodal mcp --browser and --cdp-endpoint do), so nothing \
can be picked"
    }
}

/// Whether held `record` is a chooser this kind answers.
pub(super) fn is_chooser(s: &State, record: u64) -> bool {
    s.kinds.peek::<Picker>().is_some_and(|p| p.choosers.iter().any(|c| c.held && c.record == record))
}

/// An accept without an account: refused unless exactly one is offered.
pub(super) fn accept_refused(held: &DialogRecord, carrying: bool) -> Option<String> {
    let d: SignInDetails = held.details.read()?;
    (!carrying && d.account_dialog.as_deref() == Some("AccountChooser") && d.accounts.len() != 1).then(|| {
        format!(
            "Dialog {} is a sign-in account chooser: pick an account with account_id (offered: {}), or answer accept: \
false to close it",
            held.id,
            ids(d.accounts.iter().map(|a| a.account_id.as_str()))
        )
    })
}

/// A change the answerer saw.
pub(super) fn seen(s: &mut State, seen: &Seen, out: &mut Answered) {
    match seen {
        Seen::Opened(v) if v.which == crate::host::answerer::Which::Accounts => opened(s, v, out),
        Seen::Updated(v) => updated(s, v),
        Seen::Closed { prompt, by } => closed(s, *prompt, *by),
        _ => {}
    }
}

/// How an answer this kind asked for went: a failure is said on the record.
pub(super) fn acted(s: &mut State, act: &Act, result: &Result<(), PickError>) {
    let Err(e) = result else { return };
    let prompt = act.prompt();
    let Some(record) = s.kinds.get::<Picker>().choosers.iter().find(|c| c.prompt == prompt).map(|c| c.record) else {
        return;
    };
    edit(s, record, |r| r.explanation = format!("{} The answer did not reach the chooser: {e}.", r.explanation));
}

fn opened(s: &mut State, v: &PromptView, out: &mut Answered) {
    let now = Instant::now();
    let p = s.kinds.get::<Picker>();
    p.pending.retain(|x| now.duration_since(x.at) < PENDING_FOR);
    p.picked.retain(|x| now.duration_since(x.at) < PENDING_FOR);
    let Some(pos) = p.pending.iter().position(|x| x.url == v.url) else { return provider_error(s, v, out) };
    // `AutoReauthn` is answered by the browser alone, often closed before the host hears it
    // opened (measured under load: the record then never named it): it needs no claim.
    let auto = v.dialog_type.as_deref() == Some("AutoReauthn");
    if !s.answerer.claim(v.prompt) && !auto {
        return;
    }
    let pending = s.kinds.get::<Picker>().pending.remove(pos);
    let (rows, redacted) = rows(&s.redactor, &v.accounts);
    let dialog = v.dialog_type.clone().unwrap_or_default();
    let details = SignInDetails {
        account_dialog: Some(dialog.clone()),
        accounts: rows,
        picked_account: None,
        provider_error: false,
        auto_reauthn_account: None,
    };
    let offered = ids(v.accounts.iter().map(|a| a.account_id.as_str()));
    let prompt = v.prompt;
    let act = |a: Act| (SIGN_IN_KIND, a);
    let chosen = match &pending.by {
        PickBy::Rule { account, .. } => choose(account, &v.accounts),
        PickBy::Agent => None,
    };
    let (said, answer) = match (dialog.as_str(), &pending.by) {
        ("AccountChooser", PickBy::Agent) => return hold(s, pending, v, details, redacted, out),
        ("AccountChooser", PickBy::Rule { rule, .. }) => match &chosen {
            Some(id) => (
                format!("Its account chooser listed {offered}: rule {rule} picks {id:?}."),
                Act::SelectAccount { prompt, account_id: id.clone() },
            ),
            None => (
                format!(
                    "Its account chooser listed {offered}: no account fits rule {rule}, so the chooser was closed (the \
page gets NetworkError)."
                ),
                Act::Dismiss { prompt },
            ),
        },
        ("AutoReauthn", by) => {
            // Measured (Chromium 156): `FedCm.dismissDialog` is refused ("Dialog ID does not
            // match current dialog") and the browser posts the account all the same; only
            // the page's `mediation: "required"` prevents it. So it is said, never fought.
            let auto = v.accounts.first().map(|a| a.account_id.clone());
            let whose = match (by, &chosen) {
                (PickBy::Rule { .. }, Some(_)) => "the rule's account".to_owned(),
                (PickBy::Rule { rule, .. }, None) => format!(
                    "not an account rule {rule} picks, but nothing can stop it (the page's mediation: \"optional\"; \
the browser refuses to close this dialog)"
                ),
                (PickBy::Agent, _) => "before the agent could pick (nothing can stop it: the page's mediation: \
\"optional\"; the browser refuses to close this dialog)"
                    .to_owned(),
            };
            let said = format!(
                "The browser signs the returning account {} in by itself (AutoReauthn), {whose}.",
                ids(auto.iter().map(String::as_str))
            );
            let mut details = details;
            details.auto_reauthn_account = auto;
            record_opened(s, &pending, details, redacted, said, chosen.clone());
            s.kinds.get::<Picker>().choosers.push(Chooser { prompt, record: pending.record, held: false, auto: true });
            return;
        }
        ("Error", _) => (
            "The browser showed the provider's error dialog: closed with its \"got it\" button (the page gets the \
provider's error)."
                .to_owned(),
            Act::Click { prompt, button: DialogButton::ErrorGotIt },
        ),
        ("ConfirmIdpLogin", _) => (
            "The provider asks a person to log in first (ConfirmIdpLogin, in a window of its own): closed, nobody \
can log in there (the page gets NetworkError)."
                .to_owned(),
            Act::Dismiss { prompt },
        ),
        (other, _) => (
            format!(
                "The browser showed a {other:?} dialog, which nobody picks from here: closed (the page gets \
NetworkError)."
            ),
            Act::Dismiss { prompt },
        ),
    };
    let picked = matches!(answer, Act::SelectAccount { .. }).then(|| chosen.clone()).flatten();
    if picked.is_some() {
        s.kinds.get::<Picker>().picked(&v.url, pending.record);
    }
    record_opened(s, &pending, details, redacted, said, picked);
    s.kinds.get::<Picker>().choosers.push(Chooser { prompt, record: pending.record, held: false, auto: false });
    out.acts.push(act(answer));
}

/// An `Error` dialog at the URL where an account was just picked: the provider refused the
/// assertion. Closed with "got it" (the page gets the provider's IdentityCredentialError);
/// the record of the pick says so.
fn provider_error(s: &mut State, v: &PromptView, out: &mut Answered) {
    if v.dialog_type.as_deref() != Some("Error") {
        return;
    }
    let p = s.kinds.get::<Picker>();
    let Some(pos) = p.picked.iter().position(|x| x.url == v.url) else { return };
    if !s.answerer.claim(v.prompt) {
        return;
    }
    let Picked { record, .. } = s.kinds.get::<Picker>().picked.remove(pos);
    edit(s, record, |r| {
        r.explanation = format!(
            "{} The provider answered the account's assertion with an error, and the browser showed its error \
dialog: closed with its \"got it\" button (the page gets the provider's error).",
            r.explanation
        );
        r.details.update::<SignInDetails>(|d| d.provider_error = true);
    });
    s.kinds.get::<Picker>().choosers.push(Chooser { prompt: v.prompt, record, held: false, auto: false });
    out.acts.push((SIGN_IN_KIND, Act::Click { prompt: v.prompt, button: DialogButton::ErrorGotIt }));
}

/// The let-through record, once its chooser is seen: what it listed and what is done.
fn record_opened(
    s: &mut State,
    pending: &Pending,
    mut details: SignInDetails,
    redacted: Vec<String>,
    said: String,
    picked: Option<String>,
) {
    details.picked_account = picked;
    edit(s, pending.record, |r| {
        r.details = record::Details::of(&details);
        for k in redacted {
            if !r.redacted.contains(&k) {
                r.redacted.push(k);
            }
        }
        r.explanation = format!("{} {said}", r.explanation);
    });
}

/// Under `must_respond`: the chooser held for the agent, a record of its own.
fn hold(
    s: &mut State,
    pending: Pending,
    v: &PromptView,
    details: SignInDetails,
    redacted: Vec<String>,
    out: &mut Answered,
) {
    let offered = ids(v.accounts.iter().map(|a| a.account_id.as_str()));
    let wait = Duration::from_secs(u64::from(s.policy_of(pending.tab).timeout_s));
    let id = s.next_id();
    let record = DialogRecord {
        message: format!("sign-in account chooser (FedCM): {} account(s) offered", v.accounts.len()),
        redacted: redacted.clone(),
        state: DialogState::Open,
        explanation: format!(
            "Account chooser held for the agent (policy must_respond): answer with interact \
{{action:\"handle_dialog\", dialog_id, account_id}} (offered: {offered}), or accept: false to close it (the page gets \
NetworkError); the watchdog closes it after {} s",
            wait.as_secs()
        ),
        url: record::clip(&v.url, 2048).0,
        page_url: s.tab(pending.tab).map(|t| t.url.clone()).unwrap_or_default(),
        details: record::Details::of(&details),
        ..DialogRecord::new(id, SIGN_IN_KIND, pending.tab, DecidedBy::Agent)
    };
    s.logs.dialog(&record);
    out.to_browser.push(ToBrowser::recorded(&record));
    let said = format!("Its account chooser (offered: {offered}) is held for the agent as dialog {id}.");
    record_opened(s, &pending, details, redacted, said, None);
    let now = Instant::now();
    s.armed.push((id, wait));
    s.held.push(HeldDialog {
        record,
        hold: pending.hold,
        opened: now,
        deadline: Some(now + wait),
        closing: None,
        answer: None,
        answer_error: None,
    });
    s.kinds.get::<Picker>().choosers.push(Chooser { prompt: v.prompt, record: id, held: true, auto: false });
}

/// The accounts changed while the chooser is open: the record lists them as they are now.
fn updated(s: &mut State, v: &PromptView) {
    let Some(record) = s.kinds.get::<Picker>().choosers.iter().find(|c| c.prompt == v.prompt).map(|c| c.record) else {
        return;
    };
    let (rows, _) = rows(&s.redactor, &v.accounts);
    edit(s, record, |r| {
        r.details.update::<SignInDetails>(|d| d.accounts = rows);
    });
}

/// The agent's or the watchdog's answer to held chooser `record`, given on the connection.
fn answer_chooser(s: &mut State, record: u64, accept: bool, account: Option<String>) {
    let Some(prompt) = s.kinds.get::<Picker>().choosers.iter().find(|c| c.held && c.record == record).map(|c| c.prompt)
    else {
        return;
    };
    let offered: Vec<String> =
        s.answerer.prompt(prompt).map(|v| v.accounts.into_iter().map(|a| a.account_id).collect()).unwrap_or_default();
    let act = if accept {
        let pick = account.or_else(|| (offered.len() == 1).then(|| offered[0].clone()));
        match pick {
            Some(id) if offered.contains(&id) => Act::SelectAccount { prompt, account_id: id },
            other => {
                // Not answered: it stays held for the agent, and the agent is told why.
                let why = match other {
                    Some(id) => format!(
                        "no account {id:?} is offered (offered: {}); the chooser stays held",
                        ids(offered.iter().map(String::as_str))
                    ),
                    None => format!(
                        "pick an account with account_id (offered: {})",
                        ids(offered.iter().map(String::as_str))
                    ),
                };
                if let Some(h) = s.held.iter_mut().find(|h| h.record.id == record) {
                    (h.closing, h.answer, h.answer_error) = (None, None, Some(why));
                }
                return;
            }
        }
    } else {
        Act::Dismiss { prompt }
    };
    if let Act::SelectAccount { account_id, .. } = &act {
        let id = account_id.clone();
        edit(s, record, |r| {
            r.details.update::<SignInDetails>(|d| d.picked_account = Some(id));
        });
        if let Some(url) = s.answerer.prompt(prompt).map(|v| v.url) {
            s.kinds.get::<Picker>().picked(&url, record);
        }
    }
    // Given here (the agent's call and the watchdog come through the held dialogs, not the
    // answerer's changes); its end comes back as the answerer's `Closed`. Pilot off, the
    // answerer lets go of every session and the chooser closes as `Left`.
    let (Some(gate), Ok(rt)) = (PilotOn::of(s.pilot), tokio::runtime::Handle::try_current()) else { return };
    let answerer = s.answerer.clone();
    rt.spawn(async move {
        if let Err(e) = answerer.act(&gate, &act).await {
            tracing::warn!(error = %e, "a sign-in account chooser's answer was not given");
        }
    });
}

/// A chooser closed: its held record closes, or the let-through record says how it ended.
fn closed(s: &mut State, prompt: u64, by: ClosedBy) {
    let p = s.kinds.get::<Picker>();
    let Some(pos) = p.choosers.iter().position(|c| c.prompt == prompt) else { return };
    let c = p.choosers.remove(pos);
    if !c.held {
        let said = match by {
            _ if c.auto => "The browser closed it as it signed the account in.",
            ClosedBy::Answerer => "The browser took the answer.",
            ClosedBy::Remote => "Another client answered the account chooser first.",
            ClosedBy::Gone | ClosedBy::Left => {
                "The account chooser went before it was answered (the page or the connection went, or the pilot was \
switched off)."
            }
        };
        return edit(s, c.record, |r| {
            if by == ClosedBy::Remote && !c.auto {
                r.closed_by = Some(DecidedBy::Remote);
            }
            r.explanation = format!("{} {said}", r.explanation);
        });
    }
    let Some(pos) = s.held.iter().position(|h| h.record.id == c.record) else { return };
    let HeldDialog { mut record, opened, closing, answer, .. } = s.held.remove(pos);
    let (by, accepted) = match (by, closing) {
        (ClosedBy::Answerer, Some(who)) => (who, Some(answer.is_some_and(|(a, _)| a))),
        // The pilot switched off: the answerer let go of the page, and the chooser is the
        // browser's again (a person's; headless, nobody answers it and the page waits).
        (ClosedBy::Left, _) if !s.pilot => (DecidedBy::PilotOff, None),
        _ => (DecidedBy::Remote, None),
    };
    record.state = DialogState::Closed;
    record.accepted = accepted;
    record.closed_by = Some(by);
    if record.decided_by == DecidedBy::Agent {
        record.decided_by = by;
    }
    if accepted != Some(true) {
        record.details.update::<SignInDetails>(|d| d.picked_account = None);
    }
    let who = match by {
        DecidedBy::Agent => "the agent",
        DecidedBy::Watchdog => "the watchdog",
        DecidedBy::PilotOff => {
            "the pilot switched off (nothing picked; the chooser is left to the browser and a person: headless, \
nobody answers it and the page's call waits)"
        }
        _ => {
            "someone else (another client answered the account chooser, or the page, the connection or the pilot went)"
        }
    };
    let answer = match (accepted, record.details.read::<SignInDetails>().and_then(|d| d.picked_account)) {
        (Some(true), Some(id)) => format!("account {id:?} picked (the browser posted it to the provider)"),
        (Some(_), _) => "closed (the page got NetworkError)".to_owned(),
        (None, _) => "without an answer".to_owned(),
    };
    let summary = format!("Closed by {who} after {} ms: {answer}.", opened.elapsed().as_millis());
    record.explanation = format!("{}. {summary}", record.explanation);
    s.logs.closed(&record, summary);
    s.remember(record);
}

/// The account `pick` names among those offered.
fn choose(pick: &AccountPick, accounts: &[Account]) -> Option<String> {
    match pick {
        AccountPick::Id(id) => accounts.iter().find(|a| &a.account_id == id),
        AccountPick::Email(e) => accounts.iter().find(|a| a.email.eq_ignore_ascii_case(e)),
        AccountPick::Only => match accounts {
            [one] => Some(one),
            _ => None,
        },
    }
    .map(|a| a.account_id.clone())
}

/// The accounts as a record lists them, and what redaction removed.
fn rows(redactor: &Redactor, accounts: &[Account]) -> (Vec<AccountRow>, Vec<String>) {
    let mut hits = Vec::new();
    let mut text = |t: &str| {
        let (t, _) = record::clip(t, 256);
        let (t, h) = redactor.apply(&t);
        hits.extend(h);
        t
    };
    let rows = accounts
        .iter()
        .take(MAX_ROWS)
        .map(|a| AccountRow {
            account_id: record::clip(&a.account_id, 256).0,
            name: text(&a.name),
            email: text(&a.email),
            config_url: record::clip(&a.config_url, 2048).0,
            login_state: a.login_state.clone(),
        })
        .collect();
    hits.sort();
    hits.dedup();
    (rows, hits)
}

/// Changes record `id`, held or in the history.
fn edit(s: &mut State, id: u64, change: impl FnOnce(&mut DialogRecord)) {
    if let Some(r) = s.record_mut(id) {
        change(r);
    }
}

fn ids<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<String> = it.map(|i| format!("{i:?}")).collect();
    if v.is_empty() { "none".to_owned() } else { v.join(", ") }
}

/// Whether a call let through waits for its chooser.
#[cfg(test)]
pub(super) fn wanted_by_pending(s: &State) -> bool {
    s.kinds.peek::<Picker>().is_some_and(|p| !p.pending.is_empty())
}
