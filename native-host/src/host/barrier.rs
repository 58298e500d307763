//! A barrier before the agent's calls while a tab holds dialogs for the agent. Beside a CDP
//! driver, the agent asks Unmodal the moment its driver saw a dialog; the browser told the
//! extension's debugger session at the same moment, but that news still has a service
//! worker and a pipe to cross. The host sends `sync` down the same pipe and waits for the
//! worker's `synced`: the worker sends what it had first, so a dialog the browser reported
//! before the call is in the state when the call runs. A few milliseconds, and only while
//! some tab's policy holds dialogs.

use super::Shared;
use super::protocol::ToBrowser;
use super::state::State;
use std::time::Duration;
use unmodal_engine::Policy;

/// A worker that does not answer (stopped, busy) delays a call by at most this.
const WAIT: Duration = Duration::from_secs(1);

impl State {
    /// Whether a dialog could be on its way from a debugger session now.
    pub(super) fn needs_barrier(&self) -> bool {
        self.pilot && self.policies.values().any(|p| p.policy != Policy::Auto)
    }

    pub(super) fn sync_message(&mut self) -> (u64, ToBrowser) {
        self.sync_sent += 1;
        (self.sync_sent, ToBrowser::Sync { id: self.sync_sent })
    }

    pub(super) fn on_synced(&mut self, id: u64) {
        self.sync_seen = self.sync_seen.max(id.min(self.sync_sent));
    }
}

/// Returns once the worker sent everything it had when this was called (or after `WAIT`).
pub(super) async fn barrier(shared: &Shared) {
    let id = {
        let mut state = shared.state();
        if !state.needs_barrier() {
            return;
        }
        let (id, msg) = state.sync_message();
        shared.send(&state, vec![msg]);
        id
    };
    if !shared.wait_until(WAIT, |s| s.sync_seen >= id).await {
        tracing::debug!(id, "the worker did not answer a barrier in time");
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::feed;
    use super::*;
    use crate::api::PolicyCall;
    use serde_json::json;

    #[test]
    fn only_while_a_policy_holds_dialogs() {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        assert!(!s.needs_barrier());
        s.configure(PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 5 }).unwrap();
        assert!(s.needs_barrier());
        let (id, msg) = s.sync_message();
        assert_eq!(msg, ToBrowser::Sync { id });
        feed(&mut s, json!({"type":"synced","id":id + 7})).unwrap();
        assert_eq!(s.sync_seen, id, "an answer to a barrier never sent counts only as far as sent");
        s.pilot = false;
        assert!(!s.needs_barrier());
    }
}
