//! The host side of the private socket: checks who is calling, runs each request against
//! the state, and waits (briefly) until new rules are in force in the tab.

use super::Shared;
use crate::api::{self, InteractArgs, ObserveArgs, ParamError};
use crate::ipc::{self, RemoteError, Request, Tool};
use crate::paths;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// How long a setup waits for the extension to confirm the tab holds the new rules.
const RULES_WAIT: Duration = Duration::from_secs(3);

pub(super) async fn accept(listener: UnixListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // The directory is private already; the uid check also covers a socket handed on.
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == paths::uid() => {}
            other => {
                tracing::warn!(peer = ?other, "connection from another user refused");
                continue;
            }
        }
        tokio::spawn(connection(stream, shared.clone()));
    }
}

async fn connection(stream: UnixStream, shared: Arc<Shared>) {
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        let reply = match ipc::read_line(&mut r, &mut line).await {
            Ok(false) => return,
            Ok(true) => handle(&shared, &line).await,
            Err(e) => Err(RemoteError::new("bad_request", e.to_string())),
        };
        let mut out = ipc::reply_json(&reply).to_string();
        out.push('\n');
        if w.write_all(out.as_bytes()).await.is_err() || reply.as_ref().is_err_and(|e| e.code == "bad_request") {
            return;
        }
    }
}

fn invalid(e: ParamError) -> RemoteError {
    RemoteError { code: "invalid_params".into(), message: e.to_string(), param: Some(e.param) }
}

async fn handle(shared: &Shared, line: &[u8]) -> Result<Value, RemoteError> {
    let req: Request =
        serde_json::from_slice(line).map_err(|e| RemoteError::new("bad_request", format!("not a request: {e}")))?;
    match req.tool {
        Tool::Info => Ok(shared.state().info()),
        Tool::Observe => {
            let args: ObserveArgs = api::parse(req.args).map_err(invalid)?;
            shared.state().observe(&args).map_err(Into::into)
        }
        Tool::Interact => {
            let args: InteractArgs = api::parse(req.args).map_err(invalid)?;
            let call = args.validate().map_err(invalid)?;
            let (mut value, msgs) = shared.state().interact(call)?;
            let rules = msgs.iter().find(|m| m["type"] == "rules").map(|m| (m["tab_id"].as_i64(), m["rev"].as_u64()));
            shared.send(msgs);
            if let Some((Some(tab), Some(rev))) = rules {
                let delivered = wait_for_rules(shared, tab, rev).await;
                value["rules_in_force"] = json!(delivered == Some(true));
                if delivered != Some(true) {
                    value["rules_note"] = json!(
                        "The tab did not confirm it holds the new rules (it may be a browser page without content \
scripts, or still loading). Documents that load from now on get them."
                    );
                }
            }
            Ok(value)
        }
    }
}

async fn wait_for_rules(shared: &Shared, tab: i64, rev: u64) -> Option<bool> {
    let wait = async {
        loop {
            let spoke = shared.browser_spoke.notified();
            if let Some(d) = shared.state().rules_delivered(tab, rev) {
                return d;
            }
            spoke.await;
        }
    };
    tokio::time::timeout(RULES_WAIT, wait).await.ok()
}

impl From<super::ops::HostError> for RemoteError {
    fn from(e: super::ops::HostError) -> Self {
        RemoteError::new(e.code, e.message)
    }
}
