//! Command line: host mode when Chrome starts us, otherwise the user's subcommands.

use crate::paths::Browser;
use crate::{browser, call_cli, doctor, extension_zip, host, install, mcp, pilot_cli};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "unmodal",
    version,
    about = "Keeps browser dialogs from freezing the tabs AI agents drive.",
    after_help = "Chrome starts `unmodal chrome-extension://<id>/` itself (host mode); you run the subcommands."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the agent over MCP on stdin/stdout (put this in your agent's MCP config).
    #[command(after_help = "A token for a remote browser: every local user can read a process's arguments \
(ps, /proc/PID/cmdline), but not its environment nor a file of yours with mode 0600. So put the token in \
UNMODAL_CDP_HEADERS (headers, one \"Name: value\" a line, sent with those of the flags) or \
--cdp-header-file, and a URL with a token in it in UNMODAL_CDP_ENDPOINT (used when no flag names the URL) \
or --cdp-endpoint-file. A file is refused unless it is yours and no one else may read or change it \
(chmod 600 FILE); on Windows its permissions are not checked.")]
    Mcp(McpArgs),
    /// Make one tool call, the same as an agent's MCP call, and print the answer as JSON: for
    /// shells, CI steps and scripts with no MCP client.
    #[command(after_help = CALL_HELP)]
    Call(CallArgs),
    /// Start a browser with Unmodal loaded, in a profile of its own, for your agent's driver.
    #[command(after_help = "Prints the DevTools endpoint and the MCP config lines for Playwright MCP, \
chrome-devtools-mcp or a script. A second `unmodal browser` on the same profile prints the running one's \
endpoint. Ctrl-C closes the browser.")]
    Browser(BrowserArgs),
    /// Register the native host with browsers so the extension can start it.
    Install(Target),
    /// Remove what `install` wrote.
    Uninstall(Target),
    /// Check the set-up and say what is missing and how to fix it.
    Doctor,
    /// Switch AI Web Pilot on or off, as a person (no MCP tool can), or say how it stands.
    #[command(after_help = "Whoever can run commands as you can run this: it is the person's switch, kept \
out of the agent's MCP tools. In a browser started with remote debugging (any browser a driver such as \
Playwright MCP or chrome-devtools-mcp attaches to) it is the only way to switch the pilot on.")]
    Pilot(PilotArgs),
    /// Write the extension for a browser you do not run here (a hosted or pooled one): a zip
    /// to upload, or a directory to load, with manifest.json at the root and no `key`.
    #[command(after_help = "Without `key` the browser gives the extension an ID of its own (pass it to `unmodal \
