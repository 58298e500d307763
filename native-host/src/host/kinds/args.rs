//! `interact` as agents see it, built from the kinds: the generic fields (`api::InteractArgs`)
//! with each kind's own fields beside them, flat (`Api`: its own fields' structs, its
//! rule, its answer). One schema, assembled (`schema`); one reading (`read`); one
//! validation (`validate`), which asks each kind for what is its own and names no kind.
//! The order of the checks is the order agents have always got the errors in: the
//! registry's order, a kind's late fields (an auth realm) after a rule's own match check.

use super::ALL;
use super::rule::{Carry, DialogCall, DialogType, RuleSpec};
use crate::api::{self, InteractArgs, MatchArg, ParamError, bad, check_tab};
use crate::kind::Kind;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use unmodal_engine::{DialogKind, MAX_TEXT_UNITS};

/// A kind's part of `interact`, as data (`Spec::api`).
pub(crate) struct Api {
    /// What `dialog_type`'s schema says of it to agents.
    pub description: &'static str,
    /// What the MCP server's instructions say of it (a sentence or two, ending in a space;
    /// empty: nothing).
    pub instructions: &'static str,
    /// Its own fields, in the order their "only with" errors come.
    pub fields: &'static [Owned],
    /// Its own fields' schemas: (those at the top, those in `match`).
    pub schema: fn(&mut SchemaGenerator) -> (Option<Schema>, Option<Schema>),
    /// Reads its own fields, refusing a wrong type (naming the field).
    pub read: fn(&Given) -> Result<(), ParamError>,
    /// The rule a setup of it makes (kinds that share their code are told which one they are).
    pub rule: fn(Kind, &Given) -> Result<RuleSpec, ParamError>,
    /// The answer to a held one that carries its own field (its fields with `held`).
    pub answer: Option<Answer>,
    /// Its fields that name paths on this machine, and what each must be: `unmodal mcp`
    /// checks them against the allowed directories before it forwards the call (`files.rs`).
    pub paths: &'static [(&'static str, PathUse)],
    /// A directory of its own in Unmodal's data directory where it writes files the agent
    /// did not name (a print's PDFs), allowed like the client's roots.
    pub own_dir: Option<&'static str>,
}

/// What a path field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathUse {
    /// A file to write.
    Output,
    /// Files to read (a list).
    Inputs,
    /// An existing directory to move files into.
    Directory,
}

/// The kinds' words in the MCP server's instructions, in the registry's order.
pub fn instructions() -> String {
    apis().map(|(_, a)| a.instructions).collect()
}

/// The kinds' own directories in the data directory (`Api::own_dir`).
pub fn own_dirs() -> impl Iterator<Item = &'static str> {
    apis().filter_map(|(_, a)| a.own_dir)
}

/// Every kind's path fields.
pub fn path_fields() -> impl Iterator<Item = (&'static str, PathUse)> {
    apis().flat_map(|(_, a)| a.paths.iter().copied())
}

/// Builds the answer to a held one from its own fields.
pub(crate) type Answer = fn(&Given) -> Result<Carry, ParamError>;

/// A field of one kind's own: refused unless the call is that kind's.
pub(crate) struct Owned {
    /// As agents write it (`match.realm` for one in `match`).
    pub name: &'static str,
    /// What a held one of the kind is called, if the field may answer it (`None`: setups only).
    pub held: Option<&'static str>,
    /// Whether a clear refuses it too (a clear ignores the others, as it always has).
    pub in_clear: bool,
    /// Checked after a rule's own match check (an auth realm, as it always was).
    pub late: bool,
}

impl Owned {
    pub const fn setup(name: &'static str) -> Self {
        Self { name, held: None, in_clear: false, late: false }
    }
}

/// No fields of its own (at the top or in `match`).
#[derive(serde::Deserialize, JsonSchema)]
pub(crate) struct NoFields {}

/// A kind's `schema`: its fields' structs' schemas.
pub(crate) fn schema_of<F: JsonSchema, M: JsonSchema>(g: &mut SchemaGenerator) -> (Option<Schema>, Option<Schema>) {
    (Some(F::json_schema(g)), Some(M::json_schema(g)))
}

/// A kind's `read`: its fields' structs from the call.
pub(crate) fn read_of<F: DeserializeOwned, M: DeserializeOwned>(g: &Given) -> Result<(), ParamError> {
    g.fields::<F>()?;
    g.match_fields::<M>()?;
    Ok(())
}

