//! Rules per tab, of any kind: a new rule for the same slot replaces the old one, each
//! group has a per-tab limit, a once-rule is spent by its first answer, and the most
//! specific matching rule wins. Generic over the rule; knows nothing of the state or the
//! agent. The one thing it says of the browser is the shape of what a tab's rules add to
//! its config message (`TabConfig`), which the kinds' registry fills in.

use super::protocol::KindFields;
use std::collections::HashMap;

/// What the store needs to know of a rule.
pub trait Rule {
    /// The limit it counts against (rules of one kind), named in the error.
    fn group(&self) -> &'static str;
    /// A new rule for the same slot (same kind, same target, same match) replaces this one.
    fn same_slot(&self, other: &Self) -> bool;
}

/// What a tab's rules and policy add to its config message beside the page's own rules, by
/// field (the kinds' registry says; the store only keeps the rules), and whether that
/// needs the tab's debugger session.
pub trait TabConfig: Rule + Sized {
    fn tab_config(store: &RuleStore<Self>, tab: i64, policy: unmodal_engine::Policy) -> (KindFields, bool);
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored<R> {
    pub id: u32,
    /// Spent by the first answer it gives.
    pub once: bool,
    pub rule: R,
}

#[derive(Clone, Debug)]
pub struct RuleStore<R> {
    tabs: HashMap<i64, Vec<Stored<R>>>,
    next_id: u32,
    /// Rules of one group per tab, at most.
    limit: usize,
}

impl<R: Rule + Clone> RuleStore<R> {
    pub fn new(limit: usize) -> Self {
        Self { tabs: HashMap::new(), next_id: 1, limit }
    }

    /// Adds a rule to `tab`, replacing the one in the same slot. `Err` names the limit.
    pub fn add(&mut self, tab: i64, once: bool, rule: R) -> Result<&Stored<R>, String> {
        let rules = self.tabs.entry(tab).or_default();
        rules.retain(|r| !r.rule.same_slot(&rule));
        let group = rule.group();
        if rules.iter().filter(|r| r.rule.group() == group).count() >= self.limit {
            return Err(format!("a tab holds at most {} {group} rules; clear some first", self.limit));
        }
        let id = self.next_id;
        self.next_id += 1;
        rules.push(Stored { id, once, rule });
        Ok(rules.last().expect("just pushed"))
    }

    pub fn of(&self, tab: i64) -> &[Stored<R>] {
        self.tabs.get(&tab).map_or(&[], Vec::as_slice)
    }

    /// Removes the tab's rules `which` picks; returns those that went.
    pub fn clear(&mut self, tab: i64, which: impl Fn(&R) -> bool) -> Vec<R> {
        let Some(rules) = self.tabs.get_mut(&tab) else { return Vec::new() };
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(rules).into_iter().partition(|r| which(&r.rule));
        *rules = kept;
        if rules.is_empty() {
            self.tabs.remove(&tab);
        }
        gone.into_iter().map(|r| r.rule).collect()
    }

    /// A once-rule that answered leaves; returns the rule it was, if it left.
    pub fn spend(&mut self, tab: i64, id: u32) -> Option<R> {
        let rules = self.tabs.get_mut(&tab)?;
        let pos = rules.iter().position(|r| r.id == id && r.once)?;
        let spent = rules.remove(pos).rule;
        if rules.is_empty() {
            self.tabs.remove(&tab);
        }
        Some(spent)
    }

    /// The rule that answers: of those `fit` accepts (with how specific each is), the most
    /// specific; among equals the newest.
    pub fn best(&self, tab: i64, fit: impl Fn(&R) -> Option<usize>) -> Option<&Stored<R>> {
        self.of(tab)
            .iter()
            .enumerate()
            .filter_map(|(i, r)| fit(&r.rule).map(|s| (s, i, r)))
            .max_by_key(|(s, i, _)| (*s, *i))
            .map(|(_, _, r)| r)
    }

    /// Whether `tab` has any rule `which` picks.
    pub fn any(&self, tab: i64, which: impl Fn(&R) -> bool) -> bool {
        self.of(tab).iter().any(|r| which(&r.rule))
    }

    /// Tabs with rules.
    pub fn tabs(&self) -> impl Iterator<Item = i64> + '_ {
        self.tabs.keys().copied()
    }

    /// Only the rules of tabs still open stay.
    pub fn retain_tabs(&mut self, open: impl Fn(i64) -> bool) {
        self.tabs.retain(|tab, _| open(*tab));
    }

