//! A tab opened by another tab (`window.open`, `target=_blank`, an OAuth popup) starts with
//! its opener's rules and policy: the agent set them up for the flow that opened it. The
//! service worker already gave the new tab a copy of the opener's config (so its first
//! document may find it in place); here the host, the state of record, takes the copy.

use super::protocol::ToBrowser;
use super::state::{State, Tab, in_config};

impl State {
    /// Copies `opener`'s rules (same ids: the copy the worker made carries them) and policy
    /// to `tab`, unless `tab` has its own already. Returns the new tab's config message.
    pub(super) fn on_opened(&mut self, tab: i64, opener: i64) -> Vec<ToBrowser> {
        if tab == opener || self.rules.any(tab, in_config) || self.policies.contains_key(&tab) {
            return Vec::new();
        }
        let rules = self.rules.any(opener, in_config);
        let policy = self.policies.get(&opener).filter(|p| p.fallback.is_none()).cloned();
        if !rules && policy.is_none() {
            return Vec::new();
        }
        // The rules the opener's config carries, as the worker's copy has them; the others
        // (credentials among them) stay with their tab.
        self.rules.copy(opener, tab, in_config);
        if let Some(p) = policy {
            self.policies.insert(tab, p);
        }
        // Listed at once: the tab list that names it may come later.
        if self.tab(tab).is_none() {
            let window_id = self.tab(opener).map_or(0, |t| t.window_id);
            self.tabs.push(Tab { id: tab, window_id, url: String::new(), title: String::new(), active: false });
        }
        tracing::info!(tab, opener, "a tab opened by another took over its rules and policy");
        self.config_push(tab).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::PolicyCall;
    use crate::host::kinds::DialogType;
    use crate::host::kinds::RuleSpec;
    use crate::host::state::tests::dialog_rule;
    use serde_json::json;
    use unmodal_engine::{DialogKind, Policy, RuleTarget};

    fn state() -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"},{"id":5,"url":"http://c/"}]}))
            .unwrap();
        s
    }

    #[test]
    fn an_opened_tab_starts_with_its_openers_rules_and_policy() {
        let mut s = state();
        let rule = s.add_rule(3, false, dialog_rule(RuleTarget::One(DialogKind::Confirm), true)).unwrap();
        s.configure(PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 9 }).unwrap();
        let out = to_json(&feed(&mut s, json!({"type":"opened","tab_id":4,"opener_tab_id":3})).unwrap());
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0]["type"].as_str(), out[0]["tab_id"].as_i64(), out[0]["debugger"].as_bool()),
            (Some("config"), Some(4), Some(true))
        );
        assert_eq!(s.rules_of(4), &[rule]);
        assert_eq!((s.policy_of(4).policy, s.policy_of(4).timeout_s), (Policy::MustRespond, 9));
        assert!(s.tab(4).is_some(), "listed before the next tab list");
        // The copy is the new tab's own: clearing the opener's leaves it.
        s.clear_rules(3, DialogType::ALL);
        assert_eq!(s.rules_of(4).len(), 1);
    }

    /// Of a rule of each kind, the new tab gets those its opener's config carries, and its
    /// config carries what the opener's does.
    #[test]
    fn the_copy_is_what_the_openers_config_carries() {
        let mut s = state();
        let rules = crate::host::kinds::tests::one_of_each();
        for rule in &rules {
            s.add_rule(3, false, rule.clone()).unwrap();
        }
        let carried: Vec<RuleSpec> = s.rules_of(3).iter().map(|r| r.rule.clone()).filter(RuleSpec::in_config).collect();
        assert!(carried.len() > 2 && carried.len() < s.rules_of(3).len(), "{carried:?}");
        let out = feed(&mut s, json!({"type":"opened","tab_id":4,"opener_tab_id":3})).unwrap();
        let copied: Vec<RuleSpec> = s.rules_of(4).iter().map(|r| r.rule.clone()).collect();
        assert_eq!(copied, carried, "credentials and the host's own rules stay");
        let fields = |m: &ToBrowser| match m {
            ToBrowser::Config { fields, debugger, .. } => (fields.clone(), *debugger),
            other => panic!("{other:?}"),
        };
        assert!(matches!(out[..], [ToBrowser::Config { tab_id: 4, .. }]), "{out:?}");
        let (sent, debugger) = fields(&out[0]);
        assert!(!sent.is_empty() && debugger, "{sent:?}");
        assert_eq!((sent, debugger), fields(&s.config_at(3, 0)));
        // A tab with a rule of its own the config carries keeps it.
        let own = rules.iter().find(|r| r.in_config() && !matches!(r, RuleSpec::Dialog { .. })).unwrap();
        s.add_rule(5, false, own.clone()).unwrap();
        assert!(feed(&mut s, json!({"type":"opened","tab_id":5,"opener_tab_id":3})).unwrap().is_empty());
        assert_eq!(s.rules_of(5).len(), 1);
    }

    #[test]
    fn a_tab_with_its_own_setup_or_an_opener_without_one_changes_nothing() {
        let mut s = state();
        assert!(feed(&mut s, json!({"type":"opened","tab_id":4,"opener_tab_id":3})).unwrap().is_empty());
        s.add_rule(3, false, dialog_rule(RuleTarget::All, false)).unwrap();
        s.add_rule(5, false, dialog_rule(RuleTarget::One(DialogKind::Alert), true)).unwrap();
        assert!(feed(&mut s, json!({"type":"opened","tab_id":5,"opener_tab_id":3})).unwrap().is_empty());
        assert!(matches!(s.rules_of(5)[0].rule, RuleSpec::Dialog { target: RuleTarget::One(DialogKind::Alert), .. }));
        assert!(feed(&mut s, json!({"type":"opened","tab_id":3,"opener_tab_id":3})).unwrap().is_empty());
        assert!(feed(&mut s, json!({"type":"opened","tab_id":"x","opener_tab_id":3})).is_err());
    }
}
