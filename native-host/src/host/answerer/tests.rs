//! The answerer against a fake CDP peer over a real WebSocket: what it sends, what it keeps.

use super::*;
use crate::cdp::Endpoint;
use crate::cdp::fake::FakeBrowser;
pub(in crate::host) use crate::cdp::fake::until;
use std::time::Duration;
use tokio::sync::mpsc;

/// A browser over one WebSocket (`cdp::fake`): every command answered (`attachToTarget`
/// with session `S-<target>`; a command in `refuse` with an error).
pub(in crate::host) struct Peer {
    browser: FakeBrowser,
    pub(in crate::host) refuse: Arc<Mutex<Vec<String>>>,
}

impl Peer {
    pub(in crate::host) async fn start() -> (Self, Answerer, mpsc::UnboundedReceiver<Event>) {
        let refuse: Arc<Mutex<Vec<String>>> = Arc::default();
        let no = refuse.clone();
        let browser = FakeBrowser::start(move |method, cmd| {
            if no.lock().unwrap().iter().any(|m| m == method) {
                Err("No such prompt".into())
            } else if method == "Target.attachToTarget" {
                Ok(json!({"sessionId": format!("S-{}", cmd["params"]["targetId"].as_str().unwrap())}))
            } else {
                Ok(json!({}))
            }
        })
        .await;
        let url = browser.url.clone();
        let (conn, rx) = Conn::open(&Endpoint::new(&url, &[], None).unwrap(), &url).await.unwrap();
        let a = Answerer::new();
        a.connected(&conn);
        (Self { browser, refuse }, a, rx)
    }

    pub(in crate::host) fn send(&self, method: &str, params: Value, session: Option<&str>) {
        self.browser.send(method, params, session);
    }

    pub(in crate::host) fn page(&self, id: &str, kind: &str, url: &str) {
        self.send("Target.targetCreated", json!({"targetInfo": {"targetId": id, "type": kind, "url": url}}), None);
    }

    /// Replies to `method` wait until `release`.
    pub(in crate::host) fn hold(&self, method: &str) {
        self.browser.hold(method);
    }

    pub(in crate::host) fn release(&self) {
        self.browser.release();
    }

    pub(in crate::host) fn sent(&self) -> Vec<String> {
        let log = self.browser.commands();
        log.iter().map(|(m, s, _)| format!("{m}{}", s.as_ref().map(|s| format!(" @{s}")).unwrap_or_default())).collect()
    }

    pub(in crate::host) fn params(&self, method: &str) -> Vec<Value> {
        self.browser.commands().into_iter().filter(|(m, ..)| m == method).map(|(.., p)| p).collect()
    }
}

/// Feeds the connection's events to the answerer, as `watch_local` and the bridge do.
pub(in crate::host) fn feed(a: &Answerer, mut rx: mpsc::UnboundedReceiver<Event>) {
    let a = a.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            a.event(&ev);
        }
    });
}

fn on() -> PilotOn {
    PilotOn::of(true).unwrap()
}

const BT: &str = "DeviceAccess.deviceRequestPrompted";

#[tokio::test]
async fn nothing_is_attached_until_something_is_wanted_with_the_pilot_on() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    peer.page("P1", "page", "http://127.0.0.1:1/");
    a.set(false, Want::ALL);
    a.set(true, Want::NONE);
    // A barrier: the event above was heard once this one is.
    peer.page("P2", "page", "http://127.0.0.1:2/");
    a.set(true, Want::NONE);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(peer.sent().is_empty(), "pilot off or nothing wanted: nothing sent: {:?}", peer.sent());
    a.set(true, Want { devices: true, ..Want::NONE });
    until("attached and enabled", || peer.sent().iter().filter(|c| c.starts_with("DeviceAccess.enable")).count() == 2)
        .await;
    let sent = peer.sent();
    assert!(sent.contains(&"Target.attachToTarget".to_owned()));
    assert!(!sent.iter().any(|c| c.starts_with("FedCm")), "only what is wanted: {sent:?}");
    for p in peer.params("Target.attachToTarget") {
        assert_eq!(p["flatten"], true);
        assert!(p.get("waitForDebuggerOnStart").is_none(), "nothing paused");
    }
    // FedCm too: enabled without the rejection delay.
    a.set(true, Want::ALL);
    until("FedCm on", || peer.params("FedCm.enable").len() == 2).await;
    assert!(peer.params("FedCm.enable").iter().all(|p| p["disableRejectionDelay"] == true));
    // The pilot goes off: every session let go.
    a.set(false, Want::ALL);
    until("detached", || peer.params("Target.detachFromTarget").len() == 2).await;
}

