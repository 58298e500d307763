//! Every example in the user docs (README.md and docs/**/*.md, files added later included)
//! is run or checked against the code's own schema, by the real `unmodal` binary. Each fenced
//! block says what it is after its language, and a block that does not is a failure:
//!
//! - ```` ```sh cli ````: commands. `unmodal …` is parsed by the real CLI (`--help` appended:
//!   every subcommand, option and value is read, nothing runs); a synopsis (`[--flag X]...`)
//!   must name only options `unmodal <command> --help` lists. `cargo xtask X` must be a
//!   command of xtask, `chromium` flags the ones the tested launches pass, an `npm install` of
//!   tarballs the names `cargo xtask dist` packs at this version.
//! - ```` ```jsonc mcp-config ````: an MCP client's config; Unmodal's `args` are parsed as above,
//!   a driver's `npx` package must be at the version pinned in tests/peers/.
//! - ```` ```jsonc calls ````: lines `→ tool {arguments}` (or `// → …`), and in a block marked
//!   `tool=NAME` lines starting with `{`, are tool calls: checked against the schema the real
//!   `unmodal mcp` lists in `tools/list`, then made to it (no browser): the server's own
//!   validation must let them through to `extension_not_connected`. Other lines are answers.
//! - ```` ```json config ````: `config.json`, which the real `unmodal doctor` must accept.
//! - ```` ```text output ````: what a program prints; nothing to run.
//! - ```` ```js tested-by=MODULE::TEST ```` (any language): code an end-to-end test runs (its
//!   driver script makes the same calls); the test must exist in tests/tests/MODULE.rs.
//!
//! The `| call |` tables of `interact`'s forms are checked too: every key they name is a
//! property of the tool's schema, and every quoted value fits that property.

use anyhow::{Context, Result, bail, ensure};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use unmodal_e2e::artifacts::{Artifacts, repo_root};
use unmodal_e2e::json_schema;
use unmodal_e2e::markdown::{self, Block};

const KINDS: [&str; 5] = ["cli", "mcp-config", "calls", "config", "output"];
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn doc_blocks() -> Result<Vec<Block>> {
    let mut out = Vec::new();
    for file in markdown::doc_files(&repo_root())? {
        out.extend(markdown::blocks(&file)?);
    }
    Ok(out)
}

fn kind(block: &Block) -> Option<&str> {
    if block.marker_value("tested-by").is_some() {
        return Some("tested-by");
    }
    KINDS.into_iter().find(|k| block.has(k))
}

fn fail_all(what: &str, errs: Vec<String>) -> Result<()> {
    if errs.is_empty() {
        return Ok(());
    }
    bail!("{} {what}:\n  {}", errs.len(), errs.join("\n  "))
}

#[test]
fn every_doc_code_block_says_what_it_is() -> Result<()> {
    let blocks = doc_blocks()?;
    ensure!(blocks.len() > 10, "only {} code blocks found in the docs", blocks.len());
    let errs = blocks
        .iter()
        .filter(|b| kind(b).is_none())
        .map(|b| {
            format!(
                "{}: ```{} {}``` says neither of {KINDS:?} nor tested-by=MODULE::TEST (see tests/tests/docs_examples.rs)",
                b.place(),
                b.lang,
                b.markers.join(" ")
            )
        })
        .collect();
    fail_all("code blocks say nothing of what they are", errs)
}

#[test]
fn tested_by_blocks_name_tests_that_exist() -> Result<()> {
    let mut errs = Vec::new();
    for b in doc_blocks()? {
        let Some(name) = b.marker_value("tested-by") else { continue };
        let Some((module, test)) = name.split_once("::") else {
            errs.push(format!("{}: tested-by={name} is not MODULE::TEST", b.place()));
            continue;
        };
        let file = repo_root().join("tests/tests").join(format!("{module}.rs"));
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        if !source.contains(&format!("fn {test}(")) {
            errs.push(format!("{}: no test `{test}` in {}", b.place(), file.display()));
        }
    }
    fail_all("blocks name tests that are not there", errs)
}

