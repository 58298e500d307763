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

    /// What one copy may write now, or why none is made: nothing left, or less than the
    /// browser `announced` (its word; the copy counts its own bytes).
    fn limit(&self, announced: Option<u64>) -> Result<Limit, String> {
        let left = self.left();
        if left == 0 || announced.is_some_and(|n| n > left) {
            return Err(self.over());
        }
        Ok(Limit { bytes: left.min(MAX_FILE), over: self.over() })
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
pub async fn fetch(
    conn: &Conn,
    helper: &mut Helper,
    job: &FetchJob,
    budget: &Budget,
) -> Result<(PathBuf, u64), String> {
    let name = job.name.as_deref().and_then(last_name).or_else(|| last_name(&job.remote));
    let name = name.ok_or("the browser's path has no file name")?.to_owned();
    budget.limit(None)?;
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
    let copied = match budget.limit(size) {
        Err(e) => Err(e),
        Ok(limit) => {
            let blob = call(conn, "IO.resolveBlob", json!({"objectId": file}), s).await;
            match blob.and_then(|b| Ok(format!("blob:{}", b["uuid"].as_str().ok_or("no blob")?))) {
                Ok(handle) => {
                    // The blob's stream belongs to the page's session.
                    let read = || read_chunk(conn, s, &handle);
                    let copied = copy(read, job, &name, &limit).await;
                    let _ = call(conn, "IO.close", json!({"handle": handle}), s).await;
                    copied
                }
                Err(e) => Err(e),
            }
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

/// The blob's next chunk (`IO.read`), and whether it was the last.
async fn read_chunk(conn: &Conn, session: Option<&str>, handle: &str) -> Result<(Vec<u8>, bool), String> {
    use base64::Engine as _;
    let r = call(conn, "IO.read", json!({"handle": handle, "size": CHUNK}), session).await?;
    let data = r["data"].as_str().unwrap_or_default();
    let bytes = if r["base64Encoded"].as_bool().unwrap_or(false) {
        base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("not base64: {e}"))?
    } else {
        data.as_bytes().to_vec()
    };
    Ok((bytes, r["eof"].as_bool().unwrap_or(true)))
}

/// Writes what `read` gives, chunk by chunk, into a new private file and names it as the
/// download (within `limit`).
async fn copy<F, Fut>(mut read: F, job: &FetchJob, name: &str, limit: &Limit) -> Result<(PathBuf, u64), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<u8>, bool), String>>,
{
    let mut part = Part::create(job, name)?;
    loop {
        let (bytes, eof) = read().await?;
        part.push(&bytes, limit)?;
        if eof {
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
            return Err(if limit.bytes < MAX_FILE {
                limit.over.clone()
            } else {
                format!("over {} GB", MAX_FILE >> 30)
            });
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

    fn job(dir: &Path, record: u64) -> FetchJob {
        FetchJob {
            kind: crate::host::kinds::download::KIND,
            record,
            remote: "/remote/Downloads/r.csv".into(),
            name: None,
            dir: dir.to_path_buf(),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    /// `chunks` as the browser's blob gives them, the last one with `eof`.
    fn reads(chunks: &[&'static [u8]]) -> impl FnMut() -> std::future::Ready<Result<(Vec<u8>, bool), String>> {
        let mut left: std::collections::VecDeque<_> = chunks.iter().copied().collect();
        move || {
            let chunk = left.pop_front().unwrap_or_default();
            std::future::ready(Ok((chunk.to_vec(), left.is_empty())))
        }
    }

    // On 892be98 nothing capped what a session copied (only 4 GB per file): a page that
    // downloads in a loop filled the agent's disk.
    #[tokio::test]
    async fn copies_stop_at_the_sessions_cap_and_leave_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let budget = Budget::new(10);
        let limit = budget.limit(Some(6)).unwrap();
        let (to, n) = copy(reads(&[b"abc", b"def"]), &job(tmp.path(), 1), "r.csv", &limit).await.unwrap();
        budget.spend(n);
        assert_eq!((std::fs::read(&to).unwrap(), n), (b"abcdef".to_vec(), 6));
        // 4 bytes left: a file the browser says is bigger is not asked for; one it says
        // nothing of stops at the cap, and nothing of it stays here.
        assert!(budget.limit(Some(5)).is_err_and(|e| e.contains("--max-remote-downloads-mb")));
        let limit = budget.limit(None).unwrap();
        let err = copy(reads(&[b"abc", b"def"]), &job(tmp.path(), 2), "r.csv", &limit).await.unwrap_err();
        assert!(err.contains("cap of") && err.contains("stays on the browser's machine"), "{err}");
        assert_eq!(names(tmp.path()), ["r.csv"], "no part file, no second copy");
        budget.spend(4);
        assert!(budget.limit(None).is_err(), "spent: nothing more is copied");
    }

    // On 892be98 the part file was File::create: a symlink at its name was followed and a
    // file there truncated and written over, with the umask's mode (0644 here).
    #[cfg(unix)]
    #[tokio::test]
    async fn a_copy_is_a_new_private_file_and_takes_no_name_already_there() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, b"keep me").unwrap();
        let part = |record: u64| tmp.path().join(format!(".r.csv.{}.{record}.part", std::process::id()));
        std::os::unix::fs::symlink(&target, part(1)).unwrap();
        std::fs::write(part(2), b"someone's").unwrap();
        let limit = Budget::new(1 << 20).limit(None).unwrap();
        for record in [1, 2] {
            let err = copy(reads(&[b"abc"]), &job(tmp.path(), record), "r.csv", &limit).await.unwrap_err();
            assert!(err.contains(".part"), "{err}");
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me", "the symlink was not followed");
        assert_eq!(std::fs::read(part(2)).unwrap(), b"someone's", "the file there was not written over");
        // The copy's own name: a symlink there is not followed nor replaced.
        std::os::unix::fs::symlink(&target, tmp.path().join("r.csv")).unwrap();
        let (to, _) = copy(reads(&[b"abc"]), &job(tmp.path(), 3), "r.csv", &limit).await.unwrap();
        assert_eq!(to, tmp.path().join("r (1).csv"));
        assert_eq!(std::fs::metadata(&to).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    }

    #[test]
    fn only_the_last_name_of_the_browsers_path_is_used() {
        assert_eq!(last_name("/home/u/Downloads/report.pdf"), Some("report.pdf"));
        assert_eq!(last_name("C:\\Users\\u\\Downloads\\a b.txt"), Some("a b.txt"));
        assert_eq!(last_name("/x/.."), None);
        assert_eq!(last_name("/x/"), None);
    }
}
