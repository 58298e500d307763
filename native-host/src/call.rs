//! Where a tool call's arguments become a call: one validating constructor per call shape,
//! run wherever arguments enter — `unmodal mcp` before it forwards, the host's socket (which
//! checks again: anything local can write to it) and any command that sends tool calls
//! (`check`). Nothing past these functions reads a tool's raw arguments.

use crate::api::{self, ConfigureArgs, ObserveArgs, ParamError, PolicyCall};
use crate::host::kinds::args;
pub use crate::host::kinds::{DialogCall, DialogType, RuleSpec};
use crate::ipc::Tool;
use crate::pilot_api::{ExecuteArgs, HighlightArgs, ManageStateArgs};
use serde_json::Value;

/// An `interact` call: its arguments (as given, for the host it is forwarded to, which
/// checks them again) and what they ask.
#[derive(Debug)]
pub struct Interact {
    pub args: Value,
    pub call: DialogCall,
}

/// `interact`'s arguments as agents see them: the generic fields and every kind's own,
/// flat (`host/kinds/args.rs` assembles the schema).
pub struct InteractSchema;

impl schemars::JsonSchema for InteractSchema {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "InteractArgs".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        args::schema(g)
    }
}

/// A `configure` call: its arguments as read, and what they ask.
#[derive(Debug)]
pub struct Configure {
    pub args: ConfigureArgs,
    pub call: PolicyCall,
}

/// A call shape: what its arguments look like to agents (`Args`, the tool's input schema)
/// and its validating constructor.
pub trait Shape: Sized {
    type Args: schemars::JsonSchema;
    fn from_args(args: Value) -> Result<Self, ParamError>;
}

impl Shape for Interact {
    type Args = InteractSchema;
    fn from_args(args: Value) -> Result<Self, ParamError> {
        let call = args::validate(&args::read(args.clone())?)?;
        Ok(Interact { args, call })
    }
}

impl Shape for Configure {
    type Args = ConfigureArgs;
    fn from_args(args: Value) -> Result<Self, ParamError> {
        let args: ConfigureArgs = api::parse(args)?;
        let call = args.validate()?;
        Ok(Configure { args, call })
    }
}

/// `interact`'s arguments, parsed and validated.
pub fn interact(args: Value) -> Result<Interact, ParamError> {
    Interact::from_args(args)
}

/// `configure`'s arguments, parsed and validated.
pub fn configure(args: Value) -> Result<Configure, ParamError> {
    Configure::from_args(args)
}

