//! Property tests over everything the host reads from outside: native-messaging frames,
//! browser messages (applied to a real `State`), the socket's requests and the agent's tool
//! parameters. No input may panic; every refusal is a clear error.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestCaseError;
use ringbuf::traits::{Consumer, Observer};
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use unmodal::api::{self, ConfigureArgs, ObserveArgs};
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
    // The newer kinds' words.
    "prompt_request",
    "prompt_result",
    "native",
    "print",
    "no_dialog",
    "sandboxed",
    "file_chooser",
    "mode",
    "single",
    "multiple",
    "folder",
    "open_picker",
    "download",
    "file_name",
    "mime",
    "size",
    "download_done",
    "complete",
    "interrupted",
    "path",
    "blocked",
    "passkey",
    "operation",
    "create",
    "get",
    "rp_id",
    "passkeys_saved",
    "credentials",
    "keep",
    "app_link",
    "app_link_dialog",
    "target",
    "payment",
    "able",
    "storage_access",
    "granted",
    "sign_in",
    "provider",
    "print_pdf",
    "data",
    "expired",
    "settled",
    "file_access",
    "allowed",
    "opened",
    "opener_tab_id",
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

/// The kinds of browser prompts, newest first; the fuzzing below weighs the newer ones.
const NEWER_KINDS: &[&str] =
    &["print", "file_chooser", "download", "passkey", "app_link", "payment", "storage_access", "sign_in"];
const OLDER_KINDS: &[&str] = &["auth", "permission", "device_chooser"];

/// Page-made or browser-made text: plausible values, the vocabulary, anything, too long.
fn text() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => proptest::sample::select(vec![
            "", "report.csv", "http://a/", "https://idp.example/config.json", "token=abc123secret", "../../etc/passwd",
            "image/*", "text/csv", "example.com", "a",
        ])
        .prop_map(Value::from),
        2 => word().prop_map(Value::String),
    ]
}

/// What the worker sends for a prompt of `kind`, before any mutation.
fn kind_fields(kind: &'static str) -> BoxedStrategy<Vec<(String, Value)>> {
    let f = |k: &str, v: Value| (k.to_owned(), v);
    match kind {
        "print" => proptest::option::of(proptest::sample::select(vec!["sandboxed", "unloading", "detached", "bogus"]))
            .prop_map(move |d| d.map(|d| vec![f("no_dialog", json!(d))]).unwrap_or_default())
            .boxed(),
        "file_chooser" => (
            proptest::sample::select(vec![
                "single",
                "multiple",
                "folder",
                "open_picker",
                "save_picker",
                "directory_picker",
                "other",
            ]),
            text(),
            text(),
        )
            .prop_map(move |(m, a, l)| vec![f("mode", json!(m)), f("accept", a), f("label", l)])
            .boxed(),
        "download" => (text(), text(), number())
            .prop_map(move |(n, m, z)| vec![f("file_name", n), f("mime", m), f("size", z)])
            .boxed(),
        "passkey" => (proptest::sample::select(vec!["create", "get", "delete"]), text())
            .prop_map(move |(o, r)| vec![f("operation", json!(o)), f("rp_id", r)])
            .boxed(),
        "app_link" => prop_oneof![
            proptest::sample::select(vec![
                "mailto:a@b.example",
                "zoommtg://join?id=1",
                "tel:123",
                "slack://open",
                "http://a/",
                "javascript:x",
                "nocolon",
                ":",
                "Ab+c.d-e:x",
            ])
            .prop_map(Value::from),
            text(),
        ]
        .prop_map(move |t| vec![f("target", t)])
        .boxed(),
        "payment" => any::<bool>().prop_map(move |b| vec![f("able", json!(b))]).boxed(),
        "storage_access" => any::<bool>().prop_map(move |b| vec![f("granted", json!(b))]).boxed(),
        "sign_in" => text().prop_map(move |p| vec![f("provider", p)]).boxed(),
        "auth" => (text(), text(), 0u32..8)
            .prop_map(move |(r, realm, n)| vec![f("request_id", r), f("realm", realm), f("attempt", json!(n))])
            .boxed(),
        "permission" => proptest::collection::vec(
            proptest::sample::select(vec!["camera", "microphone", "notifications", "automatic-downloads", "x"]),
            0..3,
        )
        .prop_map(move |p| vec![f("permissions", json!(p)), f("method", json!("getUserMedia"))])
        .boxed(),
        _ => proptest::sample::select(vec!["usb", "hid", "serial", "bluetooth", "display", "x"])
            .prop_map(move |c| vec![f("chooser", json!(c))])
            .boxed(),
    }
}

fn tab_id() -> impl Strategy<Value = Value> {
    prop_oneof![4 => proptest::sample::select(vec![1i64, 2, 3]).prop_map(Value::from), 1 => number()]
}

