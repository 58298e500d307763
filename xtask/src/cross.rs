//! The host typechecked for the other systems it is meant for (`cargo check --target`):
//! Windows and macOS. No linker is needed, but ring's build script
//! compiles C for the target: mingw for Windows, clang for macOS. Without Apple's SDK, clang
//! builds ring freestanding (`RING_CORE_NOSTDLIBINC`, no system headers) with a stand-in
//! `TargetConditionals.h`; those objects are never linked, only the Rust is checked.

use crate::{bootstrap, sh};
use anyhow::{Context, Result};
use std::process::Command;

/// One macOS architecture: the host's code has no `target_arch` branch (a test below holds
/// that), so x86_64-apple-darwin would check the same code a second time, about 45 s of a
/// CI run; `cargo xtask dist` builds both.
pub const TARGETS: [&str; 2] = ["x86_64-pc-windows-gnu", "aarch64-apple-darwin"];

/// Checks every target it can set up (with warnings as errors), all in one cargo run so
/// the build scripts and proc macros, built for this machine, are built once; a target
/// whose toolchain cannot be installed here is skipped with a warning, a check that fails
/// fails. `built` names targets compiled for real in this run (Windows, for Wine): checking
/// them too would only do the same work twice.
pub fn check(built: &[&str]) -> Result<()> {
    let mut cmd = sh::cargo();
    cmd.args(["check", "--quiet", "-p", "unmodal", "--all-targets"]);
    let mut ready = Vec::new();
    for target in TARGETS.into_iter().filter(|t| !built.contains(t)) {
        if let Err(e) = bootstrap::rust_target(target).and_then(|()| compiler_for(target, &mut cmd)) {
            eprintln!("xtask: warning: `cargo check --target {target}` skipped: {e:#}");
            continue;
        }
        cmd.args(["--target", target]);
        ready.push(target);
    }
    if ready.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: typechecking the host for {}", ready.join(", "));
    let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
    flags.push_str(" -D warnings");
    cmd.env("RUSTFLAGS", flags.trim());
    sh::run(&mut cmd).with_context(|| format!("the host does not typecheck for one of {}", ready.join(", ")))
}

fn compiler_for(target: &str, cmd: &mut Command) -> Result<()> {
    if target.contains("windows") {
        return bootstrap::c_compiler("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64");
    }
    bootstrap::c_compiler("clang", "clang")?;
    let include = sh::root().join("target/xtask/apple-stand-in-include");
    std::fs::create_dir_all(&include)?;
    std::fs::write(
        include.join("TargetConditionals.h"),
        "/* A stand-in for the SDK's header: ring only asks which Apple OS this is. */\n\
         #define TARGET_OS_MAC 1\n#define TARGET_OS_OSX 1\n#define TARGET_OS_IPHONE 0\n",
    )?;
    let var = target.replace('-', "_");
    // `__MM_MALLOC_H`: clang's <mm_malloc.h> (pulled in by the x86 intrinsics) wants <stdlib.h>.
    let cflags = format!("-nostdlibinc -DRING_CORE_NOSTDLIBINC=1 -D__MM_MALLOC_H -I{}", include.display());
    cmd.env(format!("CC_{var}"), "clang").env(format!("CFLAGS_{var}"), cflags);
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `TARGETS` checks one macOS architecture because no host code differs by architecture.
    #[test]
    fn the_host_has_no_code_that_differs_by_architecture() {
        let mut offending = Vec::new();
        let mut dirs = vec![crate::sh::root().join("native-host/src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && std::fs::read_to_string(&path).unwrap().contains(concat!("target", "_arch"))
                {
                    offending.push(path);
                }
            }
        }
        assert!(offending.is_empty(), "check x86_64-apple-darwin too (cross::TARGETS): {offending:?}");
    }
}
