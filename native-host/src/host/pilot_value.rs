//! A script's result as the agent gets it. The browser serializes the value itself
//! (`Runtime.evaluate` with `serializationOptions: deep`: V8 walks it, no page code runs),
//! and this turns that into plain JSON: values JSON cannot carry (undefined, NaN, BigInt,
//! DOM nodes, functions, repeated objects, Maps …) become small `{"$type": …}` objects that
//! say what they were, strings pass through redaction, and the whole is capped in size.

use crate::redact::Redactor;
use serde_json::{Map, Value, json};

/// The most a result may take in the answer (about this many bytes of JSON).
pub const MAX_RESULT_BYTES: usize = 64 * 1024;
/// Deeper than the browser serializes (`maxDepth` in `manifest/pilot_tools.js`) never comes.
const MAX_NESTING: usize = 64;

/// A converted result: the value, whether it was cut, what redaction hid, and how many
/// values had to be described instead of carried.
#[derive(Debug, Default)]
pub struct Converted {
    pub value: Value,
    pub truncated: bool,
    pub redacted: Vec<String>,
    pub described: usize,
}

struct Walk<'a> {
    budget: usize,
    truncated: bool,
    redactor: &'a Redactor,
    redacted: Vec<String>,
    described: usize,
}

pub fn convert(deep: &Value, redactor: &Redactor) -> Converted {
    let mut w = Walk { budget: MAX_RESULT_BYTES, truncated: false, redactor, redacted: Vec::new(), described: 0 };
    let value = w.value(deep, 0);
    Converted { value, truncated: w.truncated, redacted: w.redacted, described: w.described }
}

impl Walk<'_> {
    fn text(&mut self, s: &str) -> Value {
        let (clean, hits) = self.redactor.apply(s);
        for h in hits {
            if !self.redacted.contains(&h) {
                self.redacted.push(h);
            }
        }
        let take = clean.len().min(self.budget);
        if take < clean.len() {
            self.truncated = true;
        }
        let mut end = take;
        while !clean.is_char_boundary(end) {
            end -= 1;
        }
        self.budget -= end;
        Value::String(clean[..end].to_owned())
    }

    fn spend(&mut self, n: usize) -> bool {
        if self.budget < n {
            self.truncated = true;
            self.budget = 0;
            return false;
        }
        self.budget -= n;
        true
    }

    fn described(&mut self, kind: &str, extra: Option<(&str, Value)>) -> Value {
        self.described += 1;
        self.spend(16 + kind.len());
        let mut m = Map::new();
        m.insert("$type".into(), json!(kind));
        if let Some((k, v)) = extra {
            m.insert(k.into(), v);
        }
        Value::Object(m)
    }

    fn value(&mut self, v: &Value, depth: usize) -> Value {
        if depth > MAX_NESTING || !self.spend(4) {
            self.truncated = true;
            return Value::Null;
        }
        let kind = v["type"].as_str().unwrap_or("");
        let inner = &v["value"];
        // A value met again (a cycle, or the same object twice) carries only its reference.
        if v.get("value").is_none() && v.get("weakLocalObjectReference").is_some() {
            return self
                .described("reference", Some(("$description", json!("the same object as earlier in this result"))));
        }
        match kind {
            "null" => Value::Null,
            "boolean" => inner.as_bool().map_or(Value::Null, Value::Bool),
            "string" => self.text(inner.as_str().unwrap_or("")),
            "number" => match inner {
                Value::Number(n) => Value::Number(n.clone()),
                // NaN, Infinity, -Infinity and -0 arrive as strings.
                Value::String(s) if s == "-0" => json!(0),
                Value::String(s) => self.described("number", Some(("$value", json!(s)))),
                _ => Value::Null,
            },
            "undefined" => self.described("undefined", None),
            "bigint" => {
                let s = self.text(inner.as_str().unwrap_or(""));
                self.described("bigint", Some(("$value", s)))
            }
            "array" | "set" | "nodelist" | "htmlcollection" => match inner.as_array() {
                Some(items) => {
                    let mut out = Vec::new();
                    for item in items {
                        if self.budget == 0 {
                            self.truncated = true;
                            break;
                        }
                        out.push(self.value(item, depth + 1));
                    }
                    if kind == "array" {
                        Value::Array(out)
                    } else {
                        self.described(kind, Some(("$values", Value::Array(out))))
                    }
                }
                None => self.described(kind, Some(("$description", json!("not expanded (depth limit)")))),
            },
            "object" | "map" => match inner.as_array() {
                Some(entries) => {
                    let mut plain = Map::new();
                    let mut pairs = Vec::new();
                    for e in entries {
                        if self.budget == 0 {
                            self.truncated = true;
                            break;
                        }
                        let (k, val) = (&e[0], &e[1]);
                        let val = self.value(val, depth + 1);
                        match k.as_str() {
                            Some(name) if kind == "object" => {
                                let name = self.text(name).as_str().unwrap_or_default().to_owned();
                                plain.insert(name, val);
                            }
                            _ => pairs.push(json!([self.value(k, depth + 1), val])),
                        }
                    }
                    if kind == "object" && pairs.is_empty() {
                        Value::Object(plain)
                    } else {
                        let mut entries: Vec<Value> = plain.into_iter().map(|(k, v)| json!([k, v])).collect();
                        entries.extend(pairs);
                        self.described(kind, Some(("$entries", Value::Array(entries))))
                    }
                }
                None => self.described(kind, Some(("$description", json!("not expanded (depth limit)")))),
            },
            "date" => {
                let s = self.text(inner.as_str().unwrap_or(""));
                self.described("date", Some(("$value", s)))
            }
            "regexp" => {
                let s =
                    format!("/{}/{}", inner["pattern"].as_str().unwrap_or(""), inner["flags"].as_str().unwrap_or(""));
                let s = self.text(&s);
                self.described("regexp", Some(("$value", s)))
            }
            "node" => {
                let d = node_description(inner);
                let d = self.text(&d);
                self.described("node", Some(("$description", d)))
            }
            // function, symbol, promise, error, proxy, window, weakmap, weakset, typedarray,
            // arraybuffer, generator …: what it is, nothing the agent could misread as data.
            "" => self.described("unknown", None),
            other => {
                let other = other.chars().filter(|c| c.is_ascii_alphanumeric()).take(32).collect::<String>();
                self.described(&other, None)
            }
        }
    }
}

