//! Characterisation of every browser-prompt kind as the agent and the worker see it: each
//! sample request under each policy and with the pilot off, the agent's and the
//! watchdog's answers to a held one and the worker's results, the answers a kind refuses,
//! and the rules' setup sentences and verdicts. Recorded in `prompt_snapshot.snap`; set
//! INSTA_UPDATE=always to rewrite it (insta), and read the diff. What a kind says must not change by accident.

use super::state::State;
use super::state::tests::{feed, state_with, to_json};
use serde_json::{Value, json};
use unmodal_engine::Policy;

/// (label, the request's own fields): one or more per kind, covering each kind's split.
pub(super) fn samples(dir: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "auth",
            json!({"kind":"auth","url":"http://a/admin","request_id":"r1","realm":"Staff","scheme":"basic",
                   "challenger":{"host":"a","port":80},"attempt":1}),
        ),
        ("auth again", json!({"kind":"auth","url":"http://a/admin","request_id":"r1","realm":"Staff","attempt":2})),
        ("auth too often", json!({"kind":"auth","url":"http://a/admin","request_id":"r1","realm":"Staff","attempt":9})),
        (
            "permission",
            json!({"kind":"permission","url":"http://a/cam","permissions":["camera","microphone"],
                   "method":"getUserMedia","stored":"ask"}),
        ),
        (
            "permission stored",
            json!({"kind":"permission","url":"http://a/cam","permissions":["camera"],"method":"getUserMedia",
                   "stored":"allow"}),
        ),
        (
            "device_chooser",
            json!({"kind":"device_chooser","url":"http://a/flash","chooser":"usb","method":"requestDevice"}),
        ),
        ("device_chooser display", json!({"kind":"device_chooser","url":"http://a/s","chooser":"display"})),
        ("app_link", json!({"kind":"app_link","url":"http://a/p","target":"zoommtg://join?x=1"})),
        ("app_link mailto", json!({"kind":"app_link","url":"http://a/p","target":"mailto:x@y"})),
        ("passkey", json!({"kind":"passkey","url":"http://a/login","operation":"get","rp_id":"a"})),
        ("print", json!({"kind":"print","url":"http://a/r"})),
        ("print no dialog", json!({"kind":"print","url":"http://a/r","no_dialog":"sandboxed"})),
        (
            "sign_in",
            json!({"kind":"sign_in","url":"http://a/login","provider":"https://idp.example/c.json?token=s3cretvalue1"}),
        ),
        ("sign_in bare", json!({"kind":"sign_in","url":"http://a/login"})),
        ("payment able", json!({"kind":"payment","url":"https://shop/pay","able":true})),
        ("payment unable", json!({"kind":"payment","url":"https://shop/pay","able":false})),
        ("storage_access", json!({"kind":"storage_access","url":"https://widget/","granted":false})),
        ("storage_access granted", json!({"kind":"storage_access","url":"https://widget/","granted":true})),
        ("eye_dropper", json!({"kind":"eye_dropper","url":"https://paint/"})),
        (
            "file_chooser",
            json!({"kind":"file_chooser","url":"https://site/form","mode":"single","accept":".txt","label":"CV"}),
        ),
        ("file_chooser folder", json!({"kind":"file_chooser","url":"https://site/form","mode":"folder"})),
        ("file_chooser picker", json!({"kind":"file_chooser","url":"https://site/form","mode":"open_picker"})),
        (
            "download",
            json!({"kind":"download","url":"http://site/report.csv","file_name":"report.csv","mime":"text/csv",
                   "size":5}),
        ),
        ("bad file_chooser", json!({"kind":"file_chooser","url":"https://site/form","mode":"x"})),
        ("bad download dir", json!({"kind":"download","url":format!("file://{dir}/x")})),
    ]
}

fn request(ask: &Value, id: u64, native: bool) -> Value {
    let mut m = ask.clone();
    let o = m.as_object_mut().unwrap();
    o.insert("type".into(), "prompt_request".into());
    o.insert("tab_id".into(), 3.into());
    o.insert("id".into(), id.into());
    o.insert("frame_id".into(), 0.into());
    if native {
        o.insert("native".into(), true.into());
    }
    m
}

/// The browser's messages, or the refusal.
fn msgs(r: Result<Vec<super::protocol::ToBrowser>, String>) -> String {
    match r {
        Ok(m) => serde_json::to_string(&to_json(&m)).unwrap(),
        Err(e) => format!("refused: {e}"),
    }
}