fn apis() -> impl Iterator<Item = (Kind, &'static Api)> {
    ALL.iter().filter_map(|k| Some((k.kind(), k.api()?)))
}

/// Every kind's own match fields, in the registry's order (without `match.`).
pub(crate) fn match_fields() -> impl Iterator<Item = &'static str> {
    apis().flat_map(|(_, a)| a.fields.iter().filter_map(|f| f.name.strip_prefix("match.")))
}

/// A call as read: the generic fields, the kinds' own (by name, given ones only) and the
/// kind it names.
pub(crate) struct Given {
    pub args: InteractArgs,
    own: Map<String, Value>,
    own_match: Map<String, Value>,
    pub dialog_type: Option<DialogType>,
}

impl Given {
    /// Whether field `name` (`match.x` for one in `match`) is given.
    pub fn given(&self, name: &str) -> bool {
        match name.strip_prefix("match.") {
            Some(m) => self.own_match.contains_key(m),
            None => self.own.contains_key(name),
        }
    }

    /// A kind's own fields, as its struct `F` reads them.
    pub fn fields<F: DeserializeOwned>(&self) -> Result<F, ParamError> {
        serde_path_to_error::deserialize(Value::Object(self.own.clone()))
            .map_err(|e| ParamError { param: e.path().to_string(), message: e.into_inner().to_string() })
    }

    /// A kind's own match fields, as its struct `M` reads them.
    pub fn match_fields<M: DeserializeOwned>(&self) -> Result<M, ParamError> {
        serde_path_to_error::deserialize(Value::Object(self.own_match.clone()))
            .map_err(|e| ParamError { param: format!("match.{}", e.path()), message: e.into_inner().to_string() })
    }

    /// The match given (or an empty one), a kind's own texts among them.
    pub fn matcher(&self) -> MatchArg {
        let mut m = self.args.matcher.clone().unwrap_or_default();
        m.more = self.own_match.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect();
        m
    }

    pub fn accept(&self) -> bool {
        self.args.accept.unwrap_or(true)
    }

    /// Refuses text (`why`: the kind's words for what its rule does instead).
    pub fn no_text(&self, why: impl Into<String>) -> Result<(), ParamError> {
        if self.args.text.is_some() { Err(bad("text", why)) } else { Ok(()) }
    }

    /// A browser prompt's match: `url_contains` and its own texts (it has no message;
    /// `what` it is, and how else to narrow it).
    pub fn url_only_match(&self, what: &str, name_it: &str) -> Result<MatchArg, ParamError> {
        let matcher = self.matcher();
        if matcher.message_contains.is_some() {
            return Err(bad(
                "match.message_contains",
                format!("{what} has no message; match url_contains, or {name_it}"),
            ));
        }
        self.late(true)?;
        api::match_texts(&[("match.url_contains", matcher.url_contains.as_ref())], "prompt")?;
        Ok(matcher)
    }

    /// The fields checked late (`Owned::late`), each refused unless the call is its kind's.
    fn late(&self, setup: bool) -> Result<(), ParamError> {
        for (kind, api) in apis() {
            for f in api.fields.iter().filter(|f| f.late) {
                self.owned(kind, f, setup)?;
            }
        }
        Ok(())
    }

    /// A field of `kind`'s own, refused unless the call is that kind's.
    fn owned(&self, kind: Kind, f: &Owned, setup: bool) -> Result<(), ParamError> {
        let clear = self.args.clear == Some(true);
        if !self.given(f.name) || (clear && !f.in_clear) {
            return Ok(());
        }
        let ours = self.dialog_type == Some(DialogType::of(kind));
        let (name, kind) = (f.name, kind.as_str());
        match f.held {
            None if !(setup && ours) => Err(bad(name, format!("only with setup: true and dialog_type \"{kind}\""))),
            Some(held) if clear || (setup && !ours) => {
                Err(bad(name, format!("only with dialog_type \"{kind}\" in a setup, or when answering a held {held}")))
            }
            _ => Ok(()),
        }
    }
}

/// Every field's name, as serde's "expected one of" lists them: the generic ones, then
/// each kind's (`prefix`: `match.` for the match's).
fn field_list(generic: &[&str], prefix: Option<&str>) -> String {
    let own = apis().flat_map(|(_, a)| a.fields.iter()).filter_map(|f| match prefix {
        Some(p) => f.name.strip_prefix(p),
        None => (!f.name.starts_with("match.")).then_some(f.name),
    });
    let mut seen: Vec<&str> = generic.to_vec();
    for f in own {
        if !seen.contains(&f) {
            seen.push(f);
        }
    }
    seen.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
}

