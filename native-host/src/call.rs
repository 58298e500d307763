//! Where a tool call's arguments become a call: one validating constructor per call shape,
//! run wherever arguments enter — `unmodal mcp` before it forwards, the host's socket (which
//! checks again: anything local can write to it) and any command that sends tool calls
//! (`check`). Nothing past these functions reads a tool's raw arguments.

use crate::api::{self, ConfigureArgs, DialogCall, InteractArgs, ObserveArgs, ParamError, PolicyCall};
use crate::ipc::Tool;
use crate::pilot_api::{ExecuteArgs, HighlightArgs, ManageStateArgs};
use serde_json::Value;

/// An `interact` call: its arguments as read, and what they ask.
#[derive(Debug)]
pub struct Interact {
    pub args: InteractArgs,
    pub call: DialogCall,
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
    type Args = InteractArgs;
    fn from_args(args: Value) -> Result<Self, ParamError> {
        let args: InteractArgs = api::parse(args)?;
        let call = args.validate()?;
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
        Tool::Info | Tool::PilotSwitch => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
