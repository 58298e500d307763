//! Permission prompts (camera, microphone, notifications, geolocation, clipboard read). No
//! browser event tells of them, so the page hook (`manifest/inject/45-permissions.js`)
//! holds each call that would prompt and asks, through `content.js`, the service worker
//! (`manifest/permissions.js`), which asks the host. The host answers like a dialog — a
//! rule, the tab's policy, the agent (held, with the watchdog) — with grant or deny; the
//! worker sets the browser's own content setting for the origin to `allow` or `block`, and
//! only then does the hook make the real call. So a granted call really works, a denied one
//! fails exactly as the browser fails it, and `navigator.permissions.query` tells the truth.
//!
//! Without a rule, an origin whose setting is no longer `ask` (granted or blocked before)
//! gets no prompt from the browser either: the call goes to the browser as it is, unrecorded.
//! Pilot off: the browser's own behaviour, recorded. Rules live in memory, like auth rules.
//! The prompt pipeline (`prompt.rs`) does the rest; here is what is the permission's own.

use super::args::{self, Api, Given, NoFields};
use super::{Described, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, Words, configured, pilot_off, url_fits};
use crate::api::{MatchArg, ParamError, bad};
use crate::host::protocol::PromptDecision;
use crate::host::record::{self, Details};
use crate::kind::Kind;
use crate::redact::Redactor;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("permission");

/// Each policy's answer. Under `auto` the safe default is deny: nothing is granted that
/// nobody chose, and nothing waits.
const POLICIES: Policies = Policies {
    hold: "Permission request held for the agent (policy must_respond): the page's call waits; answer with interact \
{action:\"handle_dialog\", dialog_id, accept} (true = grant, false = deny)",
    auto: Says::Refuse(
        "Permission denied by the default policy: no permission rule matched (set up dialog_type \"permission\" with \
accept:true to grant)",
    ),
    auto_accept: Says::Accept("Permission granted by the tab's auto_accept policy"),
    auto_dismiss: Says::Refuse("Permission denied by the tab's auto_dismiss policy"),
};

/// A permission prompt once recorded.
pub(super) struct Permission;

const WORDS: Words = Words {
    kind: KIND,
    group: "permission",
    closed: ("granted", "denied"),
    expired: "The extension denied it: no answer came from the host in time.",
};

/// A permission the browser would prompt for and the extension can decide (Chromium's
/// content settings), named as `navigator.permissions.query` names it.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionName {
    /// getUserMedia with video.
    Camera,
    /// getUserMedia with audio.
    Microphone,
    /// Notification.requestPermission.
    Notifications,
    /// geolocation.getCurrentPosition / watchPosition.
    Geolocation,
    /// navigator.clipboard.read / readText.
    ClipboardRead,
    /// The browser's "Download multiple files" prompt: more than one download a page starts
    /// without a new click (headless Chromium denies it and stores the block for the site).
    /// Only when named: a grant or denial is set for the tab's site before the page starts
    /// its downloads, and follows the tab to the sites it goes to.
    AutomaticDownloads,
}

