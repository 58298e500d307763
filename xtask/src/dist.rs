//! `cargo xtask dist`: the release, in target/dist/. For each target whose toolchain is here
//! (this machine's own; Windows x64 with mingw; another only with a linker named for it), an
//! archive with the binary (which carries the extension, as `cargo xtask build` makes it),
//! the user docs (README.md, SECURITY.md, BENCHMARKS.md, docs/) and the licence files, and `SHA256SUMS` over the archives. Then, in
//! target/dist/npm/, npm packages in the style of esbuild and Biome: `unmodal`, whose
//! `bin/unmodal.js` runs the binary of the one per-platform package (`@unmodal/linux-x64`,
//! `@unmodal/win32-x64`, ...) npm installed of its optional dependencies; each packed
//! with `npm pack`. Last, this machine's packages are installed offline into an empty
//! directory and run (`smoke`): `--version`, `install`, and an MCP `initialize`.

use crate::{bootstrap, build, sh};
use anyhow::{Context, Result, bail, ensure};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The version of every archive and package: the workspace's (native-host/Cargo.toml takes it).
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Every file in an archive has this time (1980-01-01, the zip format's first day), so the
/// same build gives the same bytes.
const MTIME: u64 = 315_532_800;
const LAUNCHER: &str = include_str!("unmodal.js");
const LICENSES: [&str; 4] = ["LICENSE", "LICENSE-MIT", "LICENSE-APACHE", "LICENSE.md"];

#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub triple: &'static str,
    /// Node's `process.platform` and `process.arch`, which are npm's `os` and `cpu`.
    pub os: &'static str,
    pub cpu: &'static str,
    /// What a person calls it.
    pub name: &'static str,
}

pub const TARGETS: [Target; 4] = [
    Target { triple: "x86_64-unknown-linux-gnu", os: "linux", cpu: "x64", name: "Linux x64" },
    Target { triple: "x86_64-pc-windows-gnu", os: "win32", cpu: "x64", name: "Windows x64" },
    Target { triple: "aarch64-apple-darwin", os: "darwin", cpu: "arm64", name: "macOS arm64" },
    Target { triple: "x86_64-apple-darwin", os: "darwin", cpu: "x64", name: "macOS x64" },
];

impl Target {
    fn windows(&self) -> bool {
        self.os == "win32"
    }

    pub fn exe(&self) -> &'static str {
        if self.windows() { "unmodal.exe" } else { "unmodal" }
    }

    /// `linux-x64`: the launcher's key and the platform package's name in the scope.
    pub fn platform(&self) -> String {
        format!("{}-{}", self.os, self.cpu)
    }

    pub fn npm_name(&self) -> String {
        format!("@unmodal/{}", self.platform())
    }

    fn archive_stem(&self, version: &str) -> String {
        format!("unmodal-{version}-{}", self.triple)
    }

    fn archive_name(&self, version: &str) -> String {
        format!("{}.{}", self.archive_stem(version), if self.windows() { "zip" } else { "tar.gz" })
    }

    fn linker_var(&self) -> String {
        format!("CARGO_TARGET_{}_LINKER", self.triple.to_uppercase().replace('-', "_"))
    }
}

/// A target's binary, built.
pub struct Built {
    pub target: &'static Target,
    pub binary: PathBuf,
}

