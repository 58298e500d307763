//! AI Web Pilot's switch, kept here; the extension only caches it. Only a person turns it
//! on: with `unmodal pilot on` in a terminal (over the private socket), or with the toolbar
//! popup of a browser no program can control. In a browser open to DevTools clients the
//! agent's own driver can run code in the popup and the worker, so there nothing from the
//! browser counts as a person's "on". Off is taken from anywhere: it only takes power away.

use super::Shared;
use super::protocol::{PilotVia, ToBrowser};
use super::state::State;
use crate::reply::{ErrorCode, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// How long `unmodal pilot on|off` waits for the extension to apply the switch.
const APPLY_WAIT: Duration = Duration::from_secs(3);

/// What a person typed: `unmodal pilot on|off|status [--user-data-dir DIR]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchArgs {
    /// `None`: only say how it stands.
    #[serde(default)]
    pub on: Option<bool>,
    /// Act only if this host's browser uses this profile directory.
    #[serde(default)]
    pub user_data_dir: Option<PathBuf>,
}

impl PilotVia {
    fn describe(self) -> &'static str {
        match self {
            Self::Popup => "the toolbar popup",
            Self::PopupInTab => "the popup page loaded in a tab or window (which a program can open and click)",
            Self::Storage => "a write to the extension's storage that Unmodal did not make",
            Self::Message => "a message from a page or a view other than the toolbar popup",
            Self::Other => "an unknown part of the browser",
        }
    }
}

/// What the popup shows when it may not switch the pilot on.
const USE_TERMINAL: &str = "A program can control this browser, so this switch cannot turn AI Web Pilot on. \
Run `unmodal pilot on` in a terminal.";

impl State {
    /// The pilot's switch changed: every tab that holds (or is to hold) more than the plain
    /// default gets its config again. On, its rules and policy; off, the record-only default,
    /// which takes back what the browser side held (rules, the policy's debugger session,
    /// the site's automatic-downloads grant), and each kind lets go of what only the pilot
    /// allowed (`kinds::pilot_went_off`).
    pub(super) fn pilot_flipped(&mut self) -> Vec<ToBrowser> {
        let tabs: Vec<i64> = self.configured_tabs().collect();
        let mut out: Vec<ToBrowser> = tabs.into_iter().map(|tab| self.config_message(tab)).collect();
        if !self.pilot {
            out.extend(super::kinds::pilot_went_off(self));
        }
        out
    }

    /// The switch as the extension must cache it, with a new revision.
    pub(super) fn pilot_message(&mut self, id: Option<u64>, refused: Option<String>) -> ToBrowser {
        self.pilot_sent += 1;
        ToBrowser::Pilot {
            on: self.pilot,
            rev: self.pilot_sent,
            terminal_only: self.browser.remote_control(),
            id,
            refused,
        }
    }

    /// The switch flipped in the browser. Off: taken. On: only from the toolbar popup of a
    /// browser that nothing says a program controls (the worker checked it was the popup).
    pub(super) fn on_pilot_from_browser(&mut self, on: bool, via: PilotVia, id: Option<u64>) -> Vec<ToBrowser> {
        if !on {
            let mut out = vec![];
            if self.pilot {
                self.pilot = false;
                tracing::info!(?via, "AI Web Pilot switched off from the browser");
                out = self.pilot_flipped();
            }
            out.insert(0, self.pilot_message(id, None));
            return out;
        }
        let remote = self.browser.remote_control();
        let refusal = match (via, &remote) {
            (PilotVia::Popup, None) => None,
            (PilotVia::Popup, Some(why)) => Some(format!("{why}. {USE_TERMINAL}")),
            (other, _) => Some(format!(
                "{} cannot switch AI Web Pilot on. A person switches it on with `unmodal pilot on` in a terminal{}.",
                capitalized(other.describe()),
                if remote.is_none() { ", or with the toolbar popup" } else { "" }
            )),
        };
        let mut configs = Vec::new();
        match &refusal {
            None if !self.pilot => {
                self.pilot = true;
                tracing::info!("AI Web Pilot switched on in the toolbar popup");
                configs = self.pilot_flipped();
            }
            None => {}
            Some(why) => self.pilot_refused(via, why),
        }
        let mut out = vec![self.pilot_message(id, refusal)];
        out.extend(configs);
        out
    }

    /// A way in that was refused, here or by the worker: in the host's log and the logs the
    /// agent reads.
    pub(super) fn pilot_refused(&mut self, via: PilotVia, reason: &str) {
        let reason: String = reason.chars().take(400).collect();
        tracing::warn!(?via, %reason, "refused to switch AI Web Pilot on");
        self.logs.browser_note("pilot", format!("Refused to switch AI Web Pilot on: {reason}"));
    }

