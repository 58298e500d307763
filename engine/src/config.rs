//! The config wire format: everything a document's engine holds, in one string of UTF-16
//! code units (what a JS string is made of, so the page copies it into linear memory
//! without a text decoder). The host encodes it, the page hook passes it through untouched,
//! the engine parses it; nothing else reads or edits it.
//!
//! ```text
//! config := "U1" ("E" bit)? ("P" digit)? "S"? rule*
//!   E: the AI Web Pilot switch (1: the engine answers dialogs; default 0: every dialog keeps
//!      its native behaviour)
//!   P: the tab's policy for dialogs no rule answers (0 auto, 1 must_respond, 2 auto_accept,
//!      3 auto_dismiss; default 0)
//!   S: stand-in: the tab's rules have not reached this document yet, so a default that
//!      answers a dialog is reported with `rules_loaded: false`
//! rule  := "R" field*              fields in any order, each at most once
//! field := "i" decimal ";"         rule id (u32), required
//!        | "t" digit               target: 0 alert, 1 confirm, 2 prompt, 3 beforeunload, 4 all; required
//!        | "a" ("0" | "1")         accept (default 1)
//!        | "o" ("0" | "1")         once (default 1)
//!        | "x" decimal ":" units   prompt text: length in code units, then the units
//!        | "m" decimal ":" units   only dialogs whose message contains this (folded, see matching)
//!        | "u" decimal ":" units   only dialogs whose page URL contains this (folded)
//! ```

use crate::{Policy, RuleTarget};

/// At most this many rules per tab reach the page.
pub const MAX_RULES: usize = 32;
/// At most this many UTF-16 code units of prompt text per rule.
pub const MAX_TEXT_UNITS: usize = 4096;
/// At most this many code units in a rule's message or URL match.
pub const MAX_MATCH_UNITS: usize = 512;
/// Room for all rule texts of a tab together.
pub const ARENA_UNITS: usize = 16 * 1024;

/// Why a rule set was refused. The engine keeps its previous rules when this happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadError {
    BadHeader,
    Truncated,
    Unexpected { at: usize },
    MissingField { rule: usize },
    DuplicateField { at: usize },
    TooManyRules,
    TextTooLong { rule: usize },
}

impl LoadError {
    /// Negative status code for the C ABI.
    pub fn code(self) -> i32 {
        match self {
            Self::BadHeader => -1,
            Self::Truncated => -2,
            Self::Unexpected { .. } => -3,
            Self::MissingField { .. } => -4,
            Self::DuplicateField { .. } => -5,
            Self::TooManyRules => -6,
            Self::TextTooLong { .. } => -7,
        }
    }
}

/// One decoded rule; `text` borrows from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSpec<'a> {
    pub id: u32,
    pub target: RuleTarget,
    pub accept: bool,
    pub once: bool,
    pub text: Option<&'a [u16]>,
    pub message: Option<&'a [u16]>,
    pub url: Option<&'a [u16]>,
}

impl RuleSpec<'_> {
    /// Arena units this rule needs.
    pub fn units(&self) -> usize {
        [self.text, self.message, self.url].iter().flatten().map(|t| t.len()).sum()
    }
}

const HEADER: [u16; 2] = [b'U' as u16, b'1' as u16];

/// What a config says besides its rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The AI Web Pilot switch.
    pub enabled: bool,
    pub policy: Policy,
    /// The rules are a stand-in (none yet), not the tab's.
    pub standin: bool,
}

/// Decodes `input`, handing each rule to `each`. Returns the header and the number of rules.
pub fn parse<'a>(input: &'a [u16], mut each: impl FnMut(RuleSpec<'a>)) -> Result<(Header, usize), LoadError> {
    let mut cur = Cursor { input, at: 0 };
    if cur.take(2)? != HEADER {
        return Err(LoadError::BadHeader);
    }
    let mut header = Header::default();
    if cur.peek() == Some(u16::from(b'E')) {
        cur.at += 1;
        header.enabled = cur.bit()?;
    }
    if cur.peek() == Some(u16::from(b'P')) {
        cur.at += 1;
        let at = cur.at;
        header.policy = Policy::from_u8(cur.digit()?).ok_or(LoadError::Unexpected { at })?;
    }
    if cur.peek() == Some(u16::from(b'S')) {
        cur.at += 1;
        header.standin = true;
    }
    let mut count = 0;
    while !cur.done() {
        if cur.next()? != u16::from(b'R') {
            return Err(LoadError::Unexpected { at: cur.at - 1 });
        }
        if count == MAX_RULES {
            return Err(LoadError::TooManyRules);
        }
        each(parse_rule(&mut cur, count)?);
        count += 1;
    }
    Ok((header, count))
}

