//! A FedCM identity provider on loopback with two accounts (CDP-FACTS 3): the well-known
//! file, the config, the accounts list, the client metadata, and an assertion endpoint
//! whose token names the account the browser posted, so a test can tell which was picked.
//! Plain HTTP/1.1, one request per connection, each on a thread of its own. What it serves can
//! be changed while it runs (`Idp::set`): one account, an error from the assertion
//! endpoint, no accounts (signed out at the provider), so that each FedCM dialog shows.

use anyhow::Result;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub struct Idp {
    pub origin: String,
    /// The account ids posted to the assertion endpoint, in order.
    pub asserted: Arc<Mutex<Vec<String>>>,
    /// Every path asked for, in order (a call that never reached the browser asks nothing).
    pub asked: Arc<Mutex<Vec<String>>>,
    mode: Arc<Mutex<Mode>>,
}

/// What the provider answers (the default: both accounts, a token).
#[derive(Clone, Debug)]
pub struct Mode {
    /// How many of `ACCOUNTS` the accounts endpoint lists (0: signed out at the provider).
    pub accounts: usize,
    /// The assertion endpoint answers `{"error": {...}}` instead of a token (the browser's
    /// `Error` dialog).
    pub assertion_error: bool,
    /// The account whose `approved_clients` names the relying party's client (`c1`): a
    /// returning account (`login_state: "SignIn"`); none by default, so every account is a
    /// new one.
    pub returning: Option<&'static str>,
}

impl Default for Mode {
    fn default() -> Self {
        Self { accounts: ACCOUNTS.len(), assertion_error: false, returning: None }
    }
}

/// The two accounts: (id, name, email).
pub const ACCOUNTS: [(&str, &str, &str); 2] = [("u1", "One", "one@idp.test"), ("u2", "Two", "two@idp.test")];

impl Idp {
    /// Serves on 127.0.0.1 for relying parties at `rp_origin` (the assertion's CORS origin).
    pub fn start(rp_origin: &str) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let origin = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
        let asserted: Arc<Mutex<Vec<String>>> = Arc::default();
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        let mode: Arc<Mutex<Mode>> = Arc::default();
        let (o, rp, log, paths, m) =
            (origin.clone(), rp_origin.to_owned(), asserted.clone(), asked.clone(), mode.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                // A thread per connection: once a person's visit made it known, the browser
                // opens connections it sends nothing on (a preconnect), and one served in
                // turn held every request after it (measured: the provider asked nothing
                // more, and the page's call waited).
                let (o, rp, log, paths, m) = (o.clone(), rp.clone(), log.clone(), paths.clone(), m.clone());
                std::thread::spawn(move || serve(stream, &o, &rp, &log, &paths, &m));
            }
        });
        Ok(Self { origin, asserted, asked, mode })
    }

    /// Changes what it answers from the next request on.
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// A page of the provider's own whose response says the user is logged in there
    /// (`Set-Login: logged-in`, the FedCM login status): visited at the top level, it makes
    /// the browser expect accounts from this provider.
    pub fn login_status_url(&self) -> String {
        format!("{}/logged-in", self.origin)
    }

    pub fn config_url(&self) -> String {
        format!("{}/config.json", self.origin)
    }
}

/// A relying party's page whose button asks the provider at `config_url` for a token; the
/// title says what the page got (`token token-for-u1`, `error NetworkError`), and so does a
/// message to the parent when it is framed; the credential is kept as `window.cred`.
pub fn rp_page(config_url: &str) -> String {
    format!(
        r#"<!doctype html><title>rp</title>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.credentials.get({{identity: {{providers: [{{configURL: '{config_url}', clientId: 'c1', nonce: 'n1'}}]}}}}).then((c) => {{ window.cred = c; said('token ' + c.token); }}, (e) => said('error ' + e.name))">sign in</button>
<script>function said(t) {{ document.title = t; if (parent !== window) parent.postMessage(t, '*'); }}</script>"#
    )
}

/// A relying party (another site than the test pages) and its provider: a fresh pair each
/// time, since an account once signed in is a returning one for that pair.
pub struct Rp {
    _web: crate::web::WebServer,
    pub idp: Idp,
    pub url: String,
}

impl Rp {
    pub fn start(path: &str) -> Result<Self> {
        Self::start_with(path, |_| Vec::new())
    }

    /// With the response headers `headers` gives for the provider's origin (a CSP).
    pub fn start_with(path: &str, headers: impl FnOnce(&str) -> Vec<(String, String)>) -> Result<Self> {
        let web = crate::web::WebServer::other_site()?;
        let idp = Idp::start(&web.origin)?;
        let headers = headers(&idp.origin);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let url = web.page(path, &rp_page(&idp.config_url()), &headers);
        Ok(Rp { _web: web, idp, url })
    }
}

fn serve(
    stream: TcpStream,
    origin: &str,
    rp: &str,
    asserted: &Mutex<Vec<String>>,
    asked: &Mutex<Vec<String>>,
    mode: &Mutex<Mode>,
) -> Result<()> {
    // A preconnect that never sends a request lets go of its thread in the end.
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60)))?;
    let mut r = BufReader::new(stream.try_clone()?);
    let mut first = String::new();
    r.read_line(&mut first)?;
    let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
    asked.lock().unwrap().push(path.clone());
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(65536)];
    r.read_exact(&mut body)?;
    let body = String::from_utf8_lossy(&body);
    // Read once the request came: a connection opened early (a preconnect) answers as the
    // provider is set now.
    let mode = mode.lock().unwrap().clone();
    let accounts: Vec<serde_json::Value> = ACCOUNTS[..mode.accounts.min(ACCOUNTS.len())]
        .iter()
        .map(|&(id, name, email)| {
            let approved: &[&str] = if mode.returning == Some(id) { &["c1"] } else { &[] };
            serde_json::json!({"id": id, "name": name, "email": email, "approved_clients": approved})
        })
        .collect();
    let mut extra = String::new();
    let mut kind = "application/json";
    let json = match path.split('?').next().unwrap_or_default() {
        "/.well-known/web-identity" => serde_json::json!({"provider_urls": [format!("{origin}/config.json")]}),
        "/config.json" => serde_json::json!({"accounts_endpoint": "/accounts", "client_metadata_endpoint":
            "/client_metadata", "id_assertion_endpoint": "/assertion", "login_url": "/login"}),
        "/accounts" => serde_json::json!({"accounts": accounts}),
        "/client_metadata" => serde_json::json!({"privacy_policy_url": format!("{origin}/privacy"),
            "terms_of_service_url": format!("{origin}/terms")}),
        "/assertion" => {
            let account = body.split('&').find_map(|kv| kv.strip_prefix("account_id=")).unwrap_or_default().to_owned();
            asserted.lock().unwrap().push(account.clone());
            extra = format!("Access-Control-Allow-Origin: {rp}\r\nAccess-Control-Allow-Credentials: true\r\n");
            if mode.assertion_error {
                serde_json::json!({"error": {"code": "invalid_request", "url": format!("{origin}/error")}})
            } else {
                serde_json::json!({"token": format!("token-for-{account}")})
            }
        }
        "/logged-in" => {
            extra = "Set-Login: logged-in\r\n".to_owned();
            kind = "text/html";
            serde_json::json!("logged in")
        }
        _ => serde_json::json!({}),
    };
    let text = json.to_string();
    let mut w = stream;
    write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{text}",
        text.len()
    )?;
    Ok(())
}
