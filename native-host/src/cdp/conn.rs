//! One CDP connection over a WebSocket: commands with ids (flat sessions), events in order
//! on a channel that closes when the socket does.

use super::endpoint::Endpoint;
use anyhow::{Context, Result, anyhow};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// A CDP event: its method, parameters and the flat session it came from (`None`: the browser).
#[derive(Debug)]
pub struct Event {
    pub method: String,
    pub params: Value,
    pub session: Option<String>,
}

/// Why a command failed: the browser said no, or the connection is gone.
#[derive(Debug, thiserror::Error)]
pub enum CdpError {
    #[error("{method}: {message}")]
    Refused { method: String, message: String },
    #[error("the CDP connection closed")]
    Closed,
    #[error("{0} got no answer in time")]
    Timeout(String),
}

type Waiting = Arc<Mutex<HashMap<u64, (String, oneshot::Sender<Result<Value, CdpError>>)>>>;

pub struct Conn {
    out: mpsc::UnboundedSender<Message>,
    waiting: Waiting,
    next: AtomicU64,
}

/// The largest message either way (a printed page's PDF crosses as base64 in one event).
const MAX_MESSAGE: usize = 256 << 20;
/// A command the browser does not answer within this is given up.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(30);

impl Conn {
    /// Opens the browser's WebSocket with the endpoint's headers and TLS roots.
    pub async fn open(endpoint: &Endpoint, ws_url: &str) -> Result<(Arc<Conn>, mpsc::UnboundedReceiver<Event>)> {
        // Before anything is sent: the headers must not go where they were not meant to.
        endpoint.check_websocket(ws_url)?;
        let mut req =
            ws_url.into_client_request().with_context(|| format!("{} is not a WebSocket URL", endpoint.redacted()))?;
        for (k, v) in endpoint.headers() {
            let name = HeaderName::from_bytes(k.as_bytes()).with_context(|| format!("header {k}"))?;
            let value = HeaderValue::from_str(v).with_context(|| format!("header {k}'s value"))?;
            req.headers_mut().insert(name, value);
        }
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(MAX_MESSAGE);
        config.max_frame_size = Some(MAX_MESSAGE);
        let connector = tokio_tungstenite::Connector::Rustls(endpoint.tls());
        let connecting = tokio_tungstenite::connect_async_tls_with_config(req, Some(config), true, Some(connector));
        let (ws, _) = tokio::time::timeout(Duration::from_secs(15), connecting)
            .await
            .map_err(|_| anyhow!("{} did not open a WebSocket within 15 s", endpoint.redacted()))?
            .map_err(|e| anyhow!("cannot open {}: {}", endpoint.redacted(), scrub(&e.to_string())))?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
        let (events, events_rx) = mpsc::unbounded_channel();
        let waiting: Waiting = Arc::default();
        tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let w = waiting.clone();
        tokio::spawn(async move {
            while let Some(frame) = stream.next().await {
                let text = match frame {
                    Ok(Message::Text(t)) => t,
                    Ok(Message::Binary(b)) => match String::from_utf8(b.to_vec()) {
                        Ok(t) => t.into(),
                        Err(_) => continue,
                    },
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => continue,
                };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    tracing::warn!(bytes = text.len(), "unreadable CDP message skipped");
                    continue;
                };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    let entry = w.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                    if let Some((method, tx)) = entry {
                        let r = match v.get("error") {
                            Some(e) => Err(CdpError::Refused {
                                method,
                                message: e["message"].as_str().unwrap_or("refused").to_owned(),
                            }),
                            None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                        };
                        let _ = tx.send(r);
                    }
                } else if let Some(method) = v.get("method").and_then(Value::as_str) {
                    let session = v.get("sessionId").and_then(Value::as_str).map(str::to_owned);
                    let params = v.get("params").cloned().unwrap_or(Value::Null);
                    if events.send(Event { method: method.to_owned(), params, session }).is_err() {
                        break;
                    }
                }
            }
            // Everyone still waiting learns the connection is gone.
            for (_, (_, tx)) in w.lock().unwrap_or_else(|e| e.into_inner()).drain() {
                let _ = tx.send(Err(CdpError::Closed));
            }
        });
        Ok((Arc::new(Conn { out, waiting, next: AtomicU64::new(1) }), events_rx))
    }

    /// Sends a command (to `session`, or the browser) and waits for its answer.
    pub async fn call(&self, method: &str, params: Value, session: Option<&str>) -> Result<Value, CdpError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).insert(id, (method.to_owned(), tx));
        if self.out.send(Message::Text(msg.to_string().into())).is_err() {
            self.waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            return Err(CdpError::Closed);
        }
        match tokio::time::timeout(COMMAND_LIMIT, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => {
                self.waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                Err(CdpError::Timeout(method.to_owned()))
            }
        }
    }

    /// Closes the socket (the reader then ends the event channel).
    pub fn close(&self) {
        let _ = self.out.send(Message::Close(None));
    }
}