/// A request's id: a few, so results and ends meet their requests and some come twice.
fn request_id() -> impl Strategy<Value = Value> {
    prop_oneof![4 => (0u64..6).prop_map(Value::from), 1 => number()]
}

/// A prompt request of any kind (the newer ones mostly), as the worker sends it.
fn prompt_request() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![3 => proptest::sample::select(NEWER_KINDS), 1 => proptest::sample::select(OLDER_KINDS)];
    kind.prop_flat_map(|kind| {
        (
            kind_fields(kind),
            tab_id(),
            request_id(),
            prop_oneof![Just(0i64), Just(1), Just(-1)],
            text(),
            proptest::bool::weighted(0.2),
        )
            .prop_map(move |(fields, tab, id, frame, url, native)| {
                let mut m = Map::from_iter(fields);
                m.extend([
                    ("type".into(), json!("prompt_request")),
                    ("kind".into(), json!(kind)),
                    ("tab_id".into(), tab),
                    ("id".into(), id),
                    ("frame_id".into(), json!(frame)),
                    ("url".into(), url),
                    ("native".into(), json!(native)),
                ]);
                Value::Object(m)
            })
    })
}

/// What the worker sends after a request: its result, a download's or a print's end, the
/// browser's app-link dialog, the passkeys an authenticator holds, and the rest of the
/// newer messages.
fn after_request() -> impl Strategy<Value = Value> {
    let any_kind = proptest::sample::select([NEWER_KINDS, OLDER_KINDS].concat());
    let b64 = || proptest::sample::select(vec!["AAAA", "q83vEjRWeJA=", "", "!!", "a-b_c"]);
    prop_oneof![
        (any_kind, tab_id(), request_id(), any::<[bool; 4]>(), proptest::option::of(text())).prop_map(
            |(kind, tab, id, [ok, accepted, expired, settled], error)| json!({"type": "prompt_result", "kind": kind,
                "tab_id": tab, "id": id, "ok": ok, "accepted": accepted, "expired": expired, "settled": settled,
                "error": error})
        ),
        (
            tab_id(),
            request_id(),
            proptest::sample::select(vec!["complete", "interrupted", "in_progress"]),
            // Never a real file: a rule with save_dir would move it.
            proptest::sample::select(vec!["", "/nonexistent/unmodal-fuzz/report.csv", "relative.csv"]),
            number(),
            proptest::option::of(proptest::sample::select(vec!["USER_CANCELED", "NETWORK_FAILED", ""])),
            any::<bool>()
        )
            .prop_map(|(tab, id, state, path, size, error, blocked)| json!({"type": "download_done", "tab_id": tab,
                "id": id, "state": state, "path": path, "size": size, "error": error, "blocked": blocked})),
        (tab_id(), request_id(), proptest::option::of(b64()), proptest::option::of(text())).prop_map(
            |(tab, id, data, error)| json!({"type": "print_pdf", "tab_id": tab, "id": id, "data": data, "error": error})
        ),
        (tab_id(), number(), text())
            .prop_map(|(tab, frame, target)| json!({"type": "app_link_dialog", "tab_id": tab, "frame_id": frame,
                "target": target})),
        (tab_id(), any::<bool>(), proptest::collection::vec((b64(), b64(), text(), number()), 0..3)).prop_map(
            |(tab, keep, keys)| {
                let keys: Vec<Value> = keys
                    .into_iter()
                    .map(|(id, key, rp, count)| {
                        json!({"credentialId": id, "privateKey": key, "rpId": rp,
                        "signCount": count, "isResidentCredential": true})
                    })
                    .collect();
                json!({"type": "passkeys_saved", "tab_id": tab, "keep": keep, "credentials": keys})
            }
        ),
        any::<bool>().prop_map(|a| json!({"type": "file_access", "allowed": a})),
        (tab_id(), tab_id()).prop_map(|(t, o)| json!({"type": "opened", "tab_id": t, "opener_tab_id": o})),
    ]
}

