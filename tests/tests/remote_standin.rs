//! The provider stand-in itself (`unmodal_e2e::remote`), before tests lean on it: only
//! the browser endpoint, only with the token (in the query or a Bearer header), no `/json`;
//! the carried extension's worker is there and no native host is anywhere; dropping every
//! connection closes both sides and the next connection works; a killed browser ends the
//! proxied connections and refuses new ones.

use anyhow::{Context, Result, bail, ensure};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use unmodal_e2e::cdp::Cdp;
use unmodal_e2e::eventually;
use unmodal_e2e::remote::{RemoteBrowser, native_host_dirs};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

const LIMIT: Duration = Duration::from_secs(10);

/// One CDP command on a raw connection; its answer.
async fn ask(ws: &mut Ws, id: u64, method: &str, params: Value) -> Result<Value> {
    ws.send(Message::Text(json!({"id": id, "method": method, "params": params}).to_string().into())).await?;
    let answer = async {
        while let Some(m) = ws.next().await {
            if let Message::Text(text) = m? {
                let v: Value = serde_json::from_str(&text)?;
                if v["id"] == id {
                    return Ok(v);
                }
            }
        }
        bail!("the connection closed before {method} was answered")
    };
    tokio::time::timeout(LIMIT, answer).await.with_context(|| format!("{method} unanswered"))?
}

/// The status the proxy refuses a WebSocket handshake with.
async fn refused_with(request: tungstenite::handshake::client::Request) -> Result<u16> {
    let uri = request.uri().to_string();
    match tokio::time::timeout(LIMIT, tokio_tungstenite::connect_async(request)).await? {
        Err(tungstenite::Error::Http(r)) => Ok(r.status().as_u16()),
        Err(e) => bail!("{uri} refused without an HTTP answer: {e}"),
        Ok(_) => bail!("{uri} accepted"),
    }
}

/// A plain HTTP GET (no upgrade) to the proxy; the status it answers.
async fn http_status(http_url: &str, path: &str, extra: &str) -> Result<u16> {
    let host = http_url.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(host).await?;
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n").as_bytes())
        .await?;
    let mut text = String::new();
    tokio::time::timeout(LIMIT, tcp.read_to_string(&mut text)).await??;
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok());
    status.with_context(|| format!("not an HTTP answer: {text:?}"))
}

