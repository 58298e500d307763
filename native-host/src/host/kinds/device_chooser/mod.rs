//! Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth). The page hook
//! (`manifest/inject/46-choosers.js`) lets the browser make the call and, when it is still
//! pending two microtasks later (a chooser opened), asks through `content.js` the service
//! worker (`manifest/choosers.js`), which asks the host. The host answers like a dialog — a
//! rule, the tab's policy, the agent (held, with the watchdog) — but the only answer there is
//! is cancel: Chromium refuses extensions the `DeviceAccess` domain, so nobody can list or
//! pick a device, and in headless a chooser left open never settles. On cancel the page gets
//! the browser's own cancel result. The browser's chooser may answer first (a person picks
//! in a headful browser): the page then has the browser's answer and the record says so.
//! Pilot off: the browser's chooser stands, recorded. Rules live in memory. The prompt
//! pipeline (`prompt.rs`) does the rest; here is what is the chooser's own.
//!
//! **Picks (Bluetooth, where the host holds a DevTools connection).** The host's CDP
//! answerer (`answerer/`) sees a Bluetooth chooser (`DeviceAccess`) only if it watched the
//! page before the chooser opened, so this kind asks for it (`answerer_want`) whenever a pick
//! can come: a rule that picks, or a tab under `must_respond`. A request that may be picked
//! is held; it is matched to the answerer's prompt by what the answerer saw itself (the
//! frame's or page's URL; a target id the worker names only chooses among those), and its
//! record lists the devices offered, kept current. A rule picks when a device it names is
//! offered (until the watchdog, which cancels); the agent picks with `device_id`. The pick is
//! the answerer's (`DeviceAccess.selectPrompt`); the page hook is told to leave the
//! browser's call alone (an accept), so the page gets the browser's own result.

use super::args::{self, Api, Given, NoFields};
use super::rule::{Carry, CarryOf};
use super::{
    Answered, Described, EXPIRED_CANCELLED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, With, Words,
    configured, pilot_off, url_fits,
};
use crate::api::{MatchArg, ParamError, bad};
use crate::host::answerer::{Act, Found, PickError, PromptView, Seen, Want, Which};
use crate::host::protocol::{Carried, PromptDecision, PromptResult, ToBrowser};
use crate::host::record::{self, DecidedBy, Details, DialogRecord};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("device_chooser");

/// Each policy's answer: every answer is a cancel; only `must_respond` waits (for the
/// agent's cancel, or the browser's chooser).
const POLICIES: Policies = Policies {
    hold: "Device chooser held for the agent (policy must_respond): the page's call waits; {how}",
    auto: Says::Refuse(
        "Device chooser cancelled by the default policy: nobody can pick a device through an extension, and a \
chooser left open never settles in headless Chromium",
    ),
    auto_accept: Says::Refuse(
        "Device chooser cancelled: the tab's auto_accept policy has no device to pick (no extension can pick one)",
    ),
    auto_dismiss: Says::Refuse("Device chooser cancelled by the tab's auto_dismiss policy"),
};

/// A device chooser once recorded.
pub(super) struct DeviceChooser;

const WORDS: Words = Words {
    kind: KIND,
    group: "device chooser",
    closed: (
        "left to the browser's chooser, where a device was picked (the page gets the browser's own result)",
        "cancelled (the page got the browser's cancel result)",
    ),
    expired: EXPIRED_CANCELLED,
};

/// A device chooser's API, as the page reaches it (`navigator.usb`, …).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ChooserApi {
    /// WebUSB: navigator.usb.requestDevice.
    Usb,
    /// WebHID: navigator.hid.requestDevice.
    Hid,
    /// Web Serial: navigator.serial.requestPort.
    Serial,
    /// Web Bluetooth: navigator.bluetooth.requestDevice (where the browser exposes it).
    Bluetooth,
    /// The screen-share picker: navigator.mediaDevices.getDisplayMedia (a screen, window or
    /// tab to capture).
    Display,
}

