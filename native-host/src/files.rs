//! Which files an agent may have Unmodal write (a printed page's PDF) or hand a page (a file
//! chooser's pick): only inside the MCP client's roots (`roots/list`), the directories the
//! person configured (`files.allowed_dirs` in config.json), or (to write) Unmodal's own data
//! directory. A path outside them, through a symlink out, onto something that is not a
//! regular file, or into a directory that does not exist is refused with an error that
//! names the allowed directories. A file handed to a page must also be readable and at most
//! `MAX_UPLOAD` bytes; a directory (for a folder input) only holds such files.

use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
pub struct Allowed {
    /// Canonical directories (those that exist).
    dirs: Vec<PathBuf>,
}

impl Allowed {
    pub fn new(dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut out: Vec<PathBuf> = Vec::new();
        for d in dirs {
            if let Ok(c) = d.canonicalize()
                && c.is_dir()
                && !out.contains(&c)
            {
                out.push(c);
            }
        }
        Self { dirs: out }
    }

    /// The client's roots, the configured directories and the kinds' own directories in the
    /// data directory.
    pub fn gather(roots: Vec<PathBuf>) -> Self {
        let configured = crate::redact::Config::load().map(|c| c.files.allowed_dirs).unwrap_or_default();
        // The kinds' own directories in Unmodal's data directory (a print's PDF files).
        let own: Vec<PathBuf> = crate::paths::data_dir()
            .map(|d| crate::host::kinds::args::own_dirs().map(|o| d.join(o)).collect())
            .unwrap_or_default();
        for p in &own {
            let _ = crate::paths::ensure_private_dir(p.parent().unwrap_or(p)).and_then(|()| std::fs::create_dir_all(p));
        }
        Self::new(roots.into_iter().chain(configured).chain(own))
    }

    /// Why `what` may not happen at a path, naming where it may.
    fn refuse<T>(&self, why: &str, what: &str) -> Result<T, String> {
        Err(format!(
            "{why}. {what} only inside the MCP client's roots, the directories in files.allowed_dirs of Unmodal's \
config.json, or Unmodal's prints directory; allowed now: {}.",
            self.names()
        ))
    }

    pub fn names(&self) -> String {
        if self.dirs.is_empty() {
            return "none".into();
        }
        self.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    }

    /// The file to write for `asked`: an absolute path whose directory (symlinks resolved)
    /// is inside an allowed one; an existing file there must be a regular file, not a link.
    pub fn output(&self, asked: &str) -> Result<PathBuf, String> {
        let refuse = |why: &str| self.refuse(why, "Files are written");
        let path = Path::new(asked);
        if !path.is_absolute() {
            return refuse(&format!("{asked:?} is not an absolute path"));
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return refuse(&format!("{asked:?} names no file"));
        };
        let Ok(dir) = parent.canonicalize() else {
            return refuse(&format!("the directory of {asked:?} does not exist"));
        };
        if !self.dirs.iter().any(|a| dir.starts_with(a)) {
            return refuse(&format!("{asked:?} is outside the allowed directories"));
        }
        let file = dir.join(name);
        match std::fs::symlink_metadata(&file) {
            Ok(m) if !m.file_type().is_file() => refuse(&format!("{asked:?} exists and is not a regular file")),
            _ => Ok(file),
        }
    }
}

/// The largest file handed to a page, and the most a directory handed to a folder input may
/// hold (files, bytes).
pub const MAX_UPLOAD: u64 = 100 * 1024 * 1024;
const MAX_DIR_FILES: usize = 1000;

/// A file (or directory) a page may get, as checked: its canonical path, size in bytes and
/// how many files it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    pub path: PathBuf,
    pub size: u64,
    pub files: usize,
}

impl Allowed {
    /// The file or directory to hand a page for `asked`: inside an allowed directory once
    /// every symlink is resolved, readable, and a regular file of at most `MAX_UPLOAD` bytes
    /// or a directory holding only such files (no symlinks, at most 1000 files in all).
    pub fn input(&self, asked: &str) -> Result<Upload, String> {
        let refuse = |why: String| self.refuse(&why, "A page gets files");
        let path = Path::new(asked);
        if !path.is_absolute() {
            return refuse(format!("{asked:?} is not an absolute path"));
        }
        let Ok(real) = path.canonicalize() else {
            return refuse(format!("{asked:?} does not exist"));
        };
        if !self.dirs.iter().any(|a| real.starts_with(a)) {
            let through =
                if real.as_path() != path { format!(" (it leads to {})", real.display()) } else { String::new() };
            return refuse(format!("{asked:?} is outside the allowed directories{through}"));
        }
        match walk(&real) {
            Ok((size, files)) => Ok(Upload { path: real, size, files }),
            Err(why) => refuse(format!("{asked:?}: {why}")),
        }
    }
}

