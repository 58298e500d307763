//! A state file the host wrote before the kinds owned their rules and state (issue 51,
//! `persist.rs` format 2: `fixtures/state_format2.json`, written by a3bbe60's own
//! `snapshot()`) still loads whole into today's host.

use ringbuf::traits::Consumer;
use unmodal::host::persist;
use unmodal::host::state::State;
use unmodal::kind::Kind;
use unmodal::rule::RuleSpec;
use unmodal_engine::{Policy, RuleTarget};

#[test]
fn a_state_file_of_the_host_before_loads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(persist::path(dir.path(), "session01"), include_bytes!("fixtures/state_format2.json")).unwrap();
    let snap = persist::load(dir.path(), "session01").expect("a format 2 file loads");
    let mut s = State::new();
    s.restore(snap);
    // The page dialogs' rules come back as they were (a print rule never went to disk).
    let rules: Vec<&RuleSpec> = s.rules_of(3).iter().map(|r| &r.rule).collect();
    assert_eq!(rules.len(), 2, "{rules:?}");
    let RuleSpec::Dialog { target, accept: false, text, matcher } = rules[1] else { panic!("{rules:?}") };
    assert_eq!((*target, text.as_deref()), (RuleTarget::All, Some("t")));
    assert_eq!((matcher.url_contains.as_deref(), matcher.message_contains.as_deref()), (Some("/x"), Some("Sure")));
    assert!(matcher.more.is_empty());
    assert_eq!(s.policies.get(&4).map(|p| p.policy), Some(Policy::MustRespond));
    // The history (a browser prompt's record among it, its kind read back by name) and the
    // held dialog.
    let history: Vec<(Kind, &str)> = s.history.iter().map(|r| (r.kind, r.message.as_str())).collect();
    assert!(history.contains(&(Kind::ALERT, "hi")), "{history:?}");
    assert!(history.iter().any(|(k, m)| k.is_browser_prompt() && m.contains("sign in with a passkey")), "{history:?}");
    let held: Vec<(Kind, &str)> = s.held.iter().map(|h| (h.record.kind, h.record.message.as_str())).collect();
    assert_eq!(held, [(Kind::PROMPT, "Name?")]);
}
