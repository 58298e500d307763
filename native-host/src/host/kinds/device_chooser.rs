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

/// What an answer to a held chooser does on the host's connection.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Chosen {
    /// The agent or a rule picks this device (given on the connection once the page hook is
    /// told to leave the browser's call alone).
    Pick(String),
    /// A cancel (the agent's, the watchdog's): the browser's chooser is cancelled too.
    Cancel,
}

impl CarryOf for Chosen {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, s: &mut State, (_, _, record): (i64, u64, u64), accept: bool) -> Carried {
        let link = s.kinds.get::<Links>().0.get(&record).copied();
        if let Some(link) = link {
            match *self {
                // Given once the worker says the page hook leaves the browser's call alone
                // (`prompt_closed`): the page's result, which comes at once, then finds the
                // request answered.
                Chosen::Pick(device_id) if accept => {
                    s.kinds.get::<Links>().0.insert(record, Link { picking: true, ..link });
                    s.kinds.get::<Picks>().0.insert(record, (link.prompt, device_id));
                }
                _ => {
                    s.kinds.get::<Links>().0.remove(&record);
                    s.answerer_asks.push((KIND, Act::CancelDevice { prompt: link.prompt }));
                }
            }
        }
        Carried::default()
    }
    fn name_on(&self, details: &mut Details) {
        if let Chosen::Pick(id) = self
            && let Some(mut d) = details.read::<ChooserDetails>()
        {
            d.picked = Some(id.clone());
            d.no_choice = None;
            *details = Details::of(&d);
        }
    }
    crate::own_plumbing!(carry);
}

/// A held chooser the answerer's prompt was matched to, by record id.
#[derive(Debug, Default)]
struct Links(BTreeMap<u64, Link>);

#[derive(Clone, Copy, Debug)]
struct Link {
    /// The answerer's prompt.
    prompt: u64,
    /// A pick was asked for and has not come back yet.
    picking: bool,
}

/// Picks to give once the worker applied the accept: record → (prompt, device).
#[derive(Debug, Default)]
struct Picks(BTreeMap<u64, (u64, String)>);

/// What picks a held chooser on its own: (record, the rule that held it, what it picks).
#[derive(Debug, Default)]
struct RulePicks(BTreeMap<u64, (u32, DevicePick)>);

/// The target id the worker named for the request being recorded, and for each held
/// chooser by record (it only chooses among the answerer's own candidates).
#[derive(Debug, Default)]
struct Hint(Option<String>, BTreeMap<u64, String>);

/// Why a chooser has no choice to offer (on its record).
const ONLY_CANCEL: &str = "only Bluetooth choosers can be picked: the browser offers no device list for USB, HID, \
Serial or the screen-share picker, even to a DevTools client, so it can only be cancelled";
const NO_CONNECTION: &str = "Unmodal holds no DevTools connection to this browser (only the extension, which \
Chromium refuses the DeviceAccess domain), so nothing can be picked; start the browser with unmodal mcp --browser, \
or connect with --cdp-endpoint, to pick";
const NOT_SEEN: &str = "Unmodal's DevTools connection did not see this chooser open (it watches pages only while a \
rule picks or a tab is under must_respond, and only from before the chooser opened), so nothing can be picked";
const SEVERAL: &str = "several open choosers fit this request and nothing Unmodal saw tells them apart, so none is \
picked";

/// A held device chooser of this kind: its position in `s.held`.
fn held_pos(s: &State, record: u64) -> Option<usize> {
    s.held.iter().position(|h| h.record.id == record && h.record.kind == KIND)
}

/// Sets what a held chooser's record says of its choices.
fn note(s: &mut State, record: u64, devices: Option<&PromptView>, no_choice: Option<&str>) {
    let Some(pos) = held_pos(s, record) else { return };
    let Some(mut d) = s.held[pos].record.details.read::<ChooserDetails>() else { return };
    if let Some(v) = devices {
        d.devices = v
            .devices
            .iter()
            .map(|x| Offered {
                device_id: record::clip(&x.id, 200).0,
                name: s.redactor.apply(&record::clip(&x.name, 200).0).0,
            })
            .collect();
    }
    d.no_choice = no_choice.map(str::to_owned);
    s.held[pos].record.details = Details::of(&d);
}