// ---- tool calls ----

/// The `{…}` that starts `text`, up to its matching brace (strings read as JSON reads them).
fn json_prefix(text: &str) -> Option<&str> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&text[..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The tool calls a `calls` block makes: `(tool, arguments)`.
fn calls(block: &Block) -> Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for line in block.text.lines() {
        let rest = line.trim_start().trim_start_matches("//").trim_start();
        let (tool, json) = if let Some(after) = rest.strip_prefix("→ ") {
            let Some((tool, json)) = after.split_once(' ') else { continue };
            if !tool.chars().all(|c| c.is_ascii_lowercase() || c == '_') || !json.starts_with('{') {
                continue;
            }
            (tool.to_owned(), json)
        } else if let (Some(tool), true) = (block.marker_value("tool"), line.starts_with('{')) {
            (tool.to_owned(), line)
        } else {
            continue;
        };
        let json = json_prefix(json).with_context(|| format!("{}: an unclosed call: {line}", block.place()))?;
        let args: Value = serde_json::from_str(json).with_context(|| format!("{}: not JSON: {json}", block.place()))?;
        out.push((tool, args));
    }
    ensure!(!out.is_empty(), "{}: a `calls` block with no call in it", block.place());
    Ok(out)
}

/// The keys an `interact` form in a `| call |` table names, each with the quoted values given
/// to it: `{setup: true, dialog_type: "auth", match?: {realm?}}` → setup, dialog_type
/// ("auth"), match, realm.
fn signature(sig: &str) -> Vec<(String, Vec<String>)> {
    let cs: Vec<char> = sig.chars().collect();
    let (mut keys, mut expect_key, mut current) = (Vec::<(String, Vec<String>)>::new(), false, None);
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c == '{' || c == ',' {
            expect_key = true;
            if c == ',' {
                current = None;
            }
            i += 1;
        } else if c == '}' {
            current = None;
            i += 1;
        } else if c == '"' {
            let end = cs[i + 1..].iter().position(|&d| d == '"').map_or(cs.len(), |p| i + 1 + p);
            if let Some(k) = current {
                let (_, values): &mut (String, Vec<String>) = &mut keys[k];
                values.push(cs[i + 1..end.min(cs.len())].iter().collect());
            }
            i = end + 1;
        } else if expect_key && (c.is_ascii_alphabetic() || c == '_') {
            let start = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            keys.push((cs[start..i].iter().collect(), Vec::new()));
            current = Some(keys.len() - 1);
            expect_key = false;
        } else {
            i += 1;
        }
    }
    keys
}

/// The first cells of the rows of every `| call | what it does |` table in `text`.
fn call_table_forms(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_table = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("| call |") {
            in_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if in_table && !line.starts_with("|---") {
            let cell = line.trim_start_matches('|').split(" | ").next().unwrap_or_default();
            for (i, span) in cell.split('`').enumerate() {
                if i % 2 == 1 && span.starts_with('{') {
                    out.push((n + 1, span.to_owned()));
                }
            }
        }
    }
    out
}

struct Server {
    client: rmcp::service::RunningService<rmcp::service::RoleClient, unmodal_e2e::agent::Client>,
    schemas: HashMap<String, Value>,
    _runtime: tempfile::TempDir,
    _home: tempfile::TempDir,
}

/// The real `unmodal mcp`, with no browser anywhere (an empty private runtime directory), and
/// the tools it lists.
async fn server() -> Result<Server> {
    let art = Artifacts::find()?;
    let runtime = unmodal_e2e::private_dir("unmodal-docs-rt-")?;
    let home = tempfile::tempdir()?;
    let mut cmd = tokio::process::Command::new(&art.host);
    cmd.arg("mcp")
        .env("UNMODAL_RUNTIME_DIR", runtime.path())
        .env("HOME", home.path())
        .env("UNMODAL_DATA_DIR", home.path().join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("UNMODAL_CONFIG");
    let client = unmodal_e2e::agent::Client::default()
        .serve(TokioChildProcess::new(cmd).context("starting `unmodal mcp`")?)
        .await
        .context("MCP handshake with `unmodal mcp`")?;
    let schemas = client
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| (t.name.to_string(), Value::Object((*t.input_schema).clone())))
        .collect();
    Ok(Server { client, schemas, _runtime: runtime, _home: home })
}

