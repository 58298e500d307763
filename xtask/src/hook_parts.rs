//! The page hook's parts (manifest/inject/*.js) share one closure, so nothing but their
//! headers says what one takes from another. This checks the headers against the code.

use anyhow::{Result, bail};

// The parts share one closure, so nothing but their headers says what one takes from
// another. Each part opens with comment lines
//     // @needs apply, win, toIsolated     names it takes from earlier parts
//     // @gives askBrowser, deferred       names it declares for later parts
// and the build checks them against the code, with comments and the text of strings
// blanked out (no JavaScript parser: a scan of words and brackets):
//   - every need is given by an earlier part (the parts run in name order, at start);
//   - every give is declared at the part's top level (`const`, `let`, `var`, `function`,
//     or a name destructured in a `const`);
//   - a name a part declares at its top level and another part uses (a word of the code,
//     not a member after `.`, not an object literal's key) is given by the one and needed
//     by the other;
//   - no header lists a need its part never uses, or a give no part needs.
// Not understood (none in the parts): regular expression literals, several declarators in
// one `const`/`let`/`var`. A name declared again inside another part's function counts as a
// use of the first there: give it another name.

/// One part as the check sees it.
struct Part<'a> {
    name: &'a str,
    needs: Vec<&'a str>,
    gives: Vec<&'a str>,
    /// Names declared at the part's top level (the closure's scope).
    top: Vec<String>,
    /// Names the part uses (each once).
    uses: Vec<String>,
}