/// An error from the WebSocket library may quote the URL (and its token): keep the reason only.
fn scrub(e: &str) -> String {
    if e.contains("://") {
        e.split("://").next().unwrap_or_default().trim_end_matches(|c: char| c.is_alphanumeric()).to_owned()
            + "(URL withheld)"
    } else {
        e.to_owned()
    }
}

/// Whether a log record may be written at all, whatever `UNMODAL_LOG` asks: tungstenite
/// logs the whole WebSocket request at trace, the `--cdp-header` values and a token in the
/// URL with it (`log` records reach the logs through tracing's bridge). A filter of its own
/// beside the user's, so it only ever takes away (a directive would also turn that
/// target's debug records on where the user asked for less).
pub fn never_a_secret(meta: &tracing::Metadata<'_>) -> bool {
    !(meta.target().starts_with("tungstenite") && *meta.level() == tracing::Level::TRACE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::EnvFilter;

    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Written {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What tungstenite logs as it opens the socket, under a filter (and, `guarded`, with
    /// `never_a_secret` beside it, as `cli::init_logging` sets it up).
    fn logged(filter: EnvFilter, guarded: bool) -> String {
        use tracing_subscriber::prelude::*;
        let out = Written::default();
        let to = out.clone();
        let guard = tracing_subscriber::filter::filter_fn(move |m| !guarded || never_a_secret(m));
        let layer =
            tracing_subscriber::fmt::layer().with_writer(move || to.clone()).with_filter(filter).with_filter(guard);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(
                target: "tungstenite::handshake::client",
                "Request: \"GET /devtools/browser/x?token=QUERYSECRET HTTP/1.1\\r\\nauthorization: Bearer HEADERSECRET\""
            );
            tracing::debug!(target: "tungstenite::handshake::client", "Client handshake done.");
        });
        String::from_utf8_lossy(&out.0.lock().unwrap()).into_owned()
    }

    /// Whoever reads the logs (an MCP client keeps a server's stderr in a file) does not
    /// get the token, whatever UNMODAL_LOG asks. Failed on 892be98: `UNMODAL_LOG=trace
    /// unmodal mcp --cdp-endpoint ws://…?token=Q --cdp-header "Authorization: Bearer H"`
    /// printed tungstenite's request, both secrets in it.
    #[test]
    fn the_websocket_request_is_never_logged_whatever_unmodal_log_asks() {
        for spec in ["trace", "tungstenite=trace", "tungstenite::handshake::client=trace", "warn,tungstenite=trace"] {
            // As 892be98 filtered: the request is there.
            assert!(logged(EnvFilter::new(spec), false).contains("HEADERSECRET"), "{spec}");
            let shown = logged(EnvFilter::new(spec), true);
            assert!(!shown.contains("SECRET"), "{spec}: {shown}");
            assert!(shown.contains("Client handshake done."), "{spec}: the rest still logs: {shown}");
        }
        // And it only takes away: the default shows none of tungstenite's debug records.
        assert_eq!(logged(EnvFilter::new("warn"), true), "");
    }
}