/// The agent's setup answer waits on `settled`: it must hold until the browser answered
/// every attach and every domain enable, not only until they were sent.
#[tokio::test]
async fn settled_waits_until_the_browser_answered_every_attach_and_enable() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    assert!(a.settled(Duration::from_secs(10)).await, "nothing sent: settled at once");
    peer.page("P1", "page", "http://127.0.0.1:1/");
    // A barrier: the target is known once this set's attach goes out.
    peer.hold("FedCm.enable");
    a.set(true, Want { devices: true, ..Want::NONE });
    until("attached", || a.covers("http://127.0.0.1:1/", Which::Devices)).await;
    assert!(a.settled(Duration::from_secs(10)).await, "attach and DeviceAccess.enable answered");
    a.set(true, Want::ALL);
    until("FedCm.enable sent", || !peer.params("FedCm.enable").is_empty()).await;
    // Its reply is held back: however long one waits, not settled.
    assert!(!a.settled(Duration::from_millis(200)).await, "an enable unanswered: not settled");
    peer.release();
    assert!(a.settled(Duration::from_secs(10)).await, "the enable answered: settled");
}

/// A frame's target can refuse an attach while it is being set up, and the browser says
/// nothing more of it after: the answerer tries again (a few times, waiting longer each
/// time), so such a frame is still covered.
#[tokio::test]
async fn a_refused_attach_is_tried_again() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    peer.refuse.lock().unwrap().push("Target.attachToTarget".into());
    a.set(true, Want::ALL);
    peer.page("F1", "iframe", "http://localhost:2/frame");
    until("refused, then tried again", || peer.params("Target.attachToTarget").len() >= 2).await;
    assert!(!a.covers("http://localhost:2/frame", Which::Accounts));
    peer.refuse.lock().unwrap().clear();
    until("covered at last", || a.covers("http://localhost:2/frame", Which::Accounts)).await;
    assert!(a.settled(Duration::from_secs(10)).await);
    // A target that keeps refusing is given up on after a few tries.
    peer.refuse.lock().unwrap().push("Target.attachToTarget".into());
    peer.page("F2", "iframe", "http://localhost:3/frame");
    let tries = || peer.params("Target.attachToTarget").iter().filter(|p| p["targetId"] == "F2").count();
    until("F2's first attach", || tries() >= 1).await;
    assert!(a.settled(Duration::from_secs(10)).await, "the tries end");
    assert_eq!(tries(), 4, "the first attach and three more");
}

/// The browser detaching the answerer's session from a target that stays: attached again.
#[tokio::test]
async fn a_session_the_browser_detached_is_attached_again() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    peer.page("F1", "iframe", "http://localhost:2/frame");
    until("covered", || a.covers("http://localhost:2/frame", Which::Accounts)).await;
    peer.send("Target.detachedFromTarget", json!({"sessionId": "S-F1", "targetId": "F1"}), None);
    until("attached again", || peer.params("Target.attachToTarget").len() == 2).await;
    until("covered again", || a.covers("http://localhost:2/frame", Which::Accounts)).await;
    // A target that keeps dropping its session is attached again a few times only.
    for n in 3..=6 {
        peer.send("Target.detachedFromTarget", json!({"sessionId": "S-F1", "targetId": "F1"}), None);
        until("attached again", || peer.params("Target.attachToTarget").len() == n).await;
        until("covered again", || a.covers("http://localhost:2/frame", Which::Accounts)).await;
    }
    peer.send("Target.detachedFromTarget", json!({"sessionId": "S-F1", "targetId": "F1"}), None);
    until("let be", || !a.covers("http://localhost:2/frame", Which::Accounts)).await;
    assert!(a.settled(Duration::from_secs(10)).await);
    assert_eq!(peer.params("Target.attachToTarget").len(), 6, "the first attach and five more");
    // Gone for good: no attach after the target was destroyed.
    peer.page("F2", "iframe", "http://localhost:3/frame");
    until("F2 covered", || a.covers("http://localhost:3/frame", Which::Accounts)).await;
    peer.send("Target.targetDestroyed", json!({"targetId": "F2"}), None);
    peer.send("Target.detachedFromTarget", json!({"sessionId": "S-F2", "targetId": "F2"}), None);
    assert!(a.settled(Duration::from_secs(10)).await);
    let f2 = peer.params("Target.attachToTarget").iter().filter(|p| p["targetId"] == "F2").count();
    assert_eq!(f2, 1);
}

