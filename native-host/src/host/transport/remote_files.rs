//! Files a remote browser downloaded, copied to this machine over the bridge's own CDP
//! connection. No CDP command reads a file by path, but a file input can be given one
//! (`DOM.setFileInputFiles`), its `File` is a blob (`IO.resolveBlob`), and a blob can be
//! read (`IO.read`, in chunks). The input lives in a blank page of a browser context the
//! bridge makes for itself, disposed with its connection: the extension, the pages and the
//! agent's driver never see it.

use super::super::kinds::free_name;
use super::super::protocol::FetchJob;
use crate::cdp::Conn;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

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

/// Copies `job`'s file into its directory here; where it went and how many bytes.
pub async fn fetch(conn: &Conn, helper: &mut Helper, job: &FetchJob) -> Result<(PathBuf, u64), String> {
    let name = last_name(&job.remote).ok_or("the browser's path has no file name")?.to_owned();
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
    let blob = call(conn, "IO.resolveBlob", json!({"objectId": file}), s).await?;
    let handle = format!("blob:{}", blob["uuid"].as_str().ok_or("no blob")?);
    // The blob's stream belongs to the page's session.
    let copied = copy(conn, s, &handle, job, &name).await;
    let _ = call(conn, "IO.close", json!({"handle": handle}), s).await;
    for id in [input, file] {
        let _ = call(conn, "Runtime.releaseObject", json!({"objectId": id}), s).await;
    }
    copied
}

async fn copy(
    conn: &Conn,
    session: Option<&str>,
    handle: &str,
    job: &FetchJob,
    name: &str,
) -> Result<(PathBuf, u64), String> {
    use base64::Engine as _;
    std::fs::create_dir_all(&job.dir).map_err(|e| format!("{}: {e}", job.dir.display()))?;
    let part = job.dir.join(format!(".{name}.{}.part", job.record));
    let mut out = std::fs::File::create(&part).map_err(|e| format!("{}: {e}", part.display()))?;
    let mut written = 0u64;
    let result = async {
        loop {
            let r = call(conn, "IO.read", json!({"handle": handle, "size": CHUNK}), session).await?;
            let data = r["data"].as_str().unwrap_or_default();
            let bytes = if r["base64Encoded"].as_bool().unwrap_or(false) {
                base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("not base64: {e}"))?
            } else {
                data.as_bytes().to_vec()
            };
            written += bytes.len() as u64;
            if written > MAX_FILE {
                return Err(format!("over {} GB", MAX_FILE >> 30));
            }
            out.write_all(&bytes).map_err(|e| format!("{}: {e}", part.display()))?;
            if r["eof"].as_bool().unwrap_or(true) {
                return Ok(());
            }
        }
    }
    .await;
    let placed = result.and_then(|()| {
        out.sync_all().map_err(|e| e.to_string())?;
        let to = free_name(&job.dir, std::ffi::OsStr::new(name)).ok_or("no free name")?;
        std::fs::rename(&part, &to).map_err(|e| format!("{}: {e}", to.display()))?;
        Ok((to, written))
    });
    if placed.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    placed
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