impl PermissionName {
    pub const ALL: [Self; 6] = [
        Self::Camera,
        Self::Microphone,
        Self::Notifications,
        Self::Geolocation,
        Self::ClipboardRead,
        Self::AutomaticDownloads,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Camera => "camera",
            Self::Microphone => "microphone",
            Self::Notifications => "notifications",
            Self::Geolocation => "geolocation",
            Self::ClipboardRead => "clipboard-read",
            Self::AutomaticDownloads => "automatic-downloads",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A permission rule: grant (accept) or deny, for one permission or all.
#[derive(Clone, PartialEq)]
pub(crate) struct PermissionRule {
    pub accept: bool,
    pub permission: Option<PermissionName>,
    pub matcher: MatchArg,
}

crate::own_rule!(PermissionRule, "Permission", KIND, accept: |r| r.accept, in_config: |r| r.permission == Some(PermissionName::AutomaticDownloads), show: [accept, permission]);

/// A rule for the browser's "Download multiple files" prompt (the `automatic-downloads`
/// permission): whether it grants; the worker sets the browser's setting for the tab's site
/// before any download.
pub(crate) fn automatic_downloads(rule: &RuleSpec) -> Option<bool> {
    rule.of::<PermissionRule>().filter(|r| r.permission == Some(PermissionName::AutomaticDownloads)).map(|r| r.accept)
}

/// Its own field of `interact`.
#[derive(Deserialize, JsonSchema)]
struct PermissionFields {
    /// dialog_type "permission" with setup: the permission the rule decides (default: every
    /// one of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    permission: Option<PermissionName>,
}

static API: Api = Api {
    instructions: "Prompts for a permission (camera, microphone, notifications, geolocation, clipboard-read) are \
dialog_type \"permission\" (optional permission names one): accept grants, accept:false denies; \
without a rule they are denied. ",
    description: "A permission prompt (camera, microphone, notifications, geolocation, clipboard-read):\naccept = \
grant, dismiss = deny.",
    fields: &[args::Owned { name: "permission", held: None, in_clear: true, late: false }],
    schema: args::schema_of::<PermissionFields, NoFields>,
    read: args::read_of::<PermissionFields, NoFields>,
    rule: permission_rule,
    answer: None,
    paths: &[],
    own_dir: None,
};

fn permission_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a permission prompt", "name the permission")?;
    g.no_text("a permission rule grants (accept: true) or denies (accept: false); it takes no text")?;
    let permission = g.fields::<PermissionFields>()?.permission;
    if permission == Some(PermissionName::AutomaticDownloads) && !matcher.is_empty() {
        return Err(bad(
            "match",
            "an automatic-downloads rule is set for the tab's site before the page starts its downloads, and \
follows the tab; it takes no match",
        ));
    }
    Ok(RuleSpec::own(PermissionRule { accept: g.accept(), permission, matcher }))
}

impl Spec for Permission {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<PermissionAsk>(fields)
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn same_slot(&self, a: &RuleSpec, b: &RuleSpec) -> bool {
        matches!((a.of::<PermissionRule>(), b.of::<PermissionRule>()), (Some(a), Some(b)) if a.permission == b.permission)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(PermissionRule { permission: Some(p), .. }) = rule.of() {
            v.insert("permission".into(), p.as_str().into());
        }
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let PermissionRule { accept, permission, .. } = rule.of()?;
        let what = permission.map_or("permission request".to_string(), |p| format!("{} request", p.as_str()));
        Some(configured(&what, if *accept { "grant it" } else { "deny it" }, once))
    }
}

impl PermissionAsk {
    /// The names asked for, known ones only (`check` refused the rest).
    fn names(&self) -> Vec<PermissionName> {
        self.permissions.iter().filter_map(|p| PermissionName::parse(p)).collect()
    }
}

impl PromptKind for PermissionAsk {
    fn check(&self) -> Result<(), String> {
        let n = self.names().len();
        if n == 0 || n != self.permissions.len() || n > PermissionName::ALL.len() {
            return Err("a permission request names no known permission".into());
        }
        Ok(())
    }

    fn describe(&self, _: &Redactor, url: &str) -> Described {
        let names = self.names();
        Described {
            message: names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", "),
            truncated: false,
            redacted: Vec::new(),
            url: record::clip(url, 2048).0,
            details: Details::of(&PermissionDetails { permissions: names, api: record::clip(&self.method, 40).0 }),
        }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let PermissionRule { permission, matcher, .. } = rule.of()?;
        let fits = permission.is_none_or(|p| self.names().contains(&p)) && url_fits(matcher.url_contains.as_ref(), url);
        fits.then(|| usize::from(permission.is_some()) + usize::from(matcher.url_contains.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let (decision, what) =
            if rule.accept() { (PromptDecision::Accept, "granted") } else { (PromptDecision::Refuse, "denied") };
        Verdict::rule(decision, id, format!("Permission {what}: permission rule {id} matched"))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        POLICIES.verdict(policy)
    }

    /// No rule, and the browser would not prompt (granted or blocked before): its stored
    /// answer stands, unrecorded.
    fn unprompted(&self) -> Option<PromptDecision> {
        (self.stored == "allow" || self.stored == "block").then_some(PromptDecision::Native)
    }

    fn pilot_off(&self) -> String {
        let listed = self.names().iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ");
        pilot_off(&format!(
            "the browser answers the {listed} permission request itself (headless Chromium denies at once; a headful \
one asks a human)"
        ))
    }
}

#[derive(Debug, Deserialize)]
pub struct PermissionAsk {
    /// `navigator.permissions.query` names (`PermissionName`).
    pub permissions: Vec<String>,
    /// The page's call: getUserMedia, requestPermission, …
    #[serde(default)]
    pub method: String,
    /// The browser's content setting for the origin now: `ask`, `allow` or `block` (the
    /// strictest of the permissions asked).
    #[serde(default)]
    pub stored: String,
}

/// A permission prompt: what was asked for, by which call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDetails {
    /// What the call asks for (getUserMedia with audio and video asks for two).
    pub permissions: Vec<PermissionName>,
    /// The page's call: getUserMedia, requestPermission, getCurrentPosition, …
    pub api: String,
}

#[cfg(test)]
mod tests {