fn parse_rule<'a>(cur: &mut Cursor<'a>, index: usize) -> Result<RuleSpec<'a>, LoadError> {
    let (mut id, mut target, mut accept, mut once, mut text) = (None, None, None, None, None);
    let (mut message, mut url) = (None, None);
    while let Some(tag) = cur.peek() {
        if tag == u16::from(b'R') {
            break;
        }
        let at = cur.at;
        cur.at += 1;
        let dup = match tag as u8 {
            b'i' => {
                let v = cur.decimal(b';')?;
                id.replace(v).is_some()
            }
            b't' => {
                let v = RuleTarget::from_code(cur.digit()?).ok_or(LoadError::Unexpected { at })?;
                target.replace(v).is_some()
            }
            b'a' => {
                let v = cur.bit()?;
                accept.replace(v).is_some()
            }
            b'o' => {
                let v = cur.bit()?;
                once.replace(v).is_some()
            }
            b'x' => {
                let len = cur.decimal(b':')? as usize;
                if len > MAX_TEXT_UNITS {
                    return Err(LoadError::TextTooLong { rule: index });
                }
                let v = cur.take(len)?;
                text.replace(v).is_some()
            }
            b'm' | b'u' => {
                let len = cur.decimal(b':')? as usize;
                if len > MAX_MATCH_UNITS {
                    return Err(LoadError::TextTooLong { rule: index });
                }
                let v = cur.take(len)?;
                let field = if tag == u16::from(b'm') { &mut message } else { &mut url };
                field.replace(v).is_some()
            }
            _ => return Err(LoadError::Unexpected { at }),
        };
        if dup {
            return Err(LoadError::DuplicateField { at });
        }
    }
    Ok(RuleSpec {
        id: id.ok_or(LoadError::MissingField { rule: index })?,
        target: target.ok_or(LoadError::MissingField { rule: index })?,
        accept: accept.unwrap_or(true),
        once: once.unwrap_or(true),
        text,
        message,
        url,
    })
}

struct Cursor<'a> {
    input: &'a [u16],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn done(&self) -> bool {
        self.at >= self.input.len()
    }

    fn peek(&self) -> Option<u16> {
        self.input.get(self.at).copied()
    }

    fn next(&mut self) -> Result<u16, LoadError> {
        let v = self.peek().ok_or(LoadError::Truncated)?;
        self.at += 1;
        Ok(v)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u16], LoadError> {
        let end = self.at.checked_add(n).ok_or(LoadError::Truncated)?;
        let v = self.input.get(self.at..end).ok_or(LoadError::Truncated)?;
        self.at = end;
        Ok(v)
    }

    fn digit(&mut self) -> Result<u8, LoadError> {
        let at = self.at;
        let u = self.next()?;
        match u {
            0x30..=0x39 => Ok((u - 0x30) as u8),
            _ => Err(LoadError::Unexpected { at }),
        }
    }

    fn bit(&mut self) -> Result<bool, LoadError> {
        let at = self.at;
        match self.digit()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(LoadError::Unexpected { at }),
        }
    }

    /// Up to ten digits, then `end`.
    fn decimal(&mut self, end: u8) -> Result<u32, LoadError> {
        let mut v: u32 = 0;
        for n in 0..=10 {
            let at = self.at;
            let u = self.next()?;
            if u == u16::from(end) && n > 0 {
                return Ok(v);
            }
            if !(0x30..=0x39).contains(&u) {
                return Err(LoadError::Unexpected { at });
            }
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u32::from(u - 0x30)))
                .ok_or(LoadError::Unexpected { at })?;
        }
        Err(LoadError::Unexpected { at: self.at })
    }
}

