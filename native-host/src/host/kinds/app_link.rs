//! App links: a navigation to a scheme that is not the web's (`mailto:`, `tel:`, `myapp://`,
//! `web+x:`). The browser hands such a URL to the OS: `mailto:` after a gesture opens the
//! mail client; any other scheme raises an "Open …?" dialog that, in headless, no one sees
//! and that drops every input to the tab, even across reloads. The page hook
//! (`manifest/inject/47-applinks.js`) cancels the navigation first (its `navigate` event)
//! and asks, through `manifest/applinks.js`; the answer opens it (the hook navigates again)
//! or leaves it cancelled. The prompt pipeline (`prompt.rs`) does the rest; here is what is
//! the app link's own. Pilot off: the browser's way, recorded.
//!
//! What the hook cannot see (a frame navigated by its parent: `<iframe src=myapp://…>`, or a
//! frame's location set from outside; the pilot off; a link a rule opened) reaches the
//! browser, which shows its dialog: the worker sees that navigation end in `ERR_ABORTED`
//! (`app_link_dialog`). It is recorded open and listed in `dialogs_blocking` until the tab
//! goes to another site, the only thing that clears it.

use super::RuleSpec;
use super::args::{self, Api, Given, NoFields, Owned};
use super::{
    Described, EXPIRED_CANCELLED, Policies, PromptKind, Says, Spec, Verdict, Words, configured, pilot_off, url_fits,
};
use crate::api::{MatchArg, ParamError, bad};
use crate::host::protocol::{PromptDecision, ToBrowser};
use crate::host::record::{self, DecidedBy, Details, DialogRecord, DialogState, MAX_MESSAGE_CHARS};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use ringbuf::traits::Consumer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("app_link");

/// Each policy's answer; `{scheme}` is the link's.
const POLICIES: Policies = Policies {
    hold: "App link ({scheme}:) held for the agent (policy must_respond): the navigation was cancelled and the page \
stays; open it with interact {action:\"handle_dialog\", dialog_id, accept:true} or leave it with accept:false",
    auto: Says::Refuse(
        "App link cancelled by the default policy: the browser would have handed {scheme}: to the OS (for any scheme \
but mailto:, an \"Open …?\" dialog that, headless, blocks every input to the tab); set up dialog_type \"app_link\" \
with accept:true to open it",
    ),
    auto_accept: Says::Accept("App link opened by the tab's auto_accept policy (the browser hands it to the OS)"),
    auto_dismiss: Says::Refuse("App link cancelled by the tab's auto_dismiss policy"),
};

/// An app link once recorded.
pub(super) struct AppLink;

const WORDS: Words = Words {
    kind: KIND,
    group: "app link",
    closed: (
        "opened (the page navigated to it again; the browser hands it to the OS)",
        "cancelled (the page stays where it is)",
    ),
    expired: EXPIRED_CANCELLED,
};

/// An app link rule: open it (accept) or cancel it; `match.url_contains` is on the link's
/// URL, `match.scheme` its scheme.
#[derive(Clone, PartialEq)]
pub(crate) struct AppLinkRule {
    pub accept: bool,
    pub matcher: MatchArg,
}

crate::own_rule!(AppLinkRule, "AppLink", KIND, accept: |r| r.accept, in_config: |_| false, show: [accept]);

/// Its own match field.
#[derive(Deserialize, JsonSchema)]
struct AppLinkMatch {
    /// dialog_type "app_link" only: only links of this scheme (e.g. "mailto"; any case,
    /// with or without the colon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[allow(dead_code)]
    scheme: Option<String>,
}

static API: Api = Api {
    instructions: "Links to schemes the OS handles (mailto:, tel:, myapp://, web+x:) are dialog_type \"app_link\": \
cancelled by default (in headless any but mailto: would block the tab's input); accept:true opens \
them (match.scheme or match.url_contains narrows a rule). ",
    description: "A link to a scheme the OS handles (mailto:, tel:, myapp://, web+x:): accept = open it\n(the \
browser hands it to the OS), dismiss = cancel it (the page stays where it is).",
    fields: &[Owned::setup("match.scheme")],
    schema: args::schema_of::<NoFields, AppLinkMatch>,
    read: args::read_of::<NoFields, AppLinkMatch>,
    rule: app_link_rule,
    answer: None,
    paths: &[],
    own_dir: None,
};

fn app_link_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let mut matcher = g.url_only_match("an app link", "name the scheme")?;
    if let Some(scheme) = matcher.get("scheme") {
        let s = scheme.strip_suffix(':').unwrap_or(scheme).to_ascii_lowercase();
        let ok = s.len() <= 64
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
        if !ok {
            return Err(bad("match.scheme", "a URL scheme such as \"mailto\" or \"web+app\" (letters, digits, + . -)"));
        }
        matcher.more.insert("scheme".into(), s);
    }
    g.no_text("an app link rule opens (accept: true) or cancels (accept: false); it takes no text")?;
    Ok(RuleSpec::own(AppLinkRule { accept: g.accept(), matcher }))
}

