//! Which relying party a page may use: WebAuthn's rule, checked by the host before it arms
//! an authenticator with a relying party's passkeys. The page must be a secure context
//! (https, or `localhost`), and the relying party its own host or a registrable suffix of
//! it that is no public suffix (HTML's "is a registrable domain suffix of or is equal to",
//! by the Public Suffix List the `psl` crate builds in). An IP address matches only itself.

use crate::host::sites::{is_ip, web_host};

/// Whether the page at `url` may use relying party `rp_id`; `Err`: why not, for the record.
pub fn admits(url: &str, rp_id: &str) -> Result<(), String> {
    let Some((scheme, host)) = web_host(url) else {
        return Err("the asking frame is not an http(s) page".into());
    };
    let local = host == "localhost" || host.ends_with(".localhost");
    if scheme != "https" && !local {
        return Err(format!("the asking frame ({scheme}://{host}) is not a secure page (https, or localhost)"));
    }
    let rp = rp_id.to_ascii_lowercase();
    if rp == host {
        return Ok(());
    }
    let not = |why: &str| Err(format!("the relying party {rp_id:?} is not one a page on {host} may use ({why})"));
    if rp.is_empty() || is_ip(&host) || is_ip(&rp) || !domain(&rp) {
        return not("only the page's own host, or a domain it is in");
    }
    if !host.ends_with(&format!(".{rp}")) {
        return not("the page's host is not in it");
    }
    let suffix = |name: &str| psl::suffix_str(name).unwrap_or(name).to_owned();
    // A public suffix, or a part of the page's public suffix (`amazonaws.com` for a page
    // on `x.s3.amazonaws.com`), is shared by unrelated sites.
    let host_suffix = suffix(&host);
    if suffix(&rp) == rp || host_suffix == rp || host_suffix.ends_with(&format!(".{rp}")) {
        return not("a public suffix, shared by unrelated sites");
    }
    Ok(())
}

/// A domain name as the browser writes one: ASCII labels, none empty.
fn domain(name: &str) -> bool {
    name.len() <= 253
        && name
            .split('.')
            .all(|l| !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::admits;

    #[test]
    fn webauthns_rule() {
        let yes = [
            ("https://bank.example/login", "bank.example"),
            ("https://login.bank.example/", "bank.example"),
            ("https://a.b.bank.example:8443/x", "b.bank.example"),
            ("https://Login.Bank.Example/", "BANK.example"),
            ("http://localhost:4000/", "localhost"),
            ("http://app.localhost/", "app.localhost"),
            ("https://127.0.0.1/", "127.0.0.1"),
            ("https://x.github.io/", "x.github.io"),
            ("https://a.b.co.uk/", "b.co.uk"),
        ];
        for (url, rp) in yes {
            assert_eq!(admits(url, rp), Ok(()), "{url} {rp}");
        }
        let no = [
            ("https://evil.example/", "bank.example"),
            ("https://evilbank.example/", "bank.example"),
            ("https://bank.example/", "login.bank.example"),
            ("https://bank.example/", "example"),
            ("https://a.b.co.uk/", "co.uk"),
            ("https://x.github.io/", "github.io"),
            ("http://bank.example/", "bank.example"),
            ("http://127.0.0.1:80/", "127.0.0.1"),
            ("https://10.0.0.1/", "0.0.1"),
            ("https://a.localhost/", "localhost"),
            ("chrome-extension://abc/x.html", "abc"),
            ("https://bank.example/", ""),
            ("https://bank.example/", "bank..example"),
            ("https://bank.example/", "bank.example."),
            ("https://xn--bcher-kva.example/", "bücher.example"),
            ("", "bank.example"),
        ];
        for (url, rp) in no {
            assert!(admits(url, rp).is_err(), "{url} {rp}");
        }
        let why = admits("https://evil.example/", "bank.example").unwrap_err();
        assert!(why.contains("\"bank.example\"") && why.contains("evil.example"), "{why}");
    }
}
