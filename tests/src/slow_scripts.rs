//! A copy of the built extension whose content scripts take long to load: the page hook
//! padded with a 30 MB comment. The browser loads a start URL's navigation while it loads
//! the extension; the longer the content scripts take to reach the renderer, the more
//! often that document can commit before they do. Measured with the build before the fix:
//! 4 launches of 10 lost in one run (while compilers loaded the machine), against about 1
//! in 100 with the real build in the test suite; but 0 of 162 in later runs, with the
//! machine loaded by browsers instead. It makes the race likelier, not certain.

use anyhow::{Context, Result};
use std::path::Path;
use tempfile::TempDir;

const PAD_BYTES: usize = 30 << 20;

/// The copy of the unpacked extension in `from` (same key, so the same ID and host).
pub fn slow_scripts_copy(from: &Path) -> Result<TempDir> {
    let dir = tempfile::Builder::new().prefix("unmodal-slow-scripts-").tempdir()?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), dir.path().join(e.file_name()))?;
        }
    }
    let hook = dir.path().join("inject.js");
    let mut text = std::fs::read_to_string(&hook).context("the extension has no inject.js")?;
    text.reserve(PAD_BYTES + 8);
    text.push_str("\n/*");
    text.extend(std::iter::repeat_n('x', PAD_BYTES));
    text.push_str("*/\n");
    std::fs::write(&hook, text)?;
    Ok(dir)
}
