//! `unmodal doctor`: each thing Unmodal needs, whether it is there, and the fix if not.

use crate::extension;
use crate::install::{self, HOST_NAME};
use crate::ipc::{self, Tool};
use crate::paths::{self, Browser};
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;

struct Check {
    ok: bool,
    what: String,
    fix: Option<String>,
}

fn registration(browser: Browser, config_dir: &Path, exe: &Path) -> Check {
    let flag = browser.name().to_lowercase();
    let Some(file) = crate::platform::registered_manifest(browser, config_dir) else {
        return Check {
            ok: false,
            what: format!("{} host registration (none)", browser.name()),
            fix: Some(format!("run `unmodal install --browser {flag}`")),
        };
    };
    let what = format!("{} host registration ({})", browser.name(), file.display());
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Check { ok: false, what, fix: Some(format!("run `unmodal install --browser {flag}`")) };
    };
    let m: Value = serde_json::from_str(&text).unwrap_or_default();
    let path = m["path"].as_str().unwrap_or("");
    let fix = if m["name"] != HOST_NAME {
        Some(format!("the file is not a {HOST_NAME} manifest; run `unmodal install --browser {flag}`"))
    } else if !Path::new(path).is_file() {
        Some(format!("it names {path}, which does not exist; run `unmodal install --browser {flag}`"))
    } else if Path::new(path) != exe {
        Some(format!(
            "it names {path}, not this binary ({}); run `unmodal install --browser {flag}` if you moved it",
            exe.display()
        ))
    } else {
        None
    };
    Check { ok: fix.is_none(), what, fix }
}

async fn connection() -> Vec<Check> {
    match ipc::call(Tool::Info, Value::Null).await {
        Err(e) => vec![Check { ok: false, what: "browser connected".into(), fix: Some(e.message) }],
        Ok(info) => {
            let version = info["extension_version"].as_str().unwrap_or("?");
            let pilot = info["pilot_enabled"].as_bool().unwrap_or(false);
            let files = match info["file_access"].as_bool() {
                Some(true) => {
                    Check { ok: true, what: "file choosers can be given files (file access on)".into(), fix: None }
                }
                Some(false) => Check {
                    ok: false,
                    what: "file choosers can be given files (the extension's \"Allow access to file URLs\" is off)"
                        .into(),
                    fix: Some(
                        "chrome://extensions → Unmodal → Details → switch on \"Allow access to file URLs\"".into(),
                    ),
                },
                None => Check { ok: true, what: "file access: not reported by this extension".into(), fix: None },
            };
            let save_as = info["asks_where_to_save"].as_bool() == Some(true);
            let downloads = Check {
                ok: !save_as,
                what: if save_as {
                    "downloads can be saved (\"Ask where to save each file\" is on: the browser cancels every download)"
                        .into()
                } else {
                    "downloads can be saved (\"Ask where to save each file\" is off)".into()
                },
                fix: save_as.then(|| {
                    "chrome://settings/downloads → switch off \"Ask where to save each file before downloading\"".into()
                }),
            };
            // Said, not counted: it matters only beside a driver that takes downloads over.
            let taken = Check {
                ok: true,
                what: if info["devtools_connection"].as_bool() == Some(true) {
                    "downloads a driver takes over are seen (the host holds a DevTools connection of its own)".into()
                } else {
                    "downloads a driver takes over (Playwright's connectOverCDP with its defaults) are NOT seen: the \
host holds no DevTools connection, so they are neither recorded nor given the download rules (start the browser with \
a DevTools port, as `unmodal mcp --browser` does, or reach it with `unmodal mcp --cdp-endpoint`)"
                        .into()
                },
                fix: None,
            };
            vec![
                Check { ok: true, what: format!("browser connected (host pid {}, extension {version})", info["pid"]), fix: None },
                files,
                downloads,
                taken,
                Check {
                    ok: pilot,
                    what: if pilot {
                        "AI Web Pilot switched on (dialogs answered for the agent; highlight_element, manage_state and \
execute_javascript allowed)"
                            .into()
                    } else {
                        "AI Web Pilot switched on (it is off: dialogs are only reported, the pilot tools answer \
ai_web_pilot_disabled)"
                            .into()
                    },
                    fix: (!pilot).then(|| {
                        "run `unmodal pilot on` (only a person should: no MCP tool can); in a browser no program controls, the \
Unmodal toolbar popup also works"
                            .into()
                    }),
                },
            ]
        }
    }
}

