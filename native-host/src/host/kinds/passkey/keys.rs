//! The passkeys Unmodal's virtual authenticator made: the host keeps them, the worker arms
//! a fresh authenticator with a relying party's keys before each accepted WebAuthn call
//! (`manifest/passkeys.js`) and hands back what the call made or signed. Keys last for the
//! browser session (memory, and the session's private state file across host restarts);
//! those a `keep: true` rule made are also written to `passkeys.json` in Unmodal's data
//! directory (0600), so a later browser session signs in with them. A private key never
//! appears in an answer, a record or a log (`Debug` leaves it out).
//!
//! What the worker hands back is its word (any DevTools client can send it in the worker's
//! name where one can reach the worker), so no key it names replaces a key held under the
//! same credential ID but the same key with a count that moved on, and no new key evicts a
//! kept one: the kept keys have a limit of their own, and past it a new one is not kept.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// This browser session's keys, at most (the oldest go first).
const MAX_KEYS: usize = 256;
/// Kept keys, at most: past it a new one lasts the session only (none is evicted).
const MAX_KEPT: usize = 256;
const FILE: &str = "passkeys.json";

/// One credential as the DevTools protocol's WebAuthn domain gives and takes it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasskeyKey {
    /// Base64, as the protocol encodes binary.
    pub credential_id: String,
    #[serde(default)]
    pub is_resident_credential: bool,
    pub rp_id: String,
    /// Base64 PKCS#8.
    pub private_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_handle: Option<String>,
    #[serde(default)]
    pub sign_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_display_name: Option<String>,
}

impl std::fmt::Debug for PasskeyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasskeyKey")
            .field("rp_id", &self.rp_id)
            .field("sign_count", &self.sign_count)
            .finish_non_exhaustive()
    }
}