impl ChooserApi {
    pub const ALL: [Self; 5] = [Self::Usb, Self::Hid, Self::Serial, Self::Bluetooth, Self::Display];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Usb => "usb",
            Self::Hid => "hid",
            Self::Serial => "serial",
            Self::Bluetooth => "bluetooth",
            Self::Display => "display",
        }
    }

    /// What the chooser offers, and where the page calls it from.
    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            Self::Usb => ("USB device chooser", "navigator.usb"),
            Self::Hid => ("HID device chooser", "navigator.hid"),
            Self::Serial => ("serial port chooser", "navigator.serial"),
            Self::Bluetooth => ("Bluetooth device chooser", "navigator.bluetooth"),
            Self::Display => ("screen-share picker", "navigator.mediaDevices"),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A device chooser rule: cancel it, for one chooser or all; or, for Bluetooth where the host
/// holds a DevTools connection, pick a device.
#[derive(Clone, PartialEq)]
pub(crate) struct DeviceChooserRule {
    pub chooser: Option<ChooserApi>,
    /// None: the rule cancels.
    pub pick: Option<DevicePick>,
    pub matcher: MatchArg,
}

crate::own_rule!(DeviceChooserRule, "DeviceChooser", KIND, accept: |r| r.pick.is_some(), in_config: |_| false, show: [chooser, pick]);

/// Which device a rule picks, among those the chooser offers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DevicePick {
    /// The device with this id (Bluetooth: its address as the browser gives it).
    Id(String),
    /// The first device whose name, as the browser gives it, contains this (case-insensitive).
    /// Chromium 156 gives every device an empty name: such a rule picks nothing there.
    NameContains(String),
    /// The first device offered.
    First,
}

impl DevicePick {
    /// The device it picks among `offered`, if one fits.
    fn among<'a>(&self, offered: &'a [crate::host::answerer::Device]) -> Option<&'a str> {
        let d = match self {
            Self::Id(id) => offered.iter().find(|d| &d.id == id),
            Self::NameContains(part) => {
                let part = part.to_lowercase();
                offered.iter().find(|d| !d.name.is_empty() && d.name.to_lowercase().contains(&part))
            }
            Self::First => offered.first(),
        };
        d.map(|d| d.id.as_str())
    }

    fn words(&self) -> String {
        match self {
            Self::Id(id) => format!("device {id:?}"),
            Self::NameContains(part) => format!("the first device whose name contains {part:?}"),
            Self::First => "the first device offered".to_owned(),
        }
    }
}

/// `pick`'s one value.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum PickWhich {
    /// The first device the chooser offers.
    First,
}

/// Its own fields of `interact`.
#[derive(Deserialize, JsonSchema)]
struct DeviceChooserFields {
    /// dialog_type "device_chooser" with setup: the chooser the rule answers (default: every
    /// one of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chooser: Option<ChooserApi>,
    /// Answering a held Bluetooth device chooser: the device to pick, one of the `device_id`s
    /// its record lists. With dialog_type "device_chooser" and setup: the rule picks this
    /// device when the chooser offers it. Only where Unmodal holds a DevTools connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device_id: Option<String>,
    /// dialog_type "device_chooser" with setup: the rule picks the first device whose name, as
    /// the browser gives it, contains this (case-insensitive). Chromium gives no names to a
    /// DevTools client today, so such a rule may pick nothing: prefer device_id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device_name_contains: Option<String>,
    /// dialog_type "device_chooser" with setup: "first" picks the first device offered.
    /// A rule that picks waits for its device until the tab's watchdog (timeout_s), which
    /// cancels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pick: Option<PickWhich>,
}

static API: Api = Api {
    instructions: "Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth, and getDisplayMedia's screen-share \
picker) are dialog_type \"device_chooser\": the default is accept:false (cancel; the page gets the browser's own \
cancel result). A Bluetooth chooser can be picked where Unmodal holds a DevTools connection (unmodal mcp --browser \
or --cdp-endpoint): held, its record lists the devices offered, and device_id picks one; a rule may pick by \
device_id or pick:\"first\". ",
    description: "A device chooser (WebUSB, WebHID, Web Serial, Web Bluetooth): cancelled, or, Bluetooth\nwhere \
Unmodal holds a DevTools connection, a device picked with device_id.",
    fields: &[
        args::Owned { name: "chooser", held: None, in_clear: true, late: false },
        args::Owned { name: "device_id", held: Some("device chooser"), in_clear: true, late: false },
        args::Owned { name: "device_name_contains", held: None, in_clear: true, late: false },
        args::Owned { name: "pick", held: None, in_clear: true, late: false },
    ],
    schema: args::schema_of::<DeviceChooserFields, NoFields>,
    read: args::read_of::<DeviceChooserFields, NoFields>,
    rule: device_chooser_rule,
    answer: Some(device_answer),
    paths: &[],
    own_dir: None,
};