/// The rule's pick for held chooser `record`, if a device it names is offered now: the page
/// hook is told to leave the browser's call alone, then the answerer picks (in that order,
/// so the page's result, which comes at once, finds the request answered).
fn rule_pick(s: &mut State, record: u64, view: &PromptView, to_browser: &mut Vec<ToBrowser>) {
    let Some((rule, pick)) = s.kinds.get::<RulePicks>().0.get(&record).cloned() else { return };
    if held_pos(s, record).is_none_or(|p| s.held[p].closing.is_some()) {
        return;
    }
    if let Some(id) = pick.among(&view.devices) {
        if let Some(p) = held_pos(s, record) {
            s.held[p].record.rule_id = Some(rule);
        }
        let with = With::own(Chosen::Pick(id.to_owned()));
        to_browser.extend(s.answer_held(record, true, None, with, DecidedBy::Rule).ok());
    }
}

/// Links held chooser `record` to answerer prompt `view` (claimed), notes its devices and
/// lets its rule pick.
fn link(s: &mut State, record: u64, view: &PromptView, to_browser: &mut Vec<ToBrowser>) -> bool {
    if !s.answerer.claim(view.prompt) {
        return false;
    }
    s.kinds.get::<Links>().0.insert(record, Link { prompt: view.prompt, picking: false });
    note(s, record, Some(view), None);
    rule_pick(s, record, view, to_browser);
    true
}

/// Held Bluetooth choosers not linked yet, oldest first: (record, url, page url).
fn unlinked(s: &mut State) -> Vec<(u64, String, String)> {
    let linked: Vec<u64> = s.kinds.get::<Links>().0.keys().copied().collect();
    s.held
        .iter()
        .filter(|h| h.record.kind == KIND && h.closing.is_none() && !linked.contains(&h.record.id))
        .filter(|h| h.record.details.read::<ChooserDetails>().is_some_and(|d| d.chooser == ChooserApi::Bluetooth))
        .map(|h| (h.record.id, h.record.url.clone(), h.record.page_url.clone()))
        .collect()
}

/// Whether tab `tab`'s rules or policy may pick a chooser (so the answerer must watch first).
fn may_pick(s: &State, tab: i64) -> bool {
    s.policy_of(tab).policy == Policy::MustRespond
        || s.rules.any(tab, |r| r.of::<DeviceChooserRule>().is_some_and(|r| r.pick.is_some()))
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
                        let record = match fit.as_slice() {
                            [one] => Some(*one),
                            many => many.iter().copied().find(|r| hints.get(r) == Some(&v.target)),
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
                } else {
                    note(s, record, None, Some(NOT_SEEN));
                }
            }
            _ => {}
        }
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
            // The page hook was told to leave the browser's call alone: the browser's
            // chooser stays open (another client may answer it), and the page waits.
            tracing::warn!(error = %e, record, "a device pick was not given");
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
mod tests {

    fn call(v: serde_json::Value) -> Result<crate::host::kinds::DialogCall, crate::api::ParamError> {
        crate::call::interact(v).map(|c| c.call)
    }

