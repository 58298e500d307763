//! Builds the in-page engine (Rust → wasm32 → wasm-opt → wasm2js), assembles the unpacked
//! extension in target/extension/, and builds target/release/unmodal.

use crate::{bootstrap, hook_parts, sh};
use anyhow::{Context, Result, bail};
use std::fs;
use std::path::Path;
use std::process::Command;

const MARKER: &str = "/*@ENGINE@*/";
/// wasm features rustc emits by default that binaryen must accept; bulk memory is then
/// lowered to plain loops, which wasm2js supports.
const FEATURES: &[&str] =
    &["--enable-bulk-memory", "--enable-sign-ext", "--enable-mutable-globals", "--enable-nontrapping-float-to-int"];

pub fn all() -> Result<()> {
    extension()?;
    sh::run(sh::cargo().args(["build", "--quiet", "--release", "-p", "unmodal"]))
}

/// The engine and the extension alone: `cargo xtask test` gets its host from the test build.
pub fn extension() -> Result<()> {
    bootstrap::wasm_target()?;
    bootstrap::node_tools()?;
    let root = sh::root();
    worker_kinds(&root)?;
    let engine_js = engine(&root)?;
    assemble(&root, &engine_js)
}

/// The worker's kinds hold together and `background.js` names none of them
/// (tools/worker_kinds.test.mjs, Node's own test runner: the worker's modules as they ship).
fn worker_kinds(root: &Path) -> Result<()> {
    let test = root.join("tools/worker_kinds.test.mjs");
    let out = Command::new("node")
        .args(["--test", "--test-reporter=dot"])
        .arg(&test)
        .output()
        .context("could not start node (Node.js 20.19+ is needed to build)")?;
    if !out.status.success() {
        bail!(
            "the worker's kinds do not hold together ({}):\n{}{}",
            test.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn engine(root: &Path) -> Result<String> {
    sh::run(sh::cargo().args([
        "rustc",
        "--quiet",
        "-p",
        "unmodal-engine",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        "wasm",
        "--crate-type",
        "cdylib",
    ]))?;
    let out = root.join("target/wasm32-unknown-unknown/wasm");
    let wasm = out.join("unmodal_engine.wasm");
    let opt = out.join("unmodal_engine.opt.wasm");
    let js = out.join("unmodal_engine.js");
    let bin = root.join("tools/node_modules/.bin");
    sh::run(
        Command::new(bin.join("wasm-opt"))
            .arg(&wasm)
            .args(FEATURES)
            .args(["--llvm-memory-copy-fill-lowering", "--strip-debug", "--strip-producers", "-Oz", "-o"])
            .arg(&opt),
    )?;
    sh::run(
        Command::new(bin.join("wasm2js"))
            .arg(&opt)
            .args(["--enable-sign-ext", "--enable-mutable-globals", "-O", "-o"])
            .arg(&js),
    )?;
    let text = fs::read_to_string(&js).with_context(|| format!("reading {}", js.display()))?;
    factory_body(&text)
}

/// wasm2js writes an ES module; the page needs a plain function body that returns the
/// exports (a content script cannot be a module, and `import` would need a fetch).
fn factory_body(module: &str) -> Result<String> {
    let mut body = String::with_capacity(module.len());
    let mut saw_instance = false;
    for line in module.lines() {
        if line.starts_with("export ") {
            continue;
        }
        if line.starts_with("var retasmFunc = asmFunc(") {
            saw_instance = true;
            continue;
        }
        if saw_instance && line.trim() == "});" {
            continue;
        }
        body.push_str(line);
        body.push('\n');
    }
    if !saw_instance || !body.contains("function asmFunc(") {
        bail!("wasm2js output changed shape (no asmFunc / retasmFunc): update xtask/src/build.rs");
    }
    body.push_str("return asmFunc({});\n");
    // The factory may run after page scripts: it must not call methods a page can replace.
    // inject.js passes a pristine `charCodeAtOf(string, index)` for the data-segment decoder.
    let body = body.replace("b64.charCodeAt(", "charCodeAtOf(b64, ");
    // The memory object's property descriptors: without a prototype, so a page's
    // `Object.prototype.get` (or `value`) cannot make them invalid or see them read.
    let body = body
        .replace("\"grow\": {\n", "\"grow\": { \"__proto__\": null,\n")
        .replace("\"buffer\": {\n", "\"buffer\": { \"__proto__\": null,\n");
    if body.contains("Object.create(") && body.matches("\"__proto__\": null").count() != 2 {
        bail!("wasm2js's memory object changed shape: give its descriptors no prototype in xtask/src/build.rs");
    }
    if body.contains(".charCodeAt(") {
        bail!("wasm2js output calls charCodeAt in a new place: route it through charCodeAtOf in xtask/src/build.rs");
    }
    Ok(body)
}

const PAGE_HOOK_HEAD: &str = "\
// Unmodal page hook: MAIN world, document_start, every frame (built from manifest/inject/).
// Replaces alert/confirm/prompt so that the Rust engine (wasm2js) answers them synchronously,
// and reports each dialog to content.js over a secret-named DOM event. Everything the page
// could later tamper with is captured before any page script runs, and nothing is left on
// the page's objects except the replaced functions themselves.
(() => {
  'use strict';
";

/// inject.js is one closure; its parts (manifest/inject/*.js, in name order) share its scope.
fn page_hook(dir: &Path) -> Result<String> {
    let mut parts: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    parts.sort();
    if parts.is_empty() {
        bail!("no page hook parts in {}", dir.display());
    }
    let mut texts = Vec::with_capacity(parts.len());
    for p in &parts {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        texts.push((name, fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?));
    }
    hook_parts::check(&texts)?;
    let mut out = String::from(PAGE_HOOK_HEAD);
    for (_, text) in &texts {
        out.push('\n');
        out.push_str(text);
    }
    out.push_str("})();\n");
    Ok(out)
}

/// Assembles the extension in a staging directory, then brings target/extension/ in line
/// with it file by file: an unchanged file keeps its time, so cargo rebuilds the host (which
/// carries these files) only when one changed. target/extension.stamp marks each build.
fn assemble(root: &Path, engine_js: &str) -> Result<()> {
    let src = root.join("manifest");
    let stage = root.join("target/extension.staging");
    if stage.exists() {
        fs::remove_dir_all(&stage)?;
    }
    fs::create_dir_all(&stage)?;
    // Every file of manifest/ ships as it is (a new kind's worker file too); inject/ is the
    // page hook's parts, assembled below.
    for entry in fs::read_dir(&src).context("reading manifest/")? {
        let path = entry?.path();
        if path.is_file() {
            let name = path.file_name().context("a file without a name")?;
            fs::copy(&path, stage.join(name)).with_context(|| format!("copying {}", path.display()))?;
        }
    }
    let inject = page_hook(&src.join("inject"))?;
    if inject.matches(MARKER).count() != 1 {
        bail!("manifest/inject/*.js must hold the marker {MARKER} exactly once");
    }
    let inject = inject.replace(MARKER, engine_js);
    let out = stage.join("inject.js");
    fs::write(&out, &inject)?;
    // Every frame parses these two: minified, they cost a frame less. The tests run
    // against the minified files, as shipped.
    // UNMODAL_NO_MINIFY=1 keeps them readable (line-level CPU profiles of the bench).
    let minify = std::env::var_os("UNMODAL_NO_MINIFY").is_none();
    for file in [out.clone(), stage.join("content.js")].into_iter().filter(|_| minify) {
        sh::run(
            Command::new(root.join("tools/node_modules/.bin/esbuild"))
                .arg(&file)
                .args(["--minify", "--target=chrome116", "--charset=utf8", "--log-level=warning", "--allow-overwrite"])
                .arg(format!("--outfile={}", file.display())),
        )?;
    }
    let shipped = fs::metadata(&out)?.len();
    sync(&stage, &sh::extension_dir())?;
    fs::remove_dir_all(&stage)?;
    fs::write(root.join("target/extension.stamp"), "")?;
    eprintln!(
        "xtask: target/extension/ assembled (inject.js {shipped} bytes minified from {}, engine {} bytes of it before)",
        inject.len(),
        engine_js.len()
    );
    Ok(())
}

/// Makes `dst` hold exactly the files of `stage` (flat), writing only those that differ.
fn sync(stage: &Path, dst: &Path) -> Result<()> {
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(dst)? {
        let path = entry?.path();
        if !stage.join(path.file_name().context("a file without a name")?).exists() {
            if path.is_dir() { fs::remove_dir_all(&path)? } else { fs::remove_file(&path)? }
        }
    }
    for entry in fs::read_dir(stage)? {
        let path = entry?.path();
        let target = dst.join(path.file_name().context("a file without a name")?);
        let bytes = fs::read(&path)?;
        if fs::read(&target).ok().as_deref() != Some(bytes.as_slice()) {
            fs::write(&target, &bytes).with_context(|| format!("writing {}", target.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_body_drops_module_syntax() {
        let module = "function asmFunc(imports) {\n return {};\n}\n\nvar retasmFunc = asmFunc({\n});\nexport var decide = retasmFunc.decide;\n";
        let body = factory_body(module).unwrap();
        assert!(!body.contains("export"));
        assert!(!body.contains("retasmFunc"));
        assert!(body.ends_with("return asmFunc({});\n"));
    }

    #[test]
    fn factory_body_routes_string_methods_through_pristine_ones() {
        let module = "function d(b64, i) { return b64.charCodeAt(i+1); }\nfunction asmFunc(imports) {}\nvar retasmFunc = asmFunc({\n});\n";
        assert!(factory_body(module).unwrap().contains("charCodeAtOf(b64, i+1)"));
        let odd = "function d(s) { return s.charCodeAt(0); }\nfunction asmFunc(imports) {}\nvar retasmFunc = asmFunc({\n});\n";
        assert!(factory_body(odd).is_err());
    }

    #[test]
    fn factory_body_refuses_unknown_shapes() {
        assert!(factory_body("export default 1;\n").is_err());
    }

    #[test]
    fn the_page_hook_parts_hold_their_headers() {
        page_hook(&sh::root().join("manifest/inject")).unwrap();
    }

    #[test]
    fn the_worker_kinds_hold_together() {
        worker_kinds(&sh::root()).unwrap();
    }
}