fn device_chooser_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a device chooser", "name the chooser")?;
    let f = g.fields::<DeviceChooserFields>()?;
    let mut picks = Vec::new();
    if let Some(id) = f.device_id {
        picks.push(("device_id", DevicePick::Id(id)));
    }
    if let Some(part) = f.device_name_contains {
        picks.push(("device_name_contains", DevicePick::NameContains(part)));
    }
    if f.pick.is_some() {
        picks.push(("pick", DevicePick::First));
    }
    if picks.len() > 1 {
        return Err(bad(
            picks[1].0,
            format!("a chooser rule picks one way: {} or {}, not both", picks[0].0, picks[1].0),
        ));
    }
    let pick = picks.pop();
    g.no_text("a chooser rule cancels or picks a device; it takes no text")?;
    match &pick {
        None if g.args.accept == Some(true) => Err(bad(
            "accept",
            "a device chooser rule without a device to pick can only be cancelled (accept: false); a Bluetooth \
chooser can be picked with device_id, device_name_contains or pick: \"first\", where Unmodal holds a DevTools \
connection (extensions are refused the browser's DeviceAccess domain)",
        )),
        Some((field, _)) if g.args.accept == Some(false) => {
            Err(bad(field, "picks a device: only without accept: false (a rule that cancels names no device)"))
        }
        Some((field, _)) if f.chooser.is_some_and(|c| c != ChooserApi::Bluetooth) => Err(bad(
            field,
            "only a Bluetooth chooser can be picked: the browser offers no device list for USB, HID, Serial or the \
screen-share picker, even to a DevTools client (leave chooser out, or set it to \"bluetooth\")",
        )),
        Some((_, DevicePick::Id(s) | DevicePick::NameContains(s))) if s.trim().is_empty() => {
            Err(bad(pick.as_ref().map_or("device_id", |p| p.0), "names no device (empty)"))
        }
        _ => Ok(RuleSpec::own(DeviceChooserRule { chooser: f.chooser, pick: pick.map(|p| p.1), matcher })),
    }
}

/// The agent's answer to a held chooser: the device to pick.
fn device_answer(g: &Given) -> Result<Carry, ParamError> {
    if g.args.accept == Some(false) || g.args.text.is_some() {
        return Err(bad("device_id", "picks a device in a held chooser: only with accept: true, without text"));
    }
    let f: DeviceChooserFields = g.fields()?;
    for (field, given) in [("device_name_contains", f.device_name_contains.is_some()), ("pick", f.pick.is_some())] {
        if given {
            return Err(bad(field, "only with setup: true (a rule); to answer a held chooser, name its device_id"));
        }
    }
    match f.device_id {
        Some(id) if !id.trim().is_empty() => Ok(Carry::new(Chosen::Pick(id))),
        _ => Err(bad("device_id", "names no device (empty)")),
    }
}

mod picks;
use picks::*;

/// The pilot went off while `record` was held for a pick: nothing may pick it now, so the
/// page's call is cancelled at once (the browser's cancel) rather than at the watchdog.
fn cancel_for_pilot(s: &mut State, record: u64) -> Option<ToBrowser> {
    let pos = held_pos(s, record)?;
    if s.held[pos].closing.is_some() {
        return None;
    }
    let r = &mut s.held[pos].record;
    r.explanation = format!("{}. {PILOT_WENT_OFF}", r.explanation);
    note(s, record, None, Some(PILOT_WENT_OFF));
    s.answer_held(record, false, None, With::Nothing, DecidedBy::PilotOff).ok()
}