    /// Gives `to` copies (same ids) of `from`'s rules that `which` picks.
    pub fn copy(&mut self, from: i64, to: i64, which: impl Fn(&R) -> bool) {
        let copies: Vec<_> = self.of(from).iter().filter(|r| which(&r.rule)).cloned().collect();
        if !copies.is_empty() {
            self.tabs.entry(to).or_default().extend(copies);
        }
    }

    /// The number the next rule gets (kept across hosts, so ids are never given twice).
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// Puts back rules a previous host kept (`persist.rs`).
    pub fn restore(&mut self, tabs: impl IntoIterator<Item = (i64, Vec<Stored<R>>)>, next_id: u32) {
        self.tabs = tabs.into_iter().filter(|(_, r)| !r.is_empty()).collect();
        let newest = self.tabs.values().flatten().map(|r| r.id).max().unwrap_or(0);
        self.next_id = next_id.max(newest + 1).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule of the store's own, to show it needs nothing of the host's kinds.
    #[derive(Clone, Debug, PartialEq)]
    struct Toy {
        group: &'static str,
        slot: u8,
        narrow: usize,
    }

    impl Rule for Toy {
        fn group(&self) -> &'static str {
            self.group
        }
        fn same_slot(&self, other: &Self) -> bool {
            self.group == other.group && self.slot == other.slot
        }
    }

    fn toy(group: &'static str, slot: u8, narrow: usize) -> Toy {
        Toy { group, slot, narrow }
    }

    #[test]
    fn same_slot_replaces_and_ids_grow() {
        let mut s = RuleStore::new(4);
        let a = s.add(1, true, toy("a", 1, 0)).unwrap().id;
        let b = s.add(1, false, toy("a", 1, 1)).unwrap().id;
        assert!(b > a);
        assert_eq!(s.of(1).len(), 1);
        assert_eq!(s.of(1)[0].rule.narrow, 1);
        s.add(1, false, toy("b", 1, 0)).unwrap();
        assert_eq!(s.of(1).len(), 2, "another group's slot is its own");
    }

    #[test]
    fn the_limit_counts_per_group_and_tab() {
        let mut s = RuleStore::new(2);
        s.add(1, false, toy("a", 1, 0)).unwrap();
        s.add(1, false, toy("a", 2, 0)).unwrap();
        let err = s.add(1, false, toy("a", 3, 0)).unwrap_err();
        assert!(err.contains("at most 2 a rules"), "{err}");
        s.add(1, false, toy("b", 3, 0)).unwrap();
        s.add(2, false, toy("a", 3, 0)).unwrap();
        s.add(1, false, toy("a", 2, 5)).unwrap();
    }

    #[test]
    fn most_specific_wins_then_newest() {
        let mut s = RuleStore::new(8);
        let broad = s.add(1, false, toy("a", 1, 0)).unwrap().id;
        let narrow = s.add(1, false, toy("a", 2, 2)).unwrap().id;
        let newer = s.add(1, false, toy("a", 3, 2)).unwrap().id;
        let fit = |r: &Toy| Some(r.narrow);
        assert_eq!(s.best(1, fit).unwrap().id, newer);
        assert_eq!(s.best(1, |r: &Toy| (r.slot != 3).then_some(r.narrow)).unwrap().id, narrow);
        assert_eq!(s.best(1, |r: &Toy| (r.slot == 1).then_some(0)).unwrap().id, broad);
        assert!(s.best(2, fit).is_none());
    }

    #[test]
    fn spend_clear_copy_and_closed_tabs() {
        let mut s = RuleStore::new(8);
        let once = s.add(1, true, toy("a", 1, 0)).unwrap().id;
        let kept = s.add(1, false, toy("b", 1, 0)).unwrap().id;
        assert!(s.spend(1, kept).is_none(), "only once-rules are spent");
        assert_eq!(s.spend(1, once), Some(toy("a", 1, 0)));
        assert!(s.spend(1, once).is_none());
        s.add(1, false, toy("a", 2, 0)).unwrap();
        s.copy(1, 2, |r| r.group == "a");
        assert_eq!(s.of(2).len(), 1);
        assert_eq!(s.clear(1, |r| r.group == "b"), [toy("b", 1, 0)]);
        assert_eq!(s.clear(1, |_| true).len(), 1);
        assert_eq!(s.of(1).len(), 0);
        s.retain_tabs(|t| t != 2);
        assert_eq!(s.tabs().count(), 0);
        s.restore([(3, vec![Stored { id: 40, once: false, rule: toy("a", 1, 0) }])], 7);
        assert_eq!(s.next_id(), 41, "never an id given before");
    }
}