/// One change to a message that was right: a field dropped, its value replaced by anything,
/// or a field added.
#[derive(Clone, Debug)]
enum Mutation {
    Drop(proptest::sample::Index),
    Replace(proptest::sample::Index, Value),
    Add(String, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<proptest::sample::Index>().prop_map(Mutation::Drop),
        (any::<proptest::sample::Index>(), json_value()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        (word(), json_value()).prop_map(|(k, v)| Mutation::Add(k, v)),
    ]
}

/// Applies the mutations; `type` stays, so each message still reaches its own parser.
fn mutated(mut msg: Value, changes: Vec<Mutation>) -> Value {
    let Some(m) = msg.as_object_mut() else { return msg };
    for c in changes {
        let keys: Vec<String> = m.keys().filter(|k| *k != "type").cloned().collect();
        match c {
            Mutation::Drop(i) if !keys.is_empty() => {
                m.remove(&keys[i.index(keys.len())]);
            }
            Mutation::Replace(i, v) if !keys.is_empty() => {
                m.insert(keys[i.index(keys.len())].clone(), v);
            }
            Mutation::Add(k, v) if k != "type" => {
                m.insert(k, v);
            }
            _ => {}
        }
    }
    msg
}

/// A newer message, right most of the time and near-right the rest.
fn near_valid() -> impl Strategy<Value = Value> {
    let msg = prop_oneof![3 => prompt_request(), 2 => after_request()];
    let changes = prop_oneof![3 => Just(Vec::new()), 2 => proptest::collection::vec(mutation(), 1..3)];
    (msg, changes).prop_map(|(m, c)| mutated(m, c))
}

/// Garbage that names a newer kind: the right `type` and `kind`, every other field anything.
fn garbage_prompt() -> impl Strategy<Value = Value> {
    let types = proptest::sample::select(vec![
        "prompt_request",
        "prompt_result",
        "download_done",
        "print_pdf",
        "app_link_dialog",
        "passkeys_saved",
        "file_access",
        "opened",
    ]);
    (types, proptest::sample::select(NEWER_KINDS), proptest::collection::vec((word(), json_value()), 0..10)).prop_map(
        |(t, kind, fields)| {
            let mut m = Map::from_iter(fields);
            m.insert("type".into(), json!(t));
            m.insert("kind".into(), json!(kind));
            Value::Object(m)
        },
    )
}

/// A state as a live browser leaves it: the pilot on, three tabs, rules of every kind in tab
/// 1 (none that writes files: no save_to, no save_dir), `must_respond` in tab 2.
fn live_state() -> State {
    let mut s = State::new();
    let feed = |s: &mut State, m: Value| s.on_browser(FromBrowser::parse(m.to_string().as_bytes()).unwrap()).unwrap();
    feed(&mut s, json!({"type":"hello","version":"1","worker":"w1"}));
    s.pilot = true;
    feed(
        &mut s,
        json!({"type":"tabs","tracked":1,"tabs":[{"id":1,"url":"http://a/"},{"id":2,"url":"http://b/"},{"id":3,"url":"http://c/"}]}),
    );
    let setup = |extra: Value| {
        let mut call = json!({"action": "handle_dialog", "setup": true, "tab_id": 1, "once": false});
        call.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        call
    };
    for rule in [
        json!({"dialog_type": "print", "accept": false}),
        json!({"dialog_type": "file_chooser", "accept": false}),
        json!({"dialog_type": "download", "accept": true}),
        json!({"dialog_type": "passkey", "accept": true, "once": true}),
        json!({"dialog_type": "app_link", "accept": false}),
        json!({"dialog_type": "payment", "accept": false}),
        json!({"dialog_type": "storage_access", "accept": true}),
        json!({"dialog_type": "sign_in", "accept": false}),
        json!({"dialog_type": "permission", "permission": "automatic-downloads", "accept": true, "once": true}),
    ] {
        let call = unmodal::call::interact(setup(rule.clone())).map(|c| c.call);
        s.interact(call.unwrap_or_else(|e| panic!("{rule}: {e}"))).unwrap();
    }
    let policy = json!({"action": "dialog_policy", "tab_id": 2, "policy": "must_respond", "timeout_s": 30});
    s.configure(api::parse::<ConfigureArgs>(policy).and_then(|a| a.validate()).unwrap()).unwrap();
    s
}

/// Everything in the state a message could change, to tell that a refused one changed
/// nothing. (Held dialogs' clocks are on disk as wall time: compared as they are instead.)
fn fingerprint(s: &State) -> String {
    let mut snap = serde_json::to_value(s.snapshot()).unwrap();
    snap.as_object_mut().map(|m| m.remove("held"));
    format!(
        "{snap}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{}|{:?}",
        s.rules, s.held, s.delivered, s.sent_rev, s.file_access, s.armed, s.pilot, s.kinds,
    )
}

/// The bounds and links a state keeps whatever it is told.
fn assert_sound(s: &State) -> Result<(), TestCaseError> {
    prop_assert!(s.pending.len() <= MAX_PENDING);
    prop_assert!(s.history.occupied_len() <= HISTORY);
    prop_assert!(s.held.len() <= 64);
    prop_assert!(s.downloads_awaited() <= 256 && s.prints_awaited() <= 256);
    for id in &s.pending {
        prop_assert!(s.record(*id).is_some(), "pending {} names no record", id);
    }
    let mut ids: Vec<u64> = s.history.iter().map(|r| r.id).chain(s.held.iter().map(|h| h.record.id)).collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    prop_assert_eq!(ids.len(), n, "a record id given twice");
    for h in &s.held {
        prop_assert!(h.record.state == unmodal::host::record::DialogState::Open, "a held record not open");
    }
    let _ = s.blocking_note();
    Ok(())
}

/// Applies one message as the host does: parsed whole or refused, then applied or refused
/// with nothing changed. Whether it was applied.
fn apply(s: &mut State, msg: &Value) -> Result<bool, TestCaseError> {
    let Ok(parsed) = FromBrowser::parse(msg.to_string().as_bytes()) else { return Ok(false) };
    let before = fingerprint(s);
    match s.on_browser(parsed) {
        Ok(_) => Ok(true),
        Err(why) => {
            prop_assert!(!why.is_empty());
            prop_assert_eq!(before, fingerprint(s), "refused ({}) yet changed: {}", why, msg);
            Ok(false)
        }
    }
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
        match unmodal::call::interact(args.clone()).map(|c| c.call) {
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

proptest! {
    // Up to 30 messages a case, against a state with rules of every kind and a policy.
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The newer kinds' messages, right and near-right, in any order against a live state:
    /// nothing panics, a refused message changes nothing, and the state stays sound.
    #[test]
    fn newer_kinds_messages_keep_the_state_sound(msgs in proptest::collection::vec(near_valid(), 1..30)) {
        let mut s = live_state();
        for m in &msgs {
            apply(&mut s, m)?;
            assert_sound(&s)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Garbage under a newer kind's type and kind: parsed or refused whole, never a panic.
    #[test]
    fn newer_kinds_garbage_is_refused_whole(msgs in proptest::collection::vec(garbage_prompt(), 1..6)) {
        let mut s = live_state();
        for m in &msgs {
            apply(&mut s, m)?;
            assert_sound(&s)?;
        }
    }
}

/// Every newer kind is fuzzed: each one's right request is taken, and the same request with
/// its kind's own field of the wrong type is refused whole.
#[test]
fn each_newer_kinds_request_is_taken_and_its_wrong_shape_refused() {
    let own: &[(&str, &str, Value)] = &[
        ("print", "no_dialog", json!(7)),
        ("file_chooser", "mode", json!(1)),
        ("download", "size", json!("big")),
        ("passkey", "operation", json!(null)),
        ("app_link", "target", json!(["mailto:a"])),
        ("payment", "able", json!("yes")),
        ("storage_access", "granted", json!(1)),
        ("sign_in", "provider", json!({"url": 1})),
    ];
    assert_eq!(own.len(), NEWER_KINDS.len());
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for (kind, field, wrong) in own {
        let mut s = live_state();
        let right = {
            let mut m = kind_fields(kind).new_tree(&mut runner).unwrap().current();
            // The right shape, with a value each kind's check takes.
            m.retain(|(k, _)| k != field);
            let good = match *kind {
                "print" => json!(null),
                "file_chooser" => json!("single"),
                "download" => json!(5),
                "passkey" => json!("get"),
                "app_link" => json!("mailto:a@b.example"),
                "payment" => json!(true),
                "storage_access" => json!(false),
                _ => json!("https://idp.example/config.json"),
            };
            m.push(((*field).to_owned(), good));
            m
        };
        let msg = |fields: &[(String, Value)], id: u64| {
            let mut m = Map::from_iter(fields.iter().cloned());
            m.extend([
                ("type".into(), json!("prompt_request")),
                ("kind".into(), json!(kind)),
                ("tab_id".into(), json!(3)),
                ("id".into(), json!(id)),
                ("url".into(), json!("http://c/")),
            ]);
            Value::Object(m)
        };
        let before = s.history.occupied_len() + s.held.len();
        assert!(apply(&mut s, &msg(&right, 1)).unwrap(), "{kind}: {}", msg(&right, 1));
        assert_eq!(s.history.occupied_len() + s.held.len(), before + 1, "{kind}: recorded");
        let mut bad = right.clone();
        bad.retain(|(k, _)| k != field);
        bad.push(((*field).to_owned(), wrong.clone()));
        let bad = msg(&bad, 2);
        // It parses as a prompt request; its kind cannot read it, so the state refuses it.
        let before = fingerprint(&s);
        let refused =
            FromBrowser::parse(bad.to_string().as_bytes()).map_err(|e| e.to_string()).and_then(|m| s.on_browser(m));
        assert!(refused.is_err(), "{kind}: {bad}");
        assert_eq!(fingerprint(&s), before, "{kind}: a refused request changes nothing");
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
            if let Ok(call) = unmodal::call::interact(args).map(|c| c.call) {
                match s.borrow_mut().interact(call) {
                    Ok(done) => prop_assert!(done.value.is_object() || done.answering.is_some()),
                    Err(e) => prop_assert!(!e.message.is_empty()),
                }
            }
            Ok(())
        })
        .unwrap();
}
