//! Where a remote browser is: the URL a provider hands out, the headers it wants, and the
//! TLS roots to trust. An `http(s)://host:port` is asked for its browser WebSocket
//! (`/json/version`, as Playwright does); a `ws(s)://` URL is used as it is (providers' URLs
//! often have no `/json` at all, and carry a token in the path or the query).

use anyhow::{Context, Result, anyhow, bail};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What `--cdp-endpoint`, `--cdp-header` and `--cdp-ca` say.
#[derive(Clone)]
pub struct Endpoint {
    url: String,
    headers: Vec<(String, String)>,
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values are credentials, and a URL may carry a token: neither is shown.
        f.debug_struct("Endpoint").field("url", &redacted(&self.url)).field("headers", &self.headers.len()).finish()
    }
}

/// The URL without what may be a credential (userinfo, query, anything past the host):
/// for logs and errors.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return "(not a URL)".into() };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit('@').next().unwrap_or_default();
    let more = if rest.len() > host.len() { "/…" } else { "" };
    format!("{scheme}://{host}{more}")
}

impl Endpoint {
    /// Checks the user's flags; errors say which one is wrong and how it should look.
    pub fn new(url: &str, headers: &[String], ca: Option<&Path>) -> Result<Self> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("http" | "https" | "ws" | "wss")) {
            bail!(
                "--cdp-endpoint wants http(s)://host:port or the ws(s)://… URL your provider gave you, not {}",
                redacted(url)
            );
        }
        let headers = headers.iter().map(|h| parse_header(h)).collect::<Result<Vec<_>>>()?;
        Ok(Self { url: url.to_owned(), headers, tls: tls_config(ca)? })
    }

    pub fn redacted(&self) -> String {
        redacted(&self.url)
    }

    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    pub fn tls(&self) -> Arc<rustls::ClientConfig> {
        self.tls.clone()
    }

    /// The browser's WebSocket URL: the one given, or the one `/json/version` names.
    pub async fn websocket_url(&self) -> Result<String> {
        let lower = self.url.to_ascii_lowercase();
        if lower.starts_with("ws://") || lower.starts_with("wss://") {
            return Ok(self.url.clone());
        }
        let body = self.get("/json/version").await?;
        let v: serde_json::Value = serde_json::from_slice(&body)
            .with_context(|| format!("{}/json/version did not answer JSON", self.redacted()))?;
        let ws = v["webSocketDebuggerUrl"]
            .as_str()
            .ok_or_else(|| anyhow!("{}/json/version names no webSocketDebuggerUrl", self.redacted()))?;
        Ok(ws.to_owned())
    }

    /// One plain HTTP/1.1 GET, the connection closed after it (Chromium does not answer 1.0).
    async fn get(&self, path: &str) -> Result<Vec<u8>> {
        let (tls, rest) = match self.url.split_once("://") {
            Some((s, r)) if s.eq_ignore_ascii_case("https") => (true, r),
            Some((_, r)) => (false, r),
            None => bail!("not a URL"),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let base = rest[authority.len()..].split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        let hostport = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = split_host_port(hostport, if tls { 443 } else { 80 })?;
        let mut req = format!(
            "GET {base}{path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\nAccept: application/json\r\n"
        );
        for (k, v) in &self.headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let connect = tokio::net::TcpStream::connect((host.as_str(), port));
        let tcp = tokio::time::timeout(std::time::Duration::from_secs(10), connect)
            .await
            .map_err(|_| anyhow!("{} did not accept a connection within 10 s", self.redacted()))?
            .with_context(|| format!("cannot connect to {}", self.redacted()))?;
        let raw = if tls {
            let name = ServerName::try_from(host.clone()).with_context(|| format!("{host} is not a host name"))?;
            let stream =
                tokio_rustls::TlsConnector::from(self.tls.clone()).connect(name, tcp).await.with_context(|| {
                    format!("TLS with {} failed (a private CA? pass --cdp-ca FILE.pem)", self.redacted())
                })?;
            exchange(stream, req.as_bytes()).await
        } else {
            exchange(tcp, req.as_bytes()).await
        }
        .with_context(|| format!("reading {}{path}", self.redacted()))?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| anyhow!("not an HTTP answer"))?;
        let status_line = String::from_utf8_lossy(raw[..split].split(|&b| b == b'\n').next().unwrap_or_default());
        let status = status_line.split_whitespace().nth(1).unwrap_or_default();
        if status != "200" {
            bail!(
                "{}{path} answered {}: give the browser's ws(s):// URL instead, or the header it wants (--cdp-header)",
                self.redacted(),
                status_line.trim()
            );
        }
        let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
        let body = &raw[split + 4..];
        if head.lines().any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked")) {
            return dechunk(body).ok_or_else(|| anyhow!("{}{path}: a broken chunked answer", self.redacted()));
        }
        Ok(body.to_vec())
    }
}

/// At most this much of an answer is read (a `/json/version` is a few hundred bytes).
const MAX_ANSWER: u64 = 1 << 20;

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, req: &[u8]) -> Result<Vec<u8>> {
    s.write_all(req).await?;
    let read = async {
        // To the end of the body: Content-Length when given (Chromium keeps the connection
        // open after answering), else to the close.
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).await?;
            if n == 0 {
                return Ok::<_, anyhow::Error>(out);
            }
            out.extend_from_slice(&chunk[..n]);
            if out.len() as u64 > MAX_ANSWER {
                bail!("the answer is over {MAX_ANSWER} bytes");
            }
            if let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok());
                if length.is_some_and(|len| out.len() >= end + 4 + len) {
                    return Ok(out);
                }
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .map_err(|_| anyhow!("no answer within 10 s"))?
}

