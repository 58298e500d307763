//! The carried extension for browsers Unmodal does not start (hosted fleets, self-hosted
//! pools): an upload-ready zip (`unmodal extension --zip FILE`) or a plain directory
//! (`--dir DIR`), with `manifest.json` at the root and without the manifest's `key`, which
//! browser-use Cloud refuses. Without `key` the browser names the extension by where it was
//! loaded, so the native host registered by `unmodal install` (which names the keyed ID)
//! does not serve this copy: it is for browsers that have no native host anyway, and
//! `unmodal mcp --cdp-endpoint` is told that ID (`--extension-id`). `--keep-key` keeps the
//! manifest as built: the ID is then Unmodal's fixed one, the bridge's default.
//!
//! The zip is the same bytes for the same build: files in path order, one fixed timestamp
//! and mode, no extra fields.

use crate::extension;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::borrow::Cow;
use std::fs;
use std::io::{Cursor, Write as _};
use std::path::Path;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

const NOT_CARRIED: &str = "this unmodal binary carries no extension (a plain `cargo build`): build it with \
`cargo xtask build`, whose target/release/unmodal carries it";

/// What was written.
#[derive(Debug, PartialEq, Eq)]
pub struct Written {
    pub files: usize,
    pub bytes: u64,
}

/// Writes the carried extension's zip to `path`, whole (written beside it, then renamed);
/// the manifest's `key` kept or not.
pub fn write_zip(path: &Path, keep_key: bool) -> Result<Written> {
    let files = carried(keep_key)?;
    let bytes = zip_bytes(&files)?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
        std::process::id()
    ));
    fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("moving the zip to {}", path.display()));
    }
    Ok(Written { files: files.len(), bytes: bytes.len() as u64 })
}

/// Writes the carried extension, unpacked, into `dir`, which must be new or empty: files
/// of some other build left beside these would be loaded with them.
pub fn write_dir(dir: &Path, keep_key: bool) -> Result<Written> {
    let files = carried(keep_key)?;
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!("{} is not empty: name a new or empty directory", dir.display());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    }
    let mut bytes = 0;
    for (rel, contents) in &files {
        let file = dir.join(rel);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::write(&file, contents).with_context(|| format!("writing {}", file.display()))?;
        bytes += contents.len() as u64;
    }
    Ok(Written { files: files.len(), bytes })
}

fn carried(keep_key: bool) -> Result<Vec<(String, Cow<'static, [u8]>)>> {
    if !extension::carried() {
        bail!("{NOT_CARRIED}");
    }
    upload_files(extension::files(), keep_key)
}

