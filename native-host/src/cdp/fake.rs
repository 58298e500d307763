//! A browser over one WebSocket, for unit tests of what speaks CDP to it (the answerer, the
//! bridge): every command logged as (method, session, params) and answered as the test
//! says; events sent when the test says.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// A command the browser was sent: method, session, params.
pub type Command = (String, Option<String>, Value);

pub struct FakeBrowser {
    pub url: String,
    commands: Arc<Mutex<Vec<Command>>>,
    events: mpsc::UnboundedSender<Value>,
    /// Methods whose replies wait for `release`, and the replies kept meanwhile.
    hold: Arc<Mutex<(Vec<String>, Vec<Value>)>>,
}

impl FakeBrowser {
    /// Listens on a loopback port for one connection; `answer` gives each command's result
    /// (`Err`: a CDP error with that message) from its method and whole message.
    pub async fn start(answer: impl Fn(&str, &Value) -> Result<Value, String> + Send + 'static) -> Self {
        use futures_util::{SinkExt, StreamExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/devtools/browser/fake", listener.local_addr().unwrap());
        let commands = Arc::new(Mutex::new(Vec::new()));
        let (events, mut events_rx) = mpsc::unbounded_channel::<Value>();
        let log = commands.clone();
        let hold: Arc<Mutex<(Vec<String>, Vec<Value>)>> = Arc::default();
        let held = hold.clone();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
            loop {
                tokio::select! {
                    Some(ev) = events_rx.recv() => ws.send(Message::Text(ev.to_string().into())).await.unwrap(),
                    m = ws.next() => {
                        let Some(Ok(Message::Text(text))) = m else { return };
                        let cmd: Value = serde_json::from_str(&text).unwrap();
                        let method = cmd["method"].as_str().unwrap_or_default().to_owned();
                        let session = cmd["sessionId"].as_str().map(str::to_owned);
                        let mut reply = match answer(&method, &cmd) {
                            Ok(result) => json!({"id": cmd["id"], "result": result}),
                            Err(message) => json!({"id": cmd["id"], "error": {"code": -32000, "message": message}}),
                        };
                        log.lock().unwrap().push((method, session, cmd["params"].clone()));
                        if let Some(s) = cmd.get("sessionId") {
                            reply["sessionId"] = s.clone();
                        }
                        {
                            let mut h = held.lock().unwrap();
                            if h.0.iter().any(|m| cmd["method"] == m.as_str()) {
                                h.1.push(reply);
                                continue;
                            }
                        }
                        ws.send(Message::Text(reply.to_string().into())).await.unwrap();
                    }
                }
            }
        });
        Self { url, commands, events, hold }
    }

    /// From now on, replies to `method` wait until `release`.
    pub fn hold(&self, method: &str) {
        self.hold.lock().unwrap().0.push(method.to_owned());
    }

    /// Sends every reply kept back, and holds nothing more.
    pub fn release(&self) {
        let kept = {
            let mut h = self.hold.lock().unwrap();
            h.0.clear();
            std::mem::take(&mut h.1)
        };
        for reply in kept {
            self.events.send(reply).unwrap();
        }
    }

    /// Sends an event (to `session`'s target, or at the browser level).
    pub fn send(&self, method: &str, params: Value, session: Option<&str>) {
        let mut ev = json!({"method": method, "params": params});
        if let Some(s) = session {
            ev["sessionId"] = json!(s);
        }
        self.events.send(ev).unwrap();
    }

    /// The commands sent so far, in order.
    pub fn commands(&self) -> Vec<Command> {
        self.commands.lock().unwrap().clone()
    }
}

/// Waits (at most 10 s) until `f` holds.
pub async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