/// A browser's own "Open …?" dialog for an app link, shown in a tab: nothing answers it; a
/// navigation of the tab to another site clears it.
#[derive(Clone, Debug)]
struct AppDialog {
    id: u64,
    tab_id: i64,
    /// The host the tab showed when it opened (another one means it went to another site).
    host: String,
    opened: std::time::Instant,
}

/// The browser's own app-link dialogs showing in tabs.
#[derive(Debug, Default)]
struct AppDialogs(Vec<AppDialog>);

impl Spec for AppLink {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn tabs_changed(&self, s: &mut State) {
        s.close_app_dialogs_left_behind();
    }

    /// The browser's own "Open …?" dialogs: open, and nothing answers them.
    fn shown(&self, s: &State) -> Vec<(u64, i64, std::time::Instant)> {
        s.kinds.peek::<AppDialogs>().map_or_else(Vec::new, |d| d.0.iter().map(|d| (d.id, d.tab_id, d.opened)).collect())
    }

    fn not_held(&self, s: &State, id: u64) -> Option<String> {
        s.kinds.peek::<AppDialogs>()?.0.iter().any(|d| d.id == id).then(|| {
            format!(
                "Dialog {id} is the browser's own \"Open …?\" dialog for an app link: no answer reaches it. \
Navigate the tab to another site to clear it (e.g. to about:blank, then back)."
            )
        })
    }

    /// Its browser dialog is shown while the pilot is off, and no answer reaches it.
    fn unanswerable(&self) -> Option<&'static str> {
        Some(
            "An app_link without a watchdog is the browser's own \"Open …?\" dialog: it drops every click and key \
to the tab and no answer reaches it; navigate the tab to another site to clear it.",
        )
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<AppLinkAsk>(fields)
    }

    fn message(&self) -> Option<&'static str> {
        Some("app_link_dialog")
    }

    fn on_message(&self, s: &mut State, fields: serde_json::Value) -> Result<Vec<ToBrowser>, serde_json::Error> {
        let m = AppLinkDialog::deserialize(fields)?;
        s.on_app_link_dialog(m.tab_id, m.frame_id, &m.target);
        Ok(Vec::new())
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let AppLinkRule { accept, matcher } = rule.of()?;
        let what = matcher.get("scheme").map_or("app link".to_string(), |s| format!("{s}: link"));
        let will =
            if *accept { "open it (the browser hands it to the OS)" } else { "cancel it (the page stays where it is)" };
        Some(configured(&what, will, once))
    }
}

impl AppLinkAsk {
    /// The link's scheme, lower case, without the colon.
    fn scheme(&self) -> String {
        self.target.split(':').next().unwrap_or_default().to_ascii_lowercase()
    }
}

impl PromptKind for AppLinkAsk {
    fn check(&self) -> Result<(), String> {
        let scheme = self.scheme();
        let web = ["http", "https", "about", "blob", "data", "javascript", "file"];
        if !self.target.contains(':') || scheme.is_empty() || web.contains(&scheme.as_str()) {
            return Err("an app link names no scheme the OS would handle".into());
        }
        Ok(())
    }

    fn describe(&self, redactor: &Redactor, url: &str) -> Described {
        let (target, truncated) = record::clip(&self.target, MAX_MESSAGE_CHARS);
        let (target, redacted) = redactor.apply(&target);
        Described {
            message: target.clone(),
            truncated,
            redacted,
            url: record::clip(url, 2048).0,
            details: Details::of(&AppLinkDetails { scheme: record::clip(&self.scheme(), 64).0, target }),
        }
    }