/// The extension's files as uploaded, in path order (with `/` between folders, as zip
/// wants): the manifest without `key` unless `keep_key`, everything else as built.
pub fn upload_files<'a>(files: &[(&str, &'a [u8])], keep_key: bool) -> Result<Vec<(String, Cow<'a, [u8]>)>> {
    let mut out = Vec::with_capacity(files.len());
    let mut manifest = false;
    for (rel, bytes) in files {
        let name = rel.replace('\\', "/");
        let contents = if name == "manifest.json" {
            manifest = true;
            if keep_key {
                serde_json::from_slice::<Value>(bytes).context("manifest.json is not JSON")?;
                out.push((name, Cow::Borrowed(*bytes)));
                continue;
            }
            let text = std::str::from_utf8(bytes).context("manifest.json is not UTF-8")?;
            Cow::Owned(without_key(text)?.into_bytes())
        } else {
            Cow::Borrowed(*bytes)
        };
        out.push((name, contents));
    }
    if !manifest {
        bail!("the carried extension has no manifest.json at its root");
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The zip of `files`, deflated, the same bytes for the same files.
pub fn zip_bytes(files: &[(String, Cow<'_, [u8]>)]) -> Result<Vec<u8>> {
    let options = SimpleFileOptions::DEFAULT
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::DEFAULT)
        .system(System::Unix)
        .unix_permissions(0o644);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, contents) in files {
        zip.start_file(name.as_str(), options).with_context(|| format!("zipping {name}"))?;
        zip.write_all(contents).with_context(|| format!("zipping {name}"))?;
    }
    Ok(zip.finish().context("finishing the zip")?.into_inner())
}

/// `text` (a manifest) without its top-level `key` member, the rest as written: the
/// member's text is cut out, and the result is checked against the parsed manifest minus
/// `key` (pretty-printed from that instead, should the cut ever differ).
pub fn without_key(text: &str) -> Result<String> {
    let Value::Object(mut expected) = serde_json::from_str(text).context("manifest.json is not JSON")? else {
        bail!("manifest.json is not a JSON object");
    };
    if expected.remove("key").is_none() {
        return Ok(text.to_owned());
    }
    // Every `key` member: with duplicates, the parse keeps the last one.
    let mut cut = text.to_owned();
    while let Some(shorter) = cut_member(&cut, "key") {
        cut = shorter;
    }
    if serde_json::from_str::<Value>(&cut).ok().as_ref().and_then(Value::as_object) == Some(&expected) {
        return Ok(cut);
    }
    Ok(serde_json::to_string_pretty(&Value::Object(expected))? + "\n")
}

/// Cuts the first top-level member named `name` out of a JSON object's text, with the comma
/// that joined it to the others. `None` if there is none, or the text is not as expected.
fn cut_member(text: &str, name: &str) -> Option<String> {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    // Where the current top-level member's text starts (after `{` or its comma), whether
    // the next string is a member's name, and the start of the member being cut.
    let (mut sep, mut expect_name, mut cutting) = (0usize, false, None::<usize>);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && expect_name {
                    expect_name = false;
                    if cutting.is_none() && serde_json::from_str::<String>(text.get(start..=i)?).ok()? == name {
                        cutting = Some(sep);
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 {
                    (sep, expect_name) = (i + 1, true);
                }
            }
            b'}' | b']' => {
                if depth == 1
                    && let Some(from) = cutting
                {
                    // The last member: its comma is the one before it, if any; the space
                    // before the `}` stays.
                    let from = if b[from - 1] == b',' { from - 1 } else { from };
                    let end = text[..i].trim_end().len();
                    return Some(format!("{}{}", &text[..from], &text[end..]));
                }
                depth = depth.checked_sub(1)?;
            }
            b',' if depth == 1 => {
                if let Some(from) = cutting {
                    return Some(format!("{}{}", &text[..from], &text[i + 1..]));
                }
                (sep, expect_name) = (i + 1, true);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    const MANIFEST: &str = "{\n  \"manifest_version\": 3,\n  \"name\": \"Unmodal\",\n  \"key\": \"MIIB+/=\",\n  \
\"nested\": {\"key\": \"stays\"},\n  \"list\": [\"key\", {\"key\": 1}]\n}\n";

    fn fixture() -> Vec<(&'static str, &'static [u8])> {
        vec![
            ("background.js", b"// worker\n".as_slice()),
            ("manifest.json", MANIFEST.as_bytes()),
            ("inject.js", b"// hook\n".as_slice()),
            ("icons\\a.png", b"\x89PNG".as_slice()),
        ]
    }

    fn unzip(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        (0..zip.len())
            .map(|i| {
                let mut f = zip.by_index(i).unwrap();
                let mut out = Vec::new();
                f.read_to_end(&mut out).unwrap();
                (f.name().unwrap().into_owned(), out)
            })
            .collect()
    }

    fn parsed(bytes: &[u8]) -> serde_json::Map<String, Value> {
        serde_json::from_slice::<Value>(bytes).unwrap().as_object().unwrap().clone()
    }

    /// The zip of `files` holds each of them (the manifest at the root, without `key`, the
    /// rest byte for byte), and is the same bytes when made again.
    fn check_zip(files: &[(&str, &[u8])]) -> Vec<u8> {
        let bytes = zip_bytes(&upload_files(files, false).unwrap()).unwrap();
        assert_eq!(bytes, zip_bytes(&upload_files(files, false).unwrap()).unwrap(), "stable bytes");
        let unzipped = unzip(&bytes);
        assert_eq!(unzipped.len(), files.len());
        for (rel, original) in files {
            let name = rel.replace('\\', "/");
            let (_, got) = unzipped.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name} missing"));
            if name == "manifest.json" {
                let mut want = parsed(original);
                assert!(want.remove("key").is_some(), "the fixture has a key");
                assert_eq!(parsed(got), want, "the manifest less its key");
            } else {
                assert_eq!(got, original, "{name}");
            }
        }
        bytes
    }

    #[test]
    fn the_zip_holds_every_file_and_the_manifest_without_key_at_its_root() {
        let bytes = check_zip(&fixture());
        let names: Vec<String> = unzip(&bytes).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["background.js", "icons/a.png", "inject.js", "manifest.json"], "path order, `/`");
        let manifest = &unzip(&bytes)[3].1;
        assert_eq!(
            std::str::from_utf8(manifest).unwrap(),
            "{\n  \"manifest_version\": 3,\n  \"name\": \"Unmodal\",\n  \
\"nested\": {\"key\": \"stays\"},\n  \"list\": [\"key\", {\"key\": 1}]\n}\n",
            "only the top-level key is cut, the rest as written"
        );
    }

    #[test]
    fn keep_key_keeps_the_manifest_as_built() {
        let files = upload_files(&fixture(), true).unwrap();
        let manifest = files.iter().find(|(n, _)| n == "manifest.json").unwrap();
        assert_eq!(&*manifest.1, MANIFEST.as_bytes(), "the key with it, byte for byte");
        assert_eq!(files.len(), fixture().len());
        assert!(upload_files(&[("manifest.json", b"{".as_slice())], true).is_err(), "not JSON");
    }

    #[test]
    fn the_carried_extension_zips_whole_and_the_same_each_time() {
        if !extension::carried() {
            let dir = tempfile::tempdir().unwrap();
            let err = write_zip(&dir.path().join("x.zip"), false).unwrap_err().to_string();
            assert!(err.contains("cargo xtask build"), "{err}");
            assert!(write_dir(&dir.path().join("d"), true).unwrap_err().to_string().contains("cargo xtask build"));
            assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
            return;
        }
        let bytes = check_zip(extension::files());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("unmodal.zip");
        let w = write_zip(&file, false).unwrap();
        assert_eq!((w.files, w.bytes), (extension::files().len(), bytes.len() as u64));
        assert_eq!(fs::read(&file).unwrap(), bytes, "the file is the same bytes");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        // The directory holds the same files; a non-empty one is refused.
        let unpacked = dir.path().join("ext");
        write_dir(&unpacked, false).unwrap();
        for (name, contents) in unzip(&bytes) {
            assert_eq!(fs::read(unpacked.join(&name)).unwrap(), contents, "{name}");
        }
        assert!(write_dir(&unpacked, false).unwrap_err().to_string().contains("not empty"));
        // With `key` kept: every file as built, the manifest too, so the ID is the fixed one.
        let keyed = unzip(&{
            write_zip(&file, true).unwrap();
            fs::read(&file).unwrap()
        });
        assert_eq!(keyed.len(), extension::files().len());
        for (rel, original) in extension::files() {
            let name = rel.replace('\\', "/");
            let (_, got) = keyed.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(got, original, "{name} as built");
        }
        assert!(parsed(&keyed.iter().find(|(n, _)| n == "manifest.json").unwrap().1).contains_key("key"));
    }

    #[test]
    fn the_key_is_cut_wherever_it_stands() {
        for (text, want) in [
            ("{\"key\": \"k\", \"a\": 1}", "{ \"a\": 1}"),
            ("{\"a\": 1, \"key\": \"k\"}", "{\"a\": 1}"),
            ("{\"a\": 1,\n  \"key\": \"k\"\n}", "{\"a\": 1\n}"),
            ("{ \"key\" : \"k\\\"}\" }", "{ }"),
            ("{\"a\": \"key\", \"k\\u0065y\": [1, {\"key\": 2}], \"b\": 2}", "{\"a\": \"key\", \"b\": 2}"),
            ("{\"a\": 1}", "{\"a\": 1}"),
        ] {
            assert_eq!(without_key(text).unwrap(), want, "{text}");
        }
        assert_eq!(without_key("{\"key\": 1, \"a\": 2, \"key\": 3}").unwrap(), "{ \"a\": 2}", "every key");
        assert!(without_key("[1]").is_err() && without_key("{").is_err());
    }
}