/// Builds a config (host side).
#[cfg(feature = "encode")]
#[derive(Debug, Default)]
pub struct Encoder {
    header: Header,
    out: String,
}

#[cfg(feature = "encode")]
impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The AI Web Pilot switch (default off).
    pub fn pilot(&mut self, on: bool) -> &mut Self {
        self.header.enabled = on;
        self
    }

    /// The policy for dialogs no rule answers (default `Auto`).
    pub fn policy(&mut self, policy: Policy) -> &mut Self {
        self.header.policy = policy;
        self
    }

    /// Marks the config as a stand-in for rules not known yet.
    pub fn standin(&mut self) -> &mut Self {
        self.header.standin = true;
        self
    }

    pub fn rule(&mut self, id: u32, target: RuleTarget, accept: bool, once: bool, text: Option<&str>) {
        self.rule_matching(id, target, accept, once, text, None, None);
    }

    /// A rule that applies only when the message and/or URL contain the given texts
    /// (compared case-insensitively; they are folded here).
    #[allow(clippy::too_many_arguments)]
    pub fn rule_matching(
        &mut self,
        id: u32,
        target: RuleTarget,
        accept: bool,
        once: bool,
        text: Option<&str>,
        message: Option<&str>,
        url: Option<&str>,
    ) {
        use std::fmt::Write;
        let _ = write!(self.out, "Ri{id};t{}a{}o{}", target.code(), u8::from(accept), u8::from(once));
        if let Some(t) = text {
            let _ = write!(self.out, "x{}:{t}", t.encode_utf16().count());
        }
        for (tag, m) in [('m', message), ('u', url)] {
            if let Some(m) = m {
                let units: Vec<u16> = m.encode_utf16().map(crate::matching::fold).collect();
                let _ = write!(self.out, "{tag}{}:{}", units.len(), String::from_utf16_lossy(&units));
            }
        }
    }

    pub fn finish(&self) -> String {
        let Header { enabled, policy, standin } = self.header;
        let mut s = String::from("U1");
        if enabled {
            s.push_str("E1");
        }
        if policy != Policy::Auto {
            s.push('P');
            s.push(char::from(b'0' + policy as u8));
        }
        if standin {
            s.push('S');
        }
        s + &self.out
    }
}

