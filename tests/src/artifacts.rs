//! Where the built pieces are: `cargo xtask build` puts them in target/.

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Artifacts {
    pub extension: PathBuf,
    pub host: PathBuf,
    pub extension_id: String,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the repo").to_path_buf()
}

impl Artifacts {
    pub fn find() -> Result<Self> {
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_root().join("target"), PathBuf::from);
        let extension = target.join("extension");
        let host = target.join("release/unmodal");
        for p in [extension.join("manifest.json"), extension.join("inject.js"), host.clone()] {
            if !p.exists() {
                bail!(
                    "{} is missing: run `cargo xtask build` (or `cargo xtask test`, which builds first)",
                    p.display()
                );
            }
        }
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(extension.join("manifest.json"))?)?;
        let key = manifest["key"].as_str().context("manifest.json has no key")?;
        Ok(Self { extension_id: extension_id(key)?, extension, host })
    }
}

/// Chrome's extension ID: the first 128 bits of SHA-256 of the public key, as letters a–p.
pub fn extension_id(key_base64: &str) -> Result<String> {
    let der = base64::engine::general_purpose::STANDARD.decode(key_base64).context("manifest key is not base64")?;
    let hash = Sha256::digest(der);
    Ok(hash[..16].iter().flat_map(|b| [b >> 4, b & 15]).map(|n| char::from(b'a' + n)).collect())
}