    /// `url_contains` is on the link's URL, not the page's.
    fn fits(&self, rule: &RuleSpec, _: &str) -> Option<usize> {
        let AppLinkRule { matcher, .. } = rule.of()?;
        let scheme = matcher.get("scheme");
        let fits = url_fits(matcher.url_contains.as_ref(), &self.target) && scheme.is_none_or(|s| *s == self.scheme());
        fits.then(|| usize::from(matcher.url_contains.is_some()) + usize::from(scheme.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let (decision, what) = if rule.accept() {
            (PromptDecision::Accept, "opened (the browser hands it to the OS)")
        } else {
            (PromptDecision::Refuse, "cancelled")
        };
        Verdict::rule(decision, id, format!("App link {what}: app link rule {id} matched"))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        POLICIES.verdict_with(policy, &[("{scheme}", &self.scheme())])
    }

    fn pilot_off(&self) -> String {
        pilot_off(&format!(
            "the browser handles the {}: link itself (mailto: goes to the OS mail client; any other scheme raises an \
\"Open …?\" dialog that, headless, blocks every input to the tab until a navigation to another site)",
            self.scheme()
        ))
    }
}

/// The host of a URL (empty for none): another one means another site.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or("", |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or_default().rsplit('@').next().unwrap_or_default()
}

impl State {
    /// The browser showed its own dialog for a link the hook did not cancel.
    pub(in crate::host) fn on_app_link_dialog(&mut self, tab_id: i64, frame_id: i64, target: &str) {
        let ask = AppLinkAsk { target: target.to_owned() };
        if ask.check().is_err() || ask.scheme() == "mailto" {
            return; // mailto: goes to the mail client without a dialog
        }
        let page = self.tab(tab_id).map(|t| t.url.clone()).unwrap_or_default();
        let described = ask.describe(&self.redactor, &page);
        let record = DialogRecord {
            message: described.message,
            message_truncated: described.truncated,
            redacted: described.redacted,
            state: DialogState::Open,
            explanation: format!(
                "The browser showed its \"Open …?\" dialog for a {}: link the page hook did not cancel (a frame \
navigated by its parent, the pilot off, or a link opened on purpose). Headless, nobody sees it and it drops every \
click and key to the tab, even across reloads; no answer reaches it. A navigation of the tab to another site clears \
it (navigate to about:blank, then back).",
                ask.scheme()
            ),
            url: described.url,
            page_url: page.clone(),
            frame_id: Some(frame_id),
            details: described.details,
            ..DialogRecord::new(self.next_id(), KIND, tab_id, DecidedBy::Remote)
        };
        self.logs.dialog(&record);
        let id = record.id;
        self.remember(record);
        self.queue_pending(id);
        let host = host_of(&page).to_owned();
        self.kinds.get::<AppDialogs>().0.push(AppDialog { id, tab_id, host, opened: std::time::Instant::now() });
    }

    /// Dialogs of tabs that closed or went to another site are gone.
    fn close_app_dialogs_left_behind(&mut self) {
        let (tabs, mut gone) = (&self.tabs, Vec::new());
        let shown = self.kinds.get::<AppDialogs>();
        shown.0.retain(|d| {
            let tab = tabs.iter().find(|t| t.id == d.tab_id);
            let stays = tab.is_some_and(|t| host_of(&t.url) == d.host);
            if !stays {
                gone.push((d.id, tab.is_some(), d.opened.elapsed()));
            }
            stays
        });
        for (id, navigated, open_for) in gone {
            let Some(rec) = self.history.iter_mut().find(|r| r.id == id) else { continue };
            rec.state = DialogState::Closed;
            rec.closed_by = Some(DecidedBy::Remote);
            let how = if navigated { "the tab went to another site" } else { "the tab closed" };
            rec.explanation = format!("{} Closed after {} ms: {how}.", rec.explanation, open_for.as_millis());
            let summary = format!("closed: {how}");
            let rec = rec.clone();
            self.logs.closed(&rec, summary);
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct AppLinkAsk {
    /// Where the page navigated: a URL the browser would hand to the OS (page-made).
    pub target: String,
}

/// A link to a scheme the OS handles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppLinkDetails {
    /// Its scheme, lower case, without the colon (`mailto`, `myapp`, `web+app`).
    pub scheme: String,
    /// Its URL, cut and redacted like a dialog's message (also the record's message).
    pub target: String,
}

/// The browser showed its "Open …?" dialog for an app link the page hook did not cancel
/// (a frame its parent navigated, the pilot off, a link a rule opened): the navigation to
/// `target` ended in `ERR_ABORTED` (`chrome.webNavigation`).
#[derive(Debug, Deserialize)]
struct AppLinkDialog {
    tab_id: i64,
    #[serde(default)]
    frame_id: i64,
    target: String,
}

#[cfg(test)]
mod tests {

    fn call(v: serde_json::Value) -> Result<crate::host::kinds::DialogCall, crate::api::ParamError> {
        crate::call::interact(v).map(|c| c.call)
    }

    #[test]
    fn app_link_calls_validate_their_scheme() {
        let c =
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","match":{"scheme":"MailTo:"}}))
                .unwrap();
        let DialogCall::Setup { rule, .. } = &c else { panic!("{c:?}") };
        let Some(AppLinkRule { accept: true, matcher }) = rule.of() else { panic!("{c:?}") };
        assert_eq!(matcher.get("scheme").map(String::as_str), Some("mailto"), "stored lower case, without the colon");
        let param = |v| call(v).unwrap_err().param;
        for bad in ["", "1x", "a b", "a/b"] {
            let v = json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","match":{"scheme":bad}});
            assert_eq!(param(v), "match.scheme", "{bad:?}");
        }
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","match":{"scheme":"tel"}})),
            "match.scheme"
        );
        assert_eq!(param(json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","text":"x"})), "text");
        assert_eq!(
            param(
                json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","match":{"message_contains":"x"}})
            ),
            "match.message_contains"
        );
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: crate::host::kinds::DialogType::of(KIND) })
        );
    }

    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::DialogCall;
    use crate::host::state::State;
    use crate::host::state::tests::{feed, to_json};
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        crate::host::state::tests::state_with(policy)
    }

