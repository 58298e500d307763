//! A Bluetooth chooser's picks where the host holds a DevTools connection: the held
//! chooser linked to the answerer's prompt, its devices noted on the record, and the pick
//! a rule or the agent asked for (given once the worker says the hook leaves the call).

use super::*;

/// What an answer to a held chooser does on the host's connection.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Chosen {
    /// The agent or a rule picks this device (given on the connection once the page hook is
    /// told to leave the browser's call alone).
    Pick(String),
    /// A cancel (the agent's, the watchdog's): the browser's chooser is cancelled too.
    Cancel,
}

impl CarryOf for Chosen {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, s: &mut State, (_, _, record): (i64, u64, u64), accept: bool) -> Carried {
        let link = s.kinds.get::<Links>().0.get(&record).copied();
        if let Some(link) = link {
            match *self {
                // Given once the worker says the page hook leaves the browser's call alone
                // (`prompt_closed`): the page's result, which comes at once, then finds the
                // request answered.
                Chosen::Pick(device_id) if accept => {
                    s.kinds.get::<Links>().0.insert(record, Link { picking: true, ..link });
                    s.kinds.get::<Picks>().0.insert(record, (link.prompt, device_id));
                }
                _ => {
                    s.kinds.get::<Links>().0.remove(&record);
                    s.answerer_asks.push((KIND, Act::CancelDevice { prompt: link.prompt }));
                }
            }
        }
        Carried::default()
    }
    fn name_on(&self, details: &mut Details) {
        if let Chosen::Pick(id) = self
            && let Some(mut d) = details.read::<ChooserDetails>()
        {
            d.picked = Some(id.clone());
            d.no_choice = None;
            *details = Details::of(&d);
        }
    }
    crate::own_plumbing!(carry);
}

/// A held chooser the answerer's prompt was matched to, by record id.
#[derive(Debug, Default)]
pub(super) struct Links(pub(super) BTreeMap<u64, Link>);

#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    /// The answerer's prompt.
    pub(super) prompt: u64,
    /// A pick was asked for and has not come back yet.
    pub(super) picking: bool,
}

/// Picks to give once the worker applied the accept: record → (prompt, device).
#[derive(Debug, Default)]
pub(super) struct Picks(pub(super) BTreeMap<u64, (u64, String)>);

/// What picks a held chooser on its own: (record, the rule that held it, what it picks).
#[derive(Debug, Default)]
pub(super) struct RulePicks(pub(super) BTreeMap<u64, (u32, DevicePick)>);

/// The target id the worker named for the request being recorded, and for each held
/// chooser by record (it only chooses among the answerer's own candidates).
#[derive(Debug, Default)]
pub(super) struct Hint(pub(super) Option<String>, pub(super) BTreeMap<u64, String>);

/// Why a chooser has no choice to offer (on its record).
pub(super) const ONLY_CANCEL: &str = "only Bluetooth choosers can be picked: the browser offers no device list for USB, HID, \
Serial or the screen-share picker, even to a DevTools client, so it can only be cancelled";
pub(super) const NO_CONNECTION: &str = "Unmodal holds no DevTools connection to this browser (only the extension, which \
Chromium refuses the DeviceAccess domain), so nothing can be picked; start the browser with unmodal mcp --browser, \
or connect with --cdp-endpoint, to pick";
pub(super) const NOT_SEEN: &str = "Unmodal's DevTools connection did not see this chooser open (it watches pages only while a \
rule picks or a tab is under must_respond, and only from before the chooser opened), so nothing can be picked";
pub(super) const PILOT_WENT_OFF: &str = "AI Web Pilot was switched off while this chooser was held, so nothing may pick \
it: it is cancelled";
pub(super) const SEVERAL: &str = "several open choosers fit this request and nothing Unmodal saw tells them apart, so none is \
picked";

/// A held device chooser of this kind: its position in `s.held`.
pub(super) fn held_pos(s: &State, record: u64) -> Option<usize> {
    s.held.iter().position(|h| h.record.id == record && h.record.kind == KIND)
}

/// Sets what a held chooser's record says of its choices.
pub(super) fn note(s: &mut State, record: u64, devices: Option<&PromptView>, no_choice: Option<&str>) {
    let Some(pos) = held_pos(s, record) else { return };
    let Some(mut d) = s.held[pos].record.details.read::<ChooserDetails>() else { return };
    if let Some(v) = devices {
        d.devices = v
            .devices
            .iter()
            .map(|x| Offered {
                device_id: record::clip(&x.id, 200).0,
                name: s.redactor.apply(&record::clip(&x.name, 200).0).0,
            })
            .collect();
    }
    d.no_choice = no_choice.map(str::to_owned);
    s.held[pos].record.details = Details::of(&d);
}

/// The rule's pick for held chooser `record`, if a device it names is offered now: the page
/// hook is told to leave the browser's call alone, then the answerer picks (in that order,
/// so the page's result, which comes at once, finds the request answered).
pub(super) fn rule_pick(s: &mut State, record: u64, view: &PromptView, to_browser: &mut Vec<ToBrowser>) {
    let Some((rule, pick)) = s.kinds.get::<RulePicks>().0.get(&record).cloned() else { return };
    if held_pos(s, record).is_none_or(|p| s.held[p].closing.is_some()) {
        return;
    }
    if let Some(id) = pick.among(&view.devices) {
        if let Some(p) = held_pos(s, record) {
            s.held[p].record.rule_id = Some(rule);
        }
        let with = With::own(Chosen::Pick(id.to_owned()));
        to_browser.extend(s.answer_held(record, true, None, with, DecidedBy::Rule).ok());
    }
}

/// Links held chooser `record` to answerer prompt `view` (claimed), notes its devices and
/// lets its rule pick.
pub(super) fn link(s: &mut State, record: u64, view: &PromptView, to_browser: &mut Vec<ToBrowser>) -> bool {
    if !s.answerer.claim(view.prompt) {
        return false;
    }
    s.kinds.get::<Links>().0.insert(record, Link { prompt: view.prompt, picking: false });
    note(s, record, Some(view), None);
    rule_pick(s, record, view, to_browser);
    true
}

/// Held Bluetooth choosers not linked yet, oldest first: (record, url, page url).
pub(super) fn unlinked(s: &mut State) -> Vec<(u64, String, String)> {
    let linked: Vec<u64> = s.kinds.get::<Links>().0.keys().copied().collect();
    s.held
        .iter()
        .filter(|h| h.record.kind == KIND && h.closing.is_none() && !linked.contains(&h.record.id))
        .filter(|h| h.record.details.read::<ChooserDetails>().is_some_and(|d| d.chooser == ChooserApi::Bluetooth))
        .map(|h| (h.record.id, h.record.url.clone(), h.record.page_url.clone()))
        .collect()
}

/// Whether tab `tab`'s rules or policy may pick a chooser (so the answerer must watch first).
pub(super) fn may_pick(s: &State, tab: i64) -> bool {
    s.policy_of(tab).policy == Policy::MustRespond
        || s.rules.any(tab, |r| r.of::<DeviceChooserRule>().is_some_and(|r| r.pick.is_some()))
}
