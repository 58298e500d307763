//! Redaction of page text before it is stored or shown: secrets a page puts in a dialog
//! (tokens, passwords, card numbers, e-mail addresses) never reach the agent's context.
//!
//! Configurable in `config.json` (see `config_path`):
//! `{"redact": {"defaults": true, "patterns": [{"name": "employee_id", "regex": "EMP-\\d{6}"}]}}`

use regex::{Captures, Regex};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Clone, Debug)]
struct Rule {
    name: String,
    re: Regex,
    /// Replace only this capture group (keeps a label such as `password:` readable).
    group: usize,
    /// Card numbers must also pass the Luhn check.
    luhn: bool,
}

#[derive(Debug)]
pub struct Redactor {
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub redact: RedactConfig,
    #[serde(default)]
    pub files: FilesConfig,
}

/// Where an agent may have Unmodal write files (`files.rs`), besides the MCP client's roots.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FilesConfig {
    #[serde(default)]
    pub allowed_dirs: Vec<std::path::PathBuf>,
}

impl Config {
    /// The user's config (`config_path`); none: the defaults.
    pub fn load() -> Result<Self, String> {
        let Some(path) = config_path() else { return Ok(Self::default()) };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactConfig {
    /// Keep the built-in patterns (default true).
    #[serde(default = "yes")]
    pub defaults: bool,
    #[serde(default)]
    pub patterns: Vec<Pattern>,
}

impl Default for RedactConfig {
    fn default() -> Self {
        Self { defaults: true, patterns: Vec::new() }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    pub name: String,
    pub regex: String,
}

const BUILT_IN: &[(&str, &str, usize)] = &[
    ("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", 0),
    (
        "password",
        r"(?i)\b(?:password|passwd|pwd|passcode|pin|secret|api[_-]?key|access[_-]?token|token)\b\s*(?:is\s*)?[:=]?\s*([^\s,;]{3,})",
        1,
    ),
    ("token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)", 1),
    ("token", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
    ("token", r"\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_])?[A-Za-z0-9_-]{16,}", 0),
    ("token", r"\bgh[pousr]_[A-Za-z0-9]{30,}", 0),
    ("token", r"\bgithub_pat_[A-Za-z0-9_]{30,}", 0),
    ("token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", 0),
    ("token", r"\bAKIA[0-9A-Z]{16}\b", 0),
    ("token", r"\bAIza[0-9A-Za-z_-]{35}", 0),
];
const CARD: &str = r"\b\d(?:[ -]?\d){12,18}\b";

impl Default for Redactor {
    fn default() -> Self {
        // Compiled once per process; a `Regex` clone shares the compiled program.
        static BUILT_IN_RULES: std::sync::LazyLock<Redactor> =
            std::sync::LazyLock::new(|| Redactor::new(&Config::default()).expect("built-in patterns compile"));
        Self { rules: BUILT_IN_RULES.rules.clone() }
    }
}

impl Redactor {
    pub fn new(config: &Config) -> Result<Self, String> {
        let mut rules = Vec::new();
        if config.redact.defaults {
            for &(name, re, group) in BUILT_IN {
                rules.push(Rule {
                    name: name.into(),
                    re: Regex::new(re).map_err(|e| e.to_string())?,
                    group,
                    luhn: false,
                });
            }
            rules.push(Rule {
                name: "card_number".into(),
                re: Regex::new(CARD).map_err(|e| e.to_string())?,
                group: 0,
                luhn: true,
            });
        }
        for p in &config.redact.patterns {
            let re = Regex::new(&p.regex).map_err(|e| format!("redact pattern `{}`: {e}", p.name))?;
            rules.push(Rule { name: p.name.clone(), re, group: 0, luhn: false });
        }
        Ok(Self { rules })
    }

    /// Reads the user's config; without one, the defaults. A broken config is an error the
    /// caller reports (the host then keeps the defaults rather than redacting nothing).
    pub fn load() -> Result<Self, String> {
        let config = Config::load()?;
        Self::new(&config).map_err(|e| format!("{}: {e}", config_path().unwrap_or_default().display()))
    }

    /// `text` with every match replaced by `[redacted:<name>]`, and the names that matched.
    pub fn apply(&self, text: &str) -> (String, Vec<String>) {
        let mut out = text.to_owned();
        let mut hits = Vec::new();
        for rule in &self.rules {
            let mut hit = false;
            let replaced = rule.re.replace_all(&out, |c: &Captures<'_>| {
                let whole = c.get(0).expect("group 0 always matches");
                let Some(part) = c.get(rule.group) else { return whole.as_str().to_owned() };
                if rule.luhn && !luhn(part.as_str()) {
                    return whole.as_str().to_owned();
                }
                hit = true;
                let (s, e) = (part.start() - whole.start(), part.end() - whole.start());
                format!("{}[redacted:{}]{}", &whole.as_str()[..s], rule.name, &whole.as_str()[e..])
            });
            if hit {
                out = replaced.into_owned();
                if !hits.contains(&rule.name) {
                    hits.push(rule.name.clone());
                }
            }
        }
        (out, hits)
    }
}

fn luhn(s: &str) -> bool {
    let digits: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| if i % 2 == 1 { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { d })
        .sum();
    digits.len() >= 13 && sum.is_multiple_of(10)
}

/// `UNMODAL_CONFIG`, else `unmodal/config.json` in the user's configuration directory
/// (`$XDG_CONFIG_HOME`, else `~/.config`, on Linux; `~/Library/Application Support` on macOS).
pub fn config_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("UNMODAL_CONFIG") {
        return Some(p.into());
    }
    Some(dirs::config_dir()?.join("unmodal/config.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(s: &str) -> String {
        Redactor::default().apply(s).0
    }

    #[test]
    fn built_in_secrets_are_redacted() {
        assert_eq!(red("Mail ada@example.co.uk now"), "Mail [redacted:email] now");
        assert_eq!(red("Your password: hunter22, keep it"), "Your password: [redacted:password], keep it");
        assert_eq!(red("API_KEY=abc123def"), "API_KEY=[redacted:password]");
        assert_eq!(red("Authorization: Bearer abcdefghijklmnopqrstu"), "Authorization: Bearer [redacted:token]");
        assert_eq!(red("key sk-live-4f9a8b7c6d5e4f3a2b1c"), "key [redacted:token]");
        assert_eq!(red("ghp_0123456789abcdefghijklmnopqrstuvwxyz"), "[redacted:token]");
        assert_eq!(red("Pay with 4111 1111 1111 1111?"), "Pay with [redacted:card_number]?");
        assert_eq!(red("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX3g"), "jwt [redacted:token]");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for s in ["Delete project alpha?", "Order 1234567890123 shipped", "Leave site? Changes may not be saved.", ""] {
            assert_eq!(red(s), s);
        }
        // 16 digits that fail the Luhn check are not a card.
        assert_eq!(red("ref 4111 1111 1111 1112"), "ref 4111 1111 1111 1112");
    }

    #[test]
    fn names_of_what_matched_are_reported() {
        let (_, hits) = Redactor::default().apply("a@b.io and c@d.io, pwd=xyz123");
        assert_eq!(hits, ["email", "password"]);
    }

    #[test]
    fn config_adds_patterns_and_can_drop_defaults() {
        let config: Config = serde_json::from_str(
            r#"{"redact": {"defaults": false, "patterns": [{"name": "employee", "regex": "EMP-\\d{6}"}]}}"#,
        )
        .unwrap();
        let r = Redactor::new(&config).unwrap();
        assert_eq!(r.apply("EMP-123456 a@b.io").0, "[redacted:employee] a@b.io");
        let bad: Config = serde_json::from_str(r#"{"redact": {"patterns": [{"name": "x", "regex": "("}]}}"#).unwrap();
        assert!(Redactor::new(&bad).unwrap_err().contains("redact pattern `x`"));
        assert!(serde_json::from_str::<Config>(r#"{"redcat": {}}"#).is_err());
    }
}