/// The newest record's fields that do not change from run to run.
fn newest(s: &State) -> String {
    use ringbuf::traits::Consumer;
    let rec = s.held.last().map(|h| &h.record).or_else(|| s.history.iter().last());
    let Some(r) = rec else { return "no record".into() };
    let mut v = serde_json::to_value(r).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["id", "timestamp", "tab_id", "page_url"] {
        o.remove(k);
    }
    serde_json::to_string(&v).unwrap()
}

fn interact(s: &mut State, args: Value) -> String {
    let call = match crate::call::interact(args).map(|c| c.call) {
        Ok(c) => c,
        Err(e) => return format!("invalid {}: {}", e.param, e.message),
    };
    match s.interact(call) {
        Ok(done) => {
            let mut v = done.value.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("tab");
                o.remove("auto_responses");
            }
            format!("{} {}", serde_json::to_string(&v).unwrap(), serde_json::to_string(&to_json(&done.msgs)).unwrap())
        }
        Err(e) => format!("error {:?}: {}", e.code, e.message),
    }
}

/// What each kind's held prompt can be answered with by the agent.
fn answers(dir: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("accept", json!({"accept": true})),
        ("refuse", json!({"accept": false})),
        ("login", json!({"username": "ada", "password": "pw"})),
        ("save_to", json!({"accept": true, "save_to": format!("{dir}/out.pdf")})),
        ("save_dir", json!({"accept": true, "save_dir": dir})),
        ("files", json!({"files": [format!("{dir}/up.txt")]})),
    ]
}

/// Each kind's rules as the agent sets them up: (dialog_type, extra fields).
fn rules(dir: &str) -> Vec<Value> {
    vec![
        json!({"dialog_type":"auth","username":"ada","password":"pw"}),
        json!({"dialog_type":"auth","accept":false,"match":{"realm":"Staff"}}),
        json!({"dialog_type":"permission","accept":true,"permission":"camera"}),
        json!({"dialog_type":"permission","accept":false}),
        json!({"dialog_type":"device_chooser","chooser":"usb"}),
        json!({"dialog_type":"device_chooser"}),
        json!({"dialog_type":"app_link","accept":true,"match":{"scheme":"zoommtg"}}),
        json!({"dialog_type":"app_link","accept":false}),
        json!({"dialog_type":"passkey","accept":true}),
        json!({"dialog_type":"passkey","accept":true,"keep":true,"match":{"rp_id":"a"}}),
        json!({"dialog_type":"passkey","accept":false}),
        json!({"dialog_type":"print","accept":true}),
        json!({"dialog_type":"print","accept":true,"save_to":format!("{dir}/r.pdf")}),
        json!({"dialog_type":"print","accept":false}),
        json!({"dialog_type":"sign_in","accept":true}),
        json!({"dialog_type":"sign_in","accept":false}),
        json!({"dialog_type":"payment","accept":true}),
        json!({"dialog_type":"payment","accept":false,"match":{"url_contains":"shop"}}),
        json!({"dialog_type":"storage_access","accept":true}),
        json!({"dialog_type":"storage_access","accept":false}),
        json!({"dialog_type":"eye_dropper","accept":true}),
        json!({"dialog_type":"eye_dropper","accept":false,"match":{"url_contains":"paint"}}),
        json!({"dialog_type":"file_chooser","files":[format!("{dir}/up.txt")]}),
        json!({"dialog_type":"file_chooser","accept":false}),
        json!({"dialog_type":"download","accept":true}),
        json!({"dialog_type":"download","accept":true,"save_dir":dir}),
        json!({"dialog_type":"download","accept":false}),
    ]
}

fn setup(rule: &Value, once: bool) -> Value {
    let mut v = rule.clone();
    let o = v.as_object_mut().unwrap();
    o.insert("action".into(), "handle_dialog".into());
    o.insert("setup".into(), true.into());
    o.insert("once".into(), once.into());
    v
}

fn with_id(args: &Value, id: u64) -> Value {
    let mut v = args.clone();
    let o = v.as_object_mut().unwrap();
    o.insert("action".into(), "handle_dialog".into());
    o.insert("dialog_id".into(), id.into());
    v
}

fn result(ask: &Value, id: u64, fields: Value) -> Value {
    let mut v = json!({"type":"prompt_result","kind":ask["kind"],"tab_id":3,"id":id});
    v.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    v
}

