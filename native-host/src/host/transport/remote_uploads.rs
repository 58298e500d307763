//! Files the agent gives a remote browser's file chooser, put on the browser's machine
//! first: `DOM.setFileInputFiles` takes a path there, and no CDP command writes a file as
//! such. The browser's own download machinery does. The bytes go into a blank page of a
//! browser context of the bridge's own (768 KiB at a time), become a `Blob`, and a click on
//! a `download` link saves them into a fresh directory that `Browser.setDownloadBehavior`
//! names for that context alone; `Browser.downloadProgress` says where they landed. The
//! worker then gives that path to the input as it does locally: trusted events, a real
//! file. What a page can tell: `lastModified` is the copy's time, and a name the browser
//! made safe (`a:b` → `a_b`). A folder goes file by file, each into its place. The extension
//! never sees these downloads.

use super::super::protocol::{Carried, PromptDecision, ToBrowser};
use super::remote_files::{Helper, call, last_name};
use crate::cdp::{Conn, Event};
use serde_json::json;
use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc::UnboundedReceiver;

/// Raw bytes per message (1 MiB of base64: far under any CDP limit; a 100 MB message
/// closes the whole connection).
const CHUNK: usize = 768 * 1024;
/// Where copies land on the browser's machine (the browser makes missing directories).
const THERE: &str = "/tmp/unmodal-uploads";
/// The time a copy may take: this, plus a second per MB.
const BASE_WAIT: Duration = Duration::from_secs(30);
/// And this per file (each is a download of its own).
const PER_FILE: Duration = Duration::from_millis(200);
/// The worker holds a chooser at most this long (`manifest/prompts.js`).
const MAX_WAIT: Duration = Duration::from_secs(11 * 60);

/// Whether `m` carries files that must be copied to the browser's machine before it goes.
pub fn wanted(m: &ToBrowser) -> bool {
    matches!(m, ToBrowser::PromptAnswer { decision: PromptDecision::Accept, carried: Carried { files: Some(f), .. }, .. } if !f.is_empty())
}

/// How long copying `files` may take (the worker holds the chooser that long).
pub fn wait_for(files: &[String]) -> Duration {
    let listed: Vec<(PathBuf, u64)> =
        files.iter().flat_map(|f| crate::files::files_in(Path::new(f)).unwrap_or_default()).collect();
    let bytes: u64 = listed.iter().map(|(_, n)| n).sum();
    let count = u32::try_from(listed.len()).unwrap_or(u32::MAX);
    (BASE_WAIT + Duration::from_millis(bytes / 1000) + PER_FILE * count).min(MAX_WAIT)
}

/// The copies one connection made: each file is copied once while it stays the same.
pub struct Uploader {
    helper: Helper,
    copied: HashMap<(PathBuf, u64, Option<SystemTime>), String>,
    /// Directories are `THERE/<run>-<n>`: unique across processes and connections.
    run: String,
    count: u64,
}

impl Uploader {
    pub fn new() -> Self {
        let millis = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        Self {
            helper: Helper::default(),
            copied: HashMap::new(),
            run: format!("{}-{millis}", std::process::id()),
            count: 0,
        }
    }

    /// Copies each of `files` (paths here, checked by `unmodal mcp`) to the browser's
    /// machine; their paths there, in order.
    pub async fn copy_all(
        &mut self,
        conn: &Conn,
        events: &mut UnboundedReceiver<Event>,
        files: &[String],
    ) -> Result<Vec<String>, String> {
        let mut there = Vec::with_capacity(files.len());
        for f in files {
            there.push(self.copy(conn, events, Path::new(f)).await.map_err(|e| format!("{f}: {e}"))?);
        }
        Ok(there)
    }

    async fn copy(
        &mut self,
        conn: &Conn,
        events: &mut UnboundedReceiver<Event>,
        file: &Path,
    ) -> Result<String, String> {
        let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
        let key = (file.to_path_buf(), meta.len(), meta.modified().ok());
        if let Some(path) = self.copied.get(&key) {
            return Ok(path.clone());
        }
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
        self.count += 1;
        let dir = format!("{THERE}/{}-{}", self.run, self.count);
        // The limits (size, count, no symlinks) are the ones `unmodal mcp` checked them by.
        let listed = crate::files::files_in(file)?;
        let path = if meta.is_dir() {
            // A folder input: each file in its place under a folder of the same name.
            for (f, len) in &listed {
                let inner = f.parent().and_then(|p| p.strip_prefix(file).ok()).unwrap_or(Path::new(""));
                let mut at = format!("{dir}/{name}");
                for part in inner.components() {
                    at = format!("{at}/{}", part.as_os_str().to_string_lossy());
                }
                self.save(conn, events, f, *len, &at).await.map_err(|e| format!("{}: {e}", f.display()))?;
            }
            format!("{dir}/{name}")
        } else {
            self.save(conn, events, file, meta.len(), &dir).await?
        };
        self.copied.insert(key, path.clone());
        Ok(path)
    }

