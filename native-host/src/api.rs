//! The agent-facing parameters (MCP tool arguments) that are every kind's, their limits and
//! defaults, and the checks they share. A leaf: it knows nothing of the host and names no
//! kind. A kind's own fields, rule and checks are in its file (`host/kinds/`); `call.rs`
//! assembles them with these into each call shape and its one validating constructor.

use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use unmodal_engine::{MAX_MATCH_UNITS, Policy};
use zeroize::Zeroizing;

/// The watchdog's default: a held dialog nobody answers is dismissed after 10 s.
pub const DEFAULT_TIMEOUT_S: u32 = 10;
/// The longest a held dialog may wait for the agent.
pub const MAX_TIMEOUT_S: u32 = 600;
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InteractAction {
    /// Respond to, pre-configure, clear or query browser dialogs.
    HandleDialog,
}

/// A `dialog_type` as given: a kind's name or `all`, read against the kinds by `call.rs`
/// (its schema there lists them, each with its kind's own words).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct DialogTypeName(pub String);

impl JsonSchema for DialogTypeName {
    fn schema_name() -> Cow<'static, str> {
        "DialogTypeArg".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

/// "a" or "an", as `word` (a kind's name) begins: "an app_link", "an eye_dropper".
pub fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

// A kind's own match texts (an auth realm, a link's scheme) are in `more`, by name, read and
// checked by the kind; they show and compare like the others.
/// Conditions that narrow a rule to some dialogs (both must hold when both are given).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MatchArg {
    /// Only dialogs whose message contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub message_contains: Option<String>,
    /// Only dialogs on pages whose URL contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub url_contains: Option<String>,
    /// A kind's own match texts, by field name.
    #[serde(skip)]
    pub more: std::collections::BTreeMap<String, String>,
}

impl MatchArg {
    pub fn is_empty(&self) -> bool {
        self.message_contains.is_none() && self.url_contains.is_none() && self.more.is_empty()
    }

    /// With a kind's own match text `name`.
    pub fn with(mut self, name: &str, text: impl Into<String>) -> Self {
        self.more.insert(name.to_owned(), text.into());
        self
    }

    /// A kind's own match text `name`, if given.
    pub fn get(&self, name: &str) -> Option<&String> {
        self.more.get(name)
    }
}

/// As answers and the state file show it: the texts given, a kind's own among them.
impl Serialize for MatchArg {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(v) = &self.message_contains {
            m.serialize_entry("message_contains", v)?;
        }
        if let Some(v) = &self.url_contains {
            m.serialize_entry("url_contains", v)?;
        }
        for (k, v) in &self.more {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `interact` arguments every kind shares, as in the dialog-handling spec (the kinds' own
/// are beside them, flat, in the same call: `call.rs`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InteractArgs {
    /// What to do. `handle_dialog`: answer the pending dialog, or with `setup: true`
    /// pre-configure how future dialogs are answered.
    pub action: InteractAction,
    /// true = OK/accept, false = Cancel/dismiss. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub accept: Option<bool>,
    /// Text a prompt() returns when accepted. Ignored for other dialog types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub text: Option<String>,
    /// Target tab id (see `observe` with `what: "tabs"`). Default: the tracked tab, i.e.
    /// the active tab of the last focused window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
    /// true = configure an auto-response for future dialogs (do this before the action
    /// that triggers the dialog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<bool>,
    /// Which dialogs a setup applies to. Required with `setup: true` unless `clear`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog_type: Option<DialogTypeName>,
    /// true = answer only the next matching dialog, then revert to the default policy;
    /// false = keep answering until cleared. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub once: Option<bool>,
    /// With setup: remove auto-responses for `dialog_type` (default "all").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear: Option<bool>,
    /// With setup: apply the rule only to dialogs whose message and/or page URL contain
    /// these texts. The most specific matching rule wins, and the dialog's record names it.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<MatchArg>,
    /// true = only report pending dialogs and active auto-responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<bool>,
    /// Which held dialog to answer (`dialog_id` of a pending dialog). Needed when several
    /// are held open; with one, it may be left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog_id: Option<u64>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConfigureAction {
    /// How dialogs that no auto-response matches are handled in a tab.
    DialogPolicy,
}

/// `configure` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigureArgs {
    /// What to configure.
    pub action: ConfigureAction,
    /// For `dialog_policy`: auto, must_respond, auto_accept or auto_dismiss.
    pub policy: Policy,
    /// must_respond: seconds a held dialog waits for the agent before the watchdog
    /// dismisses it; 1 to 600, default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 600), extend("default" = 10))]
    pub timeout_s: Option<u32>,
    /// Target tab id. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

/// A validated `dialog_policy` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyCall {
    pub tab: Option<i64>,
    pub policy: Policy,
    pub timeout_s: u32,
}

impl ConfigureArgs {
    pub fn validate(&self) -> Result<PolicyCall, ParamError> {
        check_tab(self.tab_id)?;
        let timeout_s = self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if !(1..=MAX_TIMEOUT_S).contains(&timeout_s) {
            return Err(bad("timeout_s", format!("{timeout_s} is out of range; 1 to {MAX_TIMEOUT_S} seconds")));
        }
        Ok(PolicyCall { tab: self.tab_id, policy: self.policy, timeout_s })
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ObserveWhat {
    /// Pending dialogs, recent dialogs (who answered each, and why), active auto-responses.
    Dialogs,
    /// The tabs of the connected browser and which one is tracked.
    Tabs,
    /// Log entries: each dialog (`source: "dialog"`) and flood summaries with exact counts.
    Logs,
}

/// `observe` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveArgs {
    /// What to observe.
    pub what: ObserveWhat,
    /// Target tab id for `dialogs` and `logs`. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

/// A login: what answers an HTTP auth challenge (serialized only into the answer to the
/// browser).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Credentials {
    pub username: String,
    pub password: Secret,
}

/// A parameter the caller got wrong; the message says how to get it right.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid parameter `{param}`: {message}")]
pub struct ParamError {
    pub param: String,
    pub message: String,
}

pub fn bad(param: &str, message: impl Into<String>) -> ParamError {
    ParamError { param: param.to_owned(), message: message.into() }
}

/// Deserializes tool arguments, naming the parameter that is wrong.
pub fn parse<T: DeserializeOwned>(args: serde_json::Value) -> Result<T, ParamError> {
    let args = if args.is_null() { serde_json::Value::Object(Default::default()) } else { args };
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // Unknown and missing fields are reported at the parent; the name is in the text.
        let param = if path == "." { between_backticks(&inner).unwrap_or_default().to_owned() } else { path };
        // A field with an empty name has no name to report.
        let param = if param.is_empty() { "arguments".to_owned() } else { param };
        ParamError { param, message: inner }
    })
}

