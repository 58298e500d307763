//! Picks against the answerer's fake CDP peer (`answerer/tests.rs`): the dialogs that
//! follow or replace the account chooser (the provider's `Error`, `AutoReauthn`).

use super::picks::SignInDetails;
use super::*;
use crate::host::answerer::tests::{Peer, feed as feed_peer, until};
use crate::host::answerer::{Act, Answerer, DialogButton, PilotOn};
use crate::host::kinds::{self, Answered, DialogCall, RuleSpec};
use crate::host::record::DecidedBy;
use crate::host::state::tests::{feed, state_with};
use ringbuf::traits::Consumer;
use serde_json::{Value, json};

const URL: &str = "http://a/login";

/// The pilot on, a rule picking `account` in tab 3, page P1 at `URL` covered.
async fn connected(account: &str) -> (State, Peer, Answerer, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    let (peer, a, rx) = Peer::start().await;
    feed_peer(&a, rx);
    let (tx, seen) = tokio::sync::mpsc::unbounded_channel();
    a.on_change(move |s| {
        let _ = tx.send(s.clone());
    });
    let mut s = state_with(Policy::Auto);
    s.answerer = a.clone();
    let pick = Some(AccountPick::Id(account.into()));
    let rule = RuleSpec::own(SignInRule { accept: true, account: pick, matcher: MatchArg::default() });
    s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
    a.set(true, kinds::answerer_want(&s));
    peer.page("P1", "page", URL);
    until("covered", || a.covers(URL, Which::Accounts)).await;
    (s, peer, a, seen)
}

/// The page's call, let through for the rule's pick.
fn ask(s: &mut State) {
    let m = json!({"type":"prompt_request","kind":"sign_in","tab_id":3,"id":1,"frame_id":0,"url":URL,
        "provider":"http://127.0.0.1:9/config.json"});
    feed(s, m).unwrap();
}

fn shown(peer: &Peer, id: &str, dialog: &str, accounts: &[&str]) {
    let accounts: Vec<Value> = accounts
        .iter()
        .map(|a| json!({"accountId": a, "email": format!("{a}@idp.test"), "name": a, "idpConfigUrl": "http://127.0.0.1:9/config.json", "loginState": "SignIn"}))
        .collect();
    peer.send("FedCm.dialogShown", json!({"dialogId": id, "dialogType": dialog, "accounts": accounts}), Some("S-P1"));
}

async fn hear(s: &mut State, seen: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>) -> Answered {
    let mut out = Answered::default();
    while let Ok(x) = seen.try_recv() {
        let more = kinds::answerer_seen(s, &x);
        out.acts.extend(more.acts);
    }
    out
}

async fn give(s: &mut State, a: &Answerer, acts: Vec<(Kind, Act)>) {
    for (kind, act) in acts {
        let r = a.act(&PilotOn::of(true).unwrap(), &act).await;
        kinds::answerer_acted(s, kind, &act, &r);
    }
}

fn details(s: &State) -> SignInDetails {
    s.history.iter().last().unwrap().details.read().unwrap()
}

#[tokio::test]
async fn the_providers_error_after_a_pick_is_closed_with_got_it() {
    let (mut s, peer, a, mut seen) = connected("u2").await;
    ask(&mut s);
    shown(&peer, "0", "AccountChooser", &["u1", "u2"]);
    until("shown", || a.prompts().len() == 1).await;
    let acts = hear(&mut s, &mut seen).await.acts;
    assert!(matches!(&acts[..], [(_, Act::SelectAccount { account_id, .. })] if account_id == "u2"), "{acts:?}");
    give(&mut s, &a, acts).await;
    // The provider refused the assertion: the browser's error dialog, a new one.
    shown(&peer, "1", "Error", &[]);
    until("the error shown", || a.prompts().len() == 1).await;
    let acts = hear(&mut s, &mut seen).await.acts;
    assert!(matches!(&acts[..], [(_, Act::Click { button: DialogButton::ErrorGotIt, .. })]), "{acts:?}");
    give(&mut s, &a, acts).await;
    assert_eq!(peer.params("FedCm.clickDialogButton"), [json!({"dialogId": "1", "dialogButton": "ErrorGotIt"})]);
    let d = details(&s);
    assert!(d.provider_error && d.picked_account.as_deref() == Some("u2"));
    // An error dialog where nothing was picked is not this kind's.
    shown(&peer, "2", "Error", &[]);
    until("another error shown", || a.prompts().iter().any(|p| p.dialog_type.as_deref() == Some("Error"))).await;
    assert!(hear(&mut s, &mut seen).await.acts.is_empty());
}

#[tokio::test]
async fn auto_reauthn_is_never_fought_and_the_record_names_the_account() {
    let (mut s, peer, a, mut seen) = connected("u2").await;
    ask(&mut s);
    shown(&peer, "0", "AutoReauthn", &["u1"]);
    until("shown", || a.prompts().len() == 1).await;
    assert!(hear(&mut s, &mut seen).await.acts.is_empty(), "nothing to give: the browser refuses it");
    peer.send("FedCm.dialogClosed", json!({"dialogId": "0"}), Some("S-P1"));
    until("closed", || a.prompts().is_empty()).await;
    hear(&mut s, &mut seen).await;
    let r = s.history.iter().last().unwrap();
    assert_ne!(r.closed_by, Some(DecidedBy::Remote), "the browser's own close");
    assert!(r.explanation.contains("nothing can stop it"), "{}", r.explanation);
    let d = details(&s);
    assert_eq!((d.auto_reauthn_account.as_deref(), d.picked_account), (Some("u1"), None));
}

/// `AutoReauthn` shown and closed by the browser before the host heard either (a loaded
/// machine): the record still names it, the account and the browser's close.
#[tokio::test]
async fn auto_reauthn_closed_before_the_host_heard_it_is_still_recorded() {
    let (mut s, peer, a, mut seen) = connected("u1").await;
    ask(&mut s);
    shown(&peer, "0", "AutoReauthn", &["u1"]);
    peer.send("FedCm.dialogClosed", json!({"dialogId": "0"}), Some("S-P1"));
    until("shown and closed", || a.prompts().is_empty() && peer.params("FedCm.enable").len() == 1).await;
    until("both heard of", || seen.len() >= 2).await;
    hear(&mut s, &mut seen).await;
    let r = s.history.iter().last().unwrap();
    assert!(r.explanation.contains("AutoReauthn") && r.explanation.contains("the rule's account"), "{}", r.explanation);
    assert!(r.explanation.contains("closed it as it signed the account in"), "{}", r.explanation);
    let d = details(&s);
    assert_eq!((d.auto_reauthn_account.as_deref(), d.picked_account.as_deref()), (Some("u1"), Some("u1")));
}