    /// Saves `file` (`len` bytes) into directory `dir` on the browser's machine; its path there.
    async fn save(
        &mut self,
        conn: &Conn,
        events: &mut UnboundedReceiver<Event>,
        file: &Path,
        len: u64,
        dir: &str,
    ) -> Result<String, String> {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
        let session = self.helper.session(conn).await?;
        let context = self.helper.context(conn).await?;
        let s = Some(session.as_str());
        call(
            conn,
            "Browser.setDownloadBehavior",
            json!({"behavior": "allow", "browserContextId": context, "downloadPath": dir, "eventsEnabled": true}),
            None,
        )
        .await?;
        call(conn, "Runtime.evaluate", json!({"expression": PREPARE}), s).await?;
        push_bytes(conn, s, file).await?;
        let clicked = call(
            conn,
            "Runtime.evaluate",
            json!({"expression": format!("({SAVE})({})", json!(name)), "userGesture": true, "returnByValue": true}),
            s,
        )
        .await?;
        let url = clicked["result"]["value"].as_str().ok_or("the helper page made no file")?.to_owned();
        let saved = saved(events, &url, Instant::now() + BASE_WAIT + Duration::from_millis(len / 1000)).await;
        let _ =
            call(conn, "Runtime.evaluate", json!({"expression": format!("URL.revokeObjectURL({})", json!(url))}), s)
                .await;
        let (path, size) = saved.map_err(|e| format!("{e} (into {dir} on the browser's machine)"))?;
        if size.is_some_and(|n| n != len) {
            return Err(format!("the browser saved {} of {len} bytes", size.unwrap_or(0)));
        }
        if last_name(&path) != Some(name.as_str()) {
            tracing::info!(given = %name, there = ?last_name(&path), "the browser changed the file's name");
        }
        Ok(path)
    }
}

/// The helper page's side: a fresh list of parts, and how a chunk becomes bytes (older
/// browsers have no `Uint8Array.fromBase64`).
const PREPARE: &str = "globalThis.unmodalParts = []; globalThis.unmodalDecode = (s) => Uint8Array.fromBase64 ? \
Uint8Array.fromBase64(s) : Uint8Array.from(atob(s), (c) => c.charCodeAt(0)); true";
/// Saves the parts as a download named by its argument; the Blob's URL.
const SAVE: &str = "(name) => { const url = URL.createObjectURL(new Blob(globalThis.unmodalParts)); \
globalThis.unmodalParts = []; const a = document.createElement('a'); a.href = url; a.download = name; a.click(); \
return url; }";

async fn push_bytes(conn: &Conn, session: Option<&str>, file: &Path) -> Result<(), String> {
    use base64::Engine as _;
    let mut f = std::fs::File::open(file).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let mut n = 0;
        while n < CHUNK {
            match f.read(&mut buf[n..]).map_err(|e| e.to_string())? {
                0 => break,
                k => n += k,
            }
        }
        if n == 0 {
            return Ok(());
        }
        let b64 = base64::engine::general_purpose::STANDARD.encode(&buf[..n]);
        let expression = format!("globalThis.unmodalParts.push(globalThis.unmodalDecode(\"{b64}\")), true");
        call(conn, "Runtime.evaluate", json!({"expression": expression}), session).await?;
        if n < CHUNK {
            return Ok(());
        }
    }
}

/// Waits for the download of `url` to end: where it was saved, and its size if said.
async fn saved(
    events: &mut UnboundedReceiver<Event>,
    url: &str,
    deadline: Instant,
) -> Result<(String, Option<u64>), String> {
    let (mut guid, mut suggested) = (None::<String>, String::new());
    loop {
        let ev = tokio::time::timeout_at(deadline.into(), events.recv())
            .await
            .map_err(|_| "the browser did not save it in time".to_owned())?
            .ok_or("the connection closed")?;
        let p = &ev.params;
        match ev.method.as_str() {
            "Browser.downloadWillBegin" if p["url"] == url => {
                guid = p["guid"].as_str().map(str::to_owned);
                suggested = p["suggestedFilename"].as_str().unwrap_or_default().to_owned();
            }
            "Browser.downloadProgress" if guid.is_some() && p["guid"].as_str() == guid.as_deref() => {
                match p["state"].as_str() {
                    Some("completed") => {
                        let path = p["filePath"].as_str().map(str::to_owned).filter(|s| !s.is_empty());
                        let path =
                            path.ok_or_else(|| format!("the browser saved {suggested} and did not say where"))?;
                        return Ok((path, p["receivedBytes"].as_f64().map(|n| n as u64)));
                    }
                    Some("canceled") => {
                        return Err("the browser refused to save it (its downloads are refused, or the directory \
is not writable)"
                            .into());
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_accept_with_files_waits_for_a_copy() {
        let answer = |decision, files: Option<Vec<String>>| ToBrowser::PromptAnswer {
            kind: crate::host::kinds::file_chooser::KIND,
            tab_id: 1,
            id: 1,
            decision,
            carried: Carried { files, ..Default::default() },
            record: 1,
        };
        assert!(wanted(&answer(PromptDecision::Accept, Some(vec!["/x".into()]))));
        assert!(!wanted(&answer(PromptDecision::Accept, Some(vec![]))));
        assert!(!wanted(&answer(PromptDecision::Accept, None)));
        assert!(!wanted(&answer(PromptDecision::Refuse, Some(vec!["/x".into()]))));
    }

    #[test]
    fn the_wait_grows_with_the_files_and_stays_under_the_workers_limit() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.bin");
        std::fs::write(&f, vec![0u8; 2_000_000]).unwrap();
        let f = f.display().to_string();
        assert_eq!(wait_for(std::slice::from_ref(&f)), BASE_WAIT + Duration::from_secs(2) + PER_FILE);
        let folder = dir.path().display().to_string();
        assert_eq!(wait_for(&[folder]), BASE_WAIT + Duration::from_secs(2) + PER_FILE);
        assert_eq!(wait_for(&["/no/such/file".into()]), BASE_WAIT);
        assert!(wait_for(&vec![f; 1000]) <= MAX_WAIT);
    }
}