fn between_backticks(s: &str) -> Option<&str> {
    let start = s.find('`')? + 1;
    let len = s[start..].find('`')?;
    Some(&s[start..start + len])
}

/// A path parameter as given: absolute, at most 4096 bytes, no NUL (`unmodal mcp` then
/// checks it against the allowed directories, `files.rs`); `wrong` says what was expected.
/// The one check of every path parameter (`save_to`, `save_dir`, `files`).
pub fn absolute_path(param: &str, given: &str, wrong: impl FnOnce() -> String) -> Result<PathBuf, ParamError> {
    if given.len() > 4096 || !is_absolute(given) || given.contains('\0') {
        return Err(bad(param, wrong()));
    }
    Ok(PathBuf::from(given))
}

/// Absolute as POSIX writes it (`/home/me`) or as Windows does (`C:\Users\me`, `C:/Users/me`,
/// `\\server\share`), whatever this build's system: the answer must not depend on where the
/// host runs (the allowed directories then decide, `files.rs`).
pub fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    let drive = b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/');
    path.starts_with('/') || drive || path.starts_with("\\\\")
}

/// A match's texts, each non-empty and within its limit (`what`: the dialogs it matches).
pub fn match_texts(params: &[(&str, Option<&String>)], what: &str) -> Result<(), ParamError> {
    for &(param, v) in params {
        match v {
            Some(t) if t.is_empty() => {
                return Err(bad(param, format!("must not be empty; leave it out to match every {what}")));
            }
            Some(t) if t.encode_utf16().count() > MAX_MATCH_UNITS => {
                return Err(bad(param, format!("at most {MAX_MATCH_UNITS} characters")));
            }
            _ => {}
        }
    }
    Ok(())
}

pub fn check_tab(tab: Option<i64>) -> Result<(), ParamError> {
    match tab {
        Some(id) if id < 0 => Err(bad("tab_id", format!("{id} is not a tab id; tab ids are positive"))),
        _ => Ok(()),
    }
}

// ---- Secrets ----
// Credentials the agent hands over for HTTP auth. A `Secret` never shows in `Debug`, in an
// error message or in anything the host stores: it is serialized only where it must travel
// (the agent's call to the host's socket, the answer to the browser), and its memory is
// wiped when it is dropped (`zeroize`). Here because tool parameters carry it.

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    pub fn new(s: String) -> Self {
        Self(Zeroizing::new(s))
    }

    /// The secret itself, for the one place that must send it on.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Length in UTF-16 code units (what the browser counts).
    pub fn units(&self) -> usize {
        self.0.encode_utf16().count()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([withheld])")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Secret;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret::new(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Secret, E> {
                Ok(Secret::new(v))
            }
            // Anything else is refused without repeating the value (serde's own message
            // would quote a number or a boolean given as a password).
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Secret {
    fn schema_name() -> Cow<'static, str> {
        "Secret".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn never_shown_but_sent_whole() {
        let s: Secret = serde_json::from_str("\"hunter2\"").unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"hunter2\"");
        let err = serde_json::from_str::<Secret>("918273645").unwrap_err().to_string();
        assert!(!err.contains("918273645"), "{err}");
        let err = serde_json::from_str::<Secret>("true").unwrap_err().to_string();
        assert!(!err.contains("true"), "{err}");
    }

    #[test]
    fn dialog_policy_validates_its_range() {
        let v = |j| parse::<ConfigureArgs>(j).map_err(|e| e.param).and_then(|a| a.validate().map_err(|e| e.param));
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"must_respond"})),
            Ok(PolicyCall { tab: None, policy: Policy::MustRespond, timeout_s: 10 })
        );
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"auto_accept","timeout_s":600,"tab_id":2})),
            Ok(PolicyCall { tab: Some(2), policy: Policy::AutoAccept, timeout_s: 600 })
        );
        assert_eq!(v(json!({"action":"dialog_policy","policy":"must_respond","timeout_s":0})), Err("timeout_s".into()));
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"must_respond","timeout_s":601})),
            Err("timeout_s".into())
        );
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"must_respond","timeout_s":-1})),
            Err("timeout_s".into())
        );
        assert_eq!(v(json!({"action":"dialog_policy","policy":"hold"})), Err("policy".into()));
        assert_eq!(v(json!({"action":"dialog_policy"})), Err("policy".into()));
        assert_eq!(v(json!({"action":"policy","policy":"auto"})), Err("action".into()));
    }

    #[test]
    fn api_is_a_leaf() {
        // The host and the MCP server depend on these types, never the other way round.
        let src = include_str!("api.rs");
        let (code, _tests) = src.split_at(src.find("#[cfg(test)]").unwrap());
        assert!(!code.contains(concat!("crate", "::")) && !code.contains(concat!("super", "::")));
    }
}