/// Any tool's arguments, as its own constructor checks them: for a command that sends a
/// tool call it did not build (the host checks again).
pub fn check(tool: Tool, args: Value) -> Result<(), ParamError> {
    match tool {
        Tool::Interact => interact(args).map(drop),
        Tool::Configure => configure(args).map(drop),
        Tool::Observe => api::parse::<ObserveArgs>(args).map(drop),
        Tool::HighlightElement => api::parse::<HighlightArgs>(args)?.validate().map(drop),
        Tool::ExecuteJavascript => api::parse::<ExecuteArgs>(args)?.validate().map(drop),
        Tool::ManageState => api::parse::<ManageStateArgs>(args)?.validate().map(drop),
        // The test hook is refused by a host not started for tests (`answerer_hook.rs`).
        Tool::Info | Tool::PilotSwitch | Tool::TestAnswerer => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, MatchArg, bad};
    use crate::host::kinds::args::Shown;
    use crate::host::kinds::auth::{MAX_PASSWORD_UNITS, MAX_USERNAME_UNITS};
    use crate::host::kinds::file_chooser::MAX_FILES;
    use serde_json::json;
    use unmodal_engine::{DialogKind, MAX_MATCH_UNITS, MAX_TEXT_UNITS, RuleTarget};

    fn call(v: serde_json::Value) -> Result<DialogCall, ParamError> {
        interact(v).map(|c| c.call)
    }

    #[test]
    fn spec_requests_validate() {
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","accept":true,"once":true})),
            Ok(DialogCall::Setup {
                tab: None,
                once: true,
                rule: RuleSpec::Dialog {
                    target: RuleTarget::One(DialogKind::Confirm),
                    accept: true,
                    text: None,
                    matcher: MatchArg::default(),
                },
            })
        );
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"all","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogType::ALL })
        );
        assert_eq!(call(json!({"action":"handle_dialog","status":true})), Ok(DialogCall::Status { tab: None }));
        assert_eq!(
            call(json!({"action":"handle_dialog","accept":true,"text":"x","tab_id":4})),
            Ok(DialogCall::Respond { tab: Some(4), accept: true, text: Some("x".into()), dialog_id: None })
        );
    }

    #[test]
    fn a_kinds_foreign_match_fields_are_refused_by_the_table_first() {
        // The builders once refused match.scheme and match.rp_id themselves ("not with
        // dialog_type ..."), and a clear's save_to, files and save_dir; `FIELDS` refuses or
        // ignores them before any builder runs, so those checks could never answer.
        let err = |v| call(v).unwrap_err();
        for kind in
            ["print", "download", "file_chooser", "sign_in", "payment", "storage_access", "eye_dropper", "passkey"]
        {
            let e = err(json!({"action":"handle_dialog","setup":true,"dialog_type":kind,"match":{"scheme":"tel"}}));
            assert_eq!(e, bad("match.scheme", "only with setup: true and dialog_type \"app_link\""), "{kind}");
            if kind != "passkey" {
                let e = err(json!({"action":"handle_dialog","setup":true,"dialog_type":kind,"match":{"rp_id":"a.b"}}));
                assert_eq!(e, bad("match.rp_id", "only with setup: true and dialog_type \"passkey\""), "{kind}");
            }
        }
        for (field, value) in [("save_to", json!("/a.pdf")), ("files", json!(["/a"])), ("save_dir", json!("/d"))] {
            let mut v = json!({"action":"handle_dialog","clear":true});
            v[field] = value;
            assert_eq!(call(v), Ok(DialogCall::Clear { tab: None, what: DialogType::ALL }), "{field}");
        }
    }

    #[test]
    fn defaults_are_accept_and_once() {
        let c = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"prompt"})).unwrap();
        assert!(matches!(c, DialogCall::Setup { once: true, rule: RuleSpec::Dialog { accept: true, .. }, .. }));
    }

    #[test]
    fn errors_name_the_parameter() {
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(param(json!({"action":"handle_dialog","setup":true})), "dialog_type");
        assert_eq!(param(json!({"action":"handle_dialog","dialog_type":"alert"})), "dialog_type");
        assert_eq!(param(json!({"action":"handle_dialog","once":false})), "once");
        assert_eq!(param(json!({"action":"handle_dialog","tab_id":-3})), "tab_id");
        assert_eq!(param(json!({"action":"handle_dialog","status":true,"setup":true})), "status");
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"alert","dialog_id":3})),
            "dialog_id"
        );
        let long = "x".repeat(MAX_TEXT_UNITS + 1);
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"prompt","text":long.clone()})),
            "text"
        );
    }

    #[test]
    fn the_schema_tells_agents_the_limits_and_defaults() {
        let s = serde_json::to_value(schemars::schema_for!(ConfigureArgs)).unwrap();
        let t = &s["properties"]["timeout_s"];
        assert_eq!((t["minimum"].as_u64(), t["maximum"].as_u64()), (Some(1), Some(u64::from(MAX_TIMEOUT_S))));
        assert_eq!(t["default"], json!(DEFAULT_TIMEOUT_S));
        assert!(s.to_string().contains("must_respond"), "{s}");
        let s = serde_json::to_value(schemars::schema_for!(InteractSchema)).unwrap();
        assert_eq!(s["properties"]["text"]["maxLength"].as_u64(), Some(MAX_TEXT_UNITS as u64));
        assert_eq!(s["properties"]["once"]["default"], json!(true));
        let m = s.to_string();
        assert!(m.contains(&format!("\"maxLength\":{MAX_MATCH_UNITS}")), "{m}");
    }

    #[test]
    fn parse_names_the_wrong_parameter() {
        let p = |v| interact(v).unwrap_err();
        assert_eq!(p(json!({"action":"handle_dialog","dialog_type":"modal"})).param, "dialog_type");
        assert_eq!(p(json!({"action":"handle_dialog","accept":"yes"})).param, "accept");
        assert_eq!(p(json!({"action":"handle_dialog","colour":1})).param, "colour");
        assert_eq!(p(json!({"action":"handle_dialog","":1})).param, "arguments", "a nameless field");
        assert_eq!(p(json!({"accept":true})).param, "action");
        assert_eq!(p(json!({"action":"click"})).param, "action");
        assert!(interact(json!({"action":"handle_dialog"})).is_ok());
        assert_eq!(api::parse::<ObserveArgs>(serde_json::Value::Null).unwrap_err().param, "what");
    }

    /// Characterisation: a broad table of `interact` inputs through `validate`, every result
    /// (the `DialogCall`, or the error's parameter and message) recorded in
    /// `api_validate.snap` (insta: `INSTA_UPDATE=always` rewrites it; read the diff).
    #[test]
    fn validate_matches_its_snapshot() {
        use serde_json::{Map, Value};
        let long = |n: usize| Value::from("x".repeat(n));
        let s = |v: &str| Value::from(v);
        // (label, fields); a key "match.x" goes into the `match` object.
        let one = |k: &'static str, v: Value| vec![(k, v)];
        let singles: Vec<(String, Vec<(&'static str, Value)>)> = vec![
            ("-".into(), vec![]),
            ("accept=true".into(), one("accept", true.into())),
            ("accept=false".into(), one("accept", false.into())),
            ("text=x".into(), one("text", s("x"))),
            ("text=long".into(), one("text", long(MAX_TEXT_UNITS + 1))),
            ("tab_id=3".into(), one("tab_id", 3.into())),
            ("tab_id=-1".into(), one("tab_id", (-1).into())),
            ("once=false".into(), one("once", false.into())),
            ("once=true".into(), one("once", true.into())),
            ("dialog_id=4".into(), one("dialog_id", 4.into())),
            ("match={}".into(), one("match", Value::Object(Map::new()))),
            ("match.message_contains=m".into(), one("match.message_contains", s("m"))),
            ("match.message_contains=''".into(), one("match.message_contains", s(""))),
            ("match.message_contains=long".into(), one("match.message_contains", long(MAX_MATCH_UNITS + 1))),
            ("match.url_contains=u".into(), one("match.url_contains", s("u"))),
            ("match.url_contains=''".into(), one("match.url_contains", s(""))),
            ("match.url_contains=long".into(), one("match.url_contains", long(MAX_MATCH_UNITS + 1))),
            ("match.realm=R".into(), one("match.realm", s("R"))),
            ("match.realm=''".into(), one("match.realm", s(""))),
            ("match.realm=long".into(), one("match.realm", long(MAX_MATCH_UNITS + 1))),
            ("match.scheme=MailTo:".into(), one("match.scheme", s("MailTo:"))),
            ("match.scheme=1x".into(), one("match.scheme", s("1x"))),
            ("match.scheme=''".into(), one("match.scheme", s(""))),
            ("match.rp_id=example.com".into(), one("match.rp_id", s("example.com"))),
            ("match.rp_id=''".into(), one("match.rp_id", s(""))),
            ("match.rp_id=long".into(), one("match.rp_id", long(257))),
            ("match.accept_contains=pdf".into(), one("match.accept_contains", s("pdf"))),
            ("match.accept_contains=''".into(), one("match.accept_contains", s(""))),
            ("match.accept_contains=long".into(), one("match.accept_contains", long(257))),
            ("username=ada".into(), one("username", s("ada"))),
            ("password=pw".into(), one("password", s("pw"))),
            ("username=ada password=pw".into(), vec![("username", s("ada")), ("password", s("pw"))]),
            (
                "username=long password=pw".into(),
                vec![("username", long(MAX_USERNAME_UNITS + 1)), ("password", s("pw"))],
            ),
            (
                "username=ada password=long".into(),
                vec![("username", s("ada")), ("password", long(MAX_PASSWORD_UNITS + 1))],
            ),
            ("permission=camera".into(), one("permission", s("camera"))),
            ("permission=automatic-downloads".into(), one("permission", s("automatic-downloads"))),
            (
                "permission=automatic-downloads match.url_contains=u".into(),
                vec![("permission", s("automatic-downloads")), ("match.url_contains", s("u"))],
            ),
            ("chooser=usb".into(), one("chooser", s("usb"))),
            ("keep=true".into(), one("keep", true.into())),
            ("keep=false".into(), one("keep", false.into())),
            ("save_to=/tmp/a.pdf".into(), one("save_to", s("/tmp/a.pdf"))),
            ("save_to=rel.pdf".into(), one("save_to", s("rel.pdf"))),
            ("files=[/a]".into(), one("files", json!(["/a"]))),
            ("files=[]".into(), one("files", json!([]))),
            ("files=[rel]".into(), one("files", json!(["rel"]))),
            ("files=33".into(), one("files", json!(vec!["/a"; MAX_FILES + 1]))),
            ("save_dir=/d".into(), one("save_dir", s("/d"))),
            ("save_dir=d".into(), one("save_dir", s("d"))),
        ];
        // Fields whose pairs are tried too (which error wins when two are wrong).
        let pairable = [
            "accept=true",
            "accept=false",
            "text=x",
            "once=false",
            "dialog_id=4",
            "match.message_contains=m",
            "match.url_contains=u",
            "match.realm=R",
            "match.scheme=MailTo:",
            "match.rp_id=example.com",
            "match.accept_contains=pdf",
            "username=ada",
            "password=pw",
            "username=ada password=pw",
            "permission=camera",
            "chooser=usb",
            "keep=true",
            "save_to=/tmp/a.pdf",
            "files=[/a]",
            "save_dir=/d",
        ];
        let find = |l: &str| singles.iter().find(|(s, _)| s == l).unwrap().1.clone();
        let mut extras = singles.clone();
        for (i, a) in pairable.iter().enumerate() {
            for b in &pairable[i + 1..] {
                extras.push((format!("{a} {b}"), [find(a), find(b)].concat()));
            }
        }
        let modes: [(&str, &[(&str, bool)]); 5] = [
            ("answer", &[]),
            ("setup", &[("setup", true)]),
            ("setup+clear", &[("setup", true), ("clear", true)]),
            ("clear", &[("clear", true)]),
            ("status", &[("status", true)]),
        ];
        let kinds = [
            None,
            Some("alert"),
            Some("confirm"),
            Some("prompt"),
            Some("beforeunload"),
            Some("auth"),
            Some("permission"),
            Some("device_chooser"),
            Some("app_link"),
            Some("passkey"),
            Some("print"),
            Some("sign_in"),
            Some("payment"),
            Some("storage_access"),
            Some("eye_dropper"),
            Some("file_chooser"),
            Some("download"),
            Some("all"),
        ];
        let default_match = format!("{:?}", Shown(&MatchArg::default()));
        // The snapshot: the columns (the extra fields), the results (each once), then a row per
        // mode and dialog_type with the result of each column (`.`: that case is not tried).
        let mut results: Vec<String> = Vec::new();
        let mut rows = String::new();
        for (mode, flags) in modes {
            for kind in kinds {
                rows += &format!("{mode} {}:", kind.unwrap_or("-"));
                for (label, fields) in &extras {
                    // Pairs only where they decide most: a setup, or an answer.
                    let pair = !singles.iter().any(|(s, _)| s == label);
                    if pair && !matches!(mode, "setup" | "answer") {
                        rows += " .";
                        continue;
                    }
                    let mut v = Map::new();
                    v.insert("action".into(), s("handle_dialog"));
                    for (k, b) in flags {
                        v.insert((*k).into(), (*b).into());
                    }
                    if let Some(k) = kind {
                        v.insert("dialog_type".into(), s(k));
                    }
                    for (k, x) in fields {
                        match k.strip_prefix("match.") {
                            Some(m) => {
                                let o = v.entry("match").or_insert_with(|| Value::Object(Map::new()));
                                o.as_object_mut().unwrap().insert(m.into(), x.clone());
                            }
                            None => {
                                v.insert((*k).into(), x.clone());
                            }
                        }
                    }
                    let result = match args::read(Value::Object(v)) {
                        Err(e) => format!("parse error {}: {}", e.param, e.message),
                        Ok(a) => match args::validate(&a) {
                            Ok(c) => format!("{c:?}").replace(&default_match, "MatchArg::default()"),
                            Err(e) => format!("Err {}: {}", e.param, e.message),
                        },
                    };
                    let id = results.iter().position(|r| *r == result).unwrap_or_else(|| {
                        results.push(result);
                        results.len() - 1
                    });
                    rows += &format!(" {id}");
                }
                rows += "\n";
            }
        }
        let mut out = String::from("# columns\n");
        for (i, (label, _)) in extras.iter().enumerate() {
            out += &format!("{i} {label}\n");
        }
        out += "# results\n";
        for (i, r) in results.iter().enumerate() {
            out += &format!("{i} {r}\n");
        }
        out += "# rows\n";
        out += &rows;
        insta::with_settings!({snapshot_path => ".", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!("api_validate", out);
        });
    }

    /// Every path parameter takes a POSIX or a Windows absolute path, on every system, and
    /// refuses a relative one, naming itself.
    #[test]
    fn paths_are_absolute_on_posix_and_windows() {
        for ok in ["/home/me/a.pdf", "C:\\Users\\me\\a.pdf", "c:/Users/me/a.pdf", "\\\\server\\share\\a.pdf"] {
            assert!(api::is_absolute(ok), "{ok}");
            let held = [("save_to", json!(ok)), ("save_dir", json!(ok)), ("files", json!([ok]))];
            for (field, value) in held {
                let mut v = json!({"action":"handle_dialog"});
                v[field] = value;
                assert!(interact(v).is_ok(), "{field}: {ok}");
            }
        }
        for wrong in ["a.pdf", "C:a.pdf", "\\a.pdf", "1:\\a.pdf", "", "~/a.pdf"] {
            assert!(!api::is_absolute(wrong), "{wrong}");
            let held = [("save_to", json!(wrong)), ("save_dir", json!(wrong)), ("files", json!([wrong]))];
            for (field, value) in held {
                let mut v = json!({"action":"handle_dialog"});
                v[field] = value;
                assert_eq!(interact(v).unwrap_err().param, field, "{wrong}");
            }
        }
    }

    #[test]
    fn check_runs_each_tools_own_constructor() {
        assert_eq!(check(Tool::Interact, json!({"action":"handle_dialog","tab_id":-1})).unwrap_err().param, "tab_id");
        let policy = json!({"action":"dialog_policy","policy":"must_respond","timeout_s":0});
        assert_eq!(check(Tool::Configure, policy).unwrap_err().param, "timeout_s");
        assert_eq!(check(Tool::Observe, json!({})).unwrap_err().param, "what");
        assert_eq!(
            check(Tool::ExecuteJavascript, json!({"script":"1","timeout_ms":0})).unwrap_err().param,
            "timeout_ms"
        );
        assert!(check(Tool::Interact, json!({"action":"handle_dialog","status":true})).is_ok());
    }
}