impl Server {
    /// What is wrong with a documented call: against the listed schema, then as the server
    /// itself judges it (it must reach the point of wanting a browser).
    async fn judge(&self, tool: &str, args: &Value) -> Result<Vec<String>> {
        let Some(schema) = self.schemas.get(tool) else {
            return Ok(vec![format!(
                "no tool `{tool}` (tools/list has {:?})",
                self.schemas.keys().collect::<Vec<_>>()
            )]);
        };
        let errs = json_schema::check(schema, schema, args, tool);
        if !errs.is_empty() {
            return Ok(errs);
        }
        let Value::Object(map) = args.clone() else { return Ok(vec!["arguments that are not an object".into()]) };
        let result = match self.client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map)).await
        {
            Ok(r) => r,
            Err(e) => return Ok(vec![format!("the server refused the call: {e}")]),
        };
        let v = result.structured_content.clone().unwrap_or_default();
        let (code, param) = if result.is_error == Some(true) {
            (v["error"]["code"].as_str(), v["error"]["param"].as_str())
        } else {
            (v["code"].as_str(), v["param"].as_str())
        };
        let message = v["error"]["message"].as_str().or(v["error"].as_str()).unwrap_or_default();
        Ok(match (code, param) {
            (Some("extension_not_connected"), _) => vec![],
            // A path the docs name that is not on this machine: the rest of the call was read.
            (Some("invalid_params"), Some("files" | "save_to" | "save_dir")) if message.contains("does not exist") => {
                vec![]
            }
            _ => vec![format!("the server answered {v}")],
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_in_the_docs_fit_the_real_schema_and_server() -> Result<()> {
    let server = server().await?;
    let mut errs = Vec::new();
    let mut made = 0;
    for b in doc_blocks()?.iter().filter(|b| kind(b) == Some("calls")) {
        for (tool, args) in calls(b)? {
            made += 1;
            for e in server.judge(&tool, &args).await? {
                errs.push(format!("{}: {tool} {args}: {e}", b.place()));
            }
        }
    }
    ensure!(made >= 10, "only {made} documented calls found");
    // The check can fail: by the schema, and by the server's own reading past the schema.
    let wrong_type = serde_json::json!({"action": "handle_dialog", "setup": true, "dialog_type": "nope"});
    ensure!(!server.judge("interact", &wrong_type).await?.is_empty(), "a wrong dialog_type passed");
    let picked =
        serde_json::json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "accept": true});
    let refused = server.judge("interact", &picked).await?;
    ensure!(refused.iter().any(|e| e.contains("invalid_params")), "a device chooser's accept passed: {refused:?}");

    // interact's forms in the `| call |` tables: keys and quoted values.
    let schema = &server.schemas["interact"];
    let props = |s: &Value| s["properties"].as_object().cloned().unwrap_or_default();
    let mut known: Map<String, Value> = props(schema);
    known.extend(props(&schema["$defs"]["MatchArg"]));
    let mut forms = 0;
    for file in markdown::doc_files(&repo_root())? {
        let text = std::fs::read_to_string(&file)?;
        for (line, form) in call_table_forms(&text) {
            forms += 1;
            for (key, values) in signature(&form) {
                let place = format!("{}:{line}: `{form}`", file.display());
                let Some(prop) = known.get(&key) else {
                    errs.push(format!("{place}: `{key}` is no parameter of interact"));
                    continue;
                };
                for value in values {
                    for e in json_schema::check(schema, prop, &Value::String(value.clone()), &key) {
                        errs.push(format!("{place}: {e}"));
                    }
                }
            }
        }
    }
    ensure!(forms >= 30, "only {forms} forms found in `| call |` tables");
    let keys: Vec<String> =
        signature("{setup: true, dialog_type: \"auth\", match?: {realm?}}").into_iter().map(|(k, _)| k).collect();
    ensure!(keys == ["setup", "dialog_type", "match", "realm"], "the forms are read as {keys:?}");

    // Every kind the schema takes has a page of its own under docs/kinds/, named in its title.
    let mut titles = String::new();
    for file in markdown::all_files(&repo_root().join("docs/kinds"))? {
        titles.push_str(std::fs::read_to_string(&file)?.lines().next().unwrap_or_default());
    }
    let choices = schema["$defs"]["DialogTypeArg"]["oneOf"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<String> = choices
        .iter()
        .flat_map(|c| c.get("enum").and_then(Value::as_array).cloned().unwrap_or_else(|| vec![c["const"].clone()]))
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    ensure!(kinds.len() >= 15, "DialogTypeArg lists {kinds:?}");
    for kind in kinds.iter().filter(|k| *k != "all") {
        if !titles.contains(&format!("\"{kind}\"")) && !titles.contains(&format!("`{kind}`")) {
            errs.push(format!("dialog_type `{kind}` has no page in docs/kinds/ (its title names the kind)"));
        }
    }
    server.client.cancel().await?;
    fail_all("documented tool calls do not fit the server", errs)
}

// ---- commands ----

/// A command line split as a shell splits it (quotes, no expansion), its comment dropped.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '#') if !any && word.is_empty() => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

/// A block's commands, continuation lines joined.
fn command_lines(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut joined = String::new();
    for line in text.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            continue;
        }
        joined.push_str(line);
        let w = words(&joined);
        joined.clear();
        if !w.is_empty() {
            out.push(w);
        }
    }
    out
}

