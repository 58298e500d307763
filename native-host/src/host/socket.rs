//! The host side of the private socket: checks who is calling, runs each request against
//! the state, and waits (briefly) until new rules are in force in the tab.

use super::Shared;
use super::protocol::ToBrowser;
use crate::api::{self, ObserveArgs};
use crate::ipc::{self, Request, Tool};
use crate::pilot_api::{ExecuteArgs, HighlightArgs, ManageStateArgs};
use crate::platform::{self, Listener, ServerStream};
use crate::reply::{ErrorCode, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use unmodal_engine::Policy;

/// How long a setup waits for the extension to confirm the tab holds the new rules.
const RULES_WAIT: Duration = Duration::from_secs(3);
/// How long an answer to a held dialog waits for the browser to report it closed.
const ANSWER_WAIT: Duration = Duration::from_secs(3);

pub(super) async fn accept(mut listener: Listener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(why) = platform::check_peer(&stream) {
            tracing::warn!(peer = %why, "connection from another user refused");
            continue;
        }
        tokio::spawn(connection(stream, shared.clone()));
    }
}

async fn connection(stream: ServerStream, shared: Arc<Shared>) {
    let (r, mut w) = tokio::io::split(stream);
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        let reply = match ipc::read_line(&mut r, &mut line).await {
            Ok(false) => return,
            Ok(true) => handle(&shared, &line).await,
            Err(e) => Err(ToolError::new(ErrorCode::BadRequest, e.to_string())),
        };
        let mut out = ipc::reply_json(&reply).to_string();
        out.push('\n');
        if w.write_all(out.as_bytes()).await.is_err() || reply.as_ref().is_err_and(|e| e.code == ErrorCode::BadRequest)
        {
            return;
        }
    }
}

async fn handle(shared: &Shared, line: &[u8]) -> Result<Value, ToolError> {
    let req: Request = serde_json::from_slice(line)
        .map_err(|e| ToolError::new(ErrorCode::BadRequest, format!("not a request: {e}")))?;
    let changes = matches!(req.tool, Tool::Interact | Tool::Configure);
    let mut reply = run(shared, req).await;
    if changes {
        // On disk before the agent hears it took effect.
        shared.save();
    }
    // While a dialog is held open, every answer says so (an agent must never be left
    // guessing why the page stopped).
    if let Some(note) = shared.state().blocking_note() {
        match &mut reply {
            Ok(Value::Object(v)) => {
                v.insert("dialogs_blocking".into(), serde_json::to_value(note).unwrap_or_default());
            }
            Ok(_) => {}
            Err(e) => e.dialogs_blocking = Some(note),
        }
    }
    reply
}

/// The config revision a batch of messages for the browser carries, to wait for.
fn config_rev(msgs: &[ToBrowser]) -> Option<(i64, u64, bool)> {
    msgs.iter().find_map(ToBrowser::config_rev)
}

