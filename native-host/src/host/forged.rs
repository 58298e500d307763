//! The browser side as the attacker (issue 49). Code a DevTools client runs in Unmodal's
//! service worker can send the host any message the worker can: every inbound type below,
//! forged, in a local host and in a remote one (`unmodal mcp --cdp-endpoint`), with the
//! pilot off and on. What must hold:
//! - pilot off: nothing of the agent's reaches the browser side (no rule, no policy, no
//!   kind's field, no answer, no secret), every request is recorded as `pilot_off`, and the
//!   agent's rules wait in the host, intact;
//! - pilot on: what the host checks holds (the switch stays the host's, a close that is
//!   not the host's answer is not recorded as it), within the limit SECURITY.md states;
//! - both: the real session keeps working afterwards.
//!
//! On 892be98 the pilot-off half failed: the host decided `prompt_request`s from the
//! worker's `native` flag, so a forged one got the auth rule's credentials back, and the
//! agent's rules and policies went to the worker in every tab config.

use super::prompt_snapshot::samples;
use super::protocol::ToBrowser;
use super::state::State;
use super::state::tests::feed;
use crate::parent_browser::ParentBrowser;
use serde_json::{Value, json};

const PASSWORD: &str = "hunter2-not-for-the-browser";
const TYPED: &str = "typed-by-a-rule-only";

#[derive(Clone, Copy, Debug)]
struct Mode {
    remote: bool,
    pilot: bool,
}

const MODES: [Mode; 4] = [
    Mode { remote: false, pilot: false },
    Mode { remote: false, pilot: true },
    Mode { remote: true, pilot: false },
    Mode { remote: true, pilot: true },
];

fn interact(s: &mut State, args: Value, out: &mut Vec<ToBrowser>) -> Value {
    let call = crate::call::interact(args.clone()).unwrap_or_else(|e| panic!("{args}: {e}")).call;
    let done = s.interact(call).unwrap_or_else(|e| panic!("{args}: {}", e.message));
    out.extend(done.msgs);
    done.value
}

/// A session as the agent sets it up: tabs 1–3, rules of every kind that answers in tab 1
/// (a login among them, and a prompt's text), `must_respond` in tab 2. The agent's calls'
/// messages to the browser go to `out`.
fn session(mode: Mode, out: &mut Vec<ToBrowser>) -> State {
    let mut s = State::new();
    if mode.remote {
        s.browser = ParentBrowser::over_cdp("ws://127.0.0.1:9/devtools/browser".into());
    } else {
        let args = ["/usr/lib/chromium/chromium", "--user-data-dir=/nonexistent/profile"];
        s.browser = ParentBrowser::from_args(7, Some(args.iter().map(|a| a.to_string()).collect()));
    }
    s.pilot = mode.pilot;
    out.extend(feed(&mut s, json!({"type":"hello","version":"1","worker":"w1"})).unwrap());
    feed(
        &mut s,
        json!({"type":"tabs","tracked":1,"tabs":[{"id":1,"url":"https://a.example/"},{"id":2,"url":"https://b.example/"},
               {"id":3,"url":"https://c.example/"}]}),
    )
    .unwrap();
    let base = json!({"action": "handle_dialog", "setup": true, "tab_id": 1});
    for rule in [
        json!({"dialog_type": "prompt", "accept": true, "text": TYPED}),
        json!({"dialog_type": "confirm", "accept": true, "once": true}),
        json!({"dialog_type": "auth", "accept": true, "username": "agent", "password": PASSWORD}),
        json!({"dialog_type": "permission", "permission": "camera", "accept": true}),
        json!({"dialog_type": "passkey", "accept": true}),
        json!({"dialog_type": "download", "accept": true}),
        json!({"dialog_type": "print", "accept": false}),
        json!({"dialog_type": "app_link", "accept": true}),
        json!({"dialog_type": "storage_access", "accept": true}),
        json!({"dialog_type": "permission", "permission": "automatic-downloads", "accept": true}),
    ] {
        let mut call = base.clone();
        call.as_object_mut().unwrap().extend(rule.as_object().unwrap().clone());
        let v = interact(&mut s, call, out);
        if !mode.pilot {
            assert_eq!(
                (v["rules_in_force"].as_bool(), v["pilot_enabled"].as_bool()),
                (Some(false), Some(false)),
                "{v}"
            );
        }
    }
    let policy = json!({"action": "dialog_policy", "tab_id": 2, "policy": "must_respond", "timeout_s": 30});
    let (_, msgs) = s.configure(crate::call::configure(policy).unwrap().call).unwrap();
    out.extend(msgs);
    s
}

