//! Which product files name each kind of browser prompt: the figure that says whether a
//! kind lives in its own files (issues 37, 51). Every file of `src/` counts, up to its test
//! module (the first `#[cfg(test)]`), comments left out. A file names a kind when an
//! identifier or a string literal holds the kind's words in a row, in any case
//! (`PrintAsk`, `print_jobs`, `on_download_done`, `passkeys`, `"device_chooser"`, "a
//! permission request"). `cargo test -p unmodal kind_names -- --nocapture` prints the table.

use crate::kind::Kind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a kind may be named: its own file or folder (or the file its family shares:
/// payment, sign-in, storage access and the eye dropper) and its line in the registry
/// (`host/kinds/mod.rs`).
const MOST_FILES: usize = 2;

/// The kinds still named beyond those two, each at most this often, and why. Lower a
/// figure when a file stops naming the kind; never raise one.
const STILL_MORE: [(&str, usize, &str); 2] = [
    (
        "download",
        3,
        "permission.rs: the automatic-downloads permission (the browser's \"Download multiple files\" prompt) is a \
permission whose grant lets a page's downloads through",
    ),
    (
        "permission",
        3,
        "download.rs: a download batch spends the automatic-downloads permission rule that let it through",
    ),
];

/// Files that use a kind's word in another sense, one by one (a new one fails the test
/// until it is listed here with why, or moved into the kind's files).
const ELSEWHERE: [(&str, &str, &str); 11] = [
    ("auth", "cdp/endpoint.rs", "a URL's authority, TLS client auth"),
    ("download", "cli.rs", "--max-remote-downloads-mb, the budget of copies from a remote browser"),
    ("download", "doctor.rs", "the report on the profile's \"Ask where to save\" setting"),
    ("download", "parent_browser.rs", "the browser profile's own download preferences"),
    ("permission", "extension_zip.rs", "a zip entry's unix file permissions"),
    ("permission", "platform/unix.rs", "file permissions"),
    ("print", "browser/mod.rs", "printing to the terminal"),
    ("print", "browser/say.rs", "printing to the terminal"),
    ("print", "doctor.rs", "printing the report"),
    ("download", "host/kinds/permission.rs", "see STILL_MORE"),
    ("permission", "host/kinds/download/", "see STILL_MORE"),
];

/// Every browser prompt's kind, by its wire name (page dialogs are the engine's).
fn kinds() -> Vec<String> {
    let schema = serde_json::to_value(schemars::schema_for!(Kind)).expect("a schema");
    let mut names = Vec::new();
    let mut collect = |v: &serde_json::Value| {
        for name in v.as_array().into_iter().flatten().filter_map(|n| n.as_str()) {
            let kind: Kind = serde_json::from_value(name.into()).expect("a kind's own name");
            if kind.dialog().is_none() {
                names.push(name.to_owned());
            }
        }
    };
    collect(&schema["enum"]);
    for one in schema["oneOf"].as_array().into_iter().flatten() {
        collect(&one["enum"]);
        collect(&serde_json::json!([one["const"]]));
    }
    names.sort();
    names.dedup();
    names
}

/// `text` without comments and what is compiled for tests only (each `#[cfg(test)]` item:
/// the test module, and a test-only item before it), its string literals reduced to the
/// words they quote (`literal_words`).
fn code(text: &str) -> String {
    without_tests(&without_literals(text))
}

/// Each `#[cfg(test)]` item left out: up to its `;`, or its braces' end.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = match (rest.find(';'), rest.find('{')) {
            (Some(semi), Some(open)) if semi < open => semi + 1,
            (_, Some(open)) => {
                let mut depth = 0;
                let close = rest[open..].char_indices().find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                });
                close.map_or(rest.len(), |(i, _)| open + i + 1)
            }
            (Some(semi), None) => semi + 1,
            (None, None) => rest.len(),
        };
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `text` with comments gone and each string literal empty.
fn without_literals(text: &str) -> String {
    let (mut out, mut chars) = (String::new(), text.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            // A raw string: r"…", r#"…"#.
            'r' if matches!(chars.peek(), Some('"' | '#'))
                && !out.ends_with(|p: char| p.is_alphanumeric() || p == '_') =>
            {
                let mut hashes = 0;
                while chars.peek() == Some(&'#') {
                    chars.next();
                    hashes += 1;
                }
                if chars.next() != Some('"') {
                    continue;
                }
                let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let mut seen = String::new();
                for c in chars.by_ref() {
                    seen.push(c);
                    if seen.ends_with(&close) {
                        break;
                    }
                }
                out.push_str(&literal_words(seen.strip_suffix(&close).unwrap_or(&seen)));
            }
            '"' => {
                let mut seen = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            // An escape: `\"` is a quote inside, not the end; `\n` a space.
                            match chars.next() {
                                Some('"') => seen.push('"'),
                                _ => seen.push(' '),
                            }
                        }
                        '"' => break,
                        c => seen.push(c),
                    }
                }
                out.push_str(&literal_words(&seen));
            }
            // A char literal ('"'), not a lifetime ('a).
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') || rest.chars().nth(1) == Some('\'') {
                    for c in chars.by_ref() {
                        if c == '\'' && !out.ends_with('\\') {
                            break;
                        }
                        out.push(' ');
                    }
                } else {
                    out.push(c);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// What of a string literal names something as code would: the literal itself if it is one
/// word (`"device_chooser"`), and each word quoted inside it (`dialog_type \"print\"`,
/// `` `print` ``), each as a quoted identifier (`"device_chooser"`); prose ("prints the page")
/// is left out.
fn literal_words(text: &str) -> String {
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::from(" ");
    if word(text) {
        out += &format!("\"{text}\" ");
    }
    for quote in ['"', '`', '\''] {
        for (i, part) in text.split(quote).enumerate() {
            if i % 2 == 1 && word(part) {
                out += &format!("\"{part}\" ");
            }
        }
    }
    out
}

/// An identifier's words, lower case: `PrintAsk` → print, ask; `on_download_done` → on,
/// download, done.
fn words(ident: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in ident.split('_').filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let mut prev_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && prev_lower {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        words.push(word);
    }
    words
}

/// Whether `ident` names the kind whose words are `kind` (its last word may be plural); a
/// quoted one (`"print"`, from a string literal) only as the wire name itself.
fn names(ident: &str, kind: &[&str]) -> bool {
    if let Some(quoted) = ident.strip_prefix('"') {
        return quoted.trim_end_matches('"') == kind.join("_");
    }
    let w = words(ident);
    w.windows(kind.len()).any(|win| {
        win.iter().zip(kind).enumerate().all(|(i, (a, b))| a == b || (i + 1 == kind.len() && *a == format!("{b}s")))
    })
}

/// The product files below `dir`: its `.rs` files but those a parent declares for tests
/// only (`#[cfg(test)] mod forged;`).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut test_only = Vec::new();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            for pair in lines.windows(2) {
                if pair[0].starts_with("#[cfg(")
                    && pair[0].contains("test")
                    && let Some(m) = pair[1].strip_prefix("mod ").and_then(|m| m.strip_suffix(';'))
                {
                    let base = if path.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs") {
                        dir.to_path_buf()
                    } else {
                        dir.join(path.file_stem().unwrap_or_default())
                    };
                    test_only.push(base.join(format!("{m}.rs")));
                    test_only.push(base.join(m).join("mod.rs"));
                }
            }
            found.push(path);
        }
    }
    out.extend(found);
    out.retain(|p| !test_only.contains(p));
}