    fn link(s: &mut State, tab: i64, n: u64, target: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"prompt_request","kind":"app_link","tab_id":tab,"id":n,"frame_id":0,"url":"http://a/p",
                "target":target}),
            )
            .unwrap(),
        )
    }

    fn setup(s: &mut State, accept: bool, scheme: Option<&str>) -> Value {
        let matcher = scheme.map_or_else(MatchArg::default, |s| MatchArg::default().with("scheme", s));
        s.interact(DialogCall::Setup { tab: None, once: true, rule: RuleSpec::own(AppLinkRule { accept, matcher }) })
            .unwrap()
            .value
    }

    #[test]
    fn the_default_cancels_and_waits_for_acknowledgement() {
        let mut s = state(Policy::Auto);
        let out = link(&mut s, 3, 1, "myapp://open?token=x");
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"app_link","tab_id":3,"id":1,"decision":"refuse"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!(
            (rec.kind, rec.decided_by, rec.closed_by, rec.accepted),
            (KIND, DecidedBy::DefaultPolicy, Some(DecidedBy::DefaultPolicy), Some(false))
        );
        assert_eq!(s.pending.back(), Some(&rec.id));
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!((j["type"].as_str(), j["scheme"].as_str()), (Some("app_link"), Some("myapp")));
        assert_eq!(j["target"], "myapp://open?token=x");
        let back: crate::host::record::DialogRecord = serde_json::from_value(j).unwrap();
        assert_eq!(back.details, rec.details, "read back from disk as it was");
    }

    #[test]
    fn a_rule_opens_once_by_scheme_and_belongs_to_its_tab() {
        let mut s = state(Policy::Auto);
        let v = setup(&mut s, true, Some("mailto"));
        assert_eq!((v["dialog_type"].as_str(), v["match"]["scheme"].as_str()), (Some("app_link"), Some("mailto")));
        assert_eq!(link(&mut s, 3, 1, "tel:123")[1]["decision"], "refuse", "another scheme");
        assert_eq!(link(&mut s, 4, 2, "mailto:a@b.c")[1]["decision"], "refuse", "another tab");
        assert_eq!(link(&mut s, 3, 3, "MAILTO:a@b.c")[1]["decision"], "accept");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.accepted, rec.rule_id.is_some()), (DecidedBy::Rule, Some(true), true));
        assert_eq!(link(&mut s, 3, 4, "mailto:a@b.c")[1]["decision"], "refuse", "a once-rule is spent");
    }

    #[test]
    fn must_respond_holds_the_agent_opens_and_the_watchdog_cancels() {
        let mut s = state(Policy::MustRespond);
        assert_eq!(link(&mut s, 3, 1, "web+app:x")[1]["type"], "prompt_hold");
        let id = s.blocking_note().unwrap().dialogs[0].dialog_id;
        let done = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap();
        assert_eq!((done.answering, to_json(&done.msgs)[0]["decision"].as_str()), (Some(id), Some("accept")));
        feed(&mut s, json!({"type":"prompt_result","kind":"app_link","tab_id":3,"id":1,"ok":true,"accepted":true}))
            .unwrap();
        assert_eq!(s.record(id).unwrap().closed_by, Some(DecidedBy::Agent));
        link(&mut s, 3, 2, "myapp://b");
        let id = s.held[0].record.id;
        assert_eq!(to_json(&s.watchdog(id))[0]["decision"], "refuse");
    }

    #[test]
    fn pilot_off_and_bad_input() {
        let mut s = state(Policy::Auto);
        let out = feed(
            &mut s,
            json!({"type":"prompt_request","kind":"app_link","tab_id":3,"id":1,"url":"http://a/","target":"mailto:x@y",
            "native":true}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "nothing answered: the browser does");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::PilotOff);
        for bad in ["https://a/", "nothing", ":x"] {
            let m = json!({"type":"prompt_request","kind":"app_link","tab_id":3,"id":2,"target":bad});
            assert!(feed(&mut s, m).is_err(), "{bad}");
        }
    }
}
