//! Which files of the host's pipeline name each kind of browser prompt: the figure that
//! says whether a kind lives in its own files (issue 37). The pipeline is `host/` and what
//! the agent's calls and answers go through (`api.rs`, `kind.rs`, `reply.rs`, `mcp.rs`);
//! the tools beside it (`doctor`, `browser/`, `platform/`, `cdp/`) use these words in their
//! own senses (printing a report, file permissions, a URL's auth). Code only: tests,
//! comments and string literals are left out. A file names a kind when an identifier holds the kind's words in a row,
//! in any case (`PrintAsk`, `print_jobs`, `on_download_done`, `passkeys`).
//! `cargo test -p unmodal kind_names -- --nocapture` prints the table.

use crate::kind::Kind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a kind may be named: the kinds' enum (`kind.rs`), the registry (`host/kinds/mod.rs`),
/// the agent's parameters (`api.rs`), and its own file or folder (or the file its family
/// shares: payment, sign-in, storage access and the eye dropper).
const MOST_FILES: usize = 4;

/// The kinds still named beyond those four, each at most this often, and why. Lower a
/// figure when a file stops naming the kind; never raise one.
const STILL_MORE: [(&str, usize, &str); 0] = [];

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

/// `text` without comments, string literals and what is compiled for tests only.
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
                out.push_str("\"\"");
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
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

/// Whether `ident` names the kind whose words are `kind` (its last word may be plural).
fn names(ident: &str, kind: &[&str]) -> bool {
    let w = words(ident);
    w.windows(kind.len()).any(|win| {
        win.iter().zip(kind).enumerate().all(|(i, (a, b))| a == b || (i + 1 == kind.len() && *a == format!("{b}s")))
    })
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What a file counts as: itself, or the folder of the kind it is in (`host/kinds/passkey/`).
fn unit(rel: &Path) -> String {
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    match &parts[..] {
        [host, kinds, kind, _, ..] if host == "host" && kinds == "kinds" => format!("host/kinds/{kind}/"),
        _ => parts.join("/"),
    }
}

/// The agent's side of the pipeline, beside `host/`.
const AGENT_FILES: [&str; 4] = ["api.rs", "kind.rs", "reply.rs", "mcp.rs"];

/// For each kind, the files (relative to `src/`) whose code names it.
pub fn table() -> BTreeMap<String, Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<PathBuf> = AGENT_FILES.iter().map(|f| src.join(f)).collect();
    sources(&src.join("host"), &mut files);
    let idents: Vec<(String, Vec<String>)> = files
        .iter()
        .filter(|p| !p.ends_with("kind_names.rs"))
        .map(|p| {
            let text = code(&std::fs::read_to_string(p).expect("a source file"));
            let idents = text
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|t| t.starts_with(|c: char| c.is_alphabetic()))
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
            "let a = \"Toast\"; // Toast\nlet b = r#\"Toast\"#; let c = '\"'; Toast\n#[cfg(test)]\nmod t { fn f() { ToastAsk } }\n#[cfg(test)]\nuse x::Toast;\nfn g() { ToastPdf }",
        );
        assert_eq!(c.matches("Toast").count(), 2, "{c}");
        assert!(c.contains("ToastPdf"), "{c}");
    }

    /// Each kind is named in at most `MOST_FILES` files of the pipeline, or (`STILL_MORE`)
    /// in no more than it was.
    #[test]
    fn each_kind_lives_in_its_own_files() {
        let table = table();
        assert!(table.len() >= 11, "the kinds were found: {table:?}");
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