/// The options a `--help` lists, as clap prints them: an option's line starts with `-`,
/// indented a little (`  -h, --help`, `      --port <PORT>`), and is followed by its
/// description on the same line (short help) or on the next lines, indented further (long
/// help, once any description is long). An option only named in a description is not listed.
fn options(help: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if !(1..=6).contains(&indent) || !line.trim_start().starts_with('-') {
            continue;
        }
        for word in line.split_whitespace() {
            let word = word.trim_end_matches(',');
            if word.starts_with("--") {
                out.insert(word.to_owned());
            } else if !word.starts_with('-') && !word.starts_with('<') && !word.starts_with('[') {
                break; // the description
            }
        }
    }
    out
}

struct Cli {
    host: PathBuf,
    home: tempfile::TempDir,
    helps: HashMap<String, String>,
}

impl Cli {
    fn new() -> Result<Self> {
        Ok(Self { host: Artifacts::find()?.host, home: tempfile::tempdir()?, helps: HashMap::new() })
    }

    fn unmodal(&self) -> Command {
        let mut cmd = Command::new(&self.host);
        // A relative path is read where a user's project has its packages: tests/peers/ has
        // the pinned drivers installed (`--remote-allow-origins node_modules/…` must exist).
        cmd.current_dir(repo_root().join("tests/peers"));
        cmd.env("HOME", self.home.path()).env_remove("XDG_CONFIG_HOME").env_remove("UNMODAL_CDP_ENDPOINT");
        cmd
    }

