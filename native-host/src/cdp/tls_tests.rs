//! `--cdp-ca` against real TLS: a server whose certificate a private CA signed is refused
//! with the system's roots alone (and the error names `--cdp-ca`), and accepted, over
//! https and wss, once that CA is given.

use super::{Conn, Endpoint};
use futures_util::{SinkExt, StreamExt};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

/// A private CA's PEM and a TLS acceptor for `localhost` with a certificate it signed.
fn private_ca() -> (String, tokio_rustls::TlsAcceptor) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&key, &ca).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())))
        .unwrap();
    (ca.pem(), tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves `/json/version` over https, then one WebSocket echo over wss, on one port.
async fn serve(acceptor: tokio_rustls::TlsAcceptor) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut head = [0u8; 5];
                if tls.read_exact(&mut head).await.is_err() {
                    return;
                }
                if &head == b"GET /" {
                    // Either the JSON or the WebSocket: the request line says which.
                    let mut rest = vec![0u8; 4096];
                    let n = tls.read(&mut rest).await.unwrap_or(0);
                    let text = String::from_utf8_lossy(&rest[..n]).to_string();
                    if text.starts_with("json/version") {
                        let body = format!(r#"{{"webSocketDebuggerUrl":"wss://localhost:{port}/devtools/browser/x"}}"#);
                        let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                        let _ = tls.write_all(answer.as_bytes()).await;
                        return;
                    }
                    // Replay what was read to the WebSocket handshake.
                    let stream = Prefixed { head: [&head[..], &rest[..n]].concat(), at: 0, inner: tls };
                    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else { return };
                    while let Some(Ok(m)) = ws.next().await {
                        if let Message::Text(t) = m {
                            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                            let reply = serde_json::json!({"id": v["id"], "result": {"echo": v["method"]}});
                            let _ = ws.send(Message::Text(reply.to_string().into())).await;
                        }
                    }
                }
            });
        }
    });
    port
}

/// A stream that first yields bytes already read from it.
struct Prefixed<S> {
    head: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.at < self.head.len() {
            let n = (self.head.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.head[at..at + n]);
            self.at += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn a_private_ca_is_trusted_only_when_given() {
    let (ca_pem, acceptor) = private_ca();
    let port = serve(acceptor).await;
    let url = format!("https://localhost:{port}");
    let err = Endpoint::new(&url, &[], None).unwrap().websocket_url().await.unwrap_err();
    assert!(format!("{err:#}").contains("--cdp-ca"), "{err:#}");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let e = Endpoint::new(&url, &[], Some(&ca)).unwrap();
    let ws = e.websocket_url().await.unwrap();
    assert_eq!(ws, format!("wss://localhost:{port}/devtools/browser/x"));
    let (conn, _events) = Conn::open(&e, &ws).await.unwrap();
    let r = conn.call("Browser.getVersion", serde_json::json!({}), None).await.unwrap();
    assert_eq!(r["echo"], "Browser.getVersion");
    // Without the CA the WebSocket is refused too.
    let plain = Endpoint::new(&ws, &[], None).unwrap();
    assert!(Conn::open(&plain, &ws).await.is_err());
}

/// Serves one `/json/version` over https with `ws` as the browser's WebSocket; keeps each
/// request.
async fn serve_json_version(
    acceptor: tokio_rustls::TlsAcceptor,
    ws: String,
) -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(mut tls) = acceptor.accept(tcp).await else { continue };
            let mut buf = vec![0u8; 4096];
            let n = tls.read(&mut buf).await.unwrap_or(0);
            kept.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let body = format!(r#"{{"webSocketDebuggerUrl":"{ws}"}}"#);
            let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            let _ = tls.write_all(answer.as_bytes()).await;
        }
    });
    (port, seen)
}

/// An https:// endpoint whose /json/version names a plain ws:// URL on another machine:
/// the attacker is on the path to that machine, reading what goes in clear. The answer
/// is refused before any connection to it, so no header leaves unencrypted (203.0.113.5 is
/// a documentation address: nothing here may reach it, and nothing tries).
/// Failed on 892be98: the URL was taken as it was.
#[tokio::test]
async fn an_https_endpoint_that_answers_a_plain_websocket_elsewhere_is_refused() {
    let (ca_pem, acceptor) = private_ca();
    let (port, seen) = serve_json_version(acceptor, "ws://203.0.113.5:9222/devtools/browser/x?k=leak".into()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let header = "Authorization: Bearer s3cret".to_owned();
    let e = Endpoint::new(&format!("https://localhost:{port}"), std::slice::from_ref(&header), Some(&ca)).unwrap();
    let err = format!("{:#}", e.websocket_url().await.unwrap_err());
    // What it answered (redacted), and what to do instead.
    assert!(err.contains("ws://203.0.113.5:9222/…") && err.contains("wss://"), "{err}");
    assert!(!err.contains("s3cret") && !err.contains("leak"), "{err}");
    // The endpoint itself was asked over TLS, with the header, as before.
    assert!(seen.lock().unwrap().iter().any(|r| r.contains("Authorization: Bearer s3cret")));
}