/// Frames of other sites come attached by the browser under their page's session (the
/// answerer asks for it on each session): such a session is the answerer's, covered at
/// once, even where discovery never named the frame; a second session on a target is let
/// go; one the browser detached is attached again.
#[tokio::test]
async fn a_frame_the_browser_attached_under_its_page_is_the_answerers() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    peer.page("P1", "page", "http://127.0.0.1:1/top");
    until("frames asked for", || peer.sent().iter().any(|m| m == "Target.setAutoAttach @S-P1")).await;
    let auto = &peer.params("Target.setAutoAttach")[0];
    assert_eq!(auto["waitForDebuggerOnStart"], false, "a new frame is never paused: {auto}");
    assert_eq!(auto["filter"], json!([{"type": "iframe", "exclude": false}]), "frames only: {auto}");
    let frame = |id: &str, session: &str, url: &str| {
        json!({"sessionId": session, "waitingForDebugger": false,
            "targetInfo": {"targetId": id, "type": "iframe", "url": url}})
    };
    peer.send("Target.attachedToTarget", frame("F1", "A-F1", "http://localhost:2/rp"), Some("S-P1"));
    until("covered", || a.covers("http://localhost:2/rp", Which::Accounts)).await;
    until("its domains on", || peer.sent().iter().any(|m| m == "FedCm.enable @A-F1")).await;
    // Named by discovery afterwards: no second session.
    peer.page("F1", "iframe", "http://localhost:2/rp");
    assert!(a.settled(Duration::from_secs(10)).await);
    assert!(peer.params("Target.attachToTarget").iter().all(|p| p["targetId"] != "F1"), "{:?}", peer.sent());
    // Attached by the answerer first, then by the browser: the browser's session is let go.
    peer.page("F2", "iframe", "http://localhost:3/rp");
    until("F2 covered", || a.covers("http://localhost:3/rp", Which::Accounts)).await;
    peer.send("Target.attachedToTarget", frame("F2", "A-F2", "http://localhost:3/rp"), Some("S-P1"));
    until("the second let go", || peer.params("Target.detachFromTarget").iter().any(|p| p["sessionId"] == "A-F2"))
        .await;
    assert!(a.covers("http://localhost:3/rp", Which::Accounts), "still covered by its first session");
    // A page of the browser's own, attached under a page: let go.
    let ui = json!({"sessionId": "A-X", "targetInfo": {"targetId": "X", "type": "iframe", "url": "chrome://x/"}});
    peer.send("Target.attachedToTarget", ui, Some("S-P1"));
    until("not ours", || peer.params("Target.detachFromTarget").iter().any(|p| p["sessionId"] == "A-X")).await;
    // The browser detaching the adopted session (on the page's session): attached again.
    peer.send("Target.detachedFromTarget", json!({"sessionId": "A-F1", "targetId": "F1"}), Some("S-P1"));
    until("attached again", || peer.params("Target.attachToTarget").iter().any(|p| p["targetId"] == "F1")).await;
    until("covered again", || a.covers("http://localhost:2/rp", Which::Accounts)).await;
    // Pilot off: every session let go, the browser's included.
    a.set(false, Want::ALL);
    assert!(!a.covers("http://localhost:2/rp", Which::Accounts));
    let gone = |s: &str| peer.params("Target.detachFromTarget").iter().any(|p| p["sessionId"] == s);
    until("all let go", || gone("S-P1") && gone("S-F1") && gone("S-F2")).await;
    // And a frame the browser attaches then is let go at once.
    peer.send("Target.attachedToTarget", frame("F3", "A-F3", "http://localhost:4/rp"), Some("S-P1"));
    until("F3 let go", || gone("A-F3")).await;
}