/// A chunked body, joined.
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

fn split_host_port(hostport: &str, default: u16) -> Result<(String, u16)> {
    // [v6]:port, host:port, host
    if let Some(rest) = hostport.strip_prefix('[') {
        let (h, p) = rest.split_once(']').ok_or_else(|| anyhow!("bad IPv6 address in {hostport}"))?;
        let port = p.strip_prefix(':').map(str::parse).transpose().context("bad port")?.unwrap_or(default);
        return Ok((h.to_owned(), port));
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_owned(), p.parse().with_context(|| format!("bad port in {hostport}"))?)),
        None => Ok((hostport.to_owned(), default)),
    }
}

/// `Name: value`, as Playwright MCP's `--cdp-header` takes it.
fn parse_header(h: &str) -> Result<(String, String)> {
    let (name, value) =
        h.split_once(':').ok_or_else(|| anyhow!("--cdp-header wants \"Name: value\", got a header without a colon"))?;
    let name = name.trim();
    let ok_name =
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_!#$%&'*+.^`|~".contains(&b));
    if !ok_name {
        bail!("--cdp-header: {name:?} is not a header name");
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        bail!("--cdp-header {name}: the value has a line break");
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// The system's roots, plus the PEM certificates in `ca` (a self-hosted fleet's own CA).
fn tls_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for e in &native.errors {
        tracing::debug!(error = %e, "a system root certificate was unreadable");
    }
    let (_, skipped) = roots.add_parsable_certificates(native.certs);
    if skipped > 0 {
        tracing::debug!(skipped, "system root certificates skipped");
    }
    if let Some(path) = ca {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .with_context(|| format!("--cdp-ca {}: not a readable PEM file", path.display()))?;
        if certs.is_empty() {
            bail!("--cdp-ca {}: no certificate in it", path.display());
        }
        for c in certs {
            roots.add(c).with_context(|| format!("--cdp-ca {}: a certificate is not usable", path.display()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS set-up")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_what_may_be_a_token() {
        assert_eq!(
            redacted("wss://user:pw@connect.example.com/devtools/browser/x?token=s"),
            "wss://connect.example.com/…"
        );
        assert_eq!(redacted("http://127.0.0.1:9222"), "http://127.0.0.1:9222");
        assert_eq!(redacted("nonsense"), "(not a URL)");
        let e = Endpoint::new("wss://h/?apiKey=secret", &["Authorization: Bearer xyz".into()], None).unwrap();
        let shown = format!("{e:?}");
        assert!(!shown.contains("secret") && !shown.contains("xyz"), "{shown}");
    }

    #[test]
    fn flags_are_checked_with_errors_that_say_what_to_pass() {
        let e = Endpoint::new("ftp://x", &[], None).unwrap_err().to_string();
        assert!(e.contains("--cdp-endpoint"), "{e}");
        let e = Endpoint::new("ws://x", &["nocolon".into()], None).unwrap_err().to_string();
        assert!(e.contains("Name: value"), "{e}");
        let e = Endpoint::new("ws://x", &["Bad Name: v".into()], None).unwrap_err().to_string();
        assert!(e.contains("not a header name"), "{e}");
        let e = Endpoint::new("ws://x", &["X: a\r\nInjected: b".into()], None).unwrap_err().to_string();
        assert!(e.contains("line break"), "{e}");
        let ok = Endpoint::new("WSS://x", &["Authorization:  Bearer t ".into()], None).unwrap();
        assert_eq!(ok.headers(), [("Authorization".to_owned(), "Bearer t".to_owned())]);
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("ca.pem");
        std::fs::write(&empty, "not pem").unwrap();
        let e = Endpoint::new("wss://x", &[], Some(&empty)).unwrap_err().to_string();
        assert!(e.contains("--cdp-ca"), "{e}");
    }

    #[test]
    fn chunked_answers_are_joined() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert!(dechunk(b"9\r\nabc").is_none());
        assert!(dechunk(b"zz\r\n").is_none());
    }

    #[test]
    fn host_and_port_are_split() {
        assert_eq!(split_host_port("h:9222", 80).unwrap(), ("h".into(), 9222));
        assert_eq!(split_host_port("h", 443).unwrap(), ("h".into(), 443));
        assert_eq!(split_host_port("[::1]:9", 80).unwrap(), ("::1".into(), 9));
        assert!(split_host_port("h:x", 80).is_err());
    }

    #[tokio::test]
    async fn an_http_endpoint_is_asked_for_its_websocket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            let body = r#"{"webSocketDebuggerUrl":"ws://127.0.0.1:1/devtools/browser/abc"}"#;
            let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            s.write_all(answer.as_bytes()).await.unwrap();
            req
        });
        let e = Endpoint::new(&format!("http://127.0.0.1:{port}/"), &["X-Token: t1".into()], None).unwrap();
        assert_eq!(e.websocket_url().await.unwrap(), "ws://127.0.0.1:1/devtools/browser/abc");
        let req = server.await.unwrap();
        assert!(req.starts_with("GET /json/version HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("X-Token: t1\r\n"), "{req}");
        let ws = Endpoint::new("ws://h/devtools/browser/1?token=a", &[], None).unwrap();
        assert_eq!(ws.websocket_url().await.unwrap(), "ws://h/devtools/browser/1?token=a");
    }
}