    #[test]
    fn chooser_calls_validate_and_refuse_accept() {
        let c = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","chooser":"serial",
            "once":false,"match":{"url_contains":"/flash"}}))
        .unwrap();
        let DialogCall::Setup { once: false, rule, .. } = &c else { panic!("{c:?}") };
        let Some(DeviceChooserRule { chooser: Some(ChooserApi::Serial), matcher, pick: None }) = rule.of() else {
            panic!("{c:?}")
        };
        assert_eq!(matcher.url_contains.as_deref(), Some("/flash"));
        assert!(matches!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","accept":false})),
            Ok(DialogCall::Setup { once: true, rule, .. })
                if matches!(rule.of(), Some(DeviceChooserRule { chooser: None, .. }))
        ));
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: crate::host::kinds::DialogType::of(KIND) })
        );
        let err = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","accept":true}))
            .unwrap_err();
        assert_eq!(err.param, "accept");
        assert!(err.message.contains("can only be cancelled"), "{}", err.message);
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","chooser":"usb"})),
            "chooser"
        );
        assert_eq!(
            param(
                json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","match":{"message_contains":"x"}})
            ),
            "match.message_contains"
        );
        assert!(crate::call::interact(json!({"action":"handle_dialog","chooser":"camera"})).is_err(), "unknown APIs");
        for a in ChooserApi::ALL {
            assert_eq!(ChooserApi::parse(a.as_str()), Some(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        assert_eq!(serde_json::to_value(KIND).unwrap(), "device_chooser");
    }

    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::DialogCall;
    use crate::host::record::DecidedBy;
    use crate::host::record::DialogRecord;
    use crate::host::state::State;
    use crate::host::state::tests::{feed, to_json};
    use crate::reply::ErrorCode;
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        crate::host::state::tests::state_with(policy)
    }

    fn ask(s: &mut State, tab: i64, n: u64, api: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"prompt_request","kind":"device_chooser","tab_id":tab,"id":n,"frame_id":0,"url":"http://a/flash",
                "chooser":api,"method":"requestDevice"}),
            )
            .unwrap(),
        )
    }

    #[test]
    fn the_default_cancels_at_once_and_waits_for_acknowledgement() {
        let mut s = state(Policy::Auto);
        let out = ask(&mut s, 3, 1, "usb");
        assert_eq!(
            out[1],
            json!({"type":"prompt_answer","kind":"device_chooser","tab_id":3,"id":1,"decision":"refuse"})
        );
        let rec = s.history.iter().last().unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted, rec.kind),
            (DecidedBy::DefaultPolicy, Some(DecidedBy::DefaultPolicy), Some(false), KIND)
        );
        assert_eq!(s.pending.back(), Some(&rec.id));
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!(
            (j["type"].as_str(), j["chooser"].as_str(), j["method"].as_str()),
            (Some("device_chooser"), Some("usb"), Some("requestDevice"))
        );
        assert_eq!(j["message"], "USB device chooser (navigator.usb.requestDevice)");
        // A record read back (persist.rs) keeps what it was.
        let back: DialogRecord = serde_json::from_value(j).unwrap();
        assert_eq!(back.details, rec.details);
    }

    #[test]
    fn a_rule_cancels_once_and_belongs_to_its_tab() {
        let mut s = state(Policy::MustRespond);
        let rule = RuleSpec::own(DeviceChooserRule {
            chooser: Some(ChooserApi::Serial),
            pick: None,
            matcher: MatchArg::default(),
        });
        let call = DialogCall::Setup { tab: Some(4), once: true, rule };
        let v = s.interact(call).unwrap().value;
        assert_eq!((v["dialog_type"].as_str(), v["chooser"].as_str()), (Some("device_chooser"), Some("serial")));
        assert_eq!(v["accept"], false);
        // Another chooser, another tab: no rule.
        assert_eq!(ask(&mut s, 4, 1, "hid")[1]["decision"], "refuse", "tab 4 has the default policy");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::DefaultPolicy);
        assert_eq!(ask(&mut s, 3, 2, "serial")[1]["type"], "prompt_hold", "tab 3's rules are its own");
        assert_eq!(ask(&mut s, 4, 3, "serial")[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.rule_id.is_some()), (DecidedBy::Rule, true));
        assert!(s.rules_of(4).is_empty(), "a once-rule is spent");
    }

    #[test]
    fn must_respond_holds_the_agent_can_only_cancel_and_the_watchdog_cancels() {
        let mut s = state(Policy::MustRespond);
        let out = ask(&mut s, 3, 7, "hid");
        assert_eq!(out[1], json!({"type":"prompt_hold","kind":"device_chooser","tab_id":3,"id":7,"wait_ms":10000}));
        let note = s.blocking_note().unwrap();
        assert_eq!(note.dialogs[0].kind, KIND);
        let id = note.dialogs[0].dialog_id;
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(s.blocking_note().is_some(), "a refused answer leaves it waiting");
        let done = s.interact(DialogCall::Respond { tab: None, accept: false, text: None, dialog_id: None }).unwrap();
        assert_eq!((done.answering, to_json(&done.msgs)[0]["decision"].as_str()), (Some(id), Some("refuse")));
        feed(&mut s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":7,"ok":true})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted),
            (DecidedBy::Agent, Some(DecidedBy::Agent), Some(false))
        );

        ask(&mut s, 3, 8, "usb");
        let id = s.held[0].record.id;
        assert_eq!(to_json(&s.watchdog(id))[0]["decision"], "refuse");
        feed(&mut s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":8,"ok":true})).unwrap();
        assert_eq!(s.record(id).unwrap().closed_by, Some(DecidedBy::Watchdog));
    }

    #[test]
    fn the_browsers_chooser_answering_first_closes_it_as_remote() {
        let mut s = state(Policy::MustRespond);
        ask(&mut s, 3, 9, "bluetooth");
        let id = s.held[0].record.id;
        feed(
            &mut s,
            json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":9,"ok":true,"settled":true}),
        )
        .unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Remote), None));
        assert!(rec.explanation.contains("chooser settled first"), "{}", rec.explanation);
    }

    #[test]
    fn policies_pilot_off_and_bad_input() {
        for policy in [Policy::AutoAccept, Policy::AutoDismiss] {
            let mut s = state(policy);
            assert_eq!(ask(&mut s, 3, 1, "serial")[1]["decision"], "refuse", "{policy:?}");
            assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Policy);
        }
        let mut s = state(Policy::Auto);
        let out = feed(
            &mut s,
            json!({"type":"prompt_request","kind":"device_chooser","tab_id":3,"id":2,"url":"http://a/","chooser":"usb",
            "method":"requestDevice","native":true}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "nothing answered: the browser's chooser stands");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::PilotOff, Some(DecidedBy::Remote), None));
        let before = s.history.iter().count();
        let bad = json!({"type":"prompt_request","kind":"device_chooser","tab_id":3,"id":3,"url":"http://a/","chooser":"camera"});
        assert!(feed(&mut s, bad).is_err());
        assert_eq!(s.history.iter().count(), before, "refused whole");
    }
}

