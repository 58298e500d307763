//! Picks against the answerer's fake CDP peer (`answerer/tests.rs`): what the record lists,
//! what the agent and rules may pick, and a worker's forged target hint.

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

/// Under must_respond, one page's chooser (`R1`, offering `09:09`) opened and its request
/// (1) held and linked to it: the state, the peer, the answerer, the record's id and what
/// the answerer sees next.
async fn one_held() -> (State, Peer, Answerer, u64, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    let (mut s, peer, a, mut seen) = connected(Policy::MustRespond, &["P1"]).await;
    peer.send(BT, json!({"id":"R1","devices":[{"id":"09:09","name":""}]}), Some("S-P1"));
    until("opened", || a.prompts().len() == 1).await;
    ask(&mut s, 1, Some("P1"));
    hear(&mut s, &mut seen);
    let id = s.held[0].record.id;
    (s, peer, a, id, seen)
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
    let call = crate::call::interact(json!({"action":"handle_dialog","dialog_id":id,"device_id":device})).unwrap().call;
    s.interact(call)
}

/// The worker says the page hook left request `req` to the browser; the answerer is then
/// asked to pick `device` on its prompt in target `target`, gives it, and the browser gets
/// `selectPrompt` on its own prompt `browser_id`.
async fn worker_accepts_then_picked(
    (s, peer, a): (&mut State, &Peer, &Answerer),
    req: u64,
    target: &str,
    (browser_id, device): (&str, &str),
) {
    feed(s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":req,"ok":true,"accepted":true}))
        .unwrap();
    let acts = std::mem::take(&mut s.answerer_asks);
    let prompt = a.prompts().into_iter().filter(|p| p.target == target).map(|p| p.prompt).max().unwrap();
    assert_eq!(acts, [(KIND, Act::SelectDevice { prompt, device_id: device.into() })]);
    give(s, a, acts).await;
    assert_eq!(peer.params("DeviceAccess.selectPrompt"), [json!({"id":browser_id,"deviceId":device})]);
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
    let e = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: Some(id) }).unwrap_err();
    assert!(e.message.contains("device_id") && e.message.contains("09:09, 08:08"), "{}", e.message);
    let e = pick(&mut s, id, "07:07").map(|_| ()).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParams);
    assert!(e.message.contains("\"07:07\" is not offered") && e.message.contains("09:09, 08:08"), "{}", e.message);
    assert!(s.held[0].closing.is_none(), "still held");
    // The pick: the page hook is told to leave the browser's call alone, the answerer picks.
    let done = pick(&mut s, id, "08:08").unwrap();
    assert_eq!(to_json(&done.msgs)[0]["decision"], "accept");
    worker_accepts_then_picked((&mut s, &peer, &a), 1, "P1", ("R1", "08:08")).await;
    let rec = s.record(id).unwrap();
    assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Agent), Some(true)));
    assert_eq!(details(&s, id).picked.as_deref(), Some("08:08"));
}

#[tokio::test]
async fn a_rule_picks_when_its_device_appears_and_a_name_rule_skips_empty_names() {
    let (mut s, peer, a, mut seen) = connected(Policy::MustRespond, &["P1"]).await;
    let rule =
        |pick| RuleSpec::own(DeviceChooserRule { chooser: None, pick: Some(pick), matcher: MatchArg::default() });
    s.interact(DialogCall::Setup { tab: Some(3), once: true, rule: rule(DevicePick::NameContains("heart".into())) })
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
    worker_accepts_then_picked((&mut s, &peer, &a), 1, "P1", ("R1", "08:08")).await;
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
    worker_accepts_then_picked((&mut s, &peer, &a), 2, "P2", ("B", "09:09")).await;
}