pub fn all() -> Result<()> {
    build::all()?;
    let root = sh::root();
    let host = host_triple()?;
    let dist = root.join("target/dist");
    if dist.exists() {
        fs::remove_dir_all(&dist).with_context(|| format!("emptying {}", dist.display()))?;
    }
    fs::create_dir_all(&dist)?;

    let mut built = Vec::new();
    let mut skipped = Vec::new();
    for target in &TARGETS {
        match binary_for(target, &host, &root)? {
            Some(binary) => built.push(Built { target, binary }),
            None => skipped.push(target.name),
        }
    }
    ensure!(!built.is_empty(), "no target could be built here");

    let mut archives = Vec::new();
    for b in &built {
        let path = dist.join(b.target.archive_name(VERSION));
        let files = archive_files(&root, b)?;
        let stem = b.target.archive_stem(VERSION);
        if b.target.windows() {
            zip_archive(&path, &stem, &files)?
        } else {
            tar_gz(&path, &stem, &files)?
        }
        archives.push(path);
    }
    fs::write(dist.join("SHA256SUMS"), sha256sums(&archives)?)?;

    let packed = npm_packages(&dist.join("npm"), VERSION, &built, &user_docs(&root)?)?;

    eprintln!("xtask: target/dist/:");
    for path in archives.iter().chain([&packed.main]).chain(packed.platforms.iter().map(|(_, p)| p)) {
        eprintln!("  {:>9} bytes  {}", fs::metadata(path)?.len(), path.strip_prefix(&dist).unwrap_or(path).display());
    }
    for b in &built {
        eprintln!("  {:>9} bytes  the {} binary, unpacked", fs::metadata(&b.binary)?.len(), b.target.name);
    }
    if !skipped.is_empty() {
        eprintln!("xtask: not built here: {}", skipped.join(", "));
    }

    match packed.platforms.iter().find(|(t, _)| t.triple == host) {
        Some((_, platform_tgz)) => {
            let figures = smoke(&packed.main, platform_tgz)?;
            eprintln!("xtask: the npm packages work here (installed offline into an empty directory): {figures}");
        }
        None => eprintln!("xtask: warning: no package for this machine ({host}), so none was tried"),
    }
    Ok(())
}

fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let info = sh::output(Command::new(rustc).arg("-vV"))?;
    info.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_owned).context("`rustc -vV` names no host")
}

/// The release binary for `target`: this machine's from `cargo xtask build`, another built
/// with `cargo build --target` when its linker is here; `None` (said why) when it is not.
fn binary_for(target: &Target, host: &str, root: &Path) -> Result<Option<PathBuf>> {
    if target.triple == host {
        let binary = root.join("target/release").join(target.exe());
        let version = sh::output(Command::new(&binary).arg("--version"))?;
        ensure!(version.trim() == format!("unmodal {VERSION}"), "{} says {version:?}", binary.display());
        return Ok(Some(binary));
    }
    let linker_var = target.linker_var();
    let mut cmd = sh::cargo();
    if target.windows() {
        let ready = bootstrap::rust_target(target.triple)
            .and_then(|()| bootstrap::c_compiler("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"));
        if let Err(e) = ready {
            eprintln!("xtask: warning: no {} archive: {e:#}", target.name);
            return Ok(None);
        }
        if std::env::var_os(&linker_var).is_none() {
            cmd.env(&linker_var, "x86_64-w64-mingw32-gcc");
        }
    } else if target.os == "darwin" && host.ends_with("-apple-darwin") {
        // A Mac links both of its architectures with its own toolchain.
        bootstrap::rust_target(target.triple)?;
    } else if std::env::var_os(&linker_var).is_none() {
        let why = if target.os == "darwin" {
            "macOS binaries are linked against Apple's SDK, which is not here: run `cargo xtask dist` on a Mac, \
             or set it to an osxcross clang (its code is typechecked by `cargo xtask test`)"
        } else {
            "run `cargo xtask dist` on such a machine, or set it to a cross linker"
        };
        eprintln!(
            "xtask: no {} archive: no linker for {} here ({linker_var} is unset; {why})",
            target.name, target.triple
        );
        return Ok(None);
    } else {
        bootstrap::rust_target(target.triple)?;
    }
    eprintln!("xtask: building the release binary for {}", target.triple);
    sh::run(cmd.args(["build", "--quiet", "--release", "-p", "unmodal", "--target", target.triple]))?;
    Ok(Some(root.join("target").join(target.triple).join("release").join(target.exe())))
}

/// The docs a user reads, by their path in the repository: README.md, the SECURITY.md and
/// BENCHMARKS.md it links, and every markdown file under docs/ (the reference), in path order
/// (the same bytes each build). ARCHITECTURE.md maps code an archive does not carry.
pub fn user_docs(root: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        let mut entries: Vec<_> =
            fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = format!("{rel}/{}", e.file_name().to_string_lossy());
            if e.file_type()?.is_dir() {
                walk(&e.path(), &name, out)?;
            } else if name.ends_with(".md") {
                out.push((name, fs::read(e.path())?));
            }
        }
        Ok(())
    }
    let mut docs = Vec::new();
    for name in ["README.md", "SECURITY.md", "BENCHMARKS.md"] {
        docs.push((name.to_owned(), fs::read(root.join(name)).with_context(|| format!("reading {name}"))?));
    }
    walk(&root.join("docs"), "docs", &mut docs)?;
    Ok(docs)
}