/// "after 12 ms" varies from run to run.
fn steady(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("after ") {
        out += &rest[..at + 6];
        rest = &rest[at + 6..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(" ms") {
            out += "N";
            rest = &rest[digits..];
        }
    }
    out + rest
}

#[test]
fn every_prompt_kind_matches_its_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    std::fs::write(dir.join("up.txt"), b"hello").unwrap();
    let d = dir.display().to_string();
    let mut out = String::new();
    let policies = [Policy::Auto, Policy::AutoAccept, Policy::AutoDismiss, Policy::MustRespond];
    for (label, ask) in samples(&d) {
        out += &format!("## {label}\n");
        for p in policies {
            let mut s = state_with(p);
            s.file_access = Some(true);
            out +=
                &format!("{}: {}\n  record {}\n", p.as_str(), msgs(feed(&mut s, request(&ask, 1, false))), newest(&s));
        }
        let mut s = state_with(Policy::Auto);
        out += &format!("pilot off: {}\n  record {}\n", msgs(feed(&mut s, request(&ask, 1, true))), newest(&s));
        // Held: each answer the agent may give, and the worker's results.
        for (name, args) in answers(&d) {
            let mut s = state_with(Policy::MustRespond);
            s.file_access = Some(true);
            if feed(&mut s, request(&ask, 1, false)).is_err() || s.held.is_empty() {
                break;
            }
            let id = s.held[0].record.id;
            out += &format!("held, {name}: {}\n", interact(&mut s, with_id(&args, id)));
            let accepted = args["accept"].as_bool().unwrap_or(true);
            feed(&mut s, result(&ask, 1, json!({"ok":true,"accepted":accepted}))).unwrap();
            out += &format!("  closed {}\n", newest(&s));
        }
        let mut s = state_with(Policy::MustRespond);
        if feed(&mut s, request(&ask, 1, false)).is_ok() && !s.held.is_empty() {
            let id = s.held[0].record.id;
            out += &format!("watchdog: {}\n", msgs(Ok(s.watchdog(id))));
            feed(&mut s, result(&ask, 1, json!({"ok":true,"accepted":false}))).unwrap();
            out += &format!("  closed {}\n", newest(&s));
            for (name, fields) in [
                ("expired", json!({"ok":true,"expired":true})),
                ("gone", json!({"ok":false,"error":"no tab"})),
                ("settled", json!({"ok":false,"settled":true})),
            ] {
                let mut s = state_with(Policy::MustRespond);
                feed(&mut s, request(&ask, 1, false)).unwrap();
                feed(&mut s, result(&ask, 1, fields)).unwrap();
                out += &format!("{name}: {}\n", newest(&s));
            }
        }
    }
    out += "## nothing held\n";
    for (name, args) in answers(&d) {
        let mut s = state_with(Policy::MustRespond);
        s.file_access = Some(true);
        let mut args = args.clone();
        args.as_object_mut().unwrap().insert("action".into(), "handle_dialog".into());
        out += &format!("{name}: {}\n", interact(&mut s, args));
    }
    out += "## slots (1: the second rule replaced the first)\n";
    for a in rules(&d) {
        let mut row = String::new();
        for b in rules(&d) {
            let mut s = state_with(Policy::Auto);
            s.file_access = Some(true);
            interact(&mut s, setup(&a, false));
            interact(&mut s, setup(&b, false));
            row += &s.rules_of(3).len().to_string();
        }
        out += &format!("{row} {a}\n");
    }
    out += "## limits\n";
    for rule in rules(&d) {
        let mut s = state_with(Policy::Auto);
        s.file_access = Some(true);
        let mut last = String::new();
        for n in 0..100 {
            let mut r = rule.clone();
            let m = r.as_object_mut().unwrap().entry("match").or_insert(json!({}));
            m.as_object_mut().unwrap().insert("url_contains".into(), format!("u{n}").into());
            last = interact(&mut s, setup(&r, false));
            if last.starts_with("error") {
                break;
            }
        }
        out += &format!("{} {}: {last}\n", rule["dialog_type"], s.rules_of(3).len());
    }
    out += "## rules\n";
    for rule in rules(&d) {
        for once in [true, false] {
            let mut s = state_with(Policy::MustRespond);
            s.file_access = Some(true);
            out += &format!("{rule} once={once}: {}\n", interact(&mut s, setup(&rule, once)));
            if !once {
                continue;
            }
            let kind = rule["dialog_type"].as_str().unwrap();
            for (n, (label, ask)) in samples(&d).into_iter().filter(|(_, a)| a["kind"] == kind).enumerate() {
                let m = msgs(feed(&mut s, request(&ask, 10 + n as u64, false)));
                out += &format!("  {label}: {m}\n    record {}\n", newest(&s));
            }
        }
    }
    let out = steady(&out.replace(&d, "<dir>"));
    insta::with_settings!({snapshot_path => ".", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("prompt_snapshot", out);
    });
}