#[tokio::test]
async fn without_a_connection_a_picking_rule_cancels_and_says_why() {
    let mut s = state_with(Policy::Auto);
    let rule =
        RuleSpec::own(DeviceChooserRule { chooser: None, pick: Some(DevicePick::First), matcher: MatchArg::default() });
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

#[tokio::test]
async fn a_pick_the_browser_refuses_cancels_the_chooser_so_the_page_never_waits() {
    let (mut s, peer, a, id, _) = one_held().await;
    pick(&mut s, id, "09:09").unwrap();
    feed(&mut s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":1,"ok":true,"accepted":true}))
        .unwrap();
    // The browser refuses the pick (the device went between the list and the pick).
    peer.refuse.lock().unwrap().push("DeviceAccess.selectPrompt".into());
    let acts = std::mem::take(&mut s.answerer_asks);
    let r = a.act(&PilotOn::of(true).unwrap(), &acts[0].1).await;
    assert!(matches!(r, Err(PickError::Refused(_))), "{r:?}");
    kinds::answerer_acted(&mut s, KIND, &acts[0].1, &r);
    assert_eq!(peer.params("DeviceAccess.cancelPrompt"), [json!({"id":"R1"})], "cancelled, not left open");
    // The record says what the page got, not the pick that was decided.
    let d = details(&s, id);
    assert_eq!(d.picked, None);
    assert!(d.no_choice.as_deref().is_some_and(|w| w.contains("refused the pick of \"09:09\"")), "{d:?}");
    assert_eq!(s.record(id).unwrap().accepted, Some(false));
}

/// Forged by the worker (or any code speaking in it): a result saying the page hook left
/// the call to the browser, while nobody picked. No pick is given: the answerer picks only
/// what the agent or a rule chose, on the host's side.
#[tokio::test]
async fn a_forged_accept_result_picks_nothing() {
    let (mut s, peer, _a, id, _) = one_held().await;
    let _ = feed(
        &mut s,
        json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":1,"ok":true,"accepted":true}),
    );
    assert!(s.answerer_asks.is_empty(), "no pick from the worker's word: {:?}", s.answerer_asks);
    assert!(peer.params("DeviceAccess.selectPrompt").is_empty());
    assert_ne!(s.record(id).and_then(|r| r.closed_by), Some(DecidedBy::Agent), "not the agent's answer");
}

/// The pilot switched off while a chooser is held: the held chooser is cancelled at once (not
/// left for the watchdog), in the switch's own change of state, saying so; nothing picks.
/// The answerer letting its session go afterwards changes nothing more.
#[tokio::test]
async fn the_pilot_off_while_held_cancels_the_chooser() {
    let (mut s, peer, a, id, mut seen) = one_held().await;
    s.pilot = false;
    let out = to_json(&s.pilot_flipped());
    let answers: Vec<&Value> = out.iter().filter(|m| m["type"] == "prompt_answer").collect();
    assert_eq!(answers.len(), 1, "{out:?}");
    assert_eq!(answers[0]["decision"], "refuse", "{out:?}");
    assert_eq!(details(&s, id).no_choice.as_deref(), Some(PILOT_WENT_OFF));
    a.set(false, kinds::answerer_want(&s));
    until("let go", || a.prompts().is_empty()).await;
    let after = to_json(&hear(&mut s, &mut seen).to_browser);
    assert!(after.is_empty(), "cancelled once: {after:?}");
    feed(&mut s, json!({"type":"prompt_result","kind":"device_chooser","tab_id":3,"id":1,"ok":true})).unwrap();
    let rec = s.record(id).unwrap();
    assert_eq!(
        (rec.closed_by, rec.decided_by, rec.accepted),
        (Some(DecidedBy::PilotOff), DecidedBy::PilotOff, Some(false))
    );
    assert!(rec.explanation.contains("switched off while this chooser was held"), "{}", rec.explanation);
    assert!(s.answerer_asks.is_empty() && peer.params("DeviceAccess.selectPrompt").is_empty(), "nothing picked");
    assert!(pick(&mut s, id, "09:09").is_err(), "nothing to pick any more");
}

/// A page that asks again before its first chooser was answered: the browser's newer
/// chooser replaced the older (which it cancelled, telling the connection nothing), so the
/// answerer closed the older, the request is linked to the newer one, and the pick goes there.
#[tokio::test]
async fn a_chooser_replaced_by_a_newer_one_in_its_page_is_passed_over() {
    let (mut s, peer, a, mut seen) = connected(Policy::MustRespond, &["P1"]).await;
    peer.send(BT, json!({"id":"R1","devices":[{"id":"09:09","name":""}]}), Some("S-P1"));
    until("the first", || a.prompts().len() == 1).await;
    let first = a.prompts()[0].prompt;
    peer.send(BT, json!({"id":"R2","devices":[{"id":"09:09","name":""}]}), Some("S-P1"));
    until("replaced", || a.prompts().len() == 1 && a.prompts()[0].prompt != first).await;
    hear(&mut s, &mut seen);
    ask(&mut s, 1, Some("P1"));
    let id = s.held[0].record.id;
    assert!(details(&s, id).no_choice.is_none(), "{:?}", details(&s, id).no_choice);
    pick(&mut s, id, "09:09").unwrap();
    worker_accepts_then_picked((&mut s, &peer, &a), 1, "P1", ("R2", "09:09")).await;
}