/// The browser drops the sessions it attached under a page's session with that session,
/// without a word of their own: they are the answerer's no more, and attached again while
/// the frame stays; a frame attached under a page the browser destroyed goes with it.
#[tokio::test]
async fn frames_the_browser_attached_go_with_their_pages_session() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    peer.page("P1", "page", "http://127.0.0.1:1/top");
    until("frames asked for", || peer.sent().iter().any(|m| m == "Target.setAutoAttach @S-P1")).await;
    let frame = |id: &str, session: &str, url: &str| {
        json!({"sessionId": session, "waitingForDebugger": false,
            "targetInfo": {"targetId": id, "type": "iframe", "url": url}})
    };
    peer.send("Target.attachedToTarget", frame("F1", "A-F1", "http://localhost:2/rp"), Some("S-P1"));
    until("F1 covered", || a.covers("http://localhost:2/rp", Which::Accounts)).await;
    // The page's session dropped (its frames' with it): both attached again by the answerer.
    peer.send("Target.detachedFromTarget", json!({"sessionId": "S-P1", "targetId": "P1"}), None);
    let attached = |id: &str| peer.params("Target.attachToTarget").iter().filter(|p| p["targetId"] == id).count();
    until("P1 and F1 attached again", || attached("P1") == 2 && attached("F1") == 1).await;
    until("F1 covered by its own session", || peer.sent().iter().any(|m| m == "FedCm.enable @S-F1")).await;
    assert!(a.settled(Duration::from_secs(10)).await);
    assert!(a.covers("http://localhost:2/rp", Which::Accounts));
    // A frame the browser attached under the page's new session, then the page destroyed.
    peer.send("Target.attachedToTarget", frame("F2", "A-F2", "http://localhost:3/rp"), Some("S-P1"));
    until("F2 covered", || a.covers("http://localhost:3/rp", Which::Accounts)).await;
    peer.send("Target.targetDestroyed", json!({"targetId": "P1"}), None);
    until("F2 gone with it", || !a.covers("http://localhost:3/rp", Which::Accounts)).await;
    assert!(a.covers("http://localhost:2/rp", Which::Accounts), "F1 is attached on its own");
}

/// A page's second `requestDevice` cancels its first chooser without a word over CDP: the
/// new prompt in the session closes the old one (`remote`), so nothing picks a chooser gone.
#[tokio::test]
async fn a_new_chooser_in_a_page_closes_the_one_it_replaced() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    peer.page("P1", "page", "http://127.0.0.1:1/bt");
    peer.page("P2", "page", "http://127.0.0.1:2/bt");
    until("attached", || peer.params("DeviceAccess.enable").len() == 2).await;
    peer.send(BT, json!({"id": "R1", "devices": []}), Some("S-P1"));
    peer.send(BT, json!({"id": "R9", "devices": []}), Some("S-P2"));
    until("two open", || a.prompts().len() == 2).await;
    let first = a.prompts().into_iter().find(|p| p.target == "P1").unwrap().prompt;
    peer.send(BT, json!({"id": "R2", "devices": []}), Some("S-P1"));
    until("replaced", || a.prompt(first).is_none() && a.prompts().len() == 2).await;
    let targets: Vec<String> = a.prompts().into_iter().map(|p| p.target).collect();
    assert_eq!(targets, ["P2", "P1"], "the other page's chooser stays");
    let r = a.select_device(&on(), first, "x").await;
    assert_eq!(r, Err(PickError::NotOpen(first)));
}