/// Picks against the answerer's fake CDP peer (`answerer/tests.rs`): what the record lists,
/// what the agent and rules may pick, and a worker's forged target hint.
#[cfg(test)]
mod picks {
    use super::*;
    use crate::host::answerer::tests::{Peer, feed as feed_peer, until};
    use crate::host::answerer::{Answerer, PilotOn};
    use crate::host::kinds::{self, DialogCall};
    use crate::host::state::tests::{feed, state_with, to_json};
    use crate::reply::ErrorCode;
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    const BT: &str = "DeviceAccess.deviceRequestPrompted";
    const URL: &str = "http://a/flash";

    /// A state whose answerer is on a fake peer with pages `targets` at `URL`, attached.
    async fn connected(
        policy: Policy,
        targets: &[&str],
    ) -> (State, Peer, Answerer, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
        let (peer, a, rx) = Peer::start().await;
        feed_peer(&a, rx);
        let (tx, seen) = tokio::sync::mpsc::unbounded_channel();
        a.on_change(move |s| {
            let _ = tx.send(s.clone());
        });
        let mut s = state_with(policy);
        s.answerer = a.clone();
        assert!(kinds::answerer_want(&s).devices, "must_respond or a picking rule: watched");
        a.set(true, kinds::answerer_want(&s));
        for t in targets {
            peer.page(t, "page", URL);
        }
        until("attached", || peer.params("DeviceAccess.enable").len() == targets.len()).await;
        (s, peer, a, seen)
    }

    fn ask(s: &mut State, id: u64, target: Option<&str>) -> Vec<Value> {
        let mut m = json!({"type":"prompt_request","kind":"device_chooser","tab_id":3,"id":id,"frame_id":0,"url":URL,
            "chooser":"bluetooth","method":"requestDevice"});
        if let Some(t) = target {
            m["target"] = json!(t);
        }
        to_json(&feed(s, m).unwrap())
    }

    /// Every change the answerer saw so far, through the kinds (as the host's loop does).
    fn hear(s: &mut State, seen: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>) -> Answered {
        let mut out = Answered::default();
        while let Ok(x) = seen.try_recv() {
            let more = kinds::answerer_seen(s, &x);
            out.to_browser.extend(more.to_browser);
            out.acts.extend(more.acts);
        }
        out
    }

    /// Gives `acts` and lets the kind hear how they went.
    async fn give(s: &mut State, a: &Answerer, acts: Vec<(Kind, Act)>) -> Vec<Value> {
        let mut msgs = Vec::new();
        for (kind, act) in acts {
            let r = a.act(&PilotOn::of(true).unwrap(), &act).await;
            let more = kinds::answerer_acted(s, kind, &act, &r);
            msgs.extend(to_json(&more.to_browser));
        }
        msgs
    }

    fn details(s: &State, id: u64) -> ChooserDetails {
        let r = s.held.iter().map(|h| &h.record).find(|r| r.id == id).or_else(|| s.record(id)).unwrap();
        r.details.read().unwrap()
    }