impl Spec for DeviceChooser {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<ChooserAsk>(fields)
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn same_slot(&self, a: &RuleSpec, b: &RuleSpec) -> bool {
        matches!((a.of::<DeviceChooserRule>(), b.of::<DeviceChooserRule>()), (Some(a), Some(b)) if a.chooser == b.chooser)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        let Some(DeviceChooserRule { chooser, pick, .. }) = rule.of() else { return };
        if let Some(c) = chooser {
            v.insert("chooser".into(), c.as_str().into());
        }
        match pick {
            Some(DevicePick::Id(id)) => v.insert("device_id".into(), id.as_str().into()),
            Some(DevicePick::NameContains(part)) => v.insert("device_name_contains".into(), part.as_str().into()),
            Some(DevicePick::First) => v.insert("pick".into(), "first".into()),
            None => None,
        };
    }

    fn gone(&self, settled: bool) -> &'static str {
        if settled {
            "The browser's own chooser settled first (a person picked or cancelled, or the browser ended the call): \
the page got the browser's answer."
        } else {
            "The page was gone before the answer reached it."
        }
    }

    fn accept_refused(&self, held: &DialogRecord, carrying: bool) -> Option<String> {
        let d = held.details.read::<ChooserDetails>()?;
        let id = held.id;
        if d.chooser != ChooserApi::Bluetooth {
            let (what, _) = d.chooser.describe();
            return Some(format!("Dialog {id} is a {what}: {ONLY_CANCEL}; send accept: false."));
        }
        if let Some(why) = &d.no_choice {
            return Some(format!("Dialog {id} is a Bluetooth device chooser: {why}; send accept: false."));
        }
        if carrying {
            return None;
        }
        let offered: Vec<&str> = d.devices.iter().map(|x| x.device_id.as_str()).collect();
        let offered = if offered.is_empty() { "none yet".to_owned() } else { offered.join(", ") };
        Some(format!(
            "Dialog {id} is a Bluetooth device chooser: name the device to pick with device_id (offered now: \
{offered}), or send accept: false to cancel it."
        ))
    }

    fn accept_check(&self, s: &State, held: &DialogRecord, with: &With) -> Option<String> {
        let With::Own(c) = with else { return None };
        let Some(Chosen::Pick(device_id)) = c.of::<Chosen>() else { return None };
        let id = held.id;
        let Some(link) = s.kinds.peek::<Links>().and_then(|l| l.0.get(&id)) else {
            let why = if s.answerer.held() { NOT_SEEN } else { NO_CONNECTION };
            return Some(format!("Dialog {id}: {why}; send accept: false to cancel it."));
        };
        let Some(view) = s.answerer.prompt(link.prompt) else {
            return Some(format!("Dialog {id}: the browser's chooser is no longer open; send accept: false."));
        };
        if view.devices.iter().any(|d| &d.id == device_id) {
            return None;
        }
        let offered: Vec<&str> = view.devices.iter().map(|d| d.id.as_str()).collect();
        let offered = if offered.is_empty() { "none yet".to_owned() } else { offered.join(", ") };
        Some(format!(
            "Dialog {id}: device {device_id:?} is not offered by the chooser (offered now: {offered}); it stays held: \
pick one of those, or cancel it with accept: false."
        ))
    }

    fn accept_with(&self, _held: &DialogRecord) -> With {
        With::own(Chosen::Cancel)
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let DeviceChooserRule { chooser, pick, .. } = rule.of()?;
        let what = chooser.map_or("device chooser".to_string(), |c| format!("{} device chooser", c.as_str()));
        let will = match pick {
            None => "cancel it".to_owned(),
            Some(p) => format!(
                "pick {} when a Bluetooth chooser offers it (where Unmodal holds a DevTools connection; until the \
tab's watchdog, which cancels; other choosers are cancelled)",
                p.words()
            ),
        };
        Some(configured(&what, &will, once))
    }

    fn answerer_want(&self, s: &State) -> Want {
        let tabs = s.tabs.iter().map(|t| t.id).chain(s.rules.tabs());
        let devices = s.pilot
            && (tabs.into_iter().any(|t| may_pick(s, t)) || !s.kinds.peek::<Links>().is_none_or(|l| l.0.is_empty()));
        Want { devices, ..Want::NONE }
    }

    fn prompt_held(&self, s: &mut State, record: u64) -> Vec<ToBrowser> {
        let hint = std::mem::take(&mut s.kinds.get::<Hint>().0);
        let Some(pos) = held_pos(s, record) else { return Vec::new() };
        if let Some(h) = &hint {
            let hints = &mut s.kinds.get::<Hint>().1;
            hints.retain(|r, _| s.held.iter().any(|h| h.record.id == *r));
            hints.insert(record, h.clone());
        }
        let r = &s.held[pos].record;
        let (tab, url, page_url) = (r.tab_id, r.url.clone(), r.page_url.clone());
        let Some(d) = r.details.read::<ChooserDetails>() else { return Vec::new() };
        let rule = s.rules.best(tab, |rule| fits(rule, d.chooser, &url)).and_then(|r| {
            let DeviceChooserRule { pick, .. } = r.rule.of()?;
            Some((r.id, pick.clone()?))
        });
        if d.chooser != ChooserApi::Bluetooth {
            note(s, record, None, Some(ONLY_CANCEL));
            return Vec::new();
        }
        let mut out = Vec::new();
        if let Some((id, pick)) = rule.clone() {
            s.held[pos].record.rule_id = Some(id);
            s.kinds.get::<RulePicks>().0.insert(record, (id, pick));
            out.extend(s.spend_rule(tab, id));
        }
        if !s.answerer.held() {
            note(s, record, None, Some(NO_CONNECTION));
            if rule.is_some() {
                // A rule has no agent to wait for: it cancels at once, saying why.
                s.kinds.get::<RulePicks>().0.remove(&record);
                if let Some(p) = held_pos(s, record) {
                    let r = &mut s.held[p].record;
                    r.explanation = format!("{}. {NO_CONNECTION}: the rule cancels it", r.explanation);
                }
                out.extend(s.answer_held(record, false, None, With::Nothing, DecidedBy::Rule).ok());
            }
            return out;
        }
        let found = match s.answerer.find(Which::Devices, &url, hint.as_deref()) {
            Found::None if page_url != url => s.answerer.find(Which::Devices, &page_url, hint.as_deref()),
            found => found,
        };
        // One chooser per page: a newer one closed the one it replaced (`answerer/book.rs`).
        match found {
            Found::One(n) => {
                if let Some(view) = s.answerer.prompt(n) {
                    link(s, record, &view, &mut out);
                }
            }
            Found::Several(_) => note(s, record, None, Some(SEVERAL)),
            // Its chooser has not been seen yet: linked when the answerer sees it open.
            Found::None => {
                if !s.answerer.covers(&url, Which::Devices) && !s.answerer.covers(&page_url, Which::Devices) {
                    note(s, record, None, Some(NOT_SEEN));
                }
            }
        }
        out
    }

    fn answerer_seen(&self, s: &mut State, seen: &Seen, out: &mut Answered) {
        match seen {
            Seen::Opened(v) | Seen::Updated(v) if v.which == Which::Devices => {
                let linked = s.kinds.get::<Links>().0.iter().find(|(_, l)| l.prompt == v.prompt).map(|(r, _)| *r);
                match linked {
                    Some(record) => {
                        note(s, record, Some(v), None);
                        rule_pick(s, record, v, &mut out.to_browser);
                    }
                    None => {
                        // The held requests at its URL: one is it; of several, the one whose
                        // worker named its target (a hint only chooses among them).
                        let fit: Vec<u64> = unlinked(s)
                            .into_iter()
                            .filter(|(_, url, page_url)| *url == v.url || *page_url == v.url)
                            .map(|(r, ..)| r)
                            .collect();
                        let hints = &s.kinds.get::<Hint>().1;
                        // Of several, the newest: a chooser replaces the one open in its page
                        // (the browser cancels the older), so the newest request is its own.
                        let record = match fit.as_slice() {
                            [one] => Some(*one),
                            many => many.iter().rev().copied().find(|r| hints.get(r) == Some(&v.target)),
                        };
                        if let Some(record) = record {
                            link(s, record, v, &mut out.to_browser);
                        }
                    }
                }
            }
            Seen::Closed { prompt, by } => {
                let Some(record) = s.kinds.get::<Links>().0.iter().find(|(_, l)| l.prompt == *prompt).map(|(r, _)| *r)
                else {
                    return;
                };
                if s.kinds.get::<Links>().0.get(&record).is_some_and(|l| l.picking) {
                    return; // how the pick went comes with `answerer_acted`
                }
                s.kinds.get::<Links>().0.remove(&record);
                s.kinds.get::<RulePicks>().0.remove(&record);
                let Some(pos) = held_pos(s, record) else { return };
                if *by == crate::host::answerer::ClosedBy::Remote && s.held[pos].closing.is_none() {
                    // Another client answered the browser's chooser: the page has its answer.
                    let h = &s.held[pos];
                    let m = PromptResult {
                        kind: KIND,
                        tab_id: h.record.tab_id,
                        id: h.hold,
                        ok: true,
                        accepted: false,
                        expired: false,
                        settled: true,
                        error: None,
                    };
                    s.on_prompt_result(&m);
                } else if *by == crate::host::answerer::ClosedBy::Left && !s.pilot && s.held[pos].closing.is_none() {
                    // `pilot_went_off` cancelled what was linked then; this one was linked
                    // after (an event already on its way).
                    out.to_browser.extend(cancel_for_pilot(s, record));
                } else {
                    note(s, record, None, Some(NOT_SEEN));
                }
            }
            _ => {}
        }
    }

    fn pilot_went_off(&self, s: &mut State) -> Vec<ToBrowser> {
        // Cancelled here, in the pilot's own change of state: the answerer lets the browser's
        // chooser go next, and the browser may then end the page's call itself (its result
        // reaching the host as `settled`), which would race a cancel sent later. A pick on
        // its way is left to `answerer_acted` (the answerer refuses it, pilot off).
        let linked: Vec<u64> = s.kinds.get::<Links>().0.iter().filter(|(_, l)| !l.picking).map(|(r, _)| *r).collect();
        let mut out = Vec::new();
        for record in linked {
            s.kinds.get::<Links>().0.remove(&record);
            s.kinds.get::<RulePicks>().0.remove(&record);
            out.extend(cancel_for_pilot(s, record));
        }
        out
    }

    fn prompt_closed(&self, s: &mut State, record: u64) {
        let Some((prompt, device_id)) = s.kinds.get::<Picks>().0.remove(&record) else { return };
        if s.record(record).is_some_and(|r| r.accepted == Some(true)) {
            s.answerer_asks.push((KIND, Act::SelectDevice { prompt, device_id }));
        } else {
            // Not applied (the page went, or the browser's chooser settled first).
            s.kinds.get::<Links>().0.remove(&record);
        }
    }

    fn answerer_acted(&self, s: &mut State, act: &Act, result: &Result<(), PickError>, _out: &mut Answered) {
        let Act::SelectDevice { prompt, .. } = act else { return };
        let Some(record) = s.kinds.get::<Links>().0.iter().find(|(_, l)| l.prompt == *prompt).map(|(r, _)| *r) else {
            return;
        };
        s.kinds.get::<Links>().0.remove(&record);
        s.kinds.get::<RulePicks>().0.remove(&record);
        if let Err(e) = result {
            // The answerer cancelled the chooser if it was still open (`select_device`): the
            // page got the browser's cancel, never waits. The record said the pick when it
            // was decided; it now says what the page got.
            tracing::warn!(error = %e, record, "a device pick was not given");
            let rec = s.record_mut(record);
            if let Some(rec) = rec
                && let Some(mut d) = rec.details.read::<ChooserDetails>()
            {
                d.no_choice = Some(format!(
                    "the browser refused the pick of {:?} ({e}); the chooser was cancelled",
                    d.picked.take().unwrap_or_default()
                ));
                rec.details = Details::of(&d);
                rec.accepted = Some(false);
            }
        }
    }
}

