//! A small Chrome DevTools Protocol client: one browser WebSocket, flat sessions, commands
//! matched to answers by id, events broadcast to whoever listens.

use anyhow::{Context, Result, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Clone, Debug)]
pub struct Event {
    pub session: Option<String>,
    pub method: String,
    pub params: Value,
}

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

pub struct Cdp {
    out: mpsc::UnboundedSender<Message>,
    waiters: Waiters,
    events: broadcast::Sender<Event>,
    next_id: AtomicU64,
}

impl Cdp {
    pub async fn connect(ws_url: &str) -> Result<Arc<Self>> {
        let (ws, _) = tokio_tungstenite::connect_async(ws_url).await.context("connecting to DevTools")?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
        let waiters: Waiters = Arc::default();
        let (events, _) = broadcast::channel(4096);
        tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
        });
        let (w, ev) = (waiters.clone(), events.clone());
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(text) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    if let Some(tx) = w.lock().unwrap().remove(&id) {
                        let r = match v.get("error") {
                            Some(e) => Err(e.to_string()),
                            None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                        };
                        let _ = tx.send(r);
                    }
                } else if let Some(method) = v.get("method").and_then(Value::as_str) {
                    let _ = ev.send(Event {
                        session: v.get("sessionId").and_then(Value::as_str).map(str::to_owned),
                        method: method.to_owned(),
                        params: v.get("params").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            // The browser went away: fail everyone still waiting.
            w.lock().unwrap().clear();
        });
        Ok(Arc::new(Self { out, waiters, events, next_id: AtomicU64::new(1) }))
    }

    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().unwrap().insert(id, tx);
        self.out.send(Message::Text(msg.to_string().into())).map_err(|_| anyhow!("DevTools connection closed"))?;
        match tokio::time::timeout(COMMAND_TIMEOUT, rx).await {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(e))) => bail!("{method} failed: {e}"),
            Ok(Err(_)) => bail!("{method}: DevTools connection closed"),
            Err(_) => {
                self.waiters.lock().unwrap().remove(&id);
                bail!("{method}: no answer within {COMMAND_TIMEOUT:?}")
            }
        }
    }
}

/// Waits for the first event that `pick` accepts, up to `limit`.
pub async fn wait_event(
    rx: &mut broadcast::Receiver<Event>,
    limit: Duration,
    mut pick: impl FnMut(&Event) -> bool,
) -> Result<Event> {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(e) if pick(&e) => return Ok(e),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => bail!("DevTools connection closed"),
            }
        }
    };
    tokio::time::timeout(limit, wait).await.map_err(|_| anyhow!("event not seen within {limit:?}"))?
}