async fn run(shared: &Shared, req: Request) -> Result<Value, ToolError> {
    match req.tool {
        Tool::Info => Ok(shared.state().info()),
        Tool::TestAnswerer => super::answerer_hook::run(shared, req.args).await,
        Tool::PilotSwitch => super::pilot_switch::from_terminal(shared, api::parse(req.args)?).await,
        Tool::HighlightElement => {
            let (tab, call) = api::parse::<HighlightArgs>(req.args)?.validate()?;
            super::pilot::run(shared, tab, call).await
        }
        Tool::ExecuteJavascript => {
            let (tab, call) = api::parse::<ExecuteArgs>(req.args)?.validate()?;
            super::pilot::run(shared, tab, call).await
        }
        Tool::ManageState => {
            let (tab, call) = api::parse::<ManageStateArgs>(req.args)?.validate()?;
            super::pilot::run(shared, tab, call).await
        }
        Tool::Observe => {
            let args: ObserveArgs = api::parse(req.args)?;
            super::barrier::barrier(shared).await;
            shared.state().observe(&args)
        }
        Tool::Interact => {
            let call = crate::call::interact(req.args)?.call;
            super::barrier::barrier(shared).await;
            let (done, rules, asked, answerer) = {
                let mut state = shared.state();
                let mut done = state.interact(call)?;
                let rules = config_rev(&done.msgs);
                shared.send(&state, std::mem::take(&mut done.msgs));
                let asked = std::mem::take(&mut state.answerer_asks);
                (done, rules, asked, state.answerer.clone())
            };
            // An agent's pick is given on the connection before its answer is awaited.
            if !asked.is_empty() {
                super::give_answers(shared, super::kinds::Answered { to_browser: Vec::new(), acts: asked }).await;
            }
            if let Some(id) = done.answering {
                wait_for_answer(shared, id).await;
                return shared.state().answered(id);
            }
            let mut value = done.value;
            // A rule that picks put the answerer to work: in force once it watches.
            answerer.settled(RULES_WAIT).await;
            if let Some((tab, rev, session)) = rules {
                wait_for_delivery(shared, tab, rev).await;
                // A file chooser rule works through the tab's debugger session: in force with it.
                let delivered =
                    shared.state().delivery(tab, rev).is_some_and(|a| a.delivered && (!session || a.debugger_attached));
                value["rules_in_force"] = json!(delivered);
                if !delivered {
                    value["rules_note"] = json!(
                        "The tab did not confirm it holds the new rules (it may be a browser page without content \
scripts, or still loading). Documents that load from now on get them."
                    );
                }
            }
            Ok(value)
        }
        Tool::Configure => {
            let call = crate::call::configure(req.args)?.call;
            let (mut value, rules, answerer) = {
                let mut state = shared.state();
                let (value, msgs) = state.configure(call)?;
                let rules = config_rev(&msgs);
                shared.send(&state, msgs);
                (value, rules, state.answerer.clone())
            };
            // `must_respond` put the answerer to work: in force once it watches.
            answerer.settled(RULES_WAIT).await;
            let Some((tab, rev, _)) = rules else { return Ok(value) };
            wait_for_delivery(shared, tab, rev).await;
            // The ack and the policy it left, read together: an ack that came as the wait
            // ran out still decides the answer, and the two cannot disagree.
            let (ack, view) = {
                let state = shared.state();
                (state.delivery(tab, rev).cloned(), state.policy_view(tab).map(serde_json::to_value))
            };
            if let Some(err) = ack.as_ref().and_then(|a| a.debugger_error.clone()) {
                return Err(ToolError::new(
                    ErrorCode::DebuggerUnavailable,
                    format!(
                        "The {} policy needs the extension's debugger on the tab, which could not attach: {err}. The \
tab stays on auto. Close DevTools or other debugging extensions on the tab, or use a tab with a web page.",
                        call.policy.as_str()
                    ),
                ));
            }
            // Held dialogs need the session; under auto, the tab's frames need the config.
            let in_force = ack.is_some_and(|a| match call.policy {
                Policy::Auto => a.delivered,
                _ => a.debugger_attached,
            });
            value["policy_in_force"] = json!(in_force);
            // The answer shows the state after the ack (a fallback, for one).
            if let Some(p) = view {
                value["dialog_policy"] = p.unwrap_or_default();
            }
            Ok(value)
        }
    }
}

/// Waits (at most `RULES_WAIT`) until the tab acknowledged config `rev`; the caller reads
/// the ack from the state afterwards, so one that came as time ran out still counts.
async fn wait_for_delivery(shared: &Shared, tab: i64, rev: u64) {
    shared.wait_until(RULES_WAIT, |s| s.delivery(tab, rev).is_some()).await;
}

async fn wait_for_answer(shared: &Shared, id: u64) {
    shared.wait_until(ANSWER_WAIT, |s| s.answer_outcome(id).is_some()).await;
}