/// Waits until the connection ends (closed, reset, or a close frame), up to `LIMIT`.
async fn ends(ws: &mut Ws) -> Result<()> {
    let ended = async {
        loop {
            match ws.next().await {
                None | Some(Err(_) | Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    };
    tokio::time::timeout(LIMIT, ended).await.context("the connection stayed open")
}

async fn contexts(cdp: &Cdp) -> Result<Vec<Value>> {
    let r = cdp.call(None, "Target.getBrowserContexts", json!({})).await?;
    Ok(r["browserContextIds"].as_array().cloned().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stand_in_serves_only_the_browser_endpoint_and_breaks_on_demand() -> Result<()> {
    let rb = RemoteBrowser::launch().await?;

    // Through the proxy with the token in the query: the browser answers.
    let via = Cdp::connect(&rb.ws_url()).await?;
    let version = via.call(None, "Browser.getVersion", json!({})).await?;
    ensure!(version["product"].as_str().is_some_and(|p| p.contains("Chrome")), "{version}");
    ensure!(rb.connections() == 1, "one connection counted: {}", rb.connections());

    // With the token in a header instead.
    let (name, value) =
        rb.header().split_once(": ").map(|(n, v)| (n.to_owned(), v.to_owned())).context("Name: value")?;
    let mut request = rb.ws_url_needing_header().into_client_request()?;
    request
        .headers_mut()
        .insert(tungstenite::http::HeaderName::from_bytes(name.as_bytes())?, HeaderValue::from_str(&value)?);
    let (mut by_header, _) = tokio_tungstenite::connect_async(request).await?;
    let r = ask(&mut by_header, 1, "Browser.getVersion", json!({})).await?;
    ensure!(r["result"]["product"] == version["product"], "{r}");

    // No token, a wrong one (query or header), another path: refused before any upgrade.
    ensure!(refused_with(rb.ws_url_needing_header().into_client_request()?).await? == 401);
    let flipped = if rb.token().starts_with('0') { '1' } else { '0' };
    let wrong = format!("{}?token={flipped}{}", rb.ws_url_needing_header(), &rb.token()[1..]);
    ensure!(refused_with(wrong.into_client_request()?).await? == 401);
    let mut request = rb.ws_url_needing_header().into_client_request()?;
    request.headers_mut().insert("Authorization", HeaderValue::from_static("Bearer nope"));
    ensure!(refused_with(request).await? == 401);
    let elsewhere = rb.direct_url().rsplit_once('/').map(|(_, id)| id).context("the browser's id")?;
    let other_path =
        format!("{}/devtools/browser/{elsewhere}?token={}", rb.http_url().replace("http", "ws"), rb.token());
    ensure!(refused_with(other_path.into_client_request()?).await? == 404, "the browser's own path is not served");

    // Plain HTTP: no `/json` of any kind, even with the token; the endpoint wants an upgrade.
    let bearer = format!("{}\r\n", rb.header());
    for path in ["/json/version", "/json", "/json/list", "/"] {
        ensure!(http_status(&rb.http_url(), path, "").await? == 404, "{path} is not served");
        ensure!(http_status(&rb.http_url(), path, &bearer).await? == 404, "{path} is not served with the token");
    }
    let endpoint = rb.ws_url().trim_start_matches(&rb.http_url().replace("http", "ws")).to_owned();
    ensure!(http_status(&rb.http_url(), &endpoint, "").await? == 400, "the endpoint without an upgrade");
    ensure!(rb.connections() == 2, "refusals are not counted: {}", rb.connections());

    // The carried extension's worker, listed through the proxy, under a keyless ID.
    let targets = via.call(None, "Target.getTargets", json!({})).await?;
    let worker = format!("chrome-extension://{}/background.js", rb.extension_id());
    let listed = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["type"] == "service_worker" && t["url"] == worker.as_str());
    ensure!(listed, "{worker} among {targets}");
    let keyed = unmodal_e2e::artifacts::Artifacts::find()?.extension_id;
    ensure!(rb.extension_id().len() == 32 && rb.extension_id() != keyed, "keyless: {}", rb.extension_id());

    // No native host anywhere the browser looks: none in its HOME; in its profile only the
    // empty `NativeMessagingHosts` Chromium makes itself.
    ensure!(rb.home().exists() && native_host_dirs(rb.home()).is_empty(), "{:?}", native_host_dirs(rb.home()));
    for dir in native_host_dirs(rb.profile()) {
        ensure!(dir == rb.profile().join("NativeMessagingHosts"), "{}", dir.display());
        let hosts: Vec<_> = std::fs::read_dir(&dir)?.collect();
        ensure!(hosts.is_empty(), "a host registered in {}: {hosts:?}", dir.display());
    }

    // Every connection dropped at once: the client's socket closes, and so does the
    // browser's (a context disposed on detach goes with its connection). The browser runs on.
    let r = ask(&mut by_header, 2, "Target.createBrowserContext", json!({"disposeOnDetach": true})).await?;
    let context = r["result"]["browserContextId"].clone();
    ensure!(contexts(rb.cdp()).await?.contains(&context), "the new context is there: {r}");
    ensure!(rb.drop_all().await == 2, "both proxied connections were open");
    ends(&mut by_header).await?;
    eventually(LIMIT, "the browser's side of the dropped connection closing", || async {
        Ok((!contexts(rb.cdp()).await?.contains(&context)).then_some(()))
    })
    .await?;
    ensure!(rb.open_connections() == 0);
    rb.cdp().call(None, "Browser.getVersion", json!({})).await.context("the browser still runs")?;
    let again = Cdp::connect(&rb.ws_url()).await?;
    again.call(None, "Browser.getVersion", json!({})).await.context("a new connection after the drop")?;
    ensure!(rb.connections() == 3 && rb.open_connections() == 1);

    // Its worker stopped (the browser said so). Whether the target is then seen gone is a
    // race: the browser may start the worker again at once, even under the same id.
    let stopped = rb.stop_worker().await?;
    ensure!(!stopped.is_empty());

    // The browser killed: the open connection ends, a new one is refused.
    let (mut open, _) = tokio_tungstenite::connect_async(rb.ws_url()).await?;
    ask(&mut open, 1, "Browser.getVersion", json!({})).await?;
    rb.kill_browser();
    ends(&mut open).await?;
    ensure!(refused_with(rb.ws_url().into_client_request()?).await? == 502, "a new connection after the kill");

    let dirs = [rb.home().to_path_buf(), rb.profile().to_path_buf(), rb.extension_dir()];
    drop(rb);
    for d in dirs {
        ensure!(!d.exists(), "{} removed", d.display());
    }
    Ok(())
}
