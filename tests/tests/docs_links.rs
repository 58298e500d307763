//! Every relative link in every markdown file of the repository reaches a file that exists,
//! and every `#anchor` a heading of that file (as GitHub makes anchors of headings).

use anyhow::{Result, bail, ensure};
use std::path::Path;
use unmodal_e2e::artifacts::repo_root;
use unmodal_e2e::markdown;

/// What is wrong with the links of `file` (whose text is `text`).
fn broken(file: &Path, text: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let dir = file.parent().unwrap_or(Path::new("."));
    for (line, target) in markdown::links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let place = format!("{}:{line}: ({target})", file.display());
        let resolved = if path.is_empty() { file.to_path_buf() } else { dir.join(path) };
        if !resolved.exists() {
            errs.push(format!("{place}: no {}", resolved.display()));
            continue;
        }
        if anchor.is_empty() || resolved.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let target_text = std::fs::read_to_string(&resolved).unwrap_or_default();
        if !markdown::anchors(&target_text).contains(anchor) {
            errs.push(format!("{place}: no heading of {} has the anchor #{anchor}", resolved.display()));
        }
    }
    errs
}

#[test]
fn links_and_anchors_in_every_markdown_file_resolve() -> Result<()> {
    let files = markdown::all_files(&repo_root())?;
    ensure!(files.iter().any(|f| f.ends_with("docs/tools.md")), "found only {files:?}");
    let mut errs = Vec::new();
    let mut links = 0;
    for file in &files {
        let text = std::fs::read_to_string(file)?;
        links += markdown::links(&text).len();
        errs.extend(broken(file, &text));
    }
    ensure!(links > 50, "only {links} links found in {} files", files.len());
    if !errs.is_empty() {
        bail!("{} broken links:\n  {}", errs.len(), errs.join("\n  "));
    }
    Ok(())
}

#[test]
fn a_broken_link_or_anchor_is_found() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("a.md");
    std::fs::write(dir.path().join("b.md"), "# Real heading\n")?;
    let text = "[ok](b.md#real-heading) [gone](c.md) [bad](b.md#nope) [self](#top) `[code](x.md)`\n# Top\n";
    std::fs::write(&file, text)?;
    let errs = broken(&file, text);
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].contains("(c.md)") && errs[1].contains("#nope"), "{errs:?}");
    Ok(())
}