/// What a file counts as: itself, or the folder of the kind it is in (`host/kinds/passkey/`).
fn unit(rel: &Path) -> String {
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    match &parts[..] {
        [host, kinds, kind, _, ..] if host == "host" && kinds == "kinds" => format!("host/kinds/{kind}/"),
        _ => parts.join("/"),
    }
}

/// For each kind, the files (relative to `src/`) whose code names it.
pub fn table() -> BTreeMap<String, Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<PathBuf> = Vec::new();
    sources(&src, &mut files);
    let idents: Vec<(String, Vec<String>)> = files
        .iter()
        .filter(|p| !p.ends_with("kind_names.rs"))
        .map(|p| {
            let text = code(&std::fs::read_to_string(p).expect("a source file"));
            let idents = text
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '"'))
                .filter(|t| t.starts_with(|c: char| c.is_alphabetic() || c == '"'))
                .map(str::to_owned)
                .collect();
            (unit(p.strip_prefix(&src).expect("under src")), idents)
        })
        .collect();
    kinds()
        .into_iter()
        .map(|kind| {
            let kw: Vec<&str> = kind.split('_').collect();
            let mut named: Vec<String> =
                idents.iter().filter(|(_, ids)| ids.iter().any(|i| names(i, &kw))).map(|(f, _)| f.clone()).collect();
            named.sort();
            named.dedup();
            (kind, named)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_read_as_words() {
        assert_eq!(words("PrintAsk"), ["print", "ask"]);
        assert_eq!(words("on_download_done"), ["on", "download", "done"]);
        assert!(names("FileChooserDetails", &["file", "chooser"]));
        assert!(names("passkeys", &["passkey"]));
        assert!(!names("ChooserApi", &["device", "chooser"]));
        assert!(!names("eprintln", &["print"]));
        let c = code(
            "let a = \"Toast\"; // Toast\nlet b = r#\"Toast\"#; let c = '\"'; Toast\n#[cfg(test)]\nmod t { fn f() { ToastAsk } }\n#[cfg(test)]\nuse x::Toast;\nfn g() { ToastPdf }\nlet d = \"a Toast here\"; let e = \"say \\\"Toast\\\" `Toast`\";",
        );
        // "Toast" twice (a, b), Toast, ToastPdf, then e's two quoted words; d's prose is not code.
        assert_eq!(c.matches("Toast").count(), 6, "{c}");
        assert!(!c.contains("ToastAsk"), "{c}");
        assert!(c.contains("ToastPdf"), "{c}");
    }

    /// Each kind is named in at most `MOST_FILES` files of the pipeline, or (`STILL_MORE`)
    /// in no more than it was.
    #[test]
    fn each_kind_lives_in_its_own_files() {
        let mut table = table();
        assert!(table.len() >= 11, "the kinds were found: {table:?}");
        for (kind, file, _why) in ELSEWHERE {
            let files = table.get_mut(kind).expect("a kind");
            let at = files.iter().position(|f| f == file);
            assert!(at.is_some(), "{file} no longer names {kind}: take it out of ELSEWHERE");
            if !file.starts_with("host/kinds/") {
                files.remove(at.unwrap_or_default());
            }
        }
        let mut over = Vec::new();
        for (kind, files) in &table {
            println!("{kind:>16} {:>2}  {}", files.len(), files.join(" "));
            let most = STILL_MORE.iter().find(|(k, ..)| k == kind).map_or(MOST_FILES, |(_, n, _)| *n);
            if files.len() > most {
                over.push(format!("{kind} in {} files, at most {most}: {}", files.len(), files.join(", ")));
            }
        }
        assert!(over.is_empty(), "kinds named in more files than they may be:\n{}", over.join("\n"));
        for (kind, most, why) in STILL_MORE {
            let n = table.get(kind).map_or(0, Vec::len);
            assert!(n > MOST_FILES, "{kind} is down to {n} files: take it out of STILL_MORE ({why})");
            assert!(n >= most, "{kind} is down to {n} files: lower its figure in STILL_MORE to {n}");
        }
    }
}
