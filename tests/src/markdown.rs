//! The project's markdown as the docs tests read it: fenced code blocks with what they say
//! they are, links, and the anchors GitHub gives headings.

use anyhow::{Context, Result};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A fenced code block: ```` ```jsonc calls ```` is language `jsonc`, markers `["calls"]`.
#[derive(Debug, Clone)]
pub struct Block {
    pub file: PathBuf,
    /// The line of the opening fence, from 1.
    pub line: usize,
    pub lang: String,
    pub markers: Vec<String>,
    /// The lines between the fences, less the fence's own indentation.
    pub text: String,
}

impl Block {
    pub fn has(&self, marker: &str) -> bool {
        self.markers.iter().any(|m| m == marker)
    }

    /// `key=value` among the markers.
    pub fn marker_value(&self, key: &str) -> Option<&str> {
        self.markers.iter().find_map(|m| m.strip_prefix(key)?.strip_prefix('='))
    }

    pub fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// Every markdown file under `root` that git does not ignore (tracked, or new and not
/// ignored: a venv's or node_modules' files are not the project's); outside a git checkout,
/// every one not under target/, node_modules/ or a hidden directory.
pub fn all_files(root: &Path) -> Result<Vec<PathBuf>> {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md"])
        .current_dir(root)
        .output();
    let mut out = Vec::new();
    match listed {
        Ok(o) if o.status.success() => {
            for name in o.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
                let path = root.join(String::from_utf8_lossy(name).as_ref());
                // A file deleted in the work tree but still in the index is gone.
                if path.is_file() {
                    out.push(path);
                }
            }
        }
        _ => walk(root, &mut out)?,
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() {
            if !matches!(name.as_str(), "target" | "node_modules" | ".git" | ".venv") && !name.starts_with('.') {
                walk(&path, out)?;
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
    Ok(())
}

/// The user docs: README.md and every markdown file under docs/ (files added later too).
pub fn doc_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = vec![root.join("README.md")];
    files.extend(all_files(&root.join("docs"))?);
    Ok(files)
}

pub fn blocks(file: &Path) -> Result<Vec<Block>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    Ok(blocks_of(file, &text))
}

pub fn blocks_of(file: &Path, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.split_whitespace().map(str::to_owned);
                    let lang = words.next().unwrap_or_default();
                    let block = Block {
                        file: file.to_owned(),
                        line: i + 1,
                        lang,
                        markers: words.collect(),
                        text: String::new(),
                    };
                    open = Some((block, indent));
                }
            }
            Some((mut block, fence_indent)) => {
                if trimmed.starts_with("```") {
                    out.push(block);
                } else {
                    let cut = indent.min(fence_indent);
                    block.text.push_str(&line[cut..]);
                    block.text.push('\n');
                    open = Some((block, fence_indent));
                }
            }
        }
    }
    out
}

/// The file's lines outside fenced code blocks, with inline code spans blanked out, each with
/// its line number (from 1).
pub fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            out.push((i + 1, without_code_spans(line)));
        }
    }
    out
}

fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// The inline code spans outside fenced blocks, a span across lines joined with spaces, each
/// with the line it starts on.
pub fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut span: Option<(usize, String)> = None;
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        for c in line.chars() {
            match (c, span.take()) {
                ('`', None) => span = Some((i + 1, String::new())),
                ('`', Some(done)) => out.push(done),
                (c, Some((n, mut s))) => {
                    s.push(c);
                    span = Some((n, s));
                }
                (_, None) => {}
            }
        }
        if let Some((n, mut s)) = span.take() {
            // A paragraph ends a span that never closed.
            if line.trim().is_empty() {
                continue;
            }
            s.push(' ');
            span = Some((n, s));
        }
    }
    out
}

/// The targets of the inline links `[text](target)` and images in `text`, with their lines.
pub fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            out.push((n, target.to_owned()));
            rest = &after[end..];
        }
    }
    out
}

/// The anchors GitHub makes of a file's headings: lower case, punctuation dropped, spaces as
/// `-`, a repeated one numbered (`-1`, `-2`).
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        let Some(title) = line.strip_prefix('#').map(|l| l.trim_start_matches('#')) else { continue };
        if !title.starts_with(' ') {
            continue;
        }
        let slug = slug(title.trim());
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    out
}

pub fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_as_github_makes_them() {
        assert_eq!(slug("`interact` with `action: \"handle_dialog\"`"), "interact-with-action-handle_dialog");
        assert_eq!(slug("The extension's ID"), "the-extensions-id");
        assert_eq!(slug("1. The extension, as a zip"), "1-the-extension-as-a-zip");
        assert_eq!(slug("`config.json`"), "configjson");
        let a = anchors("# A\n## A\n```\n# not\n```\n#nope\n");
        assert_eq!(a.into_iter().collect::<Vec<_>>(), ["a", "a-1"]);
    }

    #[test]
    fn blocks_links_and_markers() {
        let text = "x [a](b.md#c) `[no](x)`\n  ```jsonc calls tool=observe\n  {\"what\":\"tabs\"}\n  ```\n[d](e)\n";
        let b = blocks_of(Path::new("f.md"), text);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].lang.as_str(), b[0].line), ("jsonc", 2));
        assert!(b[0].has("calls"));
        assert_eq!(b[0].marker_value("tool"), Some("observe"));
        assert_eq!(b[0].text, "{\"what\":\"tabs\"}\n");
        assert_eq!(links(text), [(1, "b.md#c".to_owned()), (5, "e".to_owned())]);
        let spans = code_spans("a `b\nc` d\n```\n`x`\n```\n`e`");
        assert_eq!(spans, [(1, "b c".to_owned()), (6, "e".to_owned())]);
    }
}