/// What an archive holds, by name: the binary (mode 0755), the user docs and each licence
/// file there is (0644).
fn archive_files(root: &Path, built: &Built) -> Result<Vec<(String, Vec<u8>, u32)>> {
    let read = |p: &Path| fs::read(p).with_context(|| format!("reading {}", p.display()));
    let mut files = vec![(built.target.exe().to_owned(), read(&built.binary)?, 0o755)];
    files.extend(user_docs(root)?.into_iter().map(|(name, bytes)| (name, bytes, 0o644)));
    for name in LICENSES {
        let path = root.join(name);
        if path.is_file() {
            files.push((name.to_owned(), read(&path)?, 0o644));
        }
    }
    Ok(files)
}

/// `path`, a gzipped tar whose files are under `stem/`.
fn tar_gz(path: &Path, stem: &str, files: &[(String, Vec<u8>, u32)]) -> Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let gz = flate2::GzBuilder::new().mtime(0).write(file, flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    for (name, bytes, mode) in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(bytes.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(MTIME);
        header.set_uid(0);
        header.set_gid(0);
        tar.append_data(&mut header, format!("{stem}/{name}"), bytes.as_slice())?;
    }
    tar.into_inner()?.finish()?.sync_all()?;
    Ok(())
}

/// `path`, a zip (deflated) whose files are under `stem/`.
fn zip_archive(path: &Path, stem: &str, files: &[(String, Vec<u8>, u32)]) -> Result<()> {
    use zip::write::SimpleFileOptions;
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    for (name, bytes, mode) in files {
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(9))
            .last_modified_time(zip::DateTime::DEFAULT)
            .unix_permissions(*mode);
        zip.start_file(format!("{stem}/{name}"), options)?;
        zip.write_all(bytes)?;
    }
    zip.finish()?.sync_all()?;
    Ok(())
}

/// `sha256sum`'s format (`sha256sum -c SHA256SUMS` checks it): the hash, two spaces, the
/// file's name.
fn sha256sums(files: &[PathBuf]) -> Result<String> {
    let mut out = String::new();
    for path in files {
        let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.file_name().context("an archive without a name")?.to_string_lossy();
        out.push_str(&format!("{}  {name}\n", hex(&Sha256::digest(&bytes))));
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The packed npm packages.
pub struct Packed {
    pub main: PathBuf,
    pub platforms: Vec<(&'static Target, PathBuf)>,
}

/// Writes the packages into `out/<name>/` and packs each into `out/*.tgz`; the main package
/// carries `docs` (the user docs, by path: README.md at its root, docs/ beside it).
pub fn npm_packages(out: &Path, version: &str, built: &[Built], docs: &[(String, Vec<u8>)]) -> Result<Packed> {
    if !sh::have("npm") {
        bail!("npm is needed to pack the npm packages: install Node.js (Debian: `apt-get install nodejs npm`)");
    }
    fs::create_dir_all(out)?;
    let mut platforms = Vec::new();
    for b in built {
        let dir = out.join(b.target.platform());
        fs::create_dir_all(dir.join("bin"))?;
        fs::write(dir.join("package.json"), platform_package_json(b.target, version))?;
        fs::write(
            dir.join("README.md"),
            format!(
                "# {}\n\nThe {} binary of [Unmodal](https://www.npmjs.com/package/unmodal). Install `unmodal`, \
                 which installs this package where it fits and runs its binary.\n",
                b.target.npm_name(),
                b.target.name
            ),
        )?;
        let binary = dir.join("bin").join(b.target.exe());
        fs::copy(&b.binary, &binary).with_context(|| format!("copying {}", b.binary.display()))?;
        make_executable(&binary)?;
        platforms.push((b.target, pack(&dir, out)?));
    }
    let targets: Vec<&Target> = built.iter().map(|b| b.target).collect();
    let dir = out.join("unmodal");
    fs::create_dir_all(dir.join("bin"))?;
    fs::write(dir.join("package.json"), main_package_json(&targets, version))?;
    for (name, bytes) in docs {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap_or(&dir))?;
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    let launcher = dir.join("bin/unmodal.js");
    fs::write(&launcher, launcher_js(&targets)?)?;
    make_executable(&launcher)?;
    Ok(Packed { main: pack(&dir, out)?, platforms })
}

fn platform_package_json(target: &Target, version: &str) -> String {
    // The Linux binary links glibc: npm 10 leaves it out on musl systems (Alpine).
    let libc = if target.os == "linux" { "\n  \"libc\": [\"glibc\"]," } else { "" };
    format!(
        r#"{{
  "name": "{name}",
  "version": "{version}",
  "description": "The {human} binary of Unmodal (install `unmodal`, which runs it)",
  "license": "MIT OR Apache-2.0",
  "os": ["{os}"],
  "cpu": ["{cpu}"],{libc}
  "files": ["bin/"],
  "preferUnplugged": true
}}
"#,
        name = target.npm_name(),
        human = target.name,
        os = target.os,
        cpu = target.cpu,
    )
}

fn main_package_json(targets: &[&Target], version: &str) -> String {
    let deps: Vec<String> = targets.iter().map(|t| format!("    \"{}\": \"{version}\"", t.npm_name())).collect();
    format!(
        r#"{{
  "name": "unmodal",
  "version": "{version}",
  "description": "Keeps browser dialogs from freezing the tabs AI agents drive: an MCP server and a Chrome extension",
  "license": "MIT OR Apache-2.0",
  "keywords": ["mcp", "chrome", "extension", "dialogs", "ai", "agent"],
  "bin": {{ "unmodal": "bin/unmodal.js" }},
  "files": ["bin/", "docs/", "SECURITY.md", "BENCHMARKS.md"],
  "engines": {{ "node": ">=18" }},
  "optionalDependencies": {{
{deps}
  }}
}}
"#,
        deps = deps.join(",\n")
    )
}