/// One forged message of every type the host takes from the browser side, aimed at the
/// agent's tabs: a prompt request of every kind (claiming the pilot is on), results and
/// closes nobody asked for, made-up dialogs and sessions, a switch of the pilot.
fn forgeries() -> Vec<Value> {
    let mut v = vec![
        json!({"type":"hello","version":"9","worker":"w2","pilot":true,"held":[{"tab_id":2,"hold":99}]}),
        json!({"type":"pilot","on":true,"via":"message","id":1}),
        json!({"type":"pilot","on":true,"via":"storage"}),
        json!({"type":"pilot_refused","via":"other","reason":"made up"}),
        json!({"type":"pilot_applied","rev":999}),
        json!({"type":"tabs","tracked":1,"tabs":[{"id":1,"url":"https://a.example/"},{"id":2,"url":"https://b.example/"},
               {"id":3,"url":"https://c.example/"},{"id":424242,"url":"https://rogue.example/"}]}),
        json!({"type":"dialog","tab_id":1,"frame_id":0,"url":"https://a.example/","n":1,
               "report":{"seq":1,"phase":"decided","kind":"confirm","message":"x","decided_by":"rule","rule_id":2,
                         "accepted":true,"rules_loaded":true}}),
        json!({"type":"folded","tab_id":1,"frame_id":0,"count":5,"n":2}),
        json!({"type":"config_ack","tab_id":2,"rev":1000,"delivered":true,"debugger":{"attached":true}}),
        json!({"type":"held","tab_id":2,"hold":7,"kind":"prompt","message":"Name?","url":"https://b.example/"}),
        json!({"type":"held","tab_id":1,"hold":8,"kind":"prompt","message":"Name?","url":"https://a.example/"}),
        json!({"type":"held_closed","tab_id":1,"hold":8,"accepted":true,"text":"forged"}),
        json!({"type":"answer_result","tab_id":2,"hold":7,"ok":true}),
        json!({"type":"file_access","allowed":true}),
        json!({"type":"debugger_detached","tab_id":3,"reason":"target_closed"}),
        json!({"type":"prompt_result","kind":"auth","tab_id":1,"id":1,"ok":true,"accepted":true}),
        json!({"type":"pilot_result","id":1,"result":{"value":1}}),
        json!({"type":"opened","tab_id":3,"opener_tab_id":1}),
        json!({"type":"synced","id":1}),
        json!({"type":"auth_done","tab_id":1,"request_id":"r1","status_code":200}),
        json!({"type":"download_done","tab_id":1,"id":1,"state":"complete","path":"/nonexistent/forged/id_ed25519",
               "size":5}),
        json!({"type":"print_pdf","tab_id":1,"id":1,"data":"AAAA"}),
        json!({"type":"app_link_dialog","tab_id":1,"frame_id":0,"target":"zoommtg://x"}),
        json!({"type":"passkeys_saved","tab_id":1,"id":1,"keep":true,"credentials":[{"credentialId":"AQ==",
               "rpId":"a.example","privateKey":"AAAA","userHandle":"AQ==","signCount":1,"isResidentCredential":true}]}),
    ];
    for (n, (_, ask)) in samples("/nonexistent").into_iter().enumerate() {
        let mut m = ask.clone();
        let o = m.as_object_mut().unwrap();
        o.extend([
            ("type".into(), json!("prompt_request")),
            ("tab_id".into(), json!(1)),
            ("id".into(), json!(100 + n)),
            ("frame_id".into(), json!(0)),
            ("native".into(), json!(false)),
        ]);
        v.push(m);
    }
    v
}