mcp --cdp-endpoint` as --extension-id), and the native host that `unmodal install` registers does not answer it: for \
a browser on this machine use `unmodal browser` or `unmodal install` instead. With --keep-key the ID is Unmodal's \
fixed one, which `unmodal mcp --cdp-endpoint` expects by default. The same build writes the same bytes.")]
    Extension(ExtensionArgs),
}

const CALL_HELP: &str = "Tools: interact, observe, configure, highlight_element, manage_state, execute_javascript, \
with the arguments an MCP client sends (the schemas `tools/list` gives). For example:
  unmodal call interact '{\"action\": \"handle_dialog\", \"setup\": true, \"dialog_type\": \"confirm\", \"accept\": false, \"once\": false}'
  unmodal call observe '{\"what\": \"dialogs\"}'

It asks the hosts `unmodal mcp` asks: the browsers with Unmodal that run for you (UNMODAL_RUNTIME_DIR, newest \
first), and a remote browser while an `unmodal mcp --cdp-endpoint URL` of yours runs (an agent's, or one started with \
--serve for scripts).

Files: this call has no MCP client's roots, so a path it names (files, save_dir, save_to) must be inside \
files.allowed_dirs of Unmodal's config.json (a printed PDF may also go to Unmodal's own data directory).

It never switches AI Web Pilot on or off: only a person's `unmodal pilot` does.

Exit status: 0 with the tool's answer; 1 with the tool's structured error ({\"error\": {\"code\", \"message\", ...}}, or \
execute_javascript's {\"success\": false, ...}); 2 when the call reached no tool (no such tool, arguments that are \
not a JSON object).";

#[derive(Args)]
struct CallArgs {
    /// The tool's name, as in the MCP tools list.
    tool: String,
    /// Its arguments: one JSON object.
    #[arg(default_value = "{}", value_name = "JSON")]
    arguments: String,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("out").required(true).multiple(true)))]
struct ExtensionArgs {
    /// Write the upload-ready zip here.
    #[arg(long, value_name = "FILE", group = "out")]
    zip: Option<PathBuf>,
    /// Write the files, unpacked, into this new or empty directory.
    #[arg(long, value_name = "DIR", group = "out")]
    dir: Option<PathBuf>,
    /// Keep the manifest's `key`, so the browser gives the extension Unmodal's fixed ID
    /// (for providers that accept a `key`; browser-use Cloud refuses one).
    #[arg(long)]
    keep_key: bool,
}

#[derive(Args)]
struct McpArgs {
    /// Start Unmodal's browser (as `unmodal browser`) when no browser is connected, and close
    /// it when the agent leaves; point the driver at its port (`--port`).
    #[arg(long, conflicts_with_all = ["cdp_endpoint", "cdp_endpoint_file"])]
    browser: bool,
    /// A browser you do not run here (a hosted or pooled one) that loaded Unmodal's
    /// extension (`unmodal extension --zip`): its CDP URL, http(s)://host:port or the
    /// ws(s)://… URL the provider gave. This process then keeps the state itself and reaches
    /// the extension over that URL; no native host is needed. A token in the URL shows in
    /// the process list: see below.
    #[arg(long, value_name = "URL", conflicts_with = "cdp_endpoint_file")]
    cdp_endpoint: Option<String>,
    /// The --cdp-endpoint URL, read from this file (yours, mode 0600).
    #[arg(long, value_name = "FILE")]
    cdp_endpoint_file: Option<PathBuf>,
    /// A header the endpoint wants, "Name: value" (repeatable), e.g. "Authorization: Bearer …";
    /// sent only to the endpoint's host and port. A secret here shows in the process list:
    /// see below.
    #[arg(long = "cdp-header", value_name = "NAME: VALUE")]
    cdp_headers: Vec<String>,
    /// Headers read from this file (yours, mode 0600), one "Name: value" a line; blank lines
    /// and lines starting with # are skipped.
    #[arg(long, value_name = "FILE")]
    cdp_header_file: Option<PathBuf>,
    /// PEM certificates to trust besides the system's (a self-hosted fleet's own CA).
    #[arg(long, value_name = "FILE")]
    cdp_ca: Option<PathBuf>,
    /// Send the headers also when the endpoint's /json/version puts the browser's WebSocket
    /// on another host or port (they go only to the endpoint's own otherwise). Plain ws://
    /// to another machine after an https:// endpoint is refused all the same.
    #[arg(long)]
    cdp_header_any_host: bool,
    /// The most the remote browser's downloads are copied to this machine, in all, per
    /// session (MB; default 1024); past it a download stays on the browser's machine, and its
    /// record says so. Only with a remote browser.
    #[arg(long, value_name = "MB")]
    max_remote_downloads_mb: Option<u64>,
    /// The ID the browser gave Unmodal's extension (32 letters a-p): only that extension's
    /// worker is heard. [default: Unmodal's fixed ID, as `unmodal extension --keep-key` loads]
    #[arg(long, value_name = "ID", value_parser = extension_id)]
    extension_id: Option<String>,
    /// With --cdp-endpoint: serve no agent on stdio, only keep the remote browser's session
    /// (its rules, held dialogs, record) for `unmodal call`, until Ctrl-C or SIGTERM. Prints
    /// "serving …" on stdout once the browser's Unmodal answers.
    #[arg(long, conflicts_with = "browser")]
    serve: bool,
    #[command(flatten)]
    launch: BrowserArgs,
}

#[derive(Args)]
struct BrowserArgs {
    /// Run without a window.
    #[arg(long)]
    headless: bool,
    /// DevTools port for the driver; 0 picks any free one (printed).
    #[arg(long, default_value_t = 9222)]
    port: u16,
    /// Profile directory [default: <data dir>/profiles/default].
    #[arg(long, value_name = "DIR")]
    profile: Option<PathBuf>,
    /// The browser binary [default: the first Chromium or Chrome for Testing found].
    #[arg(long, value_name = "PATH")]
    browser_path: Option<PathBuf>,
    /// Let a WebSocket from this origin into the DevTools port (repeatable), as Chromium's
    /// --remote-allow-origins: a framework's own extension that talks to the browser, such
    /// as Stagehand's. Give its unpacked directory (e.g.
    /// node_modules/@browserbasehq/stagehand/dist/extension) and Unmodal lets in that
    /// extension's origin alone, or an origin such as chrome-extension://<id>.
    #[arg(long = "remote-allow-origins", value_name = "DIR|ORIGIN", value_parser = browser::allow::origin)]
    remote_allow_origins: Vec<String>,
}

impl BrowserArgs {
    fn options(self) -> browser::Options {
        browser::Options {
            headless: self.headless,
            port: self.port,
            profile: self.profile,
            browser_path: self.browser_path,
            remote_allow_origins: self.remote_allow_origins,
        }
    }
}

#[derive(Args)]
struct PilotArgs {
    #[arg(value_enum)]
    action: pilot_cli::Action,
    /// The browser to act on, by its profile directory (needed for `on` when several run).
    #[arg(long, value_name = "DIR")]
    user_data_dir: Option<PathBuf>,
}

#[derive(Args)]
struct Target {
    /// Which browser to register with.
    #[arg(long, value_enum, default_value = "all")]
    browser: BrowserChoice,
    /// Register inside this browser profile directory only (for `--user-data-dir` browsers).
    #[arg(long, value_name = "DIR")]
    user_data_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum BrowserChoice {
    Chrome,
    Chromium,
    Brave,
    Edge,
    All,
}

impl BrowserChoice {
    fn browsers(self) -> Vec<Browser> {
        match self {
            Self::Chrome => vec![Browser::Chrome],
            Self::Chromium => vec![Browser::Chromium],
            Self::Brave => vec![Browser::Brave],
            Self::Edge => vec![Browser::Edge],
            Self::All => Browser::ALL.to_vec(),
        }
    }
}

fn init_logging() {
    // stdout is the protocol in host and mcp mode: logs go to stderr only.
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_env("UNMODAL_LOG").unwrap_or_else(|_| "warn".into());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter)
        .with_filter(tracing_subscriber::filter::filter_fn(crate::cdp::conn::never_a_secret));
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

pub fn main() -> ExitCode {
    init_logging();
    // Chrome passes exactly [origin] (plus, on Windows, a window handle).
    if let Some(origin) = std::env::args().nth(1).filter(|a| a.starts_with("chrome-extension://")) {
        return report(host::run(&origin));
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Mcp(m) => {
            let given = crate::cdp::Given {
                endpoint: m.cdp_endpoint,
                endpoint_file: m.cdp_endpoint_file,
                headers: m.cdp_headers,
                header_file: m.cdp_header_file,
                ca: m.cdp_ca,
                header_any_host: m.cdp_header_any_host,
            };
            let remote = match given.resolve(|name| std::env::var_os(name)) {
                // Only the variable can get here with --browser: clap refuses the flags.
                Ok(Some(_)) if m.browser => {
                    return report(Err(anyhow::anyhow!(
                        "--browser starts a browser on this machine, and {} names a remote one: unset it, or \
leave out --browser",
                        crate::cdp::sources::ENDPOINT_VAR
                    )));
                }
                Ok(None) if m.max_remote_downloads_mb.is_some() => {
                    return report(Err(anyhow::anyhow!(
                        "--max-remote-downloads-mb caps what a remote browser's downloads copy here: give it with \
--cdp-endpoint (or {}), or leave it out",
                        crate::cdp::sources::ENDPOINT_VAR
                    )));
                }
                Ok(None) if m.serve => {
                    return report(Err(anyhow::anyhow!(
                        "--serve keeps a remote browser's session for `unmodal call`: give it with --cdp-endpoint (or \
{}); a local browser's host already serves `unmodal call`",
                        crate::cdp::sources::ENDPOINT_VAR
                    )));
                }
                Ok(None) if m.extension_id.is_some() => {
                    return report(Err(anyhow::anyhow!(
                        "--extension-id names the remote browser's Unmodal: give it with --cdp-endpoint (or {}), or \
leave it out",
                        crate::cdp::sources::ENDPOINT_VAR
                    )));
                }
                Ok(remote) => remote.map(|endpoint| mcp::Remote {
                    endpoint,
                    extension_id: m.extension_id.clone().unwrap_or_else(|| install::EXTENSION_ID.to_owned()),
                    max_copied: m.max_remote_downloads_mb.unwrap_or(1024).saturating_mul(1 << 20),
                }),
                Err(e) => return report(Err(e)),
            };
            report(mcp::run(m.browser.then(|| m.launch.options()), remote, m.serve))
        }
        Command::Call(c) => call_cli::run(&c.tool, &c.arguments),
        Command::Browser(b) => report(browser::run(&b.options())),
        Command::Install(t) => {
            report(install::install_all(&t.browser.browsers(), t.user_data_dir.as_deref()).map(|done| {
                for f in done.manifests {
                    println!("registered {}", f.display());
                }
                match done.extension {
                    Ok(dir) => println!(
                        "extension unpacked in {}\nNext: `unmodal browser` starts a browser with it loaded; for a \
browser you start yourself, load that directory (chrome://extensions, Developer mode, \"Load unpacked\") or pass \
--load-extension={}. A person switches AI Web Pilot on with `unmodal pilot on`.",
                        dir.display(),
                        dir.display()
                    ),
                    Err(why) => println!("no extension unpacked: {why}"),
                }
            }))
        }
        Command::Uninstall(t) => {
            report(install::uninstall_all(&t.browser.browsers(), t.user_data_dir.as_deref()).map(|files| {
                if files.is_empty() {
                    println!("nothing to remove: Unmodal was not installed there");
                }
                for f in files {
                    println!("removed {}", f.display());
                }
            }))
        }
        Command::Doctor => doctor::run(),
        Command::Pilot(p) => report(pilot_cli::run(p.action, p.user_data_dir.as_deref())),
        Command::Extension(e) => report(extension(&e)),
    }
}

/// `--extension-id`: Chromium's 32 letters a-p (any case).
fn extension_id(s: &str) -> Result<String, String> {
    let id = s.trim().to_ascii_lowercase();
    if crate::host::transport::bridge::valid_id(&id) {
        return Ok(id);
    }
    Err(format!(
        "{s:?} is not an extension ID: it is the 32 letters a-p in the extension's chrome-extension:// URL (the \
ID the browser gave your upload)"
    ))
}

fn extension(e: &ExtensionArgs) -> anyhow::Result<()> {
    let key = if e.keep_key {
        format!("with `key`: the browser names it {}, as `unmodal mcp --cdp-endpoint` expects", install::EXTENSION_ID)
    } else {
        "no `key`: pass the ID the browser gives it to `unmodal mcp --cdp-endpoint` as --extension-id".to_owned()
    };
    if let Some(file) = &e.zip {
        let w = extension_zip::write_zip(file, e.keep_key)?;
        println!("wrote {} ({} files, {} bytes; manifest.json at the root, {key})", file.display(), w.files, w.bytes);
    }
    if let Some(dir) = &e.dir {
        let w = extension_zip::write_dir(dir, e.keep_key)?;
        println!("wrote {} files into {} ({key})", w.files, dir.display());
    }
    Ok(())
}

fn report(r: anyhow::Result<()>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("unmodal: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_ids_are_chromiums_form_and_keep_key_needs_an_output() {
        assert_eq!(extension_id(" BIKFJGNMFNGJAKLOOEJGPOMKEBGNMCKK ").unwrap(), install::EXTENSION_ID);
        let err = extension_id("424242").unwrap_err();
        assert!(err.contains("32 letters a-p"), "{err}");
        assert!(Cli::try_parse_from(["unmodal", "extension", "--keep-key"]).is_err(), "an output is needed");
        assert!(Cli::try_parse_from(["unmodal", "extension", "--zip", "x.zip", "--keep-key"]).is_ok());
        let id = ["unmodal", "mcp", "--extension-id", install::EXTENSION_ID];
        // Parsed (the endpoint may come from UNMODAL_CDP_ENDPOINT); `main` refuses it without one.
        assert!(Cli::try_parse_from(id).is_ok());
        let Ok(Cli { command: Command::Mcp(m) }) = Cli::try_parse_from([
            "unmodal",
            "mcp",
            "--cdp-endpoint",
            "ws://h/x",
            "--extension-id",
            install::EXTENSION_ID,
        ]) else {
            panic!("taken with --cdp-endpoint");
        };
        assert_eq!(m.extension_id.as_deref(), Some(install::EXTENSION_ID));
    }

    #[test]
    fn call_takes_a_tool_and_json_and_browser_refuses_any_origin() {
        let Ok(Cli { command: Command::Call(c) }) = Cli::try_parse_from(["unmodal", "call", "observe"]) else {
            panic!("`unmodal call observe` is taken");
        };
        assert_eq!((c.tool.as_str(), c.arguments.as_str()), ("observe", "{}"));
        assert!(Cli::try_parse_from(["unmodal", "call"]).is_err(), "a tool is needed");
        let star = Cli::try_parse_from(["unmodal", "browser", "--remote-allow-origins", "*"]);
        assert!(star.is_err_and(|e| e.to_string().contains("drive the browser")));
        let origin = ["unmodal", "browser", "--remote-allow-origins", "http://localhost:3000"];
        assert!(Cli::try_parse_from(origin).is_ok());
        assert!(Cli::try_parse_from(["unmodal", "mcp", "--browser", "--serve"]).is_err());
    }
}