#[tokio::test]
async fn a_chooser_lists_devices_as_they_come_and_a_pick_must_be_offered() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    a.on_change(move |s| log.lock().unwrap().push(s.clone()));
    a.set(true, Want::ALL);
    peer.page("P1", "page", "http://127.0.0.1:1/bt");
    peer.page("F1", "iframe", "http://localhost:2/frame");
    // Unmodal's pages and the browser's are never attached.
    peer.page("X", "page", "chrome-extension://abc/popup.html");
    peer.page("W", "service_worker", "http://127.0.0.1:1/sw.js");
    until("both attached", || {
        a.covers("http://localhost:2/frame", Which::Devices) && a.covers("http://127.0.0.1:1/bt", Which::Devices)
    })
    .await;
    assert_eq!(peer.params("Target.attachToTarget").len(), 2, "{:?}", peer.sent());
    peer.send(BT, json!({"id": "R1", "devices": [{"id": "09:09", "name": ""}]}), Some("S-F1"));
    until("opened", || a.prompts().len() == 1).await;
    let n = a.prompts()[0].prompt;
    assert_eq!(a.find(Which::Devices, "http://localhost:2/frame", None), Found::One(n));
    assert_eq!(a.find(Which::Accounts, "http://localhost:2/frame", None), Found::None);
    assert_eq!(a.find(Which::Devices, "http://127.0.0.1:1/bt", None), Found::None, "the frame's, not the page's");
    // Not offered: an error, nothing sent, the chooser still open.
    let e = a.select_device(&on(), n, "08:08").await.unwrap_err();
    assert_eq!(e, PickError::NoSuchDevice("08:08".into(), "09:09".into()));
    assert!(a.prompt(n).is_some());
    // A device that appears later: the same prompt, updated.
    peer.send(
        BT,
        json!({"id": "R1", "devices": [{"id": "09:09", "name": ""}, {"id": "08:08", "name": "Thermo"}]}),
        Some("S-F1"),
    );
    until("updated", || a.prompt(n).is_some_and(|p| p.devices.len() == 2)).await;
    a.select_device(&on(), n, "08:08").await.unwrap();
    assert_eq!(peer.params("DeviceAccess.selectPrompt"), [json!({"id": "R1", "deviceId": "08:08"})]);
    assert!(a.prompt(n).is_none());
    let seen = seen.lock().unwrap().clone();
    assert!(
        matches!(&seen[..], [Seen::Opened(_), Seen::Updated(_), Seen::Closed { by: ClosedBy::Answerer, .. }]),
        "{seen:?}"
    );
    assert_eq!(a.select_device(&on(), n, "08:08").await, Err(PickError::NotOpen(n)));
}

#[tokio::test]
async fn the_pilot_off_picks_nothing_and_another_clients_answer_closes_it_as_remote() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    peer.page("P1", "page", "http://127.0.0.1:1/");
    until("attached", || a.covers("http://127.0.0.1:1/", Which::Accounts)).await;
    let accounts = json!([
        {"accountId": "u1", "email": "one@idp.test", "name": "One", "idpConfigUrl": "http://127.0.0.1:9/config.json", "loginState": "SignUp"},
        {"accountId": "u2", "email": "two@idp.test", "name": "Two", "idpConfigUrl": "http://127.0.0.1:9/config.json", "loginState": "SignIn"},
    ]);
    peer.send(
        "FedCm.dialogShown",
        json!({"dialogId": "0", "dialogType": "AccountChooser", "accounts": accounts}),
        Some("S-P1"),
    );
    until("shown", || a.prompts().len() == 1).await;
    let n = a.prompts()[0].prompt;
    assert_eq!(a.prompts()[0].accounts[1].email, "two@idp.test");
    // Not a chooser of devices; no such account.
    assert_eq!(a.select_device(&on(), n, "x").await, Err(PickError::WrongKind(Which::Accounts)));
    assert!(matches!(a.select_account(&on(), n, "u9").await, Err(PickError::NoSuchAccount(..))));
    assert!(matches!(a.click_dialog_button(&on(), n, DialogButton::ErrorGotIt).await, Err(PickError::WrongDialog(_))));
    // The pilot goes off: the answerer's own flag refuses whatever gate a caller holds, and
    // its sessions are let go (the dialog with them).
    a.set(false, Want::ALL);
    assert_eq!(a.select_account(&on(), n, "u2").await, Err(PickError::PilotOff));
    assert!(peer.params("FedCm.selectAccount").is_empty());
    // On again: a new dialog, answered by another client first (`dialogClosed`).
    a.set(true, Want::ALL);
    until("attached again", || a.covers("http://127.0.0.1:1/", Which::Accounts)).await;
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    a.on_change(move |s| log.lock().unwrap().push(s.clone()));
    peer.send(
        "FedCm.dialogShown",
        json!({"dialogId": "1", "dialogType": "AccountChooser", "accounts": accounts}),
        Some("S-P1"),
    );
    until("shown again", || a.prompts().len() == 1).await;
    let m = a.prompts()[0].prompt;
    peer.send("FedCm.dialogClosed", json!({"dialogId": "1"}), Some("S-P1"));
    until("closed", || a.prompts().is_empty()).await;
    assert!(seen.lock().unwrap().contains(&Seen::Closed { prompt: m, by: ClosedBy::Remote }));
    // A chooser another client answered, which the browser then refuses to us: remote.
    peer.send(BT, json!({"id": "R2", "devices": [{"id": "d1", "name": ""}]}), Some("S-P1"));
    until("chooser", || a.prompts().len() == 1).await;
    let k = a.prompts()[0].prompt;
    peer.refuse.lock().unwrap().push("DeviceAccess.selectPrompt".into());
    assert!(matches!(a.select_device(&on(), k, "d1").await, Err(PickError::Refused(_))));
    assert!(seen.lock().unwrap().contains(&Seen::Closed { prompt: k, by: ClosedBy::Remote }));
}