/// Whether `rule` fits a chooser `api` at `url` (`PromptKind::fits`, from a record).
fn fits(rule: &RuleSpec, api: ChooserApi, url: &str) -> Option<usize> {
    let DeviceChooserRule { chooser, matcher, .. } = rule.of()?;
    let fits = chooser.is_none_or(|c| c == api) && url_fits(matcher.url_contains.as_ref(), url);
    fits.then(|| usize::from(chooser.is_some()) + usize::from(matcher.url_contains.is_some()))
}

impl ChooserAsk {
    fn api(&self) -> ChooserApi {
        ChooserApi::parse(&self.chooser).unwrap_or(ChooserApi::Usb)
    }
}

impl PromptKind for ChooserAsk {
    fn check(&self) -> Result<(), String> {
        ChooserApi::parse(&self.chooser).map(|_| ()).ok_or_else(|| "a chooser request names no known chooser".into())
    }

    fn describe(&self, _: &Redactor, url: &str) -> Described {
        let method = record::clip(&self.method, 40).0;
        let (what, from) = self.api().describe();
        Described {
            message: format!("{what} ({from}.{method})"),
            truncated: false,
            redacted: Vec::new(),
            url: record::clip(url, 2048).0,
            details: Details::of(&ChooserDetails { chooser: self.api(), method, ..ChooserDetails::default() }),
        }
    }