    fn help(&mut self, sub: &str) -> Result<String> {
        if let Some(h) = self.helps.get(sub) {
            return Ok(h.clone());
        }
        let mut cmd = self.unmodal();
        if !sub.is_empty() {
            cmd.arg(sub);
        }
        let out = cmd.arg("--help").output()?;
        ensure!(out.status.success(), "`unmodal {sub} --help` failed: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        self.helps.insert(sub.to_owned(), text.clone());
        Ok(text)
    }

    /// `unmodal ARGS` as the real CLI reads it: a synopsis by its options, a command by clap's
    /// own parse (`--help` appended).
    fn judge(&mut self, args: &[String]) -> Result<Option<String>> {
        let synopsis = args.iter().any(|a| a.starts_with('[') || a.ends_with("...") || a.contains('|'));
        if synopsis {
            let sub = args.first().cloned().unwrap_or_default();
            let help = match self.help(&sub) {
                Ok(h) => h,
                Err(e) => return Ok(Some(format!("{e:#}"))),
            };
            let listed = options(&help);
            let missing: Vec<&str> = args
                .iter()
                .map(|a| a.trim_start_matches('[').trim_end_matches("...").trim_end_matches(']'))
                .filter(|a| a.starts_with("--"))
                .filter(|a| !listed.contains(a.split('=').next().unwrap_or(a)))
                .collect();
            return Ok((!missing.is_empty()).then(|| format!("`unmodal {sub} --help` lists no {missing:?}")));
        }
        let out = self.unmodal().args(args).arg("--help").output()?;
        Ok((!out.status.success()).then(|| {
            format!("the CLI refuses it: {}", String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or_default())
        }))
    }
}

fn read(path: &str) -> Result<String> {
    let p = repo_root().join(path);
    std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
}

/// What is wrong with one documented command line.
fn judge_command(cli: &mut Cli, w: &[String]) -> Result<Option<String>> {
    // `VAR=value cmd …`: the variables are the shell's.
    let w: Vec<String> = w.iter().skip_while(|a| a.contains('=') && !a.starts_with('-')).cloned().collect();
    // `cmd > log &`: the redirection and the `&` are the shell's, not the command's.
    let w: Vec<String> = w.into_iter().take_while(|a| !matches!(a.as_str(), ">" | ">>" | "2>&1" | "&")).collect();
    let Some(program) = w.first() else { return Ok(None) };
    let rest = &w[1..];
    let name = program.rsplit('/').next().unwrap_or(program);
    Ok(match name {
        "unmodal" | "unmodal.exe" => cli.judge(rest)?,
        "npx" => {
            let args: Vec<String> = rest.iter().skip_while(|a| a.starts_with('-')).cloned().collect();
            judge_npx(cli, &args)?
        }
        "cargo" => match rest.first().map(String::as_str) {
            Some("xtask") => {
                let main = read("xtask/src/main.rs")?;
                let cmd = rest.get(1).map(String::as_str).unwrap_or_default();
                if !main.contains(&format!("Some(\"{cmd}\")")) {
                    Some(format!("xtask has no command `{cmd}`"))
                } else {
                    let flags: Vec<&String> =
                        rest[2..].iter().filter(|a| a.starts_with("--") && !main.contains(a.as_str())).collect();
                    (!flags.is_empty()).then(|| format!("xtask's usage names no {flags:?}"))
                }
            }
            Some("test") => {
                let package = rest.iter().skip_while(|a| *a != "-p").nth(1).cloned().unwrap_or_default();
                let known = ["engine", "native-host", "xtask", "tests"].iter().any(|d| {
                    read(&format!("{d}/Cargo.toml")).is_ok_and(|t| t.contains(&format!("name = \"{package}\"")))
                });
                (!known).then(|| format!("no package `{package}` in the workspace"))
            }
            other => Some(format!("`cargo {other:?}` is not among the commands this test knows")),
        },
        // The recipe for a browser you start yourself: the flags the tested launches pass.
        "chromium" => {
            let launches = read("tests/src/browser.rs")? + &read("native-host/src/browser/mod.rs")?;
            let unknown: Vec<&str> = rest
                .iter()
                .filter(|a| a.starts_with("--"))
                .map(|a| a.split('=').next().unwrap_or(a))
                .filter(|f| !launches.contains(f))
                .collect();
            (!unknown.is_empty()).then(|| format!("no tested launch passes {unknown:?}"))
        }
        // The tarballs `cargo xtask dist` packs (its smoke test installs them the same way).
        "npm" if rest.first().is_some_and(|a| a == "install") => {
            let platforms = ["linux-x64", "win32-x64", "darwin-arm64", "darwin-x64"];
            let wrong: Vec<&String> = rest[1..]
                .iter()
                .filter(|a| !a.starts_with('-'))
                .filter(|a| {
                    let Some(file) = a.strip_prefix("./target/dist/npm/") else { return true };
                    file != format!("unmodal-{VERSION}.tgz")
                        && !platforms.iter().any(|p| file == format!("unmodal-{p}-{VERSION}.tgz"))
                })
                .collect();
            (!wrong.is_empty()).then(|| format!("not a tarball `cargo xtask dist` packs at {VERSION}: {wrong:?}"))
        }
        "cp" | "mkdir" | "chmod" | "cd" | "export" | "sha256sum" | "tar" | "unzip" => None,
        // A script's waiting and ending (docs/frameworks.md's `--serve` recipe).
        "until" | "kill" => None,
        other => Some(format!("`{other}`: a program this test does not know how to check")),
    })
}

/// `npx PACKAGE ARGS`: Unmodal's own parsed by its CLI, a driver at the version the tests pin.
fn judge_npx(cli: &mut Cli, args: &[String]) -> Result<Option<String>> {
    let Some(spec) = args.first() else { return Ok(Some("npx without a package".into())) };
    if spec == "unmodal" {
        return cli.judge(&args[1..]);
    }
    let (name, version) = match spec.rsplit_once('@') {
        Some((n, v)) if !n.is_empty() => (n, v),
        _ => (spec.as_str(), ""),
    };
    let peers: Value = serde_json::from_str(&read("tests/peers/package.json")?)?;
    Ok(match peers["devDependencies"][name].as_str() {
        Some(pinned) if pinned == version => None,
        Some(pinned) => Some(format!("{spec}: the tests pin {name} at {pinned}")),
        None => Some(format!("{spec}: not a driver pinned in tests/peers/package.json")),
    })
}

/// JSON with `//` comments; a comment that holds a server entry (`// or: "x": {…}`) is kept
/// aside so that it is checked too.
fn strip_comments(text: &str) -> (String, Vec<String>) {
    let (mut out, mut aside) = (String::new(), Vec::new());
    for line in text.lines() {
        let mut in_str = false;
        let mut cut = line.len();
        let bytes = line.as_bytes();
        for i in 0..bytes.len() {
            match bytes[i] {
                b'"' if i == 0 || bytes[i - 1] != b'\\' => in_str = !in_str,
                b'/' if !in_str && bytes.get(i + 1) == Some(&b'/') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
        }
        let comment = &line[cut..];
        if let Some(json) = comment.find('{').and_then(|at| json_prefix(&comment[at..])) {
            aside.push(json.to_owned());
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    (out, aside)
}

fn servers(config: &Value) -> Vec<Value> {
    let map = config.get("mcpServers").unwrap_or(config);
    map.as_object().into_iter().flatten().map(|(_, v)| v.clone()).filter(|v| v.get("command").is_some()).collect()
}

fn judge_mcp_config(cli: &mut Cli, block: &Block) -> Result<Vec<String>> {
    let (text, aside) = strip_comments(&block.text);
    let text = text.trim();
    let text = if text.starts_with('"') { format!("{{{text}}}") } else { text.to_owned() };
    let config: Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON: {text}", block.place()))?;
    let mut entries = servers(&config);
    for json in aside {
        entries.push(serde_json::from_str(&json).with_context(|| format!("{}: not JSON: {json}", block.place()))?);
    }
    ensure!(!entries.is_empty(), "{}: an MCP config with no server in it", block.place());
    let mut errs = Vec::new();
    for server in entries {
        let mut line = vec![server["command"].as_str().unwrap_or_default().to_owned()];
        line.extend(server["args"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned));
        if let Some(e) = judge_command(cli, &line)? {
            errs.push(format!("{}: {}: {e}", block.place(), line.join(" ")));
        }
    }
    Ok(errs)
}

#[test]
fn commands_in_the_docs_parse_with_the_real_cli() -> Result<()> {
    let mut cli = Cli::new()?;
    let (mut errs, mut checked) = (Vec::new(), 0);
    for b in doc_blocks()? {
        match kind(&b) {
            Some("cli") => {
                for line in command_lines(&b.text) {
                    checked += 1;
                    if let Some(e) = judge_command(&mut cli, &line)? {
                        errs.push(format!("{}: {}: {e}", b.place(), line.join(" ")));
                    }
                }
            }
            Some("mcp-config") => {
                checked += 1;
                errs.extend(judge_mcp_config(&mut cli, &b)?);
            }
            _ => {}
        }
    }
    ensure!(checked >= 15, "only {checked} commands found in the docs");
    fail_all("documented commands do not parse", errs)
}

/// Commands named in the prose (`unmodal pilot on --user-data-dir DIR`) are read by the real
/// CLI too; a span with a placeholder (`<id>`, `DIR|FILE`, `[--flag]`) by the options it names.
#[test]
fn commands_in_the_prose_parse_with_the_real_cli() -> Result<()> {
    let mut cli = Cli::new()?;
    let (mut errs, mut checked) = (Vec::new(), 0);
    for file in markdown::doc_files(&repo_root())? {
        let text = std::fs::read_to_string(&file)?;
        for (line, span) in markdown::code_spans(&text) {
            let w = words(&span);
            let w: Vec<String> = w.into_iter().skip_while(|a| a.contains('=') && !a.starts_with('-')).collect();
            // `unmodal <command> --help`, and the host mode Chrome starts, are not commands to read.
            if w.first().is_none_or(|p| p != "unmodal") || w.len() < 2 {
                continue;
            }
            if w[1].starts_with(['<', '…']) || w[1].starts_with("chrome-extension:") {
                continue;
            }
            checked += 1;
            let mut args = w[1..].to_vec();
            // A placeholder, or an option named without its value (`unmodal mcp --cdp-endpoint`):
            // read the options it names, as a synopsis.
            let named = args.last().is_some_and(|a| a.starts_with("--")) && args.len() > 1;
            if named || args.iter().any(|a| a.contains('<') || a.contains('…')) {
                args.push("[…]".into());
            }
            if let Some(e) = cli.judge(&args)? {
                errs.push(format!("{}:{line}: `{span}`: {e}", file.display()));
            }
        }
    }
    ensure!(checked >= 30, "only {checked} commands found in the prose");
    fail_all("commands in the prose do not parse", errs)
}

/// A command this test would pass must be one the CLI takes, and one it refuses must fail.
#[test]
fn the_command_check_can_fail() -> Result<()> {
    let mut cli = Cli::new()?;
    let w = |s: &str| words(s);
    assert_eq!(judge_command(&mut cli, &w("unmodal browser --headless --port 0"))?, None);
    assert!(judge_command(&mut cli, &w("unmodal browser --no-such-flag"))?.is_some());
    assert!(judge_command(&mut cli, &w("unmodal mcp --extension-id not-an-id"))?.is_some());
    assert!(judge_command(&mut cli, &w("unmodal mcp --cdp-endpoint URL [--no-such-flag X]"))?.is_some());
    // Options in both layouts of clap's help are read; one only named in a description is not.
    assert_eq!(judge_command(&mut cli, &w("unmodal mcp --browser [--headless]"))?, None);
    assert!(judge_command(&mut cli, &w("unmodal call interact [--serve]"))?.is_some());
    let short = "Options:\n  -p, --port <PORT>  DevTools port, not --nope\n  -h, --help         Print help\n";
    let long = "Options:\n      --browser\n          Start it (`--port`)\n      --port <PORT>\n          Its port\n";
    assert_eq!(options(short).into_iter().collect::<Vec<_>>(), ["--help", "--port"]);
    assert_eq!(options(long).into_iter().collect::<Vec<_>>(), ["--browser", "--port"]);
    assert!(judge_command(&mut cli, &w("cargo xtask no-such-command"))?.is_some());
    assert!(judge_command(&mut cli, &w("npm install ./target/dist/npm/unmodal-0.0.0.tgz"))?.is_some());
    assert!(judge_command(&mut cli, &w("npx @playwright/mcp@0.0.1 --cdp-endpoint x"))?.is_some());
    assert!(judge_command(&mut cli, &w("rm -rf /"))?.is_some());
    assert_eq!(judge_command(&mut cli, &w("unmodal mcp --cdp-endpoint URL --serve > serve.log &"))?, None);
    assert!(judge_command(&mut cli, &w("unmodal mcp --no-such-flag > serve.log &"))?.is_some());
    assert_eq!(words("a 'b c' \"d\" # e"), ["a", "b c", "d"]);
    Ok(())
}

#[test]
fn config_examples_are_accepted_by_the_real_doctor() -> Result<()> {
    let art = Artifacts::find()?;
    let (mut errs, mut checked) = (Vec::new(), 0);
    for b in doc_blocks()?.iter().filter(|b| kind(b) == Some("config")) {
        checked += 1;
        let dir = tempfile::tempdir()?;
        let runtime = unmodal_e2e::private_dir("unmodal-docs-rt-")?;
        let file = dir.path().join("config.json");
        std::fs::write(&file, &b.text)?;
        let out = Command::new(&art.host)
            .arg("doctor")
            .env("HOME", dir.path())
            .env("UNMODAL_CONFIG", &file)
            .env("UNMODAL_RUNTIME_DIR", runtime.path())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !text.contains("ok   redaction config") {
            errs.push(format!("{}: `unmodal doctor` says {text}", b.place()));
        }
    }
    ensure!(checked >= 2, "only {checked} config examples found");
    fail_all("config examples are refused", errs)
}

/// docs/cli.md names every command and every option the binary has.
#[test]
fn the_cli_reference_names_every_command_and_option() -> Result<()> {
    let mut cli = Cli::new()?;
    let reference = read("docs/cli.md")?;
    let top = cli.help("")?;
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    ensure!(commands.len() >= 7, "`unmodal --help` lists {commands:?}");
    let mut errs = Vec::new();
    for c in &commands {
        if !reference.contains(&format!("`unmodal {c}")) {
            errs.push(format!("the command `unmodal {c}`"));
        }
        for flag in cli.help(c)?.split_whitespace().filter(|w| w.starts_with("--")) {
            let flag = flag.trim_end_matches([',', '.', ')', '`', '"', ':', ';', ']']);
            if flag != "--help" && flag.len() > 2 && !reference.contains(&format!("`{flag}")) {
                errs.push(format!("`unmodal {c} {flag}`"));
            }
        }
    }
    errs.dedup();
    fail_all("commands and options are missing from docs/cli.md", errs)
}

/// The README's test command is the one CI runs (`.ci/run`), and the README stays a quick start.
#[test]
fn the_readme_is_a_quick_start_whose_test_command_ci_runs() -> Result<()> {
    let readme = read("README.md")?;
    let lines = readme.lines().count();
    ensure!(lines <= 300, "README.md has {lines} lines: the reference belongs in docs/");
    let commands: Vec<Vec<String>> = markdown::blocks_of(Path::new("README.md"), &readme)
        .iter()
        .filter(|b| b.has("cli"))
        .flat_map(|b| command_lines(&b.text))
        .collect();
    let test = ["cargo", "xtask", "test"].map(str::to_owned).to_vec();
    ensure!(commands.contains(&test), "the README shows no `cargo xtask test`");
    let ci = read(".ci/run")?;
    ensure!(
        ci.lines().any(|l| l.trim() == "cargo xtask test"),
        ".ci/run does not run the README's test command `cargo xtask test`"
    );
    Ok(())
}