/// The configs the extension uses while the host has sent none for a tab: the pilot off or
/// on with no rules, and the stand-in a new document starts from when only the pilot's
/// state is known (`manifest/background.js` and `content.js` hold these strings; a test
/// checks them against this function).
#[cfg(feature = "encode")]
pub fn fallback_configs() -> [(&'static str, String); 3] {
    [
        ("PILOT_OFF", Encoder::new().finish()),
        ("PILOT_ON", Encoder::new().pilot(true).finish()),
        ("PILOT_ON_STANDIN", Encoder::new().pilot(true).standin().finish()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DialogKind;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    /// id, target, accept, once, text
    type Parsed = (u32, RuleTarget, bool, bool, Option<String>);

    fn collect(s: &str) -> Result<Vec<Parsed>, LoadError> {
        let input = units(s);
        let mut out = Vec::new();
        parse(&input, |r| out.push((r.id, r.target, r.accept, r.once, r.text.map(String::from_utf16_lossy))))?;
        Ok(out)
    }

    #[test]
    fn header_round_trips() {
        let mut e = Encoder::new();
        e.policy(Policy::MustRespond).pilot(true);
        e.rule(3, RuleTarget::All, true, true, None);
        let wire = e.finish();
        assert_eq!(wire, "U1E1P1Ri3;t4a1o1");
        let on_hold = Header { enabled: true, policy: Policy::MustRespond, standin: false };
        assert_eq!(parse(&units(&wire), |_| {}), Ok((on_hold, 1)));
        let dismiss = Header { policy: Policy::AutoDismiss, ..Header::default() };
        assert_eq!(parse(&units("U1P3"), |_| {}), Ok((dismiss, 0)));
        assert_eq!(parse(&units("U1E0"), |_| {}), Ok((Header::default(), 0)));
        let standin = Header { enabled: true, standin: true, ..Header::default() };
        assert_eq!(parse(&units("U1E1S"), |_| {}), Ok((standin, 0)));
        assert_eq!(parse(&units("U1P7"), |_| {}), Err(LoadError::Unexpected { at: 3 }));
        assert_eq!(parse(&units("U1P"), |_| {}), Err(LoadError::Truncated));
        assert_eq!(parse(&units("U1E2"), |_| {}), Err(LoadError::Unexpected { at: 3 }));
        // Header fields come in their order, once.
        assert_eq!(parse(&units("U1P1E1"), |_| {}), Err(LoadError::Unexpected { at: 4 }));
        assert_eq!(parse(&units("U1SS"), |_| {}), Err(LoadError::Unexpected { at: 3 }));
    }

    #[test]
    fn the_extension_holds_these_configs() {
        let files = [
            include_str!("../../manifest/background.js"),
            include_str!("../../manifest/content.js"),
            include_str!("../../manifest/inject/20-channel.js"),
        ];
        for (name, config) in fallback_configs() {
            let declared = format!("const {name} = '");
            let holders: Vec<_> = files.iter().filter(|f| f.contains(&declared)).collect();
            assert!(!holders.is_empty(), "no file of manifest/ declares {name}");
            for f in holders {
                assert!(f.contains(&format!("{declared}{config}';")), "manifest/: {name} must be '{config}'");
            }
        }
    }

    #[test]
    fn fallback_configs_are_what_they_say() {
        let [off, on, standin] = fallback_configs();
        let header = |s: &str| parse(&units(s), |_| {}).unwrap().0;
        assert_eq!(header(&off.1), Header::default());
        assert_eq!(header(&on.1), Header { enabled: true, ..Header::default() });
        assert_eq!(header(&standin.1), Header { enabled: true, standin: true, ..Header::default() });
    }

    #[test]
    fn encoder_output_parses_back() {
        let mut e = Encoder::new();
        e.rule(7, RuleTarget::One(DialogKind::Prompt), true, false, Some("héllo 🌍 R;x:"));
        e.rule(8, RuleTarget::All, false, true, None);
        let got = collect(&e.finish()).unwrap();
        assert_eq!(
            got,
            vec![
                (7, RuleTarget::One(DialogKind::Prompt), true, false, Some("héllo 🌍 R;x:".into())),
                (8, RuleTarget::All, false, true, None),
            ]
        );
    }

    #[test]
    fn empty_rule_set_is_valid() {
        assert_eq!(collect("U1").unwrap(), vec![]);
    }

    #[test]
    fn defaults_accept_and_once() {
        assert_eq!(collect("URi1;t1").unwrap_err(), LoadError::BadHeader);
        assert_eq!(collect("U1Ri1;t1").unwrap(), vec![(1, RuleTarget::One(DialogKind::Confirm), true, true, None)]);
    }

    #[test]
    fn malformed_inputs_are_refused_not_panicked_on() {
        assert_eq!(collect("").unwrap_err(), LoadError::Truncated);
        assert_eq!(collect("U2").unwrap_err(), LoadError::BadHeader);
        assert_eq!(collect("U1X").unwrap_err(), LoadError::Unexpected { at: 2 });
        assert_eq!(collect("U1Rt1").unwrap_err(), LoadError::MissingField { rule: 0 });
        assert_eq!(collect("U1Ri1;").unwrap_err(), LoadError::MissingField { rule: 0 });
        assert_eq!(collect("U1Ri1;t9").unwrap_err(), LoadError::Unexpected { at: 6 });
        assert_eq!(collect("U1Ri1;t1t2").unwrap_err(), LoadError::DuplicateField { at: 8 });
        assert_eq!(collect("U1Ri;t1").unwrap_err(), LoadError::Unexpected { at: 4 });
        assert_eq!(collect("U1Ri99999999999;t1").unwrap_err(), LoadError::Unexpected { at: 13 });
        assert_eq!(collect("U1Ri1;t1x5:ab").unwrap_err(), LoadError::Truncated);
        assert_eq!(collect("U1Ri1;t1a2").unwrap_err(), LoadError::Unexpected { at: 9 });
        assert_eq!(collect("U1Ri1;t1x4097:").unwrap_err(), LoadError::TextTooLong { rule: 0 });
    }

    #[test]
    fn rule_count_is_capped() {
        let many: String = (0..=MAX_RULES).map(|i| format!("Ri{i};t0")).collect();
        assert_eq!(collect(&format!("U1{many}")).unwrap_err(), LoadError::TooManyRules);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap deterministic fuzz: every prefix and many mutations of a valid input.
        let base = units("U1E1P2SRi12;t2a0o1x3:a;bRi3;t4");
        let mut seed = 0x9E37_79B9u32;
        for cut in 0..=base.len() {
            let _ = parse(&base[..cut], |_| {});
        }
        for _ in 0..20_000 {
            let mut v = base.clone();
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let i = seed as usize % v.len();
            v[i] = (seed >> 16) as u16 % 128;
            let _ = parse(&v, |_| {});
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn target() -> impl Strategy<Value = RuleTarget> {
            (0u8..=4).prop_map(|c| RuleTarget::from_code(c).unwrap())
        }

        fn text(max: usize) -> impl Strategy<Value = Option<String>> {
            proptest::option::of(proptest::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// Whatever reaches the engine, parsing ends with rules or an error, never a panic.
            #[test]
            fn any_units_parse_or_fail_cleanly(input in proptest::collection::vec(any::<u16>(), 0..300)) {
                let _ = parse(&input, |_| {});
            }

            /// The same, for inputs that look almost right (a valid header, then noise from
            /// the format's own alphabet).
            #[test]
            fn near_misses_parse_or_fail_cleanly(tail in proptest::collection::vec(
                proptest::sample::select(b"RitaoxmuESP0123456789;:".to_vec()), 0..200)) {
                let mut input = units("U1");
                input.extend(tail.into_iter().map(u16::from));
                let _ = parse(&input, |_| {});
            }

            /// An engine fed any config and any dialog decides without panicking, and a
            /// config it refused leaves the previous one in force.
            #[test]
            fn the_engine_decides_whatever_it_is_fed(
                config in proptest::collection::vec(any::<u16>(), 0..200),
                message in proptest::collection::vec(any::<u16>(), 0..100),
                url in proptest::collection::vec(any::<u16>(), 0..100),
            ) {
                let mut engine = crate::Engine::new();
                engine.load(&units("U1E1Ri1;t1a1o0m1:xu1:/")).unwrap();
                let refused = engine.load(&config).is_err();
                for kind in crate::DialogKind::ALL {
                    let d = engine.decide_for(kind, crate::Subject { message: &message, url: &url });
                    if refused && kind == crate::DialogKind::Confirm && message.contains(&u16::from(b'x'))
                        && url.contains(&u16::from(b'/')) {
                        prop_assert_eq!(d.by, crate::DecidedBy::Rule);
                    }
                }
            }

            /// What the host encodes, the engine reads back exactly.
            #[test]
            fn encoded_configs_round_trip(
                pilot in any::<bool>(),
                policy in (0u8..4).prop_map(|p| Policy::from_u8(p).unwrap()),
                rules in proptest::collection::vec(
                    (any::<u32>(), target(), any::<bool>(), any::<bool>(), text(40)), 0..MAX_RULES),
            ) {
                let mut e = Encoder::new();
                e.pilot(pilot).policy(policy);
                for (id, t, a, o, x) in &rules {
                    e.rule(*id, *t, *a, *o, x.as_deref());
                }
                let mut back = Vec::new();
                let (header, n) = parse(&units(&e.finish()), |r| {
                    back.push((r.id, r.target, r.accept, r.once, r.text.map(String::from_utf16_lossy)))
                }).unwrap();
                prop_assert_eq!(header, Header { enabled: pilot, policy, standin: false });
                prop_assert_eq!(n, rules.len());
                prop_assert_eq!(back, rules);
            }
        }
    }
}