fn launcher_js(targets: &[&Target]) -> Result<String> {
    const MARKER: &str = "/*@PLATFORMS@*/ []";
    ensure!(LAUNCHER.matches(MARKER).count() == 1, "xtask/src/unmodal.js must hold `{MARKER}` exactly once");
    let list: Vec<String> = targets.iter().map(|t| format!("'{}'", t.platform())).collect();
    Ok(LAUNCHER.replace(MARKER, &format!("[{}]", list.join(", "))))
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).with_context(|| format!("chmod {}", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> Result<()> {
    Ok(())
}

/// `npm pack` of `dir` into `dest`; the tarball's path.
fn pack(dir: &Path, dest: &Path) -> Result<PathBuf> {
    let out = sh::output(
        Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(dest)
            .current_dir(dir)
            .env("npm_config_update_notifier", "false"),
    )?;
    let name = out.lines().rfind(|l| l.ends_with(".tgz")).with_context(|| format!("npm pack printed {out:?}"))?;
    let path = dest.join(name.trim());
    ensure!(path.is_file(), "npm pack made no {}", path.display());
    Ok(path)
}

/// What the smoke test measured.
pub struct Figures {
    pub install: Duration,
    pub first_answer: Duration,
    pub mcp_start: Duration,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "npm install {} ms; from the start of npm install to the first `initialize` answer of `npx unmodal mcp` \
             {} ms (of which `npx unmodal mcp` start to answer {} ms)",
            self.install.as_millis(),
            self.first_answer.as_millis(),
            self.mcp_start.as_millis()
        )
    }
}

/// A directory under the system's temporary one, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Result<Self> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let dir = std::env::temp_dir().join(format!("unmodal-xtask-{what}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A child that is killed if it is still running when this is dropped (a failed check).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"xtask-dist","version":"0"}}}"#;