#[tokio::test]
async fn the_right_account_index_is_sent_and_a_closed_target_closes_its_prompts() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    peer.page("P1", "page", "http://127.0.0.1:1/");
    until("attached", || a.covers("http://127.0.0.1:1/", Which::Accounts)).await;
    let accounts = json!([{"accountId": "u1"}, {"accountId": "u2"}]);
    peer.send(
        "FedCm.dialogShown",
        json!({"dialogId": "7", "dialogType": "AccountChooser", "accounts": accounts}),
        Some("S-P1"),
    );
    until("shown", || a.prompts().len() == 1).await;
    let n = a.prompts()[0].prompt;
    a.select_account(&on(), n, "u2").await.unwrap();
    assert_eq!(peer.params("FedCm.selectAccount"), [json!({"dialogId": "7", "accountIndex": 1})]);
    peer.send(BT, json!({"id": "R", "devices": []}), Some("S-P1"));
    until("chooser", || a.prompts().len() == 1).await;
    peer.send("Target.targetDestroyed", json!({"targetId": "P1"}), None);
    until("gone", || a.prompts().is_empty()).await;
    // A connection lost: no connection, nothing picked.
    a.lost();
    assert!(!a.held());
}

#[tokio::test]
async fn two_prompts_at_one_url_are_told_apart_only_by_a_candidate_target() {
    let (peer, a, rx) = Peer::start().await;
    feed(&a, rx);
    a.set(true, Want::ALL);
    let url = "http://127.0.0.1:1/same";
    peer.page("P1", "page", url);
    peer.page("P2", "page", url);
    until("attached", || peer.params("DeviceAccess.enable").len() == 2).await;
    peer.send(BT, json!({"id": "A", "devices": []}), Some("S-P1"));
    peer.send(BT, json!({"id": "B", "devices": []}), Some("S-P2"));
    until("two", || a.prompts().len() == 2).await;
    let (one, two) = (a.prompts()[0].prompt, a.prompts()[1].prompt);
    assert_eq!(a.find(Which::Devices, url, None), Found::Several(vec![one, two]));
    // A hint that names no candidate adds nothing.
    assert_eq!(a.find(Which::Devices, url, Some("P9")), Found::Several(vec![one, two]));
    let hinted = a.find(Which::Devices, url, Some("P2"));
    assert_eq!(hinted, Found::One(two));
    assert!(a.claim(two));
    assert!(!a.claim(two), "claimed once");
    assert_eq!(a.find(Which::Devices, url, None), Found::One(one), "a claimed prompt is no candidate");
}

#[test]
fn a_flood_of_targets_and_long_texts_stay_bounded() {
    let mut b = Book::default();
    let mut seen = Vec::new();
    for i in 0..book::MAX_TARGETS + 10 {
        let info = json!({"targetInfo": {"targetId": format!("T{i}"), "type": "page", "url": "http://a/"}});
        b.on_event("Target.targetCreated", &info, None, &mut seen);
    }
    let steps = b.set(true, Want::ALL, &mut seen);
    assert_eq!(steps.len(), book::MAX_TARGETS);
    b.attached("T0", Some("S".into()), &mut seen);
    // A frame the browser attaches under a page once the book is full: let go.
    let frame = json!({"sessionId": "A-X", "targetInfo": {"targetId": "X", "type": "iframe", "url": "http://b/"}});
    assert_eq!(b.on_event("Target.attachedToTarget", &frame, Some("S"), &mut seen), [Step::Detach("A-X".into())]);
    let long = "x".repeat(100_000);
    let devices: Vec<Value> = (0..1000).map(|i| json!({"id": format!("{i}{long}"), "name": long})).collect();
    b.on_event(BT, &json!({"id": "R", "devices": devices}), Some("S"), &mut seen);
    let v = &b.views()[0];
    assert_eq!(v.devices.len(), book::MAX_CHOICES);
    assert!(v.devices.iter().all(|d| d.id.len() <= 2048 && d.name.len() <= 2048));
}
