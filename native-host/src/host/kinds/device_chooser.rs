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

use super::args::{self, Api, Given, NoFields};
use super::{
    Described, EXPIRED_CANCELLED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, Words, configured, pilot_off,
    url_fits,
};
use crate::api::{MatchArg, ParamError, bad};
use crate::host::protocol::PromptDecision;
use crate::host::record::{self, Details, DialogRecord};
use crate::kind::Kind;
use crate::redact::Redactor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("device_chooser");

/// Each policy's answer: every answer is a cancel; only `must_respond` waits (for the
/// agent's cancel, or the browser's chooser).
const POLICIES: Policies = Policies {
    hold: "Device chooser held for the agent (policy must_respond): the page's call waits; cancel it with interact \
{action:\"handle_dialog\", dialog_id, accept:false} (no extension can pick a device)",
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
        "cancelled (the page got the browser's cancel result)",
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

/// A device chooser rule: cancel it (the only answer there is), for one chooser or all.
#[derive(Clone, PartialEq)]
pub(crate) struct DeviceChooserRule {
    pub chooser: Option<ChooserApi>,
    pub matcher: MatchArg,
}

crate::own_rule!(DeviceChooserRule, "DeviceChooser", KIND, accept: |_| false, in_config: |_| false, show: [chooser]);

/// Its own field of `interact`.
#[derive(Deserialize, JsonSchema)]
struct DeviceChooserFields {
    /// dialog_type "device_chooser" with setup: the chooser the rule cancels (default: every
    /// one of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chooser: Option<ChooserApi>,
}

static API: Api = Api {
    instructions: "Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth, and getDisplayMedia's screen-share \
picker) are dialog_type \"device_chooser\": no extension can pick a device, so the only answer is \
accept:false (cancel; the page gets the browser's own cancel result), which is also the default. ",
    description: "A device chooser (WebUSB, WebHID, Web Serial, Web Bluetooth): it can only be\ncancelled (no \
extension can pick a device).",
    fields: &[args::Owned { name: "chooser", held: None, in_clear: true, late: false }],
    schema: args::schema_of::<DeviceChooserFields, NoFields>,
    read: args::read_of::<DeviceChooserFields, NoFields>,
    rule: device_chooser_rule,
    answer: None,
    paths: &[],
    own_dir: None,
};

fn device_chooser_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a device chooser", "name the chooser")?;
    if g.args.accept == Some(true) {
        return Err(bad(
            "accept",
            "a device chooser can only be cancelled (accept: false): Chromium gives extensions no way to list or \
pick a device (its DeviceAccess protocol domain is refused to them)",
        ));
    }
    g.no_text("a chooser rule cancels the chooser; it takes no text")?;
    Ok(RuleSpec::own(DeviceChooserRule { chooser: g.fields::<DeviceChooserFields>()?.chooser, matcher }))
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
        if let Some(DeviceChooserRule { chooser: Some(c), .. }) = rule.of() {
            v.insert("chooser".into(), c.as_str().into());
        }
    }

    fn gone(&self, settled: bool) -> &'static str {
        if settled {
            "The browser's own chooser settled first (a person picked or cancelled, or the browser ended the call): \
the page got the browser's answer."
        } else {
            "The page was gone before the answer reached it."
        }
    }

    fn accept_refused(&self, held: &DialogRecord, _carrying: bool) -> Option<String> {
        Some(format!(
            "Dialog {} is a device chooser: no extension can pick a device (Chromium refuses extensions its \
DeviceAccess domain), so it can only be cancelled; send accept: false.",
            held.id
        ))
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let DeviceChooserRule { chooser, .. } = rule.of()?;
        let what = chooser.map_or("device chooser".to_string(), |c| format!("{} device chooser", c.as_str()));
        Some(configured(&what, "cancel it", once))
    }
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
            details: Details::of(&ChooserDetails { chooser: self.api(), method }),
        }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let DeviceChooserRule { chooser, matcher } = rule.of()?;
        let fits = chooser.is_none_or(|c| c == self.api()) && url_fits(matcher.url_contains.as_ref(), url);
        fits.then(|| usize::from(chooser.is_some()) + usize::from(matcher.url_contains.is_some()))
    }

    fn by_rule(&self, id: u32, _: &RuleSpec) -> Verdict {
        Verdict::rule(PromptDecision::Refuse, id, format!("Device chooser cancelled: chooser rule {id} matched"))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        POLICIES.verdict(policy)
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
}

/// A device chooser: which one, by which call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChooserDetails {
    pub chooser: ChooserApi,
    /// The page's call: requestDevice, requestPort.
    pub method: String,
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
        let Some(DeviceChooserRule { chooser: Some(ChooserApi::Serial), matcher }) = rule.of() else { panic!("{c:?}") };
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
        let rule = RuleSpec::own(DeviceChooserRule { chooser: Some(ChooserApi::Serial), matcher: MatchArg::default() });
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
