//! Property tests over everything the host reads from outside: native-messaging frames,
//! browser messages (applied to a real `State`), the socket's requests and the agent's tool
//! parameters. No input may panic; every refusal is a clear error.

use proptest::prelude::*;
use ringbuf::traits::Observer;
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use unmodal::api::{self, ConfigureArgs, InteractArgs, ObserveArgs};
use unmodal::host::protocol::FromBrowser;
use unmodal::host::state::{HISTORY, MAX_PENDING, State};
use unmodal::pilot_api::{ExecuteArgs, HighlightArgs, ManageStateArgs};
use unmodal::{frame, ipc};

/// Words of the protocols, so random messages often get past the first check.
const WORDS: &[&str] = &[
    "type",
    "hello",
    "pilot",
    "on",
    "tabs",
    "tracked",
    "id",
    "url",
    "dialog",
    "report",
    "seq",
    "phase",
    "decided",
    "open",
    "closed",
    "kind",
    "alert",
    "confirm",
    "prompt",
    "beforeunload",
    "message",
    "decided_by",
    "rule",
    "default_policy",
    "pilot_off",
    "policy",
    "rule_id",
    "accepted",
    "value",
    "folded",
    "count",
    "config_ack",
    "rev",
    "delivered",
    "debugger",
    "attached",
    "error",
    "held",
    "hold",
    "held_closed",
    "gone",
    "answer_result",
    "ok",
    "debugger_detached",
    "reason",
    "tab_id",
    "frame_id",
    "document_id",
    "page_url",
    "action",
    "handle_dialog",
    "setup",
    "dialog_type",
    "all",
    "accept",
    "text",
    "once",
    "clear",
    "status",
    "match",
    "message_contains",
    "url_contains",
    "dialog_id",
    "dialog_policy",
    "must_respond",
    "auto",
    "timeout_s",
    "what",
    "dialogs",
    "logs",
    "tool",
    "args",
    "interact",
    "observe",
    "configure",
    "info",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::sample::select(WORDS).prop_map(str::to_owned),
        4 => "\\PC{0,12}",
        // Longer than the 4096 characters a message is cut to.
        1 => Just("é".repeat(4100)),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::sample::select(vec![0i64, 1, 2, 3, 5, -1, 600, 601, i64::MAX, i64::MIN]).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf =
        prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), number(), word().prop_map(Value::String)];
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((word(), inner), 0..8).prop_map(|kv| Value::Object(Map::from_iter(kv))),
        ]
    })
}

/// A browser message: a known `type` and fields drawn from the vocabulary.
fn browser_message() -> impl Strategy<Value = Value> {
    let types = proptest::sample::select(vec![
        "hello",
        "pilot",
        "tabs",
        "dialog",
        "folded",
        "config_ack",
        "held",
        "held_closed",
        "answer_result",
        "debugger_detached",
        "pilot_result",
    ]);
    (types, proptest::collection::vec((word(), json_value()), 0..10)).prop_map(|(t, fields)| {
        let mut m = Map::from_iter(fields);
        m.insert("type".into(), json!(t));
        Value::Object(m)
    })
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Any byte stream: frames, clean ends and errors, never a panic or a hang.
    #[test]
    fn frames_from_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        block_on(async {
            let mut r = bytes.as_slice();
            for _ in 0..bytes.len() + 1 {
                match frame::read(&mut r).await {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
        });
    }

    /// Frames written are frames read, byte for byte.
    #[test]
    fn frames_round_trip(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..3000), 0..5)) {
        let stream: Vec<u8> = payloads.iter().flat_map(|p| frame::encode(p).unwrap()).collect();
        let back = block_on(async {
            let mut r = stream.as_slice();
            let mut out = Vec::new();
            while let Some(f) = frame::read(&mut r).await.unwrap() {
                out.push(f);
            }
            out
        });
        prop_assert_eq!(back, payloads);
    }

    /// Any bytes as a browser message: parsed or refused.
    #[test]
    fn browser_bytes_parse_or_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..500)) {
        let _ = FromBrowser::parse(&bytes);
    }

    /// Tool parameters: parsed and validated, or refused naming a parameter.
    #[test]
    fn tool_parameters_are_validated_or_refused_by_name(args in json_value()) {
        match api::parse::<InteractArgs>(args.clone()).and_then(|a| a.validate()) {
            Ok(_) => {}
            Err(e) => prop_assert!(!e.param.is_empty() && !e.message.is_empty()),
        }
        match api::parse::<ConfigureArgs>(args.clone()).and_then(|a| a.validate()) {
            Ok(_) => {}
            Err(e) => prop_assert!(!e.param.is_empty() && !e.message.is_empty()),
        }
        if let Err(e) = api::parse::<ObserveArgs>(args.clone()) {
            prop_assert!(!e.param.is_empty());
        }
        for r in [
            api::parse::<HighlightArgs>(args.clone()).and_then(|a| a.validate()),
            api::parse::<ExecuteArgs>(args.clone()).and_then(|a| a.validate()),
            api::parse::<ManageStateArgs>(args).and_then(|a| a.validate()),
        ] {
            if let Err(e) = r {
                prop_assert!(!e.param.is_empty() && !e.message.is_empty());
            }
        }
    }

    /// The socket's requests: one line each, parsed or refused.
    #[test]
    fn socket_lines_are_read_and_parsed_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        block_on(async {
            let mut r = tokio::io::BufReader::new(bytes.as_slice());
            let mut line = Vec::new();
            while let Ok(true) = ipc::read_line(&mut r, &mut line).await {
                let _ = serde_json::from_slice::<ipc::Request>(&line);
            }
        });
    }
}

proptest! {
    // Each case runs up to 25 messages through the state: fewer cases, as many messages.
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Runs of plausible browser messages against one state: nothing panics, and the
    /// state's bounds hold after every message.
    #[test]
    fn browser_messages_keep_the_state_sound(msgs in proptest::collection::vec(browser_message(), 1..25)) {
        let mut s = State::new();
        for m in msgs {
            if let Ok(msg) = FromBrowser::parse(m.to_string().as_bytes()) {
                let _ = s.on_browser(msg);
            }
            prop_assert!(s.pending.len() <= MAX_PENDING);
            prop_assert!(s.history.occupied_len() <= HISTORY);
            prop_assert!(s.held.len() <= 64);
            let _ = s.blocking_note();
        }
    }
}

/// Plausible calls from the agent, applied to a state with a tab: answers or clear errors.
#[test]
fn agent_calls_on_a_live_state_never_panic() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1000));
    let s = RefCell::new(State::new());
    let tabs = json!({"type":"tabs","tracked":1,"tabs":[{"id":1,"url":"http://a/"},{"id":2,"url":"http://b/"}]});
    s.borrow_mut().on_browser(FromBrowser::parse(tabs.to_string().as_bytes()).unwrap()).unwrap();
    let calls = proptest::collection::vec((word(), json_value()), 0..8).prop_map(|kv| {
        let mut m = Map::from_iter(kv);
        m.insert("action".into(), json!("handle_dialog"));
        Value::Object(m)
    });
    runner
        .run(&calls, |args| {
            if let Ok(call) = api::parse::<InteractArgs>(args).and_then(|a| a.validate()) {
                match s.borrow_mut().interact(call) {
                    Ok(done) => prop_assert!(done.value.is_object() || done.answering.is_some()),
                    Err(e) => prop_assert!(!e.message.is_empty()),
                }
            }
            Ok(())
        })
        .unwrap();
}