const GENERIC: [&str; 11] =
    ["action", "accept", "text", "tab_id", "setup", "dialog_type", "once", "clear", "match", "status", "dialog_id"];
const GENERIC_MATCH: [&str; 2] = ["message_contains", "url_contains"];

/// Reads `interact`'s arguments: the kinds' own fields taken out by name, the rest as the
/// generic struct reads it; a wrong type or an unknown field is refused, naming it.
pub(crate) fn read(args: Value) -> Result<Given, ParamError> {
    let mut args = if args.is_null() { Value::Object(Map::new()) } else { args };
    let (mut own, mut own_match) = (Map::new(), Map::new());
    if let Value::Object(o) = &mut args {
        for (_, api) in apis() {
            for f in api.fields {
                let taken = match f.name.strip_prefix("match.") {
                    Some(m) => o.get_mut("match").and_then(Value::as_object_mut).and_then(|m2| m2.remove_entry(m)),
                    None => o.remove_entry(f.name),
                };
                let into = if f.name.starts_with("match.") { &mut own_match } else { &mut own };
                if let Some((k, v)) = taken {
                    into.insert(k, v);
                }
            }
        }
    }
    let generic: InteractArgs = api::parse(args).map_err(|mut e| {
        if let Some(rest) = e.message.strip_prefix("unknown field `") {
            let name = rest.split('`').next().unwrap_or_default();
            let all = if e.param == "match" {
                field_list(&GENERIC_MATCH, Some("match."))
            } else {
                field_list(&GENERIC, None)
            };
            e.message = format!("unknown field `{name}`, expected one of {all}");
        }
        e
    })?;
    let dialog_type = generic.dialog_type.as_ref().map(|n| dialog_type(&n.0)).transpose()?;
    own.retain(|_, v| !v.is_null());
    own_match.retain(|_, v| !v.is_null());
    let given = Given { args: generic, own, own_match, dialog_type };
    for (_, api) in apis() {
        (api.read)(&given)?;
    }
    Ok(given)
}

/// `dialog_type` by name: a kind's, or `all`.
fn dialog_type(name: &str) -> Result<DialogType, ParamError> {
    if name == "all" {
        return Ok(DialogType::ALL);
    }
    serde_json::from_value::<Kind>(name.into()).map(DialogType::of).map_err(|_| {
        let names: Vec<String> = Kind::all().map(Kind::as_str).chain(["all"]).map(|n| format!("`{n}`")).collect();
        bad("dialog_type", format!("unknown variant `{name}`, expected one of {}", names.join(", ")))
    })
}

/// The call `g` makes.
pub(crate) fn validate(g: &Given) -> Result<DialogCall, ParamError> {
    let a = &g.args;
    let tab = a.tab_id;
    check_tab(tab)?;
    if let Some(t) = &a.text
        && t.encode_utf16().count() > MAX_TEXT_UNITS
    {
        return Err(bad("text", format!("at most {MAX_TEXT_UNITS} characters")));
    }
    let setup = a.setup.unwrap_or(false);
    let clear = a.clear == Some(true);
    if a.dialog_id.is_some() && (setup || clear || a.status == Some(true)) {
        return Err(bad("dialog_id", "only when answering a pending dialog (without setup, clear or status)"));
    }
    if a.status == Some(true) {
        if setup || clear {
            return Err(bad("status", "status: true only reads; send it without setup or clear"));
        }
        return Ok(DialogCall::Status { tab });
    }
    for (kind, api) in apis() {
        for f in api.fields.iter().filter(|f| !f.late) {
            g.owned(kind, f, setup)?;
        }
    }
    if clear {
        return Ok(DialogCall::Clear { tab, what: g.dialog_type.unwrap_or(DialogType::ALL) });
    }
    if setup {
        let Some(what) = g.dialog_type else {
            g.late(setup)?;
            let names: Vec<&str> = Kind::all().map(Kind::as_str).chain(["all"]).collect();
            return Err(bad("dialog_type", format!("required with setup: true; one of {}", names.join(", "))));
        };
        let rule = match what.0.and_then(|k| Some((k, super::spec(k)?.api()?))) {
            Some((kind, api)) => (api.rule)(kind, g)?,
            None => dialog_rule(g, what)?,
        };
        return Ok(DialogCall::Setup { tab, once: a.once.unwrap_or(true), rule });
    }
    g.late(setup)?;
    if g.dialog_type.is_some() {
        return Err(bad("dialog_type", "only with setup: true; to answer the pending dialog, leave it out"));
    }
    answer(g)
}

