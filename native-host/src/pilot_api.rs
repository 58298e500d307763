//! The AI Web Pilot tools' parameters (`highlight_element`, `manage_state`,
//! `execute_javascript`), their limits and defaults (also in the JSON schema), and the
//! validated call the host sends to the browser, and what both the host and `unmodal mcp`
//! need to agree on (the host's margin, `execute_javascript`'s failure shape). Like
//! `api.rs`, it knows nothing of the host.

use crate::api::{ParamError, bad, check_tab};
use crate::reply::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

pub const DEFAULT_DURATION_MS: u32 = 5000;
pub const DEFAULT_SCRIPT_TIMEOUT_MS: u32 = 5000;
/// Both `duration_ms` and `timeout_ms` range from 1 ms to a minute.
pub const MAX_MS: u32 = 60_000;
/// Longest script, selector and frame filter (UTF-16 units are what JS counts; bytes bound them).
pub const MAX_SCRIPT_BYTES: usize = 256 * 1024;
pub const MAX_SELECTOR_BYTES: usize = 4096;
pub const MAX_FRAME_FILTER_BYTES: usize = 512;
pub const MAX_SNAPSHOT_NAME: usize = 64;

/// What the host allows the browser beyond a call's own budget (attaching the debugger,
/// stopping a runaway script, a slow machine). `unmodal mcp` waits twice that, so the host
/// always answers first.
pub const MARGIN: Duration = Duration::from_secs(5);

/// `execute_javascript` answers every failure as a result of the spec's shape, `{success:
/// false, error: <what happened and what to do next>, code: <the ErrorCode name>, …}`, so an
/// agent that tests `success` never misreads one: a timeout, the switch off, a dialog in the
/// way, a parameter, no browser. The error's other fields (`param`, `dialog`,
/// `dialogs_blocking`) come along as they are. The host builds it for its own failures,
/// `unmodal mcp` for those found before or instead of a host's answer.
pub fn execute_failure(e: &ToolError) -> Value {
    let mut fields = match serde_json::to_value(e) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let error = fields.remove("message").unwrap_or_else(|| Value::String(e.message.clone()));
    let mut v = Map::new();
    v.insert("success".into(), false.into());
    v.insert("error".into(), error);
    v.extend(fields);
    Value::Object(v)
}

/// `highlight_element` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HighlightArgs {
    /// CSS selector of the element to point at; the first match is outlined.
    #[schemars(length(min = 1, max = 4096))]
    pub selector: String,
    /// How long the outline stays, in milliseconds (1 to 60000, default 5000). A new
    /// highlight replaces the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000), extend("default" = 5000))]
    pub duration_ms: Option<u32>,
    /// Look in the first frame whose URL contains this text (default: the top document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub frame_url_contains: Option<String>,
    /// Target tab id. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

/// `execute_javascript` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// A JavaScript expression or statements, evaluated in the page's own world; the value
    /// of the last expression is returned (a promise is awaited).
    #[schemars(length(min = 1, max = 262144))]
    pub script: String,
    /// Stop the script after this many milliseconds (1 to 60000, default 5000); the page
    /// keeps working afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000), extend("default" = 5000))]
    pub timeout_ms: Option<u32>,
    /// Run in the first frame whose URL contains this text (default: the top document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub frame_url_contains: Option<String>,
    /// Target tab id. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StateAction {
    /// Save the tab's localStorage, sessionStorage, cookies and URL under `snapshot_name`.
    Save,
    /// Make the tab's storage and cookies equal to the snapshot (and go to its URL).
    Load,
    /// The saved snapshots: names, URLs, times and sizes.
    List,
    /// Remove a snapshot.
    Delete,
}

/// `manage_state` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManageStateArgs {
    pub action: StateAction,
    /// Required for save, load and delete: letters, digits, `_`, `.` and `-`, 1 to 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_.-]{1,64}$"))]
    pub snapshot_name: Option<String>,
    /// load: navigate to the saved URL (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub include_url: Option<bool>,
    /// Target tab id. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

