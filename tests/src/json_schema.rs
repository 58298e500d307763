//! A JSON Schema check of the part of draft 2020-12 that the host's tool schemas use (what
//! schemars writes): `$ref` into `$defs`, `oneOf`, `anyOf`, `const`, `enum`, `type`,
//! `properties`, `required`, `additionalProperties: false`, `items`, the numeric and length
//! bounds and `pattern` of the simple form `^[class]{m,n}$`. Anything else in a schema is
//! reported as unknown, so that a new keyword is never silently passed.

use serde_json::Value;

/// What is wrong with `value` against `schema` (whose `$defs` are `root`'s), each at its path;
/// empty when it fits.
pub fn check(root: &Value, schema: &Value, value: &Value, path: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let Some(obj) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            errs.push(format!("{path}: nothing is allowed here"));
        }
        return errs;
    };
    for (key, rule) in obj {
        match key.as_str() {
            "$ref" => {
                let name = rule.as_str().and_then(|r| r.strip_prefix("#/$defs/")).unwrap_or_default();
                match root.get("$defs").and_then(|d| d.get(name)) {
                    Some(def) => errs.extend(check(root, def, value, path)),
                    None => errs.push(format!("{path}: unknown $ref {rule}")),
                }
            }
            "oneOf" | "anyOf" => {
                let fits =
                    rule.as_array().into_iter().flatten().filter(|s| check(root, s, value, path).is_empty()).count();
                let ok = if key == "oneOf" { fits == 1 } else { fits >= 1 };
                if !ok {
                    errs.push(format!("{path}: {value} fits {fits} of the {key} choices"));
                }
            }
            "const" if value != rule => errs.push(format!("{path}: {value} is not {rule}")),
            "enum" if !rule.as_array().is_some_and(|a| a.contains(value)) => {
                errs.push(format!("{path}: {value} is not one of {rule}"))
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if !types.iter().any(|t| is_type(value, t)) {
                    errs.push(format!("{path}: {value} is not of type {rule}"));
                }
            }
            "properties" => {
                if let (Some(props), Some(map)) = (rule.as_object(), value.as_object()) {
                    for (name, v) in map {
                        if let Some(s) = props.get(name) {
                            errs.extend(check(root, s, v, &format!("{path}.{name}")));
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let (Some(map), Some(props)) = (value.as_object(), obj.get("properties").and_then(Value::as_object))
                {
                    for name in map.keys().filter(|n| !props.contains_key(*n)) {
                        if rule == &Value::Bool(false) {
                            errs.push(format!("{path}: unknown property `{name}`"));
                        } else {
                            errs.extend(check(root, rule, &map[name], &format!("{path}.{name}")));
                        }
                    }
                }
            }
            "required" => {
                if let Some(map) = value.as_object() {
                    for name in rule.as_array().into_iter().flatten().filter_map(Value::as_str) {
                        if !map.contains_key(name) {
                            errs.push(format!("{path}: `{name}` is required"));
                        }
                    }
                }
            }
            "items" => {
                for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                    errs.extend(check(root, rule, v, &format!("{path}[{i}]")));
                }
            }
            "minimum" | "maximum" => {
                if let (Some(n), Some(bound)) = (value.as_f64(), rule.as_f64())
                    && ((key == "minimum" && n < bound) || (key == "maximum" && n > bound))
                {
                    errs.push(format!("{path}: {n} is past the {key} {bound}"));
                }
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" => {
                let len = match value {
                    Value::String(s) if key.ends_with("Length") => Some(s.chars().count()),
                    Value::Array(a) if key.ends_with("Items") => Some(a.len()),
                    _ => None,
                };
                if let (Some(len), Some(bound)) = (len, rule.as_u64().map(|b| b as usize))
                    && ((key.starts_with("min") && len < bound) || (key.starts_with("max") && len > bound))
                {
                    errs.push(format!("{path}: length {len} is past the {key} {bound}"));
                }
            }
            "pattern" => {
                if let Some(s) = value.as_str() {
                    match simple_pattern(rule.as_str().unwrap_or_default()) {
                        Some(fits) if !fits(s) => errs.push(format!("{path}: {s:?} does not match {rule}")),
                        Some(_) => {}
                        None => errs.push(format!("{path}: a pattern this check cannot read: {rule}")),
                    }
                }
            }
            // Annotations, and keywords that only name or describe.
            "$schema" | "$defs" | "description" | "default" | "format" | "title" | "examples" | "const" | "enum" => {}
            other => errs.push(format!("{path}: the schema uses `{other}`, which this check does not know")),
        }
    }
    errs
}

fn is_type(value: &Value, t: &str) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// `^[A-Za-z0-9_.-]{1,64}$`: one character class, repeated m to n times.
fn simple_pattern(p: &str) -> Option<impl Fn(&str) -> bool> {
    let inner = p.strip_prefix("^[")?.strip_suffix('$')?;
    let (class, count) = inner.split_once("]{")?;
    let (min, max) = count.strip_suffix('}')?.split_once(',')?;
    let (min, max): (usize, usize) = (min.parse().ok()?, max.parse().ok()?);
    let mut ranges = Vec::new();
    let chars: Vec<char> = class.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            ranges.push((chars[i], chars[i + 2]));
            i += 3;
        } else {
            ranges.push((chars[i], chars[i]));
            i += 1;
        }
    }
    Some(move |s: &str| {
        let n = s.chars().count();
        n >= min && n <= max && s.chars().all(|c| ranges.iter().any(|&(a, b)| a <= c && c <= b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_what_the_tool_schemas_use() {
        let schema = json!({
            "$defs": {"Kind": {"oneOf": [{"enum": ["a", "b"], "type": "string"}, {"const": "c", "type": "string"}]}},
            "type": "object", "additionalProperties": false, "required": ["kind"],
            "properties": {
                "kind": {"$ref": "#/$defs/Kind"},
                "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 600},
                "name": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9_.-]{1,64}$"},
                "files": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 1}
            }
        });
        let ok = |v: Value| check(&schema, &schema, &v, "$");
        assert!(ok(json!({"kind": "c", "n": 600, "name": "cart_full", "files": ["/x"]})).is_empty());
        assert!(ok(json!({"kind": "b", "n": null})).is_empty());
        assert_eq!(ok(json!({"kind": "d"})).len(), 1);
        assert_eq!(ok(json!({"n": 0})).len(), 2, "kind missing and n below its minimum");
        assert_eq!(ok(json!({"kind": "a", "nope": 1})), ["$: unknown property `nope`"]);
        assert_eq!(ok(json!({"kind": "a", "name": "a b"})).len(), 1);
        assert_eq!(ok(json!({"kind": "a", "files": []})).len(), 1);
        assert_eq!(check(&json!({}), &json!({"if": {}}), &json!(1), "$").len(), 1, "an unknown keyword is said");
    }
}
