//! `unmodal browser --remote-allow-origins`: which WebSocket origins Chromium lets into the
//! DevTools port. A framework's own extension (Stagehand's) opens a WebSocket to the browser
//! from its worker, and Chromium refuses any Origin it was not told to allow. Allowing `*`
//! would let every web page the browser shows open one to the port and drive the browser,
//! so only named origins are taken: an unpacked extension's directory becomes its own
//! `chrome-extension://<id>`.

use sha2::Digest as _;
use std::path::Path;

/// The ID Chromium gives an extension loaded unpacked without `key`: the SHA-256 of its
/// absolute path, the first 32 hex digits written with the letters a-p for 0-f.
pub fn unpacked_id(dir: &Path) -> String {
    let hash = sha2::Sha256::digest(dir.as_os_str().as_encoded_bytes());
    hash.iter().take(16).flat_map(|b| [b >> 4, b & 0xf]).map(|n| char::from(b'a' + n)).collect()
}

/// A `--remote-allow-origins` value: an origin, or an unpacked extension's directory.
pub fn origin(given: &str) -> Result<String, String> {
    let given = given.trim();
    if given == "*" || given.contains(',') {
        return Err(format!(
            "{given:?}: name one origin at a time (repeat the option). `*` is refused: it lets any web page the \
browser shows open a WebSocket to the DevTools port and drive the browser"
        ));
    }
    let dir = Path::new(given);
    if dir.join("manifest.json").is_file() {
        // Chromium names an unpacked extension by the canonical path it loaded it from.
        let real = std::fs::canonicalize(dir).map_err(|e| format!("{given}: {e}"))?;
        return Ok(format!("chrome-extension://{}", unpacked_id(&real)));
    }
    let scheme_ok = ["chrome-extension://", "http://", "https://"].iter().any(|s| given.starts_with(s));
    let rest = given.split_once("://").map_or("", |(_, r)| r);
    if !scheme_ok || rest.is_empty() || rest.contains(['/', ' ', '*']) {
        return Err(format!(
            "{given:?} is neither an unpacked extension's directory (with manifest.json) nor an origin such as \
chrome-extension://<id> or http://localhost:3000 (no path)"
        ));
    }
    Ok(given.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_directories_are_taken_and_star_is_refused() {
        assert_eq!(origin("chrome-extension://abcdefghijklmnopabcdefghijklmnop").unwrap().len(), 51);
        assert_eq!(origin("http://localhost:3000").unwrap(), "http://localhost:3000");
        for bad in ["*", "a,b", "chrome-extension://x/y", "ftp://x", "nothing/here", "http://"] {
            assert!(origin(bad).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("manifest.json"), "{}").unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let o = origin(dir.path().to_str().unwrap()).unwrap();
        assert_eq!(o, format!("chrome-extension://{}", unpacked_id(&real)));
        assert!(o["chrome-extension://".len()..].chars().all(|c| ('a'..='p').contains(&c)), "{o}");
    }
}