/// Installs the two tarballs offline, with npm, into an empty directory (a cache, home and
/// Unmodal directories of its own too; and once more with `-g` into a prefix of its own, as
/// the README shows before publishing), then runs the installed command as a user would:
/// `npx unmodal --version`, `npx unmodal install --user-data-dir` (the host registered in a
/// profile, pointing at the platform package's binary; the carried extension unpacked),
/// `npx unmodal mcp` answering an `initialize`, a usage error's exit code passed on, and
/// the launcher's message when the platform package is missing.
pub fn smoke(main_tgz: &Path, platform_tgz: &Path) -> Result<Figures> {
    let tmp = TempDir::new("npm")?;
    let dir = |name: &str| -> Result<PathBuf> {
        let d = tmp.path().join(name);
        fs::create_dir_all(&d)?;
        Ok(d)
    };
    let project = dir("project")?;
    fs::write(project.join("package.json"), "{ \"private\": true }\n")?;
    let (home, cache, data, run, profile) =
        (dir("home")?, dir("npm-cache")?, dir("data")?, dir("run")?, dir("profile")?);
    let npm = |program: &str| {
        let mut cmd = Command::new(program);
        cmd.current_dir(&project)
            .env("HOME", &home)
            .env("USERPROFILE", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("UNMODAL_DATA_DIR", &data)
            .env("UNMODAL_RUNTIME_DIR", &run)
            .env("npm_config_cache", &cache)
            .env("npm_config_offline", "true")
            .env("npm_config_update_notifier", "false")
            .env("npm_config_audit", "false")
            .env("npm_config_fund", "false");
        cmd
    };

    let start = Instant::now();
    sh::output(npm("npm").args(["install", "--offline", "--no-audit", "--no-fund"]).arg(main_tgz).arg(platform_tgz))
        .context("npm install of the packed tarballs, offline")?;
    let install = start.elapsed();
    // The installed package carries the user docs as the repository has them.
    let installed = project.join("node_modules/unmodal");
    for (name, bytes) in user_docs(&sh::root())? {
        let got = fs::read(installed.join(&name)).with_context(|| format!("the installed `unmodal` has no {name}"))?;
        ensure!(got == bytes, "the installed `unmodal`'s {name} is not the repository's");
    }
    let mcp_start = Instant::now();
    let mut child = Reaped(
        npm("npx")
            .args(["--no-install", "unmodal", "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting `npx unmodal mcp`")?,
    );
    let mut stdin = child.0.stdin.take().context("no stdin")?;
    writeln!(stdin, "{INITIALIZE}")?;
    stdin.flush()?;
    let stdout = child.0.stdout.take().context("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = tx.send(BufReader::new(stdout).read_line(&mut line).map(|_| line));
    });
    let answer = rx
        .recv_timeout(Duration::from_secs(60))
        .context("`npx unmodal mcp` did not answer `initialize` within 60 s")?
        .context("reading `npx unmodal mcp`'s answer")?;
    let first_answer = start.elapsed();
    let mcp_start = mcp_start.elapsed();
    ensure!(
        answer.contains(r#""id":1"#) && answer.contains(r#""result":"#) && answer.contains(r#""name":"unmodal""#),
        "`npx unmodal mcp` answered `initialize` with {answer:?}"
    );
    drop(stdin);
    let status = child.0.wait()?;
    ensure!(status.success(), "`npx unmodal mcp` ended with {status} when its stdin closed");

    let version = sh::output(npm("npx").args(["--no-install", "unmodal", "--version"]))?;
    ensure!(version.trim() == format!("unmodal {VERSION}"), "`npx unmodal --version` printed {version:?}");

    // As the README installs them before they are published: globally, from the two files.
    let global = dir("global")?;
    sh::output(
        npm("npm")
            .args(["install", "-g", "--offline", "--no-audit", "--no-fund", "--prefix"])
            .arg(&global)
            .arg(main_tgz)
            .arg(platform_tgz),
    )
    .context("npm install -g of the packed tarballs, offline")?;
    let bin = if cfg!(windows) { global.join("unmodal.cmd") } else { global.join("bin/unmodal") };
    let version = sh::output(npm(&bin.to_string_lossy()).arg("--version"))?;
    ensure!(
        version.trim() == format!("unmodal {VERSION}"),
        "the globally installed `unmodal --version` printed {version:?}"
    );

    sh::output(npm("npx").args(["--no-install", "unmodal", "install", "--user-data-dir"]).arg(&profile))
        .context("`npx unmodal install`")?;
    let manifest_path = profile.join("NativeMessagingHosts/dev.unmodal.host.json");
    let manifest =
        fs::read_to_string(&manifest_path).with_context(|| format!("reading {}", manifest_path.display()))?;
    ensure!(
        manifest.contains("@unmodal"),
        "`npx unmodal install` registered a host that is not the platform package's binary: {manifest}"
    );
    let unpacked = fs::read_dir(data.join("extension"))
        .context("`npx unmodal install` unpacked no extension (a binary built without `cargo xtask build`?)")?
        .filter_map(Result::ok)
        .any(|e| e.path().join("manifest.json").is_file());
    ensure!(unpacked, "`npx unmodal install` unpacked no extension under {}", data.display());

    let usage = npm("npx").args(["--no-install", "unmodal", "no-such-command"]).output()?;
    ensure!(usage.status.code() == Some(2), "a usage error ended `npx unmodal` with {} instead of 2", usage.status);

    // Without the platform package the launcher says which one is missing.
    let platform_dir = fs::read_dir(project.join("node_modules/@unmodal"))?
        .filter_map(Result::ok)
        .next()
        .context("npm installed no @unmodal/ package")?
        .path();
    let platform = platform_dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
    fs::remove_dir_all(&platform_dir)?;
    let missing = npm("npx").args(["--no-install", "unmodal", "--version"]).output()?;
    let said = String::from_utf8_lossy(&missing.stderr);
    ensure!(
        missing.status.code() == Some(1)
            && said.contains(&format!("@unmodal/{platform}"))
            && said.contains("not installed"),
        "without its platform package `npx unmodal` ended with {} and said {said:?}",
        missing.status
    );
    Ok(Figures { install, first_answer, mcp_start })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn target(triple: &str) -> &'static Target {
        TARGETS.iter().find(|t| t.triple == triple).unwrap()
    }

    #[test]
    fn packages_name_node_platforms() {
        let windows = target("x86_64-pc-windows-gnu");
        assert_eq!(windows.npm_name(), "@unmodal/win32-x64");
        assert_eq!(windows.exe(), "unmodal.exe");
        assert_eq!(windows.archive_name("1.2.3"), "unmodal-1.2.3-x86_64-pc-windows-gnu.zip");
        assert_eq!(target("aarch64-apple-darwin").npm_name(), "@unmodal/darwin-arm64");
        let linux = target("x86_64-unknown-linux-gnu");
        assert_eq!(linux.archive_name("1.2.3"), "unmodal-1.2.3-x86_64-unknown-linux-gnu.tar.gz");
        assert_eq!(linux.linker_var(), "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
        let json = platform_package_json(linux, "1.2.3");
        for field in [r#""os": ["linux"]"#, r#""cpu": ["x64"]"#, r#""libc": ["glibc"]"#, r#""version": "1.2.3""#] {
            assert!(json.contains(field), "{field} missing from {json}");
        }
        assert!(!platform_package_json(windows, "1").contains("libc"));
    }

    #[test]
    fn the_main_package_depends_on_each_built_platform_at_its_version() {
        let targets = [target("x86_64-unknown-linux-gnu"), target("x86_64-pc-windows-gnu")];
        let json = main_package_json(&targets, "1.2.3");
        assert!(json.contains(
            "\"optionalDependencies\": {\n    \"@unmodal/linux-x64\": \"1.2.3\",\n    \"@unmodal/win32-x64\": \"1.2.3\"\n  }"
        ));
        assert!(json.contains(r#""bin": { "unmodal": "bin/unmodal.js" }"#));
        let js = launcher_js(&targets).unwrap();
        assert!(js.contains("const PLATFORMS = ['linux-x64', 'win32-x64'];"));
        assert!(js.starts_with("#!/usr/bin/env node\n"));
    }

    fn files() -> Vec<(String, Vec<u8>, u32)> {
        vec![
            ("unmodal".into(), b"\x7fELF binary".to_vec(), 0o755),
            ("README.md".into(), b"# Unmodal\n".to_vec(), 0o644),
        ]
    }

    #[test]
    fn a_tar_gz_holds_the_files_under_its_stem_with_their_modes() {
        let tmp = TempDir::new("tar-test").unwrap();
        let path = tmp.path().join("a.tar.gz");
        tar_gz(&path, "unmodal-1-x", &files()).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(fs::File::open(&path).unwrap()));
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            let header = entry.header();
            seen.push((entry.path().unwrap().display().to_string(), bytes, header.mode().unwrap()));
            assert_eq!(header.mtime().unwrap(), MTIME);
        }
        let want: Vec<_> = files().into_iter().map(|(n, b, m)| (format!("unmodal-1-x/{n}"), b, m)).collect();
        assert_eq!(seen, want);
        // The same files give the same bytes.
        let again = tmp.path().join("b.tar.gz");
        tar_gz(&again, "unmodal-1-x", &files()).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fs::read(&again).unwrap());
    }

    #[test]
    fn a_zip_holds_the_files_under_its_stem_with_their_modes() {
        let tmp = TempDir::new("zip-test").unwrap();
        let path = tmp.path().join("a.zip");
        zip_archive(&path, "unmodal-1-x", &files()).unwrap();
        let mut archive = zip::ZipArchive::new(fs::File::open(&path).unwrap()).unwrap();
        let mut seen = Vec::new();
        for i in 0..archive.len() {
            let mut file = archive.by_index(i).unwrap();
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).unwrap();
            seen.push((file.name().unwrap().into_owned(), bytes, file.unix_mode().unwrap() & 0o777));
        }
        let want: Vec<_> = files().into_iter().map(|(n, b, m)| (format!("unmodal-1-x/{n}"), b, m)).collect();
        assert_eq!(seen, want);
    }

    /// The archives carry the reference in docs/ beside the README, at the same paths, so the
    /// README's links work in an unpacked archive.
    #[test]
    fn an_archive_carries_the_user_docs() {
        let root = sh::root();
        let tmp = TempDir::new("docs-test").unwrap();
        let binary = tmp.path().join("unmodal");
        fs::write(&binary, b"binary").unwrap();
        let built = Built { target: target("x86_64-unknown-linux-gnu"), binary };
        let files = archive_files(&root, &built).unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _, _)| n.as_str()).collect();
        for want in [
            "unmodal",
            "README.md",
            "SECURITY.md",
            "BENCHMARKS.md",
            "docs/README.md",
            "docs/tools.md",
            "docs/kinds/README.md",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        let on_disk = fs::read_dir(root.join("docs"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
            .count();
        assert_eq!(names.iter().filter(|n| n.starts_with("docs/") && n.matches('/').count() == 1).count(), on_disk);
        let path = tmp.path().join("a.tar.gz");
        tar_gz(&path, "unmodal-1-x", &files).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(fs::File::open(&path).unwrap()));
        let inside: Vec<String> =
            archive.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect();
        assert!(inside.contains(&"unmodal-1-x/docs/kinds/passkey.md".to_owned()), "{inside:?}");
        assert!(
            main_package_json(&[built.target], "1")
                .contains(r#""files": ["bin/", "docs/", "SECURITY.md", "BENCHMARKS.md"]"#)
        );
    }

    #[test]
    fn sha256sums_reads_as_sha256sum_writes() {
        let tmp = TempDir::new("sums-test").unwrap();
        let path = tmp.path().join("abc.zip");
        fs::write(&path, "abc").unwrap();
        assert_eq!(
            sha256sums(&[path]).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  abc.zip\n"
        );
    }

    /// The npm packages, made from this machine's binary (the release one `cargo xtask build`
    /// makes, or the test build's that `cargo xtask test` names), packed, installed offline
    /// into an empty directory and run. Without that binary or npm this says so and passes,
    /// except under `CI=true`.
    #[test]
    fn the_npm_package_installs_offline_and_serves_mcp() {
        let root = sh::root();
        let host = host_triple().unwrap();
        let Some(target) = TARGETS.iter().find(|t| t.triple == host) else {
            eprintln!("skipped: no npm package is made for this machine ({host})");
            return;
        };
        let binary = std::env::var_os("UNMODAL_TEST_HOST")
            .map_or_else(|| root.join("target/release").join(target.exe()), PathBuf::from);
        if !binary.is_file() || !sh::have("npm") {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "{} or npm is missing: run `cargo xtask build` first", binary.display());
            eprintln!("skipped: {} or npm is missing (run `cargo xtask build`)", binary.display());
            return;
        }
        let tmp = TempDir::new("npm-pack").unwrap();
        let built = [Built { target, binary }];
        let packed = npm_packages(tmp.path(), VERSION, &built, &user_docs(&root).unwrap()).unwrap();
        assert_eq!(packed.main.file_name().unwrap(), format!("unmodal-{VERSION}.tgz").as_str());
        let figures = smoke(&packed.main, &packed.platforms[0].1).unwrap();
        eprintln!("{figures}");
    }
}