/// Checks the parts' headers (see above); `parts`: (file name, text), in name order.
pub fn check(parts: &[(String, String)]) -> Result<()> {
    let mut errors = Vec::new();
    let parsed: Vec<Part> = parts.iter().map(|(name, text)| part(name, text, &mut errors)).collect();
    let giver = |name: &str| parsed.iter().position(|p| p.gives.contains(&name));
    for (i, p) in parsed.iter().enumerate() {
        for need in &p.needs {
            match giver(need) {
                Some(j) if j < i => {}
                Some(j) => errors.push(format!(
                    "{} needs `{need}`, which only {} gives, a later part (parts run in name order)",
                    p.name, parsed[j].name
                )),
                None => errors.push(format!("{} needs `{need}`, which no part gives", p.name)),
            }
            if !p.uses.iter().any(|u| u == need) {
                errors.push(format!("{} needs `{need}` but never uses it", p.name));
            }
        }
        for give in &p.gives {
            if !p.top.iter().any(|t| t == give) {
                errors.push(format!(
                    "{} gives `{give}` but does not declare it at its top level (const, let, var or function)",
                    p.name
                ));
            }
            if let Some(other) = parsed[..i].iter().find(|o| o.gives.contains(give)) {
                errors.push(format!("{} gives `{give}`, which {} gives already", p.name, other.name));
            }
            if !parsed.iter().any(|o| o.needs.contains(give)) {
                errors.push(format!("{} gives `{give}` but no part needs it", p.name));
            }
        }
        for used in &p.uses {
            let Some(owner) = parsed.iter().position(|o| o.top.contains(used)) else { continue };
            if owner == i {
                continue;
            }
            let o = &parsed[owner];
            if !o.gives.contains(&used.as_str()) {
                errors.push(format!("{} uses `{used}`, which {} declares without `// @gives {used}`", p.name, o.name));
            } else if !p.needs.contains(&used.as_str()) {
                errors.push(format!("{} uses `{used}` (from {}) without `// @needs {used}`", p.name, o.name));
            }
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    bail!("manifest/inject/: the parts' @needs/@gives headers do not hold:\n  {}", errors.join("\n  "))
}

fn part<'a>(name: &'a str, text: &'a str, errors: &mut Vec<String>) -> Part<'a> {
    let (mut needs, mut gives) = (Vec::new(), Vec::new());
    let mut in_header = true;
    for line in text.lines() {
        let line = line.trim();
        in_header = in_header && (line.is_empty() || line.starts_with("//"));
        let Some(comment) = line.strip_prefix("//") else { continue };
        let comment = comment.trim_start();
        let (list, into) = if let Some(rest) = comment.strip_prefix("@needs") {
            (rest, &mut needs)
        } else if let Some(rest) = comment.strip_prefix("@gives") {
            (rest, &mut gives)
        } else {
            continue;
        };
        if !in_header {
            errors.push(format!("{name}: `{line}` must be among the part's first lines (its header)"));
            continue;
        }
        for word in list.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty()) {
            if !is_word(word) {
                errors.push(format!("{name}: `{word}` in its header is not a name"));
            } else if into.contains(&word) {
                errors.push(format!("{name}: `{word}` is in its header twice"));
            } else {
                into.push(word);
            }
        }
    }
    let toks = tokens(&blank(text));
    let (mut top, mut uses) = (Vec::new(), Vec::<String>::new());
    let mut depth = 0i32;
    for (k, tok) in toks.iter().enumerate() {
        let Tok::Word(word) = tok else {
            match tok {
                Tok::Punct('{' | '(' | '[') => depth += 1,
                Tok::Punct('}' | ')' | ']') => depth -= 1,
                _ => {}
            }
            continue;
        };
        let prev = |back: usize| k.checked_sub(back).and_then(|b| toks.get(b));
        let next = toks.get(k + 1);
        if depth == 0 && matches!(word.as_str(), "const" | "let" | "var" | "function") {
            top.extend(declared(&toks[k + 1..]));
        }
        let member = prev(1) == Some(&Tok::Punct('.')) && prev(2) != Some(&Tok::Punct('.'));
        let key = matches!(prev(1), Some(Tok::Punct('{' | ','))) && next == Some(&Tok::Punct(':'));
        let declaration =
            matches!(prev(1), Some(Tok::Word(w)) if matches!(w.as_str(), "const" | "let" | "var" | "function"));
        if !(member || key || declaration || uses.contains(word)) {
            uses.push(word.clone());
        }
    }
    Part { name, needs, gives, top, uses }
}

/// The names a declaration binds, from the tokens after its keyword: one name, or those of
/// an object or array pattern (`{ a, b: c }` binds a and c).
fn declared(after: &[Tok]) -> Vec<String> {
    match after.first() {
        Some(Tok::Word(w)) => vec![w.clone()],
        Some(Tok::Punct(open @ ('{' | '['))) => {
            let close = if *open == '{' { '}' } else { ']' };
            let mut names = Vec::new();
            for (k, tok) in after.iter().enumerate().skip(1) {
                match tok {
                    Tok::Punct(c) if *c == close => break,
                    Tok::Word(w) if after.get(k + 1) != Some(&Tok::Punct(':')) && after[k - 1] != Tok::Punct('=') => {
                        names.push(w.clone());
                    }
                    _ => {}
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    /// A name or keyword (numbers are left out).
    Word(String),
    Punct(char),
}

fn is_word(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn tokens(code: &str) -> Vec<Tok> {
    let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if word_char(c) {
            let mut end = at + c.len_utf8();
            while let Some(&(i, d)) = chars.peek() {
                if !word_char(d) {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            if !c.is_ascii_digit() {
                out.push(Tok::Word(code[at..end].to_string()));
            }
        } else if !c.is_whitespace() {
            out.push(Tok::Punct(c));
        }
    }
    out
}

/// The code with comments and the text of string and template literals made spaces (a
/// template's `${…}` stays code, its `$` a space); line breaks are kept.
fn blank(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let space = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut depth = 0usize;
    // The brace depth each open template's `${` returns to its text at.
    let mut templates: Vec<usize> = Vec::new();
    let mut in_template = false;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if in_template {
            match c {
                '\\' => {
                    out.push(' ');
                    out.extend(next.map(space));
                    i += 2;
                }
                '`' => {
                    out.push('`');
                    in_template = false;
                    i += 1;
                }
                '$' if next == Some('{') => {
                    out.push_str(" {");
                    templates.push(depth);
                    depth += 1;
                    in_template = false;
                    i += 2;
                }
                _ => {
                    out.push(space(c));
                    i += 1;
                }
            }
            continue;
        }
        match (c, next) {
            ('/', Some('/')) => {
                while i < s.len() && s[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                out.push_str("  ");
                i += 2;
                while i < s.len() && !(s[i] == '*' && s.get(i + 1) == Some(&'/')) {
                    out.push(space(s[i]));
                    i += 1;
                }
                out.push_str("  ");
                i += 2;
            }
            ('\'' | '"', _) => {
                out.push(c);
                i += 1;
                while i < s.len() && s[i] != c && s[i] != '\n' {
                    let skip = if s[i] == '\\' { 2 } else { 1 };
                    for _ in 0..skip.min(s.len() - i) {
                        out.push(' ');
                    }
                    i += skip;
                }
                if i < s.len() {
                    out.push(s[i]);
                    i += 1;
                }
            }
            ('`', _) => {
                out.push('`');
                in_template = true;
                i += 1;
            }
            _ => {
                if c == '{' {
                    depth += 1;
                } else if c == '}' {
                    depth = depth.saturating_sub(1);
                    if templates.last() == Some(&depth) {
                        templates.pop();
                        in_template = true;
                    }
                }
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(parts: &[(&str, &str)]) -> Vec<(String, String)> {
        parts.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
    }

    /// The errors for a set of parts, one string.
    fn errors(parts: &[(&str, &str)]) -> String {
        check(&owned(parts)).err().map(|e| e.to_string()).unwrap_or_default()
    }

    const NATIVES: &str = "  // @gives win, apply, pick\n  // ---- Natives ----\n  const win = window;\n  const { apply } = Reflect;\n  function pick(v) { return v; }\n";
    const ASK: &str = "  // @needs win, apply\n  // @gives ask\n  const ask = (what) => apply(send, win, [what]); // not `pick` here\n  const send = () => {};\n";
    // `win` as a key, `.pick` as a member, `apply` in strings and a template's text: no uses.
    const USER: &str = "  // @needs ask, pick\n  const o = { win: 1, apply };\n  o.pick;\n  ask('apply', \"win\", `apply ${pick(o)} win`);\n";

    #[test]
    fn parts_that_declare_what_they_share_pass() {
        // `apply` in USER is a shorthand property: a use, needed.
        assert!(errors(&[("00-n.js", NATIVES), ("20-a.js", ASK), ("40-u.js", USER)]).contains("40-u.js uses `apply`"));
        let user = USER.replace("@needs ask, pick", "@needs apply, ask, pick");
        assert_eq!(errors(&[("00-n.js", NATIVES), ("20-a.js", ASK), ("40-u.js", &user)]), "");
    }

    #[test]
    fn broken_headers_are_named_by_part_and_name() {
        let user = USER.replace("@needs ask, pick", "@needs apply, ask, pick");
        // A use without a need.
        let e = errors(&[
            ("00-n.js", NATIVES),
            ("20-a.js", &ASK.replace("@needs win, apply", "@needs apply")),
            ("40-u.js", &user),
        ]);
        assert!(e.contains("20-a.js uses `win` (from 00-n.js) without `// @needs win`"), "{e}");
        // A need from a later part.
        let e = errors(&[("00-n.js", NATIVES), ("20-a.js", &user), ("40-a.js", ASK)]);
        assert!(e.contains("20-a.js needs `ask`, which only 40-a.js gives, a later part"), "{e}");
        // A need nobody gives, and one never used.
        let e = errors(&[
            ("00-n.js", NATIVES),
            ("20-a.js", &ASK.replace("@needs win, apply", "@needs win, apply, doc, pick")),
            ("40-u.js", &user),
        ]);
        assert!(e.contains("20-a.js needs `doc`, which no part gives"), "{e}");
        assert!(e.contains("20-a.js needs `pick` but never uses it"), "{e}");
        // A give not declared, and a declaration used elsewhere but not given.
        let e = errors(&[
            ("00-n.js", NATIVES),
            ("20-a.js", &ASK.replace("@gives ask", "@gives ask, asked")),
            ("40-u.js", &user),
        ]);
        assert!(e.contains("20-a.js gives `asked` but does not declare it"), "{e}");
        let e = errors(&[("00-n.js", &NATIVES.replace(", pick\n", "\n")), ("20-a.js", ASK), ("40-u.js", &user)]);
        assert!(e.contains("40-u.js uses `pick`, which 00-n.js declares without `// @gives pick`"), "{e}");
        // A give nobody needs; a header line after the code.
        let e = errors(&[("00-n.js", NATIVES), ("20-a.js", ASK), ("40-u.js", &format!("{user}  // @gives o\n"))]);
        assert!(e.contains("40-u.js: `// @gives o` must be among the part's first lines"), "{e}");
        let e = errors(&[("00-n.js", NATIVES), ("20-a.js", ASK), ("40-u.js", &format!("  // @gives o\n{user}"))]);
        assert!(e.contains("40-u.js gives `o` but no part needs it"), "{e}");
    }

    #[test]
    fn blanking_keeps_code_only() {
        let code = blank("a('b // c', \"d\\\"e\") /* f */ + `g ${h({ i: `j${k}` })} l` // m\nn");
        let words: Vec<_> =
            tokens(&code).into_iter().filter_map(|t| if let Tok::Word(w) = t { Some(w) } else { None }).collect();
        assert_eq!(words, ["a", "h", "i", "k", "n"]);
        assert_eq!(code.lines().count(), 2);
    }
}