impl Allowed {
    /// The directory for `asked` to save downloads into: an existing directory inside an
    /// allowed one once every symlink is resolved.
    pub fn directory(&self, asked: &str) -> Result<PathBuf, String> {
        let refuse = |why: String| self.refuse(&why, "Downloads are saved");
        let path = Path::new(asked);
        if !path.is_absolute() {
            return refuse(format!("{asked:?} is not an absolute path"));
        }
        match path.canonicalize() {
            Ok(real) if !real.is_dir() => refuse(format!("{asked:?} is not a directory")),
            Ok(real) if self.dirs.iter().any(|a| real.starts_with(a)) => Ok(real),
            Ok(_) => refuse(format!("{asked:?} is outside the allowed directories")),
            Err(_) => refuse(format!("{asked:?} does not exist")),
        }
    }
}

/// Size and file count of what `path` (canonical) hands a page, or why it may not.
fn walk(path: &Path) -> Result<(u64, usize), String> {
    let files = files_in(path)?;
    Ok((files.iter().map(|(_, n)| n).sum(), files.len()))
}

/// The regular files `path` (canonical) hands a page, with their sizes (a file: itself;
/// a directory: every file under it), or why it may not: the limits every chooser's files
/// keep (also when they are copied to a remote browser, `host/transport/remote_uploads.rs`).
pub fn files_in(path: &Path) -> Result<Vec<(PathBuf, u64)>, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if meta.is_file() {
        if meta.len() > MAX_UPLOAD {
            return Err(format!("{} bytes is over the {} MB limit", meta.len(), MAX_UPLOAD >> 20));
        }
        std::fs::File::open(path).map_err(|e| format!("cannot be read ({e})"))?;
        return Ok(vec![(path.to_path_buf(), meta.len())]);
    }
    if !meta.is_dir() {
        return Err("not a regular file or a directory".into());
    }
    let (mut size, mut files) = (0u64, Vec::new());
    let mut todo = vec![path.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{} cannot be read ({e})", dir.display()))? {
            let entry = entry.map_err(|e| e.to_string())?;
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                todo.push(entry.path());
            } else if kind.is_file() {
                let inner = files_in(&entry.path())?;
                size += inner.iter().map(|(_, n)| n).sum::<u64>();
                files.extend(inner);
            } else {
                return Err(format!("{} is not a regular file (a symlink or special file)", entry.path().display()));
            }
            if files.len() > MAX_DIR_FILES || size > MAX_UPLOAD {
                return Err(format!("holds more than {MAX_DIR_FILES} files or {} MB", MAX_UPLOAD >> 20));
            }
        }
    }
    Ok(files)
}

/// The local directories among an MCP client's roots (`file://` URIs).
pub fn root_dirs<'a>(uris: impl IntoIterator<Item = &'a str>) -> Vec<PathBuf> {
    uris.into_iter()
        .filter_map(|u| u.strip_prefix("file://"))
        .filter_map(|p| percent_decode(p.strip_prefix("localhost").unwrap_or(p)))
        .map(|p| crate::platform::path_of_file_uri(&p))
        .collect()
}

fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_inside_allowed_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("in");
        let outside = tmp.path().join("out");
        std::fs::create_dir_all(inside.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let allowed = Allowed::new([inside.clone(), tmp.path().join("missing")]);
        let ok = allowed.output(inside.join("sub/a.pdf").to_str().unwrap()).unwrap();
        assert_eq!(ok, inside.canonicalize().unwrap().join("sub/a.pdf"));
        for bad in [
            outside.join("a.pdf"),
            inside.join("../out/a.pdf"),
            inside.join("sub"),
            inside.join("nope/a.pdf"),
            PathBuf::from("a.pdf"),
        ] {
            let err = allowed.output(bad.to_str().unwrap()).unwrap_err();
            assert!(err.contains(inside.canonicalize().unwrap().to_str().unwrap()), "{bad:?}: {err}");
        }
    }

    #[test]
    fn only_readable_files_inside_allowed_directories_go_to_a_page() {
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("in");
        let outside = tmp.path().join("out");
        std::fs::create_dir_all(inside.join("folder/sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(inside.join("cv.txt"), b"hello").unwrap();
        std::fs::write(inside.join("folder/a.txt"), b"abc").unwrap();
        std::fs::write(inside.join("folder/sub/b.txt"), b"de").unwrap();
        std::fs::write(outside.join("id_rsa"), b"secret").unwrap();
        let allowed = Allowed::new([inside.clone()]);
        let real = inside.canonicalize().unwrap();
        let up = allowed.input(inside.join("cv.txt").to_str().unwrap()).unwrap();
        assert_eq!(up, Upload { path: real.join("cv.txt"), size: 5, files: 1 });
        let dir = allowed.input(inside.join("folder").to_str().unwrap()).unwrap();
        assert_eq!((dir.size, dir.files), (5, 2));
        for bad in
            [outside.join("id_rsa"), inside.join("../out/id_rsa"), inside.join("missing.txt"), PathBuf::from("cv.txt")]
        {
            let err = allowed.input(bad.to_str().unwrap()).unwrap_err();
            assert!(err.contains(real.to_str().unwrap()), "{bad:?}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }

    #[test]
    fn downloads_go_only_into_existing_allowed_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("in");
        std::fs::create_dir_all(inside.join("dl")).unwrap();
        std::fs::write(inside.join("f"), b"").unwrap();
        let allowed = Allowed::new([inside.clone()]);
        assert_eq!(
            allowed.directory(inside.join("dl").to_str().unwrap()),
            Ok(inside.canonicalize().unwrap().join("dl"))
        );
        for bad in [inside.join("f"), inside.join("missing"), tmp.path().to_path_buf()] {
            assert!(allowed.directory(bad.to_str().unwrap()).is_err_and(|e| e.contains("allowed now")), "{bad:?}");
        }
    }

    #[test]
    fn roots_are_file_uris_decoded() {
        let dirs = root_dirs(["file:///home/a%20b/w", "https://x/y", "file://localhost/tmp"]);
        assert_eq!(dirs, [PathBuf::from("/home/a b/w"), PathBuf::from("/tmp")]);
    }

    // Unix only: making a symlink on Windows takes a privilege (Developer Mode or an
    // administrator's SeCreateSymbolicLinkPrivilege) a test cannot count on.
    #[cfg(unix)]
    #[test]
    fn symlinks_never_lead_out_of_allowed_directories() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("in");
        let outside = tmp.path().join("out");
        std::fs::create_dir_all(inside.join("bad")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("id_rsa"), b"secret").unwrap();
        symlink(&outside, inside.join("link")).unwrap();
        symlink(outside.join("x.pdf"), inside.join("trap.pdf")).unwrap();
        symlink(outside.join("id_rsa"), inside.join("key")).unwrap();
        symlink(outside.join("id_rsa"), inside.join("bad/key")).unwrap();
        symlink(tmp.path(), inside.join("up")).unwrap();
        let allowed = Allowed::new([inside.clone()]);
        let real = inside.canonicalize().unwrap();
        for bad in [inside.join("link/a.pdf"), inside.join("trap.pdf")] {
            let err = allowed.output(bad.to_str().unwrap()).unwrap_err();
            assert!(err.contains(real.to_str().unwrap()), "{bad:?}: {err}");
        }
        for bad in [inside.join("key"), inside.join("link/id_rsa"), inside.join("bad")] {
            let err = allowed.input(bad.to_str().unwrap()).unwrap_err();
            assert!(err.contains(real.to_str().unwrap()), "{bad:?}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        let err = allowed.directory(inside.join("up").to_str().unwrap()).unwrap_err();
        assert!(err.contains("allowed now"), "{err}");
    }

    // Unix only, as above (and the 0600 mode is Unix's).
    #[cfg(unix)]
    #[test]
    fn writing_never_follows_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, tmp.path().join("link")).unwrap();
        crate::paths::write_private(&tmp.path().join("link"), b"x").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep", "the link's target is untouched");
        assert!(std::fs::symlink_metadata(tmp.path().join("link")).unwrap().file_type().is_file(), "the link replaced");
        crate::paths::write_private(&tmp.path().join("new.pdf"), b"%PDF").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(tmp.path().join("new.pdf")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 3, "no temporary file left: {left:?}");
        // On 892be98 the temporary file was opened with truncate, not O_EXCL: a hard link
        // planted at its name had the other file written over.
        let pdf = tmp.path().join("p.pdf");
        std::fs::hard_link(&target, tmp.path().join(format!("p.pdf.{}.tmp", std::process::id()))).unwrap();
        crate::paths::write_private(&pdf, b"%PDF").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep", "the linked file is untouched");
        assert_eq!(std::fs::read(&pdf).unwrap(), b"%PDF");
    }
}