/// `<button id="go" class="primary">` (element), `#text`, `#document` …
fn node_description(node: &Value) -> String {
    let name = node["localName"].as_str().or(node["nodeName"].as_str()).unwrap_or("node");
    if node["nodeType"].as_u64() != Some(1) {
        return match node["nodeType"].as_u64() {
            Some(3) => "#text".into(),
            Some(8) => "#comment".into(),
            Some(9) => "#document".into(),
            Some(11) => "#document-fragment".into(),
            _ => name.to_owned(),
        };
    }
    let mut s = format!("<{name}");
    if let Some(attrs) = node["attributes"].as_object() {
        for key in ["id", "class", "name", "type", "href"] {
            if let Some(v) = attrs.get(key).and_then(Value::as_str) {
                let v: String = v.chars().take(80).collect();
                s.push_str(&format!(" {key}={v:?}"));
            }
        }
    }
    s.push('>');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(v: Value) -> Converted {
        convert(&v, &Redactor::default())
    }

    #[test]
    fn json_values_pass_through() {
        assert_eq!(conv(json!({"type":"number","value":2})).value, json!(2));
        let obj = json!({"type":"object","value":[["a",{"type":"array","value":[{"type":"string","value":"x"},{"type":"boolean","value":true},{"type":"null"}]}]]});
        assert_eq!(conv(obj).value, json!({"a": ["x", true, null]}));
    }

    #[test]
    fn non_json_values_are_described() {
        for (deep, kind) in [
            (json!({"type":"undefined"}), "undefined"),
            (json!({"type":"number","value":"NaN"}), "number"),
            (json!({"type":"bigint","value":"12345678901234567890"}), "bigint"),
            (json!({"type":"function"}), "function"),
            (json!({"type":"node","value":{"nodeType":1,"localName":"button","attributes":{"id":"go"}}}), "node"),
        ] {
            let c = conv(deep.clone());
            assert_eq!(c.value["$type"], kind, "{deep}");
            assert_eq!(c.described, 1);
        }
        let node = conv(json!({"type":"node","value":{"nodeType":1,"localName":"button","attributes":{"id":"go"}}}));
        assert_eq!(node.value["$description"], "<button id=\"go\">");
        let cycle = json!({"type":"object","weakLocalObjectReference":1,"value":[["self",{"type":"object","weakLocalObjectReference":1}]]});
        assert_eq!(conv(cycle).value["self"]["$type"], "reference");
        let map = conv(json!({"type":"map","value":[[{"type":"number","value":1},{"type":"string","value":"one"}]]}));
        assert_eq!(map.value, json!({"$type":"map","$entries":[[1,"one"]]}));
    }

    #[test]
    fn big_results_are_cut_and_say_so() {
        let items: Vec<Value> =
            (0..10_000).map(|i| json!({"type":"string","value":format!("item {i} ").repeat(3)})).collect();
        let c = conv(json!({"type":"array","value":items}));
        assert!(c.truncated);
        assert!(c.value.to_string().len() <= MAX_RESULT_BYTES + 1024);
        let small = conv(json!({"type":"string","value":"short"}));
        assert!(!small.truncated);
    }

    #[test]
    fn secrets_in_results_are_redacted() {
        let c = conv(json!({"type":"string","value":"token: abcdef123456 mail ada@example.com"}));
        assert!(!c.value.as_str().unwrap().contains("ada@example.com"), "{}", c.value);
        assert!(!c.redacted.is_empty());
    }
}