    fn arrived(&self, s: &mut State) {
        s.kinds.get::<Hint>().0 = self.target.clone();
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        fits(rule, self.api(), url)
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        match rule.of::<DeviceChooserRule>().and_then(|r| r.pick.as_ref()) {
            Some(pick) if self.api() == ChooserApi::Bluetooth => Verdict::Hold {
                why: format!(
                    "Held for chooser rule {id}: it picks {} when the browser's chooser offers it; until then the \
page's call waits, and the tab's watchdog cancels it",
                    pick.words()
                ),
            },
            Some(_) => Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!("Device chooser cancelled: chooser rule {id} picks a device, and {ONLY_CANCEL}",),
            ),
            None => Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!("Device chooser cancelled: chooser rule {id} matched"),
            ),
        }
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        let how = if self.api() == ChooserApi::Bluetooth {
            "pick a device its record lists with interact {action:\"handle_dialog\", dialog_id, device_id} (where \
Unmodal holds a DevTools connection), or cancel it with accept:false"
        } else {
            "cancel it with interact {action:\"handle_dialog\", dialog_id, accept:false} (the browser lists no \
devices for it)"
        };
        POLICIES.verdict_with(policy, &[("{how}", how)])
    }

    fn pilot_off(&self) -> String {
        pilot_off(&format!(
            "the browser's {} stands (in headless Chromium it never settles, and the page's call waits)",
            self.api().describe().0
        ))
    }
}