    /// How the switch stands, for `unmodal pilot`.
    fn pilot_status(&self) -> Value {
        json!({
            "pilot_enabled": self.pilot,
            "host_pid": std::process::id(),
            "browser": {
                "pid": self.browser.pid,
                "profile": self.browser.profile,
                "remote_control": self.browser.remote_control(),
            },
        })
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `unmodal pilot …` over the private socket (never offered by `unmodal mcp`).
pub(super) async fn from_terminal(shared: &Shared, args: SwitchArgs) -> Result<Value, ToolError> {
    let rev = {
        let mut state = shared.state();
        if let Some(dir) = &args.user_data_dir
            && !state.browser.has_profile(dir)
        {
            return Err(ToolError::new(
                ErrorCode::OtherBrowser,
                format!(
                    "this host serves another browser (profile {:?}), not {}",
                    state.browser.profile,
                    dir.display()
                ),
            ));
        }
        let Some(on) = args.on else { return Ok(state.pilot_status()) };
        let mut configs = Vec::new();
        if state.pilot != on {
            state.pilot = on;
            tracing::info!(on, "AI Web Pilot switched from a terminal");
            configs = state.pilot_flipped();
        }
        let msg = state.pilot_message(None, None);
        let ToBrowser::Pilot { rev, .. } = msg else { unreachable!("pilot_message makes a Pilot") };
        let mut msgs = vec![msg];
        msgs.extend(configs);
        shared.send(&state, msgs);
        rev
    };
    shared.save();
    let applied = shared.wait_until(APPLY_WAIT, |s| s.pilot_seen >= rev).await;
    let mut status = shared.state().pilot_status();
    status["applied"] = json!(applied);
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parent_browser::ParentBrowser;

    fn state(args: &[&str]) -> State {
        let mut s = State::new();
        s.browser = ParentBrowser::from_args(7, Some(args.iter().map(|a| a.to_string()).collect()));
        s
    }

    const PLAIN: [&str; 2] = ["/usr/lib/chromium/chromium", "--user-data-dir=/nonexistent/profile"];
    const DRIVEN: [&str; 3] =
        ["/usr/lib/chromium/chromium", "--remote-debugging-port=0", "--user-data-dir=/nonexistent/p"];

    fn answer(out: &[ToBrowser]) -> (bool, Option<String>, Option<String>) {
        match out {
            [ToBrowser::Pilot { on, refused, terminal_only, .. }, ..] => (*on, refused.clone(), terminal_only.clone()),
            other => panic!("expected one Pilot message, got {other:?}"),
        }
    }

    #[test]
    fn the_popup_switches_it_on_only_where_no_program_controls_the_browser() {
        let mut s = state(&PLAIN);
        let (on, refused, terminal_only) = answer(&s.on_pilot_from_browser(true, PilotVia::Popup, Some(1)));
        assert!(on && s.pilot && refused.is_none() && terminal_only.is_none());

        let mut s = state(&DRIVEN);
        let (on, refused, terminal_only) = answer(&s.on_pilot_from_browser(true, PilotVia::Popup, Some(1)));
        assert!(!on && !s.pilot);
        assert!(refused.unwrap().contains("unmodal pilot on"));
        assert!(terminal_only.unwrap().contains("--remote-debugging-port"));
        let logged = s.logs.of_tab(3);
        assert!(logged.iter().any(|e| e.kind == "pilot" && e.summary.starts_with("Refused")), "{logged:?}");
    }

    #[test]
    fn nothing_but_the_popup_switches_it_on_and_anything_switches_it_off() {
        for via in [PilotVia::PopupInTab, PilotVia::Storage, PilotVia::Message, PilotVia::Other] {
            let mut s = state(&PLAIN);
            let (on, refused, _) = answer(&s.on_pilot_from_browser(true, via, None));
            assert!(!on && !s.pilot && refused.is_some(), "{via:?}");
            s.pilot = true;
            let (on, refused, _) = answer(&s.on_pilot_from_browser(false, via, None));
            assert!(!on && !s.pilot && refused.is_none(), "{via:?}");
        }
    }

    #[test]
    fn the_workers_hello_cannot_claim_it_on() {
        let mut s = state(&PLAIN);
        let out = super::super::state::tests::feed(&mut s, json!({"type":"hello","version":"1","pilot":true})).unwrap();
        assert!(!s.pilot);
        assert!(matches!(out.first(), Some(ToBrowser::Pilot { on: false, .. })), "{out:?}");
    }

    #[test]
    fn a_snapshot_gives_the_switch_back_only_to_the_same_browser() {
        let mut s = state(&PLAIN);
        s.pilot = true;
        let saved = serde_json::to_vec(&s.snapshot()).unwrap();
        let mut same = state(&PLAIN);
        same.restore(serde_json::from_slice(&saved).unwrap());
        assert!(same.pilot);
        let mut other = State::new();
        other.browser = ParentBrowser::from_args(8, Some(PLAIN.iter().map(|a| a.to_string()).collect()));
        other.restore(serde_json::from_slice(&saved).unwrap());
        assert!(!other.pilot, "another browser process does not inherit the switch");
    }
}