impl PasskeyKey {
    /// Whether the worker's copy is fit to keep (it comes from the browser, sizes bounded).
    pub fn check(&self) -> Result<(), &'static str> {
        let b64 = |s: &str, max: usize| {
            !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=-_".contains(&b))
        };
        if !b64(&self.credential_id, 1400) {
            return Err("credentialId is not base64 of at most 1,024 bytes");
        }
        if !b64(&self.private_key, 4096) {
            return Err("privateKey is not base64 of at most 3 KB");
        }
        if self.user_handle.as_deref().is_some_and(|h| !h.is_empty() && !b64(h, 128)) {
            return Err("userHandle is not base64 of at most 64 bytes");
        }
        if self.rp_id.is_empty() || self.rp_id.len() > 256 {
            return Err("rpId is empty or longer than 256 bytes");
        }
        if [&self.user_name, &self.user_display_name].iter().any(|n| n.as_ref().is_some_and(|n| n.len() > 1024)) {
            return Err("a user name longer than 1,024 bytes");
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
pub struct PasskeyKeys {
    /// This browser session's (kept ones too, with their newest counts).
    pub session: Vec<PasskeyKey>,
    kept: Vec<PasskeyKey>,
    /// Where kept keys live; none: memory only (tests, no data directory).
    dir: Option<PathBuf>,
}

/// Adds `key`, or replaces the one with its id, or (a discoverable one) the relying party's
/// discoverable key for the same user, as an authenticator does.
fn upsert(keys: &mut Vec<PasskeyKey>, key: PasskeyKey) {
    let same_user = |k: &PasskeyKey| {
        key.is_resident_credential
            && k.is_resident_credential
            && k.rp_id == key.rp_id
            && k.user_handle.is_some()
            && k.user_handle == key.user_handle
    };
    keys.retain(|k| k.credential_id != key.credential_id && !same_user(k));
    keys.push(key);
}

/// Whether `new` may stand for `old`, a key held under the same credential ID: the same
/// key, its count never going back.
fn same_key(old: &PasskeyKey, new: &PasskeyKey) -> bool {
    old.rp_id == new.rp_id
        && old.user_handle == new.user_handle
        && old.private_key == new.private_key
        && new.sign_count >= old.sign_count
}

impl PasskeyKeys {
    /// The store, with the keys kept in `dir` (a file that cannot be read is reported and
    /// left alone: nothing is written over it).
    pub fn open(dir: PathBuf) -> Self {
        let kept = match read(&dir) {
            Ok(k) => k,
            Err(e) => {
                tracing::error!(file = %dir.join(FILE).display(), error = %e, "kept passkeys unreadable; not using them");
                return Self::default();
            }
        };
        Self { session: Vec::new(), kept, dir: Some(dir) }
    }

    #[cfg(test)]
    pub fn kept(&self) -> &[PasskeyKey] {
        &self.kept
    }

    /// What an authenticator for relying party `rp` starts with.
    pub fn for_rp(&self, rp: &str) -> Vec<PasskeyKey> {
        let mut keys: Vec<PasskeyKey> = self.kept.iter().filter(|k| k.rp_id == rp).cloned().collect();
        for k in self.session.iter().filter(|k| k.rp_id == rp) {
            upsert(&mut keys, k.clone());
        }
        keys
    }

    /// Keys an authenticator made or used; `keep`: an accept with `keep` the host sent (a
    /// `keep: true` rule) answered the call. A key kept before stays kept with its new count.
    pub fn save(&mut self, keys: Vec<PasskeyKey>, keep: bool) {
        let mut write = false;
        for k in keys {
            if let Err(why) = k.check() {
                tracing::warn!(why, "a passkey from the browser was not kept");
                continue;
            }
            let known = self.kept.iter().chain(&self.session).filter(|o| o.credential_id == k.credential_id);
            if known.clone().any(|o| !same_key(o, &k)) {
                tracing::warn!(
                    rp_id = %k.rp_id,
                    "a passkey from the browser has the credential ID of another one (or its count went back); refused"
                );
                continue;
            }
            let kept = self.kept.iter().any(|o| o.credential_id == k.credential_id);
            if keep || kept {
                let replaces = |o: &PasskeyKey| {
                    o.credential_id == k.credential_id
                        || (k.is_resident_credential
                            && o.rp_id == k.rp_id
                            && o.user_handle.is_some()
                            && o.user_handle == k.user_handle)
                };
                if self.kept.len() < MAX_KEPT || self.kept.iter().any(replaces) {
                    upsert(&mut self.kept, k.clone());
                    write = true;
                } else {
                    tracing::warn!(rp_id = %k.rp_id, "kept passkeys are at their limit: this one lasts the browser session");
                }
            }
            upsert(&mut self.session, k);
            if self.session.len() > MAX_KEYS {
                self.session.remove(0);
            }
        }
        if write
            && let Some(dir) = &self.dir
            && let Err(e) = self.write(dir)
        {
            tracing::error!(dir = %dir.display(), error = %e, "cannot keep passkeys on disk; they last this session");
        }
    }

    /// Merges with what is on disk now (another browser's host may have kept some), then
    /// writes whole, private, renamed into place.
    fn write(&self, dir: &Path) -> std::io::Result<()> {
        crate::paths::ensure_private_dir(dir)?;
        let mut all = read(dir).unwrap_or_default();
        for k in &self.kept {
            // What another host kept under the same ID stays unless this is the same key.
            let known = all.iter().find(|o| o.credential_id == k.credential_id);
            if known.is_none_or(|o| same_key(o, k)) && (known.is_some() || all.len() < MAX_KEPT) {
                upsert(&mut all, k.clone());
            }
        }
        crate::paths::write_private(&dir.join(FILE), &serde_json::to_vec(&all).map_err(std::io::Error::other)?)
    }
}

fn read(dir: &Path) -> std::io::Result<Vec<PasskeyKey>> {
    match std::fs::read(dir.join(FILE)) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::permission_bits;

    pub fn key(id: &str, rp: &str, count: u32) -> PasskeyKey {
        PasskeyKey {
            credential_id: id.into(),
            is_resident_credential: true,
            rp_id: rp.into(),
            private_key: "TUlHSEFnRUFNQk1HQnlxR1NNNDlBZ0VHQ0NxR1NNNDlBd0VIQkcwd2F3SUJBUVFn".into(),
            user_handle: Some(id.replace('A', "B")),
            sign_count: count,
            user_name: Some("u@x".into()),
            user_display_name: None,
        }
    }

    #[test]
    fn session_keys_stay_in_memory_kept_ones_reach_a_private_file_and_a_new_store() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut keys = PasskeyKeys::open(data.clone());
        keys.save(vec![key("AA==", "a.example", 1)], false);
        assert!(!data.join(FILE).exists(), "a session key is not written");
        keys.save(vec![key("AQ==", "a.example", 1), key("Ag==", "b.example", 1)], true);
        assert!(data.join(FILE).is_file());
        assert!(permission_bits(&data.join(FILE)).is_none_or(|m| m == 0o600));
        assert!(permission_bits(&data).is_none_or(|m| m == 0o700));
        assert_eq!(keys.for_rp("a.example").len(), 2);
        // The count a later call left is kept too.
        keys.save(vec![key("AQ==", "a.example", 5)], false);
        let again = PasskeyKeys::open(data);
        let ids: Vec<_> = again.for_rp("a.example").into_iter().map(|k| (k.credential_id, k.sign_count)).collect();
        assert_eq!(ids, [("AQ==".to_string(), 5)], "only the kept key, with its newest count");
        assert_eq!(again.for_rp("c.example"), []);
    }

    #[test]
    fn bad_keys_are_dropped_and_debug_never_shows_a_private_key() {
        let mut keys = PasskeyKeys::default();
        let mut bad = key("not base64!", "a.example", 1);
        keys.save(vec![bad.clone()], false);
        bad.credential_id = "AA==".into();
        bad.rp_id = String::new();
        keys.save(vec![bad], false);
        assert!(keys.session.is_empty());
        let k = key("AA==", "a.example", 1);
        assert!(!format!("{k:?}").contains(&k.private_key));
    }

    #[test]
    fn a_new_discoverable_key_for_the_same_user_replaces_the_old_one() {
        let mut keys = PasskeyKeys::default();
        let mut old = key("AA==", "a", 1);
        old.user_handle = Some("dQ==".into());
        let new = PasskeyKey { credential_id: "AQ==".into(), ..old.clone() };
        keys.save(vec![old.clone(), key("Ag==", "a", 1)], false);
        keys.save(vec![new], false);
        let ids: Vec<_> = keys.for_rp("a").into_iter().map(|k| k.credential_id).collect();
        assert_eq!(ids, ["Ag==", "AQ=="]);
        // Not discoverable: both stay.
        let mut keys = PasskeyKeys::default();
        old.is_resident_credential = false;
        keys.save(vec![old.clone(), PasskeyKey { credential_id: "AQ==".into(), ..old }], false);
        assert_eq!(keys.for_rp("a").len(), 2);
    }

    #[test]
    fn the_oldest_go_past_the_limit() {
        let mut keys = PasskeyKeys::default();
        keys.save((0..MAX_KEYS + 3).map(|i| key(&format!("{i}AA="), "a", 0)).collect(), false);
        assert_eq!(keys.session.len(), MAX_KEYS);
        assert_eq!(keys.session[0].credential_id, "3AA=");
    }

    /// On 892be98 the key with the known ID and another private key replaced the first.
    #[test]
    fn a_known_id_is_taken_only_as_the_same_key_with_a_count_that_moved_on() {
        let mut keys = PasskeyKeys::default();
        keys.save(vec![key("AA==", "a", 5)], true);
        let other = |f: fn(&mut PasskeyKey)| {
            let mut k = key("AA==", "a", 6);
            f(&mut k);
            k
        };
        keys.save(
            vec![
                other(|k| k.private_key = "QUFBQQ==".into()),
                other(|k| k.rp_id = "b".into()),
                other(|k| k.user_handle = Some("dQ==".into())),
                other(|k| k.sign_count = 4),
            ],
            true,
        );
        let now = |keys: &PasskeyKeys| keys.for_rp("a").into_iter().map(|k| k.sign_count).collect::<Vec<_>>();
        assert_eq!(now(&keys), [5]);
        assert!(keys.for_rp("b").is_empty());
        keys.save(vec![key("AA==", "a", 7)], false);
        assert_eq!(now(&keys), [7]);
        assert_eq!(keys.kept[0].sign_count, 7, "the kept one's count too");
    }

    /// On 892be98 a full store of new kept keys evicted the oldest kept one.
    #[test]
    fn kept_keys_are_never_evicted() {
        let mut keys = PasskeyKeys::default();
        keys.save(vec![key("AA==", "a", 0)], true);
        keys.save((0..MAX_KEPT + 3).map(|i| key(&format!("{i}AB="), "b", 0)).collect(), true);
        keys.save((0..MAX_KEYS + 3).map(|i| key(&format!("{i}AC="), "c", 0)).collect(), false);
        assert_eq!(keys.kept.len(), MAX_KEPT);
        assert_eq!(keys.kept[0].credential_id, "AA==");
        assert_eq!(keys.for_rp("a").len(), 1, "evicted from the session's, still kept");
        // The same key again, or a new one for the same user, still updates a full store.
        keys.save(vec![key("AA==", "a", 1)], true);
        assert_eq!(keys.for_rp("a")[0].sign_count, 1);
    }

    #[test]
    fn an_unreadable_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), b"{oops").unwrap();
        let mut keys = PasskeyKeys::open(dir.path().into());
        keys.save(vec![key("AA==", "a", 1)], true);
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), b"{oops");
    }
}