/// A validated pilot call: what the host asks the browser to do (serialized as the
/// `call` of `ToBrowser::PilotCall`, tagged by `tool`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum PilotCall {
    Highlight {
        selector: String,
        duration_ms: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        frame_url_contains: Option<String>,
    },
    Execute {
        script: String,
        timeout_ms: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        frame_url_contains: Option<String>,
    },
    State {
        action: StateAction,
        #[serde(skip_serializing_if = "Option::is_none")]
        snapshot_name: Option<String>,
        include_url: bool,
    },
}

impl PilotCall {
    /// How long the browser may take, at most: the script's own limit, a highlight's or a
    /// state operation's fixed budget. The host adds its margin on top.
    pub fn budget_ms(&self) -> u64 {
        match self {
            Self::Execute { timeout_ms, .. } => u64::from(*timeout_ms),
            Self::Highlight { .. } => 3000,
            // A load may navigate; a save may read megabytes of storage.
            Self::State { .. } => 10_000,
        }
    }

    pub fn tool_name(&self) -> &'static str {
        match self {
            Self::Highlight { .. } => "highlight_element",
            Self::Execute { .. } => "execute_javascript",
            Self::State { .. } => "manage_state",
        }
    }
}

fn check_ms(param: &str, v: Option<u32>, default: u32) -> Result<u32, ParamError> {
    let v = v.unwrap_or(default);
    if !(1..=MAX_MS).contains(&v) {
        return Err(bad(param, format!("{v} is out of range; 1 to {MAX_MS} milliseconds")));
    }
    Ok(v)
}

fn check_text(param: &str, v: &str, max: usize) -> Result<(), ParamError> {
    if v.is_empty() {
        return Err(bad(param, "must not be empty"));
    }
    if v.len() > max {
        return Err(bad(param, format!("at most {max} bytes")));
    }
    Ok(())
}

fn check_frame(v: &Option<String>) -> Result<(), ParamError> {
    match v {
        Some(f) => check_text("frame_url_contains", f, MAX_FRAME_FILTER_BYTES),
        None => Ok(()),
    }
}