#[derive(Debug, Deserialize)]
pub struct ChooserAsk {
    /// `usb`, `hid`, `serial`, `bluetooth` or `display` (`api::ChooserApi`).
    pub chooser: String,
    /// The page's call: requestDevice, requestPort, getDisplayMedia.
    #[serde(default)]
    pub method: String,
    /// The CDP target id of the asking page, as the worker read it: it only chooses among
    /// the answerer's own candidates.
    #[serde(default)]
    pub target: Option<String>,
}

/// A device chooser: which one, by which call; what it offers and why there is no choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChooserDetails {
    pub chooser: ChooserApi,
    /// The page's call: requestDevice, requestPort.
    pub method: String,
    /// The devices the chooser offers now (Bluetooth, where the host holds a connection), as
    /// the browser gives them; names redacted like page text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<Offered>,
    /// Why no device can be picked, if none can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_choice: Option<String>,
    /// The device picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked: Option<String>,
}

impl Default for ChooserDetails {
    fn default() -> Self {
        Self { chooser: ChooserApi::Usb, method: String::new(), devices: Vec::new(), no_choice: None, picked: None }
    }
}

/// A device a chooser offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offered {
    pub device_id: String,
    /// As the browser gives it (Chromium 156 gives a DevTools client an empty name).
    pub name: String,
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod picks_tests;