    fn call(v: serde_json::Value) -> Result<crate::host::kinds::DialogCall, crate::api::ParamError> {
        crate::call::interact(v).map(|c| c.call)
    }

    #[test]
    fn permission_calls_validate_and_name_what_is_wrong() {
        let c = call(
            json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","permission":"clipboard-read",
            "accept":false,"once":false,"match":{"url_contains":"/app"}}),
        )
        .unwrap();
        let DialogCall::Setup { once: false, rule, .. } = &c else { panic!("{c:?}") };
        let Some(PermissionRule { accept: false, permission, matcher }) = rule.of() else { panic!("{c:?}") };
        let permission = *permission;
        assert_eq!((permission, matcher.url_contains.as_deref()), (Some(PermissionName::ClipboardRead), Some("/app")));
        assert!(matches!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission"})),
            Ok(DialogCall::Setup { once: true, rule, .. })
                if matches!(rule.of(), Some(PermissionRule { accept: true, permission: None, .. }))
        ));
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: crate::host::kinds::DialogType::of(KIND) })
        );
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","permission":"camera"})),
            "permission"
        );
        assert_eq!(param(json!({"action":"handle_dialog","accept":true,"permission":"camera"})), "permission");
        assert_eq!(param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","text":"x"})), "text");
        assert_eq!(
            param(
                json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","match":{"message_contains":"x"}})
            ),
            "match.message_contains"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","match":{"realm":"x"}})),
            "match.realm"
        );
        assert!(crate::call::interact(json!({"action":"handle_dialog","permission":"usb"})).is_err(), "unknown names");
        for p in PermissionName::ALL {
            assert_eq!(PermissionName::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
    }

    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::DialogCall;
    use crate::host::record::DecidedBy;
    use crate::host::state::State;
    use crate::host::state::tests::{feed, to_json};
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        crate::host::state::tests::state_with(policy)
    }

    fn ask(s: &mut State, n: u64, names: &[&str], stored: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"prompt_request","kind":"permission","tab_id":3,"id":n,"frame_id":0,"url":"http://a/cam",
                "permissions":names,"method":"getUserMedia","stored":stored}),
            )
            .unwrap(),
        )
    }

    fn setup(s: &mut State, accept: bool, permission: Option<PermissionName>) -> Value {
        let call = DialogCall::Setup {
            tab: None,
            once: true,
            rule: RuleSpec::own(PermissionRule { accept, permission, matcher: MatchArg::default() }),
        };
        s.interact(call).unwrap().value
    }

    #[test]
    fn a_rule_grants_once_then_the_default_denies() {
        let mut s = state(Policy::Auto);
        let v = setup(&mut s, true, Some(PermissionName::Camera));
        assert_eq!((v["dialog_type"].as_str(), v["permission"].as_str()), (Some("permission"), Some("camera")));
        assert_eq!(v["auto_responses"][0]["dialog_type"], "permission");
        let out = ask(&mut s, 1, &["camera", "microphone"], "ask");
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"permission","tab_id":3,"id":1,"decision":"accept"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Rule, Some(DecidedBy::Rule), Some(true)));
        assert_eq!(rec.message, "camera, microphone");
        assert!(s.rules_of(3).is_empty(), "a once-rule is spent");
        let out = ask(&mut s, 2, &["camera"], "ask");
        assert_eq!(out[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!(rec.decided_by, DecidedBy::DefaultPolicy);
        assert_eq!(s.pending.back(), Some(&rec.id), "waits for the agent's acknowledgement");
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!((j["type"].as_str(), j["permissions"][0].as_str()), (Some("permission"), Some("camera")));
    }

    #[test]
    fn a_rule_for_another_permission_does_not_match_and_a_stored_answer_stands() {
        let mut s = state(Policy::Auto);
        setup(&mut s, true, Some(PermissionName::Notifications));
        let out = ask(&mut s, 1, &["geolocation"], "block");
        assert_eq!(
            out,
            vec![json!({"type":"prompt_answer","kind":"permission","tab_id":3,"id":1,"decision":"native"})]
        );
        assert_eq!(s.history.iter().count(), 0, "no prompt, no record");
        // A matching rule wins over what is stored.
        setup(&mut s, true, None);
        let out = ask(&mut s, 2, &["geolocation"], "block");
        assert_eq!(out[1]["decision"], "accept");
    }

    #[test]
    fn must_respond_holds_until_the_agent_answers_and_the_watchdog_denies() {
        let mut s = state(Policy::MustRespond);
        let out = ask(&mut s, 7, &["notifications"], "ask");
        assert_eq!(out[1], json!({"type":"prompt_hold","kind":"permission","tab_id":3,"id":7,"wait_ms":10000}));
        let note = s.blocking_note().unwrap();
        assert_eq!((note.dialogs[0].kind, note.dialogs[0].message.as_str()), (KIND, "notifications"));
        let id = note.dialogs[0].dialog_id;
        let done = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap();
        assert_eq!(done.answering, Some(id));
        assert_eq!(to_json(&done.msgs)[0]["decision"], "accept");
        feed(&mut s, json!({"type":"prompt_result","kind":"permission","tab_id":3,"id":7,"ok":true,"accepted":true}))
            .unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted),
            (DecidedBy::Agent, Some(DecidedBy::Agent), Some(true))
        );

        ask(&mut s, 8, &["geolocation"], "ask");
        let id = s.held[0].record.id;
        assert_eq!(to_json(&s.watchdog(id))[0]["decision"], "refuse");
        feed(&mut s, json!({"type":"prompt_result","kind":"permission","tab_id":3,"id":8,"ok":true,"accepted":false}))
            .unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Watchdog), Some(false)));
    }

    #[test]
    fn policies_and_pilot_off() {
        let mut s = state(Policy::AutoAccept);
        assert_eq!(ask(&mut s, 1, &["clipboard-read"], "ask")[1]["decision"], "accept");
        let mut s = state(Policy::AutoDismiss);
        assert_eq!(ask(&mut s, 1, &["clipboard-read"], "ask")[1]["decision"], "refuse");
        let out = feed(
            &mut s,
            json!({"type":"prompt_request","kind":"permission","tab_id":3,"id":2,"url":"http://a/","permissions":["camera"],
            "method":"getUserMedia","native":true}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "nothing answered: the browser does");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::PilotOff, Some(DecidedBy::Remote), None));
    }

    #[test]
    fn rules_belong_to_their_tab() {
        let mut s = state(Policy::Auto);
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"},{"id":4,"url":"http://a/"}]}))
            .unwrap();
        s.add_rule(
            4,
            false,
            RuleSpec::own(PermissionRule { accept: true, permission: None, matcher: MatchArg::default() }),
        )
        .unwrap();
        assert_eq!(ask(&mut s, 1, &["camera"], "ask")[1]["decision"], "refuse", "tab 3 has no rule");
        let v = feed(
            &mut s,
            json!({"type":"prompt_request","kind":"permission","tab_id":4,"id":2,"url":"http://a/","permissions":["camera"],
            "method":"getUserMedia","stored":"ask"}),
        )
        .unwrap();
        assert_eq!(to_json(&v)[1]["decision"], "accept");
        // A closed tab's rules go with it.
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        assert!(s.rules_of(4).is_empty());
    }

    #[test]
    fn unknown_names_are_refused_whole() {
        let mut s = state(Policy::Auto);
        let bad = json!({"type":"prompt_request","kind":"permission","tab_id":3,"id":1,"url":"http://a/","permissions":["usb"],
            "api":"x"});
        assert!(feed(&mut s, bad).is_err());
        assert_eq!(s.history.iter().count(), 0);
    }
}
