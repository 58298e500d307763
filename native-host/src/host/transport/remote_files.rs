//! Files a remote browser downloaded, copied to this machine over the bridge's own CDP
//! connection. No CDP command reads a file by path, but a file input can be given one
//! (`DOM.setFileInputFiles`), its `File` is a blob (`IO.resolveBlob`), and a blob can be
//! read (`IO.read`, in chunks). The input lives in a blank page of a browser context the
//! bridge makes for itself, disposed with its connection: the extension, the pages and the
//! agent's driver never see it.

use super::super::kinds::names_for;
use super::super::protocol::FetchJob;
use crate::cdp::Conn;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes asked for per `IO.read` (far under any CDP message limit; a 100 MB message to the
/// browser closes the whole connection).
const CHUNK: u64 = 1 << 20;
/// A download larger than this is not copied.
const MAX_FILE: u64 = 4 << 30;

/// A blank page in a browser context of the bridge's own (disposed with its connection),
/// once made: the page's session and the context.
#[derive(Default)]
pub struct Helper {
    page: Option<(String, String)>,
}

impl Helper {
    pub async fn session(&mut self, conn: &Conn) -> Result<String, String> {
        Ok(self.page(conn).await?.0)
    }

    pub async fn context(&mut self, conn: &Conn) -> Result<String, String> {
        Ok(self.page(conn).await?.1)
    }

    async fn page(&mut self, conn: &Conn) -> Result<(String, String), String> {
        if let Some(p) = &self.page {
            return Ok(p.clone());
        }
        let ctx = call(conn, "Target.createBrowserContext", json!({"disposeOnDetach": true}), None).await?;
        let ctx = ctx["browserContextId"].as_str().ok_or("no browser context")?.to_owned();
        let t = call(conn, "Target.createTarget", json!({"url": "about:blank", "browserContextId": ctx}), None).await?;
        let target = t["targetId"].as_str().ok_or("no helper page")?.to_owned();
        let s = call(conn, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), None).await?;
        let session = s["sessionId"].as_str().ok_or("no session on the helper page")?.to_owned();
        // A page made while a client's auto-attach waits for debuggers starts paused.
        call(conn, "Runtime.runIfWaitingForDebugger", json!({}), Some(&session)).await?;
        let page = (session, ctx);
        self.page = Some(page.clone());
        Ok(page)
    }
}

pub async fn call(conn: &Conn, method: &str, params: Value, session: Option<&str>) -> Result<Value, String> {
    tracing::debug!(method, "remote file step");
    conn.call(method, params, session).await.map_err(|e| e.to_string())
}

/// The file's last name on the browser's machine, whichever separator it uses.
pub fn last_name(remote: &str) -> Option<&str> {
    let name = remote.rsplit(['/', '\\']).next()?;
    (!name.is_empty() && name != "." && name != "..").then_some(name)
}

/// How much remote downloads may be copied to this machine in all, in one session of
/// `unmodal mcp --cdp-endpoint` (`--max-remote-downloads-mb`), and how much was.
#[derive(Debug)]
pub struct Budget {
    cap: u64,
    used: std::sync::atomic::AtomicU64,
}

impl Budget {
    pub fn new(cap: u64) -> Self {
        Self { cap, used: 0.into() }
    }