/// Whether a message carries something of the agent's to the browser side.
fn carries_the_agents(m: &ToBrowser) -> Option<String> {
    let text = serde_json::to_string(m).unwrap();
    if text.contains(PASSWORD) || text.contains(TYPED) {
        return Some(format!("a secret or a rule's text: {text}"));
    }
    match m {
        ToBrowser::Config { config, debugger, fields, .. } => {
            (config != "U1" || *debugger || !fields.is_empty()).then(|| format!("the agent's config: {text}"))
        }
        ToBrowser::Answer { accept: true, .. } => Some(format!("an accept: {text}")),
        ToBrowser::PromptAnswer { .. } | ToBrowser::PromptHold { .. } | ToBrowser::PilotCall { .. } => {
            Some(format!("an answer: {text}"))
        }
        ToBrowser::Pilot { on: true, .. } => Some(format!("the pilot on: {text}")),
        _ => None,
    }
}

#[test]
fn with_the_pilot_off_the_browser_side_gets_nothing_of_the_agents_whatever_it_sends() {
    for mode in MODES.into_iter().filter(|m| !m.pilot) {
        let mut out = Vec::new();
        let mut s = session(mode, &mut out);
        let agents = |s: &State| format!("{:?} {:?}", s.rules_of(1), s.rules_of(2));
        let rules_before = agents(&s);
        for m in forgeries() {
            let label = m["type"].as_str().unwrap().to_owned() + " " + m["kind"].as_str().unwrap_or("");
            match feed(&mut s, m) {
                Ok(msgs) => out.extend(msgs),
                Err(why) => assert!(!why.is_empty(), "{mode:?} {label}"),
            }
        }
        for m in &out {
            assert_eq!(carries_the_agents(m), None, "{mode:?}");
        }
        assert!(!s.pilot, "{mode:?}: no message of the browser's switches the pilot on");
        assert!(s.fetches.is_empty(), "{mode:?}: nothing is copied from the browser's machine");
        use ringbuf::traits::Consumer;
        for r in s.history.iter().filter(|r| r.kind.is_browser_prompt() && r.kind.as_str() != "print") {
            assert!(
                matches!(
                    r.decided_by,
                    super::record::DecidedBy::PilotOff
                        | super::record::DecidedBy::Browser
                        | super::record::DecidedBy::Remote
                ),
                "{mode:?}: {r:?}"
            );
            assert_eq!(r.accepted, None, "{mode:?}: nobody answered {r:?}");
        }
        assert!(s.awaiting_agent().next().is_none(), "{mode:?}: nothing is held for an answer");
        // The agent's answer to what a worker says it holds is refused, not sent.
        if let Some(h) = s.held.first().map(|h| h.record.id) {
            let call = json!({"action": "handle_dialog", "dialog_id": h, "accept": true, "text": "x"});
            let call = crate::call::interact(call).unwrap().call;
            let err = s.interact(call).unwrap_err();
            assert_eq!(err.code, crate::reply::ErrorCode::AiWebPilotDisabled, "{mode:?}");
        }
        // The agent's rules waited in the host, intact, and the session works once a person
        // switches the pilot on: the rules and the policy go to their tabs.
        // (A tab the worker says tab 1 opened starts with tab 1's rules: the worker's word,
        // SECURITY.md's table.)
        assert!(s.rules_of(424242).is_empty(), "{mode:?}");
        assert_eq!(agents(&s), rules_before, "{mode:?}");
        s.pilot = true;
        let configs = s.pilot_flipped();
        let of = |tab: i64| {
            configs.iter().find_map(|m| match m {
                ToBrowser::Config { tab_id, config, debugger, .. } if *tab_id == tab => {
                    Some((config.clone(), *debugger))
                }
                _ => None,
            })
        };
        assert!(of(1).is_some_and(|(c, _)| c.len() > 4), "{mode:?}: tab 1 gets its rules: {configs:?}");
        assert_eq!(of(2).map(|(_, d)| d), Some(true), "{mode:?}: tab 2's policy needs its session");
        let real = json!({"type":"prompt_request","kind":"auth","tab_id":1,"id":900,"url":"https://a.example/admin",
                          "request_id":"r900","realm":"Staff","attempt":1});
        let answer = serde_json::to_string(&feed(&mut s, real).unwrap()).unwrap();
        assert!(answer.contains(PASSWORD) && answer.contains("\"decision\":\"accept\""), "{mode:?}: {answer}");
        // Off again: every tab that held something gets the plain default back.
        s.pilot = false;
        let taken_back = s.pilot_flipped();
        assert!(taken_back.len() >= 2, "{mode:?}: {taken_back:?}");
        assert!(taken_back.iter().all(|m| carries_the_agents(m).is_none()), "{mode:?}: {taken_back:?}");
    }
}

