//! Carries the built extension inside the binary when `cargo xtask build` names it
//! (`UNMODAL_EXTENSION_DIR`, set for every cargo run xtask makes): `unmodal install` and
//! `unmodal browser` then need no other file. A plain `cargo build` carries none.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=UNMODAL_EXTENSION_DIR");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("extension_files.rs");
    let dir = std::env::var_os("UNMODAL_EXTENSION_DIR").map(PathBuf::from);
    let mut files = Vec::new();
    if let Some(dir) = &dir {
        println!("cargo:rerun-if-changed={}", dir.display());
        if dir.join("manifest.json").is_file() {
            collect(dir, dir, &mut files);
        } else {
            println!(
                "cargo:warning=UNMODAL_EXTENSION_DIR={} holds no built extension: this unmodal carries none",
                dir.display()
            );
        }
    }
    files.sort();
    // FNV-1a over names and contents: names the unpacked copy, so two builds of one
    // version never share a directory.
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let mut code = String::from("/// (path inside the extension, contents)\npub const FILES: &[(&str, &[u8])] = &[\n");
    for (rel, abs) in &files {
        let bytes = std::fs::read(abs).expect("reading a built extension file");
        for b in rel.bytes().chain([0]).chain(bytes) {
            digest = (digest ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        writeln!(code, "    ({rel:?}, include_bytes!({:?})),", abs.display().to_string()).unwrap();
    }
    code.push_str("];\n");
    writeln!(code, "/// Names this build of the extension.\npub const DIGEST: &str = \"{digest:016x}\";").unwrap();
    std::fs::write(out, code).expect("writing extension_files.rs");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).expect("reading the built extension").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let abs = std::fs::canonicalize(&path).expect("a built extension file's path");
            files.push((rel.to_string_lossy().into_owned(), abs));
        }
    }
}