    /// Bytes still allowed.
    fn left(&self) -> u64 {
        self.cap.saturating_sub(self.used.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn spend(&self, bytes: u64) {
        self.used.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Why a copy is not made, or stopped.
    fn over(&self) -> String {
        format!(
            "this session's copies would pass their cap of {} MB (`--max-remote-downloads-mb`); it stays on the \
browser's machine",
            self.cap >> 20
        )
    }
}

/// Copies `job`'s file into its directory here, within what `budget` leaves (copies are
/// made one at a time); where it went and how many bytes.
pub async fn fetch(conn: &Conn, helper: &mut Helper, job: &FetchJob, budget: &Budget) -> Result<(PathBuf, u64), String> {
    let name = last_name(&job.remote).ok_or("the browser's path has no file name")?.to_owned();
    let left = budget.left();
    if left == 0 {
        return Err(budget.over());
    }
    let session = helper.session(conn).await?;
    let s = Some(session.as_str());
    let input = call(
        conn,
        "Runtime.evaluate",
        json!({"expression": "(() => { const i = document.createElement('input'); i.type = 'file'; return i; })()"}),
        s,
    )
    .await?;
    let input = input["result"]["objectId"].as_str().ok_or("no file input")?.to_owned();
    call(conn, "DOM.setFileInputFiles", json!({"files": [job.remote], "objectId": input}), s).await?;
    let file = call(
        conn,
        "Runtime.callFunctionOn",
        json!({"functionDeclaration": "function () { return this.files[0]; }", "objectId": input}),
        s,
    )
    .await?;
    let file = file["result"]["objectId"].as_str().ok_or("the input took no file")?.to_owned();
    // The size the browser says, to skip a copy that cannot fit; the copy counts its bytes itself.
    let size = call(
        conn,
        "Runtime.callFunctionOn",
        json!({"functionDeclaration": "function () { return this.size; }", "objectId": file, "returnByValue": true}),
        s,
    )
    .await
    .ok()
    .and_then(|r| r["result"]["value"].as_u64());
    let copied = if size.is_some_and(|n| n > left) {
        Err(budget.over())
    } else {
        let limit = Limit { bytes: left.min(MAX_FILE), over: budget.over() };
        let blob = call(conn, "IO.resolveBlob", json!({"objectId": file}), s).await;
        match blob.and_then(|b| Ok(format!("blob:{}", b["uuid"].as_str().ok_or("no blob")?))) {
            Ok(handle) => {
                // The blob's stream belongs to the page's session.
                let copied = copy(conn, s, &handle, job, &name, &limit).await;
                let _ = call(conn, "IO.close", json!({"handle": handle}), s).await;
                copied
            }
            Err(e) => Err(e),
        }
    };
    for id in [input, file] {
        let _ = call(conn, "Runtime.releaseObject", json!({"objectId": id}), s).await;
    }
    if let Ok((_, n)) = &copied {
        budget.spend(*n);
    }
    copied
}

/// The most one copy may write, and what to say past it.
struct Limit {
    bytes: u64,
    over: String,
}

async fn copy(
    conn: &Conn,
    session: Option<&str>,
    handle: &str,
    job: &FetchJob,
    name: &str,
    limit: &Limit,
) -> Result<(PathBuf, u64), String> {
    use base64::Engine as _;
    let mut part = Part::create(job, name)?;
    loop {
        let r = call(conn, "IO.read", json!({"handle": handle, "size": CHUNK}), session).await?;
        let data = r["data"].as_str().unwrap_or_default();
        let bytes = if r["base64Encoded"].as_bool().unwrap_or(false) {
            base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("not base64: {e}"))?
        } else {
            data.as_bytes().to_vec()
        };
        part.push(&bytes, limit)?;
        if r["eof"].as_bool().unwrap_or(true) {
            return part.place(&job.dir, name);
        }
    }
}

/// A copy being written: `.<name>.<pid>.<record>.part` in the job's directory, a new file
/// private to the user (never an existing file, never through a symlink); removed unless
/// it is placed under the download's name.
struct Part {
    path: PathBuf,
    file: std::fs::File,
    written: u64,
    placed: bool,
}

impl Part {
    fn create(job: &FetchJob, name: &str) -> Result<Self, String> {
        crate::platform::create_private_dir_all(&job.dir).map_err(|e| format!("{}: {e}", job.dir.display()))?;
        let path = job.dir.join(format!(".{name}.{}.{}.part", std::process::id(), job.record));
        let file = crate::platform::create_private_new(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { path, file, written: 0, placed: false })
    }

    fn push(&mut self, bytes: &[u8], limit: &Limit) -> Result<(), String> {
        self.written += bytes.len() as u64;
        if self.written > limit.bytes {
            return Err(if limit.bytes < MAX_FILE { limit.over.clone() } else { format!("over {} GB", MAX_FILE >> 30) });
        }
        self.file.write_all(bytes).map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Under the download's name in `dir`, or the first of `names_for` nothing has there
    /// (never written over); where, and how many bytes.
    fn place(mut self, dir: &Path, name: &str) -> Result<(PathBuf, u64), String> {
        self.file.sync_all().map_err(|e| e.to_string())?;
        for n in names_for(std::ffi::OsStr::new(name)) {
            let to = dir.join(n);
            match crate::platform::rename_no_replace(&self.path, &to) {
                Ok(()) => {
                    self.placed = true;
                    return Ok((to, self.written));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", to.display())),
            }
        }
        Err("no free name".into())
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_name_of_the_browsers_path_is_used() {
        assert_eq!(last_name("/home/u/Downloads/report.pdf"), Some("report.pdf"));
        assert_eq!(last_name("C:\\Users\\u\\Downloads\\a b.txt"), Some("a b.txt"));
        assert_eq!(last_name("/x/.."), None);
        assert_eq!(last_name("/x/"), None);
    }
}