    fn pick(s: &mut State, id: u64, device: &str) -> Result<crate::host::agent_calls::Done, crate::reply::ToolError> {
        let call =
            crate::call::interact(json!({"action":"handle_dialog","dialog_id":id,"device_id":device})).unwrap().call;
        s.interact(call)
    }

    #[tokio::test]
    async fn the_record_lists_the_devices_and_the_agent_picks_one_offered() {
        let (mut s, peer, a, mut seen) = connected(Policy::MustRespond, &["P1"]).await;
        // The chooser opens before the page hook's request comes.
        peer.send(BT, json!({"id":"R1","devices":[{"id":"09:09","name":"Heart <b>Rate</b>"}]}), Some("S-P1"));
        until("opened", || a.prompts().len() == 1).await;
        assert!(hear(&mut s, &mut seen).acts.is_empty(), "nothing held yet: nothing to link");
        let out = ask(&mut s, 1, Some("P1"));
        assert_eq!(out[1]["type"], "prompt_hold");
        let id = s.held[0].record.id;
        let d = details(&s, id);
        assert_eq!(d.devices.iter().map(|d| d.device_id.as_str()).collect::<Vec<_>>(), ["09:09"]);
        assert_eq!(d.no_choice, None);
        // A device that appears later: listed.
        peer.send(BT, json!({"id":"R1","devices":[{"id":"09:09","name":""},{"id":"08:08","name":""}]}), Some("S-P1"));
        until("updated", || a.prompts()[0].devices.len() == 2).await;
        hear(&mut s, &mut seen);
        assert_eq!(details(&s, id).devices.len(), 2);
        // accept without a device, and a device not offered: errors naming the offered ids; held.
        let e =
            s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: Some(id) }).unwrap_err();
        assert!(e.message.contains("device_id") && e.message.contains("09:09, 08:08"), "{}", e.message);
        let e = pick(&mut s, id, "07:07").map(|_| ()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert!(e.message.contains("\"07:07\" is not offered") && e.message.contains("09:09, 08:08"), "{}", e.message);
        assert!(s.held[0].closing.is_none(), "still held");
        // The pick: the page hook is told to leave the browser's call alone, the answerer picks.
        let done = pick(&mut s, id, "08:08").unwrap();
        assert_eq!(to_json(&done.msgs)[0]["decision"], "accept");
        feed(
            &mut s,
            json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":1,"ok":true,"accepted":true}),
        )
        .unwrap();
        let acts = std::mem::take(&mut s.answerer_asks);
        assert_eq!(acts, [(KIND, Act::SelectDevice { prompt: a.prompts()[0].prompt, device_id: "08:08".into() })]);
        give(&mut s, &a, acts).await;
        assert_eq!(peer.params("DeviceAccess.selectPrompt"), [json!({"id":"R1","deviceId":"08:08"})]);
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Agent), Some(true)));
        assert_eq!(details(&s, id).picked.as_deref(), Some("08:08"));
    }

    #[tokio::test]
    async fn a_rule_picks_when_its_device_appears_and_a_name_rule_skips_empty_names() {
        let (mut s, peer, a, mut seen) = connected(Policy::MustRespond, &["P1"]).await;
        let rule =
            |pick| RuleSpec::own(DeviceChooserRule { chooser: None, pick: Some(pick), matcher: MatchArg::default() });
        s.interact(DialogCall::Setup {
            tab: Some(3),
            once: true,
            rule: rule(DevicePick::NameContains("heart".into())),
        })
        .unwrap();
        // The request first, then the chooser: linked when the answerer sees it.
        let out = ask(&mut s, 1, None);
        assert_eq!(out[1]["type"], "prompt_hold");
        let id = s.held[0].record.id;
        assert!(s.held[0].record.rule_id.is_some());
        peer.send(BT, json!({"id":"R1","devices":[{"id":"09:09","name":""}]}), Some("S-P1"));
        until("opened", || a.prompts().len() == 1).await;
        assert!(hear(&mut s, &mut seen).to_browser.is_empty(), "an empty name matches no name rule");
        assert!(s.answerer_asks.is_empty());
        peer.send(
            BT,
            json!({"id":"R1","devices":[{"id":"09:09","name":""},{"id":"08:08","name":"Heart Rate"}]}),
            Some("S-P1"),
        );
        until("updated", || a.prompts()[0].devices.len() == 2).await;
        let out = hear(&mut s, &mut seen);
        // The page hook is told first, then the answerer picks.
        assert_eq!(to_json(&out.to_browser)[0]["decision"], "accept");
        feed(
            &mut s,
            json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":1,"ok":true,"accepted":true}),
        )
        .unwrap();
        let acts = std::mem::take(&mut s.answerer_asks);
        assert_eq!(acts, [(KIND, Act::SelectDevice { prompt: a.prompts()[0].prompt, device_id: "08:08".into() })]);
        give(&mut s, &a, acts).await;
        assert_eq!(peer.params("DeviceAccess.selectPrompt"), [json!({"id":"R1","deviceId":"08:08"})]);
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.decided_by, rec.accepted), (Some(DecidedBy::Rule), DecidedBy::Rule, Some(true)));
        assert!(rec.rule_id.is_some());
        assert!(s.rules_of(3).is_empty(), "a once-rule is spent");
    }

    /// The worker names a target that is none of the answerer's candidates: nothing is
    /// linked or picked, and the record says why; the right hint chooses among them.
    #[tokio::test]
    async fn a_forged_target_hint_picks_nothing() {
        let (mut s, peer, a, mut seen) = connected(Policy::MustRespond, &["P1", "P2"]).await;
        peer.send(BT, json!({"id":"A","devices":[{"id":"09:09","name":""}]}), Some("S-P1"));
        peer.send(BT, json!({"id":"B","devices":[{"id":"09:09","name":""}]}), Some("S-P2"));
        until("two", || a.prompts().len() == 2).await;
        hear(&mut s, &mut seen);
        ask(&mut s, 1, Some("P9"));
        let forged = s.held[0].record.id;
        assert_eq!(details(&s, forged).no_choice.as_deref(), Some(SEVERAL));
        assert!(s.answerer_asks.is_empty());
        let e = pick(&mut s, forged, "09:09").map(|_| ()).unwrap_err();
        assert!(e.message.contains("several open choosers"), "{}", e.message);
        assert!(s.answerer_asks.is_empty() && peer.params("DeviceAccess.selectPrompt").is_empty());
        ask(&mut s, 2, Some("P2"));
        let right = s.held[1].record.id;
        assert!(details(&s, right).no_choice.is_none());
        pick(&mut s, right, "09:09").unwrap();
        feed(
            &mut s,
            json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":2,"ok":true,"accepted":true}),
        )
        .unwrap();
        let acts = std::mem::take(&mut s.answerer_asks);
        give(&mut s, &a, acts).await;
        assert_eq!(peer.params("DeviceAccess.selectPrompt"), [json!({"id":"B","deviceId":"09:09"})]);
    }

    #[tokio::test]
    async fn without_a_connection_a_picking_rule_cancels_and_says_why() {
        let mut s = state_with(Policy::Auto);
        let rule = RuleSpec::own(DeviceChooserRule {
            chooser: None,
            pick: Some(DevicePick::First),
            matcher: MatchArg::default(),
        });
        s.interact(DialogCall::Setup { tab: Some(3), once: false, rule }).unwrap();
        let out = ask(&mut s, 1, None);
        assert_eq!(out.last().unwrap()["decision"], "refuse", "{out:?}");
        feed(&mut s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":1,"ok":true})).unwrap();
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Rule), Some(false)));
        assert!(rec.explanation.contains("no DevTools connection"), "{}", rec.explanation);
        // Under must_respond the agent's accept says why too.
        let mut s = state_with(Policy::MustRespond);
        ask(&mut s, 1, None);
        let id = s.held[0].record.id;
        let e = pick(&mut s, id, "09:09").map(|_| ()).unwrap_err();
        assert!(e.message.contains("no DevTools connection"), "{}", e.message);
        // A USB chooser: a cancel is the only answer, on its record and in the error.
        let out = to_json(
            &feed(
                &mut s,
                json!({"type":"prompt_request","kind":"device_chooser","tab_id":3,"id":2,"url":URL,
            "chooser":"usb","method":"requestDevice"}),
            )
            .unwrap(),
        );
        assert_eq!(out[1]["type"], "prompt_hold");
        let usb = s.held[1].record.id;
        assert_eq!(details(&s, usb).no_choice.as_deref(), Some(ONLY_CANCEL));
        let e = pick(&mut s, usb, "09:09").map(|_| ()).unwrap_err();
        assert!(e.message.contains("can only be cancelled"), "{}", e.message);
    }
}