#[test]
fn with_the_pilot_on_the_switch_and_the_records_stay_the_hosts() {
    for mode in MODES.into_iter().filter(|m| m.pilot) {
        let mut out = Vec::new();
        let mut s = session(mode, &mut out);
        // The agent refuses a dialog held in tab 2; a worker then reports it accepted.
        feed(&mut s, json!({"type":"held","tab_id":2,"hold":70,"kind":"confirm","message":"Delete?"})).unwrap();
        let id = s.held.last().unwrap().record.id;
        let call = json!({"action": "handle_dialog", "dialog_id": id, "accept": false});
        interact(&mut s, call, &mut out);
        feed(&mut s, json!({"type":"held_closed","tab_id":2,"hold":70,"accepted":true})).unwrap();
        let r = s.record(id).unwrap();
        assert_eq!(
            (r.accepted, r.closed_by),
            (Some(true), Some(super::record::DecidedBy::Remote)),
            "{mode:?}: as the browser reports it, never as the agent's answer: {r:?}"
        );
        // The agent's text for a prompt; a worker reports another: not the agent's answer.
        feed(&mut s, json!({"type":"held","tab_id":2,"hold":71,"kind":"prompt","message":"Name?"})).unwrap();
        let id = s.held.last().unwrap().record.id;
        interact(&mut s, json!({"action": "handle_dialog", "dialog_id": id, "accept": true, "text": "ada"}), &mut out);
        feed(&mut s, json!({"type":"held_closed","tab_id":2,"hold":71,"accepted":true,"text":"mallory"})).unwrap();
        assert_eq!(s.record(id).unwrap().closed_by, Some(super::record::DecidedBy::Remote), "{mode:?}");
        // The same text is the agent's.
        feed(&mut s, json!({"type":"held","tab_id":2,"hold":72,"kind":"prompt","message":"Name?"})).unwrap();
        let id = s.held.last().unwrap().record.id;
        interact(&mut s, json!({"action": "handle_dialog", "dialog_id": id, "accept": true, "text": "ada"}), &mut out);
        feed(&mut s, json!({"type":"held_closed","tab_id":2,"hold":72,"accepted":true,"text":"ada"})).unwrap();
        assert_eq!(s.record(id).unwrap().closed_by, Some(super::record::DecidedBy::Agent), "{mode:?}");
        for m in forgeries() {
            if let Ok(msgs) = feed(&mut s, m) {
                out.extend(msgs);
            }
        }
        assert!(s.pilot, "{mode:?}");
        // No key is taken for an accept the host never sent (§passkeys).
        let snapshot = serde_json::to_value(s.snapshot()).unwrap();
        assert!(snapshot.get("kinds").is_none_or(|k| k.get("passkey").is_none()), "{mode:?}: {snapshot}");
        // A switch from inside the browser counts only from the popup of a browser no
        // program controls; here it was a message and a storage write: refused.
        let refused = out.iter().filter(|m| matches!(m, ToBrowser::Pilot { refused: Some(_), .. })).count();
        assert_eq!(refused, 2, "{mode:?}");
        // The session works on: a real held prompt is answered by the agent.
        let real = json!({"type":"prompt_request","kind":"device_chooser","tab_id":2,"id":901,"url":"https://b.example/",
                          "chooser":"usb","method":"requestDevice"});
        let msgs = feed(&mut s, real).unwrap();
        assert!(msgs.iter().any(|m| matches!(m, ToBrowser::PromptHold { .. })), "{mode:?}: {msgs:?}");
    }
}

#[test]
fn a_remote_browsers_popup_cannot_switch_the_pilot_on() {
    let mut out = Vec::new();
    let mut s = session(Mode { remote: true, pilot: false }, &mut out);
    let msgs = feed(&mut s, json!({"type":"pilot","on":true,"via":"popup","id":3})).unwrap();
    assert!(!s.pilot);
    assert!(matches!(msgs.as_slice(), [ToBrowser::Pilot { on: false, refused: Some(_), .. }]), "{msgs:?}");
}