/// Browsers started for a CDP driver (`debuggable.rs`), each with what Unmodal needs there.
/// Reported, not counted in the exit status: other browsers on the machine are not
/// necessarily the user's concern.
fn beside_drivers(exe: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    for b in crate::debuggable::running() {
        let endpoint = b.port.map_or_else(|| "port unknown".to_owned(), |p| format!("http://127.0.0.1:{p}"));
        let profile =
            b.user_data_dir.as_ref().map_or_else(|| "its default profile".to_owned(), |d| d.display().to_string());
        out.push(Check {
            ok: b.port.is_some(),
            what: format!("browser pid {} open to CDP drivers at {endpoint} (profile {profile})", b.pid),
            fix: b.port.is_none().then(|| "give it a fixed --remote-debugging-port, or a --user-data-dir (its DevToolsActivePort names the port)".into()),
        });
        let loaded = b.extensions.iter().any(|d| crate::debuggable::is_unmodal(d));
        out.push(Check {
            ok: loaded,
            what: format!("  Unmodal loaded in it{}", if loaded { " (--load-extension)" } else { "" }),
            fix: (!loaded).then(|| {
                "start it with --load-extension=<unmodal>/target/extension (branded Chrome 137+ ignores the flag: use Chromium or Chrome for Testing); ignore this if you installed Unmodal another way".into()
            }),
        });
        out.push(Check {
            ok: b.silent_debugger,
            what: "  started with --silent-debugger-extension-api".into(),
            fix: (!b.silent_debugger).then(|| {
                "without it the \"started debugging this browser\" bar shrinks the tab's viewport (the page sees a \
resize) whenever Unmodal's debugger attaches (must_respond, pilot tools): restart it with the flag, or use `unmodal \
browser`"
                    .into()
            }),
        });
        let reg = match &b.user_data_dir {
            Some(dir) => {
                let file = dir.join("NativeMessagingHosts").join(install::manifest_file_name());
                let fix = match std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok())
                {
                    None => Some(format!("run `unmodal install --user-data-dir {}`", dir.display())),
                    Some(m) if m["name"] != HOST_NAME || !Path::new(m["path"].as_str().unwrap_or("")).is_file() => {
                        Some(format!(
                            "{} is not usable; run `unmodal install --user-data-dir {}`",
                            file.display(),
                            dir.display()
                        ))
                    }
                    Some(m) if Path::new(m["path"].as_str().unwrap_or("")) != exe => Some(format!(
                        "it names {}, not this binary; run `unmodal install --user-data-dir {}` if you moved it",
                        m["path"].as_str().unwrap_or(""),
                        dir.display()
                    )),
                    Some(_) => None,
                };
                Check {
                    ok: fix.is_none(),
                    what: format!("  host registered for that profile ({})", file.display()),
                    fix,
                }
            }
            None => Check { ok: true, what: "  host registration: the browser's own (see above)".into(), fix: None },
        };
        out.push(reg);
    }
    out
}

/// The extension this binary carries, unpacked for browsers to load.
fn unpacked() -> Check {
    if !extension::carried() {
        return Check { ok: true, what: format!("extension: {}", extension::NOT_CARRIED), fix: None };
    }
    match paths::data_dir() {
        Ok(data) => {
            let dir = extension::dir(&data);
            let ok = extension::intact(&dir);
            Check {
                ok,
                what: format!("extension unpacked for this binary ({})", dir.display()),
                fix: (!ok).then(|| "run `unmodal install`".into()),
            }
        }
        Err(e) => Check { ok: false, what: "data directory".into(), fix: Some(e.to_string()) },
    }
}

/// The profiles `unmodal browser` made, each running or not, with its host registration.
fn own_profiles() -> Vec<Check> {
    let Ok(data) = paths::data_dir() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(crate::browser::profiles_dir(&data)) else { return Vec::new() };
    let running = crate::debuggable::running();
    let mut out = Vec::new();
    for dir in entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()) {
        let live = running.iter().find(|b| b.user_data_dir.as_deref().is_some_and(|d| paths::same_dir(d, &dir)));
        let state = match live {
            Some(b) => format!(
                "running, pid {}{}",
                b.pid,
                b.port.map(|p| format!(", http://127.0.0.1:{p}")).unwrap_or_default()
            ),
            None => "not running".into(),
        };
        out.push(Check { ok: true, what: format!("profile {} ({state})", dir.display()), fix: None });
        let registered = dir.join("NativeMessagingHosts").join(install::manifest_file_name()).is_file();
        out.push(Check {
            ok: registered,
            what: "  host registered in it".into(),
            fix: (!registered)
                .then(|| format!("`unmodal browser --profile {}` registers it as it starts", dir.display())),
        });
    }
    out
}

fn print(checks: &[Check]) {
    for c in checks {
        println!("{} {}", if c.ok { "ok  " } else { "MISS" }, c.what);
        if let Some(fix) = &c.fix {
            println!("       {fix}");
        }
    }
}

pub fn run() -> ExitCode {
    let mut checks = Vec::new();
    let exe = crate::platform::current_exe().unwrap_or_default();
    match paths::config_dir() {
        Ok(config) => {
            let regs: Vec<Check> = Browser::ALL.iter().map(|&b| registration(b, &config, &exe)).collect();
            // One registered browser is enough; list the others as hints, not failures.
            let any = regs.iter().any(|c| c.ok);
            checks.extend(regs.into_iter().map(|c| Check { ok: c.ok || any, ..c }));
        }
        Err(e) => checks.push(Check { ok: false, what: "configuration directory".into(), fix: Some(e.to_string()) }),
    }
    checks.push(unpacked());
    match crate::redact::Redactor::load() {
        Ok(_) => checks.push(Check { ok: true, what: "redaction config".into(), fix: None }),
        Err(e) => checks.push(Check {
            ok: false,
            what: "redaction config".into(),
            fix: Some(format!("{e}; fix the file (the host uses the built-in patterns meanwhile)")),
        }),
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    match rt {
        Ok(rt) => checks.extend(rt.block_on(connection())),
        Err(e) => checks.push(Check { ok: false, what: "async runtime".into(), fix: Some(e.to_string()) }),
    }
    print(&checks);
    let profiles = own_profiles();
    if !profiles.is_empty() {
        println!("Profiles of `unmodal browser`:");
    }
    print(&profiles);
    let drivers = beside_drivers(&exe);
    if !drivers.is_empty() {
        println!("Browsers open to CDP drivers (Playwright MCP, chrome-devtools-mcp, connectOverCDP):");
    }
    print(&drivers);
    if checks.iter().all(|c| c.ok) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