/// Snapshot names become storage keys: a small alphabet, nothing to escape.
pub fn valid_snapshot_name(name: &str) -> bool {
    (1..=MAX_SNAPSHOT_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl HighlightArgs {
    pub fn validate(&self) -> Result<(Option<i64>, PilotCall), ParamError> {
        check_tab(self.tab_id)?;
        check_text("selector", &self.selector, MAX_SELECTOR_BYTES)?;
        check_frame(&self.frame_url_contains)?;
        let duration_ms = check_ms("duration_ms", self.duration_ms, DEFAULT_DURATION_MS)?;
        Ok((
            self.tab_id,
            PilotCall::Highlight {
                selector: self.selector.clone(),
                duration_ms,
                frame_url_contains: self.frame_url_contains.clone(),
            },
        ))
    }
}

impl ExecuteArgs {
    pub fn validate(&self) -> Result<(Option<i64>, PilotCall), ParamError> {
        check_tab(self.tab_id)?;
        check_text("script", &self.script, MAX_SCRIPT_BYTES)?;
        check_frame(&self.frame_url_contains)?;
        let timeout_ms = check_ms("timeout_ms", self.timeout_ms, DEFAULT_SCRIPT_TIMEOUT_MS)?;
        Ok((
            self.tab_id,
            PilotCall::Execute {
                script: self.script.clone(),
                timeout_ms,
                frame_url_contains: self.frame_url_contains.clone(),
            },
        ))
    }
}

impl ManageStateArgs {
    pub fn validate(&self) -> Result<(Option<i64>, PilotCall), ParamError> {
        check_tab(self.tab_id)?;
        let named = matches!(self.action, StateAction::Save | StateAction::Load | StateAction::Delete);
        match (&self.snapshot_name, named) {
            (None, true) => return Err(bad("snapshot_name", "required for save, load and delete")),
            (Some(_), false) => return Err(bad("snapshot_name", "only for save, load and delete")),
            (Some(n), true) if !valid_snapshot_name(n) => {
                return Err(bad("snapshot_name", "1 to 64 of A-Z, a-z, 0-9, `_`, `.` and `-`"));
            }
            _ => {}
        }
        if self.include_url.is_some() && self.action != StateAction::Load {
            return Err(bad("include_url", "only with action load"));
        }
        Ok((
            self.tab_id,
            PilotCall::State {
                action: self.action,
                snapshot_name: self.snapshot_name.clone(),
                include_url: self.include_url.unwrap_or(true),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::parse;
    use serde_json::json;

    #[test]
    fn defaults_and_limits() {
        let (tab, call) = parse::<ExecuteArgs>(json!({"script": "1 + 1"})).unwrap().validate().unwrap();
        assert_eq!(tab, None);
        assert_eq!(call, PilotCall::Execute { script: "1 + 1".into(), timeout_ms: 5000, frame_url_contains: None });
        let param = |v: serde_json::Value| -> String {
            match parse::<ExecuteArgs>(v.clone()) {
                Ok(a) => a.validate().unwrap_err().param,
                Err(e) => e.param,
            }
        };
        assert_eq!(param(json!({"script": ""})), "script");
        assert_eq!(param(json!({"script": "1", "timeout_ms": 0})), "timeout_ms");
        assert_eq!(param(json!({"script": "1", "timeout_ms": 60001})), "timeout_ms");
        assert_eq!(param(json!({"script": "1", "tab_id": -1})), "tab_id");
        assert_eq!(param(json!({"script": "1", "frame_url_contains": ""})), "frame_url_contains");
        assert_eq!(param(json!({"script": "x".repeat(MAX_SCRIPT_BYTES + 1)})), "script");
        assert_eq!(param(json!({"script": "1", "pilot": true})), "pilot");
        let (_, h) = parse::<HighlightArgs>(json!({"selector": "#a", "tab_id": 3})).unwrap().validate().unwrap();
        assert_eq!(h, PilotCall::Highlight { selector: "#a".into(), duration_ms: 5000, frame_url_contains: None });
    }

    #[test]
    fn snapshot_names_are_checked() {
        let v = |j| parse::<ManageStateArgs>(j).unwrap().validate().map_err(|e| e.param);
        assert!(v(json!({"action": "save", "snapshot_name": "cart_full-1.v2"})).is_ok());
        assert!(v(json!({"action": "list"})).is_ok());
        assert_eq!(v(json!({"action": "save"})), Err("snapshot_name".into()));
        assert_eq!(v(json!({"action": "load", "snapshot_name": "../etc/passwd"})), Err("snapshot_name".into()));
        assert_eq!(v(json!({"action": "load", "snapshot_name": "a".repeat(65)})), Err("snapshot_name".into()));
        assert_eq!(v(json!({"action": "list", "snapshot_name": "a"})), Err("snapshot_name".into()));
        assert_eq!(v(json!({"action": "save", "snapshot_name": "a", "include_url": false})), Err("include_url".into()));
        let (_, c) = v(json!({"action": "load", "snapshot_name": "a"})).unwrap();
        assert_eq!(
            serde_json::to_value(c).unwrap(),
            json!({"tool": "state", "action": "load", "snapshot_name": "a", "include_url": true})
        );
    }

    #[test]
    fn execute_failures_keep_the_errors_fields_under_the_specs_names() {
        let e = crate::reply::ToolError::from(bad("timeout_ms", "0 is out of range"));
        let v = execute_failure(&e);
        assert_eq!(
            (v["success"].as_bool(), v["code"].as_str(), v["param"].as_str()),
            (Some(false), Some("invalid_params"), Some("timeout_ms"))
        );
        assert_eq!(v["error"], json!(e.message));
        assert!(v.get("message").is_none(), "{v}");
        let v = execute_failure(&crate::reply::ToolError::not_connected());
        assert_eq!((v["success"].as_bool(), v["code"].as_str()), (Some(false), Some("extension_not_connected")));
        assert!(v["error"].as_str().unwrap().contains("unmodal doctor"), "{v}");
    }

    #[test]
    fn the_schema_tells_agents_the_limits_and_defaults() {
        let s = serde_json::to_value(schemars::schema_for!(ExecuteArgs)).unwrap();
        let t = &s["properties"]["timeout_ms"];
        assert_eq!((t["minimum"].as_u64(), t["maximum"].as_u64()), (Some(1), Some(u64::from(MAX_MS))));
        assert_eq!(t["default"], json!(DEFAULT_SCRIPT_TIMEOUT_MS));
        let s = serde_json::to_value(schemars::schema_for!(ManageStateArgs)).unwrap();
        assert!(s.to_string().contains("A-Za-z0-9_.-"), "{s}");
    }
}