/// alert, confirm, prompt, beforeunload or all: the page's engine applies the rule.
fn dialog_rule(g: &Given, what: DialogType) -> Result<RuleSpec, ParamError> {
    g.late(true)?;
    let matcher = g.matcher();
    api::match_texts(
        &[
            ("match.message_contains", matcher.message_contains.as_ref()),
            ("match.url_contains", matcher.url_contains.as_ref()),
        ],
        "dialog",
    )?;
    Ok(RuleSpec::Dialog { target: what.target(), accept: g.accept(), text: g.args.text.clone(), matcher })
}

/// The answer to a held dialog or prompt (no setup, clear or status): one kind's, if a
/// field of its own that answers a held one is given (two kinds' at once are refused).
fn answer(g: &Given) -> Result<DialogCall, ParamError> {
    let a = &g.args;
    let (tab, dialog_id) = (a.tab_id, a.dialog_id);
    let carrying = apis().filter_map(|(_, api)| {
        let field = api.fields.iter().find(|f| f.held.is_some() && g.given(f.name))?;
        Some((field, api.answer?))
    });
    let mut first: Option<(&Owned, Answer)> = None;
    for (field, build) in carrying {
        if let Some((other, _)) = first {
            return Err(bad(
                field.name,
                format!(
                    "answers a held {}, and {} a held {}: send one of them",
                    field.held.unwrap_or_default(),
                    other.name,
                    other.held.unwrap_or_default()
                ),
            ));
        }
        first = Some((field, build));
    }
    if let Some((_, build)) = first {
        return Ok(DialogCall::Carrying { tab, dialog_id, with: build(g)? });
    }
    if a.once.is_some() {
        return Err(bad("once", "only with setup: true"));
    }
    if a.matcher.is_some() {
        return Err(bad("match", "only with setup: true"));
    }
    Ok(DialogCall::Respond { tab, accept: a.accept.unwrap_or(true), text: a.text.clone(), dialog_id })
}

/// `interact`'s input schema: the generic fields' with each kind's own merged in, flat (no
/// `oneOf` at the top: the Anthropic, OpenAI and Bedrock tool schemas refuse one), and
/// `dialog_type` listing every kind with its own words.
pub(crate) fn schema(g: &mut SchemaGenerator) -> Schema {
    let mut root = InteractArgs::json_schema(g);
    let mut top = Map::new();
    let mut in_match = Map::new();
    for (_, api) in apis() {
        let (t, m) = (api.schema)(g);
        for (s, into) in [(t, &mut top), (m, &mut in_match)] {
            if let Some(props) = s.as_ref().and_then(|s| s.get("properties")).and_then(Value::as_object) {
                into.extend(props.clone());
            }
        }
    }
    if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        props.extend(top);
    }
    let defs = g.definitions_mut();
    if let Some(props) = defs.get_mut("MatchArg").and_then(|m| m.get_mut("properties")).and_then(Value::as_object_mut) {
        props.extend(in_match);
    }
    let pages: Vec<&str> = DialogKind::ALL.iter().map(|k| k.as_str()).chain(["all"]).collect();
    let mut one_of = vec![json!({"enum": pages, "type": "string"})];
    one_of
        .extend(apis().map(|(k, api)| json!({"const": k.as_str(), "description": api.description, "type": "string"})));
    defs.insert("DialogTypeArg".into(), json!({ "oneOf": one_of }));
    root
}

impl std::fmt::Debug for RuleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dialog { target, accept, text, matcher } => f
                .debug_struct("Dialog")
                .field("target", target)
                .field("accept", accept)
                .field("text", text)
                .field("matcher", &Shown(matcher))
                .finish(),
            Self::Kind(r) => r.fmt(f),
        }
    }
}

/// A match as `Debug` shows it: every kind's own texts by name, given or not, in the
/// registry's order (what the validation snapshot reads).
pub struct Shown<'a>(pub &'a MatchArg);

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.0;
        let mut d = f.debug_struct("MatchArg");
        d.field("message_contains", &m.message_contains).field("url_contains", &m.url_contains);
        for name in match_fields() {
            d.field(name, &m.get(name));
        }
        d.finish()
    }
}
