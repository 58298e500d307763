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
    let err =
        call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","accept":true})).unwrap_err();
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
    assert_eq!(out[1], json!({"type":"prompt_answer","kind":"device_chooser","tab_id":3,"id":1,"decision":"refuse"}));
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
    assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Agent, Some(DecidedBy::Agent), Some(false)));

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
    feed(&mut s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":9,"ok":true,"settled":true}))
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
    let bad =
        json!({"type":"prompt_request","kind":"device_chooser","tab_id":3,"id":3,"url":"http://a/","chooser":"camera"});
    assert!(feed(&mut s, bad).is_err());
    assert_eq!(s.history.iter().count(), before, "refused whole");
}
