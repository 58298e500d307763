//! File choosers: `<input type=file>` (single, `multiple`, `webkitdirectory`), and the File
//! System Access pickers (`showOpenFilePicker`, `showSaveFilePicker`, `showDirectoryPicker`),
//! which the page hook (`manifest/inject/48-file-pickers.js`) holds and can only refuse as
//! a person's cancel (no protocol gives a picker files). Headless
//! Chromium cancels each at once; a headful one opens the OS file dialog, which waits for a
//! person. In a tab with a file_chooser rule, or under `must_respond`, the tab's debugger
//! session intercepts choosers (`Page.setInterceptFileChooserDialog`, MODAL-FACTS 1c) and
//! `manifest/file_chooser.js` asks here. An accept carries files, which the worker hands the
//! input as a person's pick (`DOM.setFileInputFiles`: trusted `input` and `change`); a
//! cancel reaches the page as a person's cancel (the input's trusted `cancel` event). Files
//! were checked against the allowed directories by `unmodal mcp` (`files.rs`) and are
//! checked again here when a rule gives them. Elsewhere (no rule, no policy, pilot off)
//! choosers are the browser's, so another driver's upload tool keeps working.

use super::args::{self, Api, Given, Owned};
use super::rule::{Carry, CarryOf};
use super::{
    Carries, Described, EXPIRED_CANCELLED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, With, Words,
    configured, pilot_off, url_fits,
};
use crate::api::{MatchArg, ParamError, absolute_path, bad};
use crate::host::protocol::Carried;
use crate::host::protocol::{KindFields, PromptDecision, ToBrowser};
use crate::host::record::{self, Details, DialogRecord};
use crate::host::rules::RuleStore;
use crate::host::state::State;
use crate::host::transport::Outcome;
use crate::kind::Kind;
use crate::redact::Redactor;
use ringbuf::traits::Consumer as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("file_chooser");

const MAX_LABEL_CHARS: usize = 200;

/// Each policy's answer to an `<input type=file>`'s chooser.
const POLICIES: Policies = Policies {
    hold: "file chooser held for the agent (policy must_respond): the page waits as for a person at the file dialog; \
answer with interact {action:\"handle_dialog\", dialog_id, files:[absolute paths]} or accept: false to cancel it",
    auto: Says::Refuse(
        "file chooser cancelled by the default policy, as a person's cancel (the tab's file_chooser rule did not \
match it)",
    ),
    auto_accept: Says::Refuse(
        "file chooser cancelled: the tab's auto_accept policy has no files to give (a file_chooser rule with files \
gives some)",
    ),
    auto_dismiss: Says::Refuse("file chooser cancelled by the tab's auto_dismiss policy"),
};

/// Each policy's answer to a File System Access picker; `{call}` is the page's call.
const PICKER: Policies = Policies {
    hold: "{call}() held for the agent (policy must_respond): the page waits as for a person at the file dialog; \
answer with interact {action:\"handle_dialog\", dialog_id, accept: false} (no protocol gives a picker files)",
    auto: Says::Refuse(
        "{call}() refused by the default policy as a person's cancel (AbortError): headless, the browser refuses it \
the same way; headful, it would open the OS file dialog and wait for a person",
    ),
    auto_accept: Says::Refuse("{call}() refused as a person's cancel (the tab's policy)"),
    auto_dismiss: Says::Refuse("{call}() refused as a person's cancel (the tab's policy)"),
};

/// A file chooser once recorded.
pub(super) struct FileChooser;

const WORDS: Words = Words {
    kind: KIND,
    group: "file chooser",
    closed: (
        "the page got the files (input and change events)",
        "cancelled (the page got a cancel event, as after a person's cancel)",
    ),
    expired: EXPIRED_CANCELLED,
};

/// A file chooser rule: give the page these files (none: cancel it, as a person does);
/// `match.url_contains` is on the frame's URL, `match.accept_contains` on the input's
/// accept attribute.
#[derive(Clone, PartialEq)]
pub(crate) struct FileChooserRule {
    pub files: Vec<PathBuf>,
    pub matcher: MatchArg,
}

crate::own_rule!(FileChooserRule, "FileChooser", KIND, accept: |r| !r.files.is_empty(), in_config: |_| true, show: [files]);

/// Its own field of `interact`.
#[derive(Deserialize, JsonSchema)]
struct FileChooserFields {
    /// dialog_type "file_chooser" (with setup, or answering a held chooser): the files the
    /// page gets, absolute paths inside the MCP client's roots or the directories configured
    /// for Unmodal (a folder input takes one directory). Answers name files and sizes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    files: Option<Vec<String>>,
}

/// Its own match field.
#[derive(Deserialize, JsonSchema)]
struct FileChooserMatch {
    /// dialog_type "file_chooser" only: only inputs whose accept attribute contains this
    /// text (case-insensitive), such as "pdf" or "image/".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    #[allow(dead_code)]
    accept_contains: Option<String>,
}

static API: Api = Api {
    instructions: "File choosers (<input type=file>) are dialog_type \"file_chooser\": left to the browser by default \
(headless cancels them); a rule with files (absolute paths inside your roots) gives the page those \
files as a person's pick, accept:false cancels; under must_respond answer a held chooser with \
dialog_id and files. ",
    description: "A file chooser (<input type=file>): accept = the page gets the rule's or the agent's\n`files` as a \
person's pick gives them, dismiss = cancelled as a person's cancel.",
    fields: &[
        Owned { name: "files", held: Some("file chooser"), in_clear: false, late: false },
        Owned::setup("match.accept_contains"),
    ],
    schema: args::schema_of::<FileChooserFields, FileChooserMatch>,
    read: args::read_of::<FileChooserFields, FileChooserMatch>,
    rule: file_chooser_rule,
    answer: Some(file_chooser_answer),
    paths: &[("files", args::PathUse::Inputs)],
    own_dir: None,
};

/// The most files one answer gives a page.
pub const MAX_FILES: usize = 32;

/// `files` as given: 1 to 32 absolute paths (`unmodal mcp` then checks each against the
/// allowed directories, `files.rs`).
fn paths(files: &[String]) -> Result<Vec<PathBuf>, ParamError> {
    if files.is_empty() || files.len() > MAX_FILES {
        return Err(bad("files", format!("1 to {MAX_FILES} absolute paths")));
    }
    files
        .iter()
        .map(|f| absolute_path("files", f, || format!("{f:?} is not an absolute path, such as /home/me/work/cv.pdf")))
        .collect()
}

fn file_chooser_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a file chooser", "match accept_contains")?;
    if matcher.get("accept_contains").is_some_and(|a| a.is_empty() || a.len() > 256) {
        return Err(bad("match.accept_contains", "a text such as \"pdf\" or \"image/\", 1 to 256 characters"));
    }
    g.no_text("a file chooser rule gives files (files) or cancels (accept: false); no text")?;
    let f: FileChooserFields = g.fields()?;
    let files = match (&f.files, g.accept()) {
        (Some(f), true) => paths(f)?,
        (None, false) => Vec::new(),
        (Some(_), false) => return Err(bad("files", "accept: false cancels the chooser; leave files out")),
        (None, true) => {
            return Err(bad(
                "files",
                "the files the page gets, e.g. [\"/home/me/work/cv.pdf\"]; or accept: false to cancel choosers",
            ));
        }
    };
    Ok(RuleSpec::own(FileChooserRule { files, matcher }))
}

fn file_chooser_answer(g: &Given) -> Result<Carry, ParamError> {
    if g.args.accept == Some(false) || g.args.text.is_some() {
        return Err(bad("files", "gives a held file chooser these files: only with accept: true, without text"));
    }
    let f: FileChooserFields = g.fields()?;
    Ok(Carry::new(Files(paths(f.files.as_deref().unwrap_or_default())?)))
}

/// The files an accept gives the page (checked against the allowed directories by
/// `unmodal mcp`, canonical).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Files(pub Vec<PathBuf>);

impl CarryOf for Files {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, _s: &mut State, _ids: (i64, u64, u64), accept: bool) -> Carried {
        let mut carried = Carried::default();
        if accept {
            carried.files = Some(self.0.iter().map(|p| p.display().to_string()).collect());
        }
        carried
    }
    fn name_on(&self, details: &mut Details) {
        name_files(details, &self.0);
    }
    fn gives_files(&self) -> bool {
        true
    }
    crate::own_plumbing!(carry);
}

impl Spec for FileChooser {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<FileChooserAsk>(fields)
    }

    /// Choosers are intercepted (`choosers`, in the tab's debugger session) under
    /// must_respond or with a rule of this kind. Where every one is cancelled whatever it is,
    /// the browser cancels them itself (`choosers_cancel`).
    fn tab_config(&self, rules: &RuleStore<RuleSpec>, tab: i64, policy: Policy, fields: &mut KindFields) -> bool {
        let must_respond = policy == Policy::MustRespond;
        let intercepts = must_respond || rules.any(tab, |r| r.of::<FileChooserRule>().is_some());
        if intercepts {
            fields.insert("choosers", true.into());
            if !must_respond && !rules.any(tab, |r| r.of::<FileChooserRule>().is_some_and(|r| !r.files.is_empty())) {
                fields.insert("choosers_cancel", true.into());
            }
        }
        intercepts
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(FileChooserRule { files, .. }) = rule.of()
            && !files.is_empty()
        {
            v.insert("files".into(), files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().into());
        }
    }

    fn needs_file_access(&self, rule: &RuleSpec) -> bool {
        rule.of::<FileChooserRule>().is_some_and(|r| !r.files.is_empty())
    }

    fn carries(&self) -> Option<Carries> {
        Some(Carries {
            only: "files answer only a file chooser",
            none_held: "No file chooser is held open for the agent (only the must_respond policy holds them). To give \
the next one files, set up a rule first: interact {action:\"handle_dialog\", setup:true, dialog_type:\"file_chooser\", \
files}.",
        })
    }

    fn accept_refused(&self, held: &DialogRecord, carrying: bool) -> Option<String> {
        let id = held.id;
        if held.details.read::<FileChooserDetails>().is_some_and(|d| d.mode.ends_with("_picker")) {
            return Some(format!(
                "Dialog {id} is a File System Access picker: no protocol gives a picker files, so it can only be \
refused as a person's cancel; send accept: false. (A page's <input type=file> takes files.)"
            ));
        }
        (!carrying).then(|| {
            format!(
                "Dialog {id} is a file chooser: answer it with files (absolute paths inside your roots), or send \
accept: false to cancel it."
            )
        })
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let FileChooserRule { files, .. } = rule.of()?;
        let will = if files.is_empty() { "cancel it (as a person's cancel)" } else { "give the page the rule's files" };
        Some(configured("file chooser", will, once))
    }

    /// An answer's files could not be copied to a remote browser's machine: it did not go.
    fn transport_done(&self, s: &mut State, done: &Outcome) -> Vec<ToBrowser> {
        match done {
            Outcome::NotDelivered { tab_id, id, record, why } => s.upload_failed(*tab_id, *id, *record, why),
            Outcome::Fetched { .. } => Vec::new(),
        }
    }
}

/// A file chooser's record names the files an accept gives it (paths and sizes).
fn name_files(details: &mut Details, files: &[PathBuf]) {
    details.update(|d: &mut FileChooserDetails| d.files = GivenFile::of(files));
}

impl FileChooserAsk {
    fn folder(&self) -> bool {
        self.mode == "folder"
    }

    /// A File System Access picker's call, if it is one.
    fn picker(&self) -> Option<&'static str> {
        match self.mode.as_str() {
            "open_picker" => Some("showOpenFilePicker"),
            "save_picker" => Some("showSaveFilePicker"),
            "directory_picker" => Some("showDirectoryPicker"),
            _ => None,
        }
    }
}

impl PromptKind for FileChooserAsk {
    fn check(&self) -> Result<(), String> {
        match self.mode.as_str() {
            "single" | "multiple" | "folder" => Ok(()),
            _ if self.picker().is_some() => Ok(()),
            other => Err(format!("file chooser mode {other:?} is not single, multiple, folder or a picker's")),
        }
    }

    fn describe(&self, redactor: &Redactor, url: &str) -> Described {
        if let Some(call) = self.picker() {
            let mut d = Described::plain(&format!("file picker: {call}()"), url);
            d.details = Details::of(&FileChooserDetails {
                mode: self.mode.clone(),
                accept_types: String::new(),
                label: String::new(),
                files: Vec::new(),
            });
            return d;
        }
        let (label, cut_label) = record::clip(&self.label, MAX_LABEL_CHARS);
        let (label, mut redacted) = redactor.apply(&label);
        let (accept, cut_accept) = record::clip(&self.accept, MAX_LABEL_CHARS);
        let (accept, more) = redactor.apply(&accept);
        redacted.extend(more);
        let what = match self.mode.as_str() {
            "folder" => "a folder",
            "multiple" => "files",
            _ => "a file",
        };
        let mut message = format!("file chooser: pick {what}");
        if !label.is_empty() {
            message = format!("{message} for \"{label}\"");
        }
        if !accept.is_empty() {
            message = format!("{message} (accepts {accept})");
        }
        Described {
            message,
            truncated: cut_label || cut_accept,
            redacted,
            url: record::clip(url, 2048).0,
            details: Details::of(&FileChooserDetails {
                mode: self.mode.clone(),
                accept_types: accept,
                label,
                files: Vec::new(),
            }),
        }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let FileChooserRule { matcher, .. } = rule.of()?;
        let accept_contains = matcher.get("accept_contains");
        let accepts = accept_contains.is_none_or(|a| self.accept.to_lowercase().contains(&a.to_lowercase()));
        (accepts && url_fits(matcher.url_contains.as_ref(), url))
            .then(|| usize::from(matcher.url_contains.is_some()) + usize::from(accept_contains.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let Some(FileChooserRule { files, .. }) = rule.of() else {
            return Verdict::rule(PromptDecision::Refuse, id, format!("file chooser cancelled: rule {id} matched"));
        };
        if files.is_empty() {
            let why = format!("file chooser cancelled as a person's cancel: file_chooser rule {id} matched");
            return Verdict::rule(PromptDecision::Refuse, id, why);
        }
        if let Some(call) = self.picker() {
            let why = format!(
                "{call}() refused as a person's cancel (AbortError): file_chooser rule {id} matched, but no protocol \
gives a File System Access picker files"
            );
            return Verdict::rule(PromptDecision::Refuse, id, why);
        }
        match self.pick(files) {
            Ok((given, note)) => {
                let why = format!("file chooser given {}: file_chooser rule {id} matched{note}", named(&given));
                Verdict::rule(PromptDecision::Accept, id, why).carrying(With::own(Files(given)))
            }
            Err(e) => Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!("file chooser cancelled: file_chooser rule {id} matched, but {e}"),
            ),
        }
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        match self.picker() {
            Some(call) => PICKER.verdict_with(policy, &[("{call}", call)]),
            None => POLICIES.verdict(policy),
        }
    }

    fn pilot_off(&self) -> String {
        pilot_off(
            "the browser's own file chooser (headless: cancelled at once; headful: the OS file dialog, which waits \
for a person)",
        )
    }
}

impl FileChooserAsk {
    /// What of `files` this input takes, each still what was checked (a regular file, or
    /// for a folder input one directory, not a symlink), and a note on what it left out.
    fn pick(&self, files: &[PathBuf]) -> Result<(Vec<PathBuf>, String), String> {
        let take = if self.folder() || self.mode == "single" { 1 } else { files.len() };
        let given: Vec<PathBuf> = files.iter().take(take).cloned().collect();
        for f in &given {
            let meta = std::fs::symlink_metadata(f).map_err(|e| format!("{} is gone ({e})", f.display()))?;
            match (self.folder(), meta.is_dir(), meta.is_file()) {
                (true, true, _) | (false, _, true) => {}
                (true, ..) => return Err(format!("a folder input takes a directory, and {} is not one", f.display())),
                (false, ..) => return Err(format!("{} is no longer a regular file", f.display())),
            }
        }
        let left = files.len() - given.len();
        let note = if left > 0 { format!(" ({left} more left out: the input takes one)") } else { String::new() };
        Ok((given, note))
    }
}

impl crate::host::state::State {
    /// A remote browser's chooser could not be given its files: the bridge could not copy
    /// them onto the browser's machine (`transport/remote_uploads.rs`). An agent's answer
    /// fails as one the browser refused, and the chooser stays held for another; a rule's
    /// accept becomes a person's cancel, and its record says so. What goes to the worker.
    pub fn upload_failed(&mut self, tab_id: i64, id: u64, record: u64, why: &str) -> Vec<ToBrowser> {
        let why = format!("the files could not be copied to the remote browser's machine ({why})");
        if let Some(pos) = self.prompt_pos(KIND, tab_id, id) {
            let h = &mut self.held[pos];
            h.answer_error = Some(why);
            h.closing = None;
            // The worker waited for the copy; it holds the chooser for the watchdog again.
            let left = h.deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(Instant::now()));
            let wait_ms = u64::try_from((left + super::HOLD_MARGIN).as_millis()).unwrap_or(u64::MAX);
            return vec![ToBrowser::PromptHold { kind: KIND, tab_id, id, wait_ms }];
        }
        if let Some(rec) = self.history.iter_mut().find(|r| r.id == record) {
            rec.accepted = Some(false);
            rec.explanation = format!("{}; but {why}, so the page got a person's cancel", rec.explanation);
            tracing::warn!(record, error = %why, "a remote file chooser was cancelled");
        }
        vec![ToBrowser::PromptAnswer {
            kind: KIND,
            tab_id,
            id,
            decision: PromptDecision::Refuse,
            carried: Default::default(),
            record,
        }]
    }
}

fn named(files: &[PathBuf]) -> String {
    GivenFile::of(files).iter().map(|g| format!("{} ({} bytes)", g.path, g.size)).collect::<Vec<_>>().join(", ")
}

#[derive(Debug, Deserialize)]
pub struct FileChooserAsk {
    /// `single`, `multiple` or `folder` (the input's `multiple`, `webkitdirectory`).
    pub mode: String,
    /// The input's accept attribute (page-made).
    #[serde(default)]
    pub accept: String,
    /// The input's label, aria-label, name or id, whichever it has first (page-made).
    #[serde(default)]
    pub label: String,
}

/// A file chooser: what the input asks for and, once answered, what the page got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChooserDetails {
    /// `single`, `multiple` or `folder`.
    pub mode: String,
    /// The input's accept attribute (page text, cut and redacted).
    pub accept_types: String,
    /// The input's label (page text, cut and redacted).
    pub label: String,
    /// The files the page got: names and sizes, never contents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GivenFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GivenFile {
    pub path: String,
    pub size: u64,
}

impl GivenFile {
    /// Paths and sizes (a directory's: the sum of its files').
    pub fn of(files: &[std::path::PathBuf]) -> Vec<Self> {
        fn size_of(path: &std::path::Path) -> u64 {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => {
                    std::fs::read_dir(path).map(|d| d.flatten().map(|e| size_of(&e.path())).sum()).unwrap_or(0)
                }
                Ok(m) if m.is_file() => m.len(),
                _ => 0,
            }
        }
        files.iter().map(|f| Self { path: f.display().to_string(), size: size_of(f) }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::{Carry, DialogCall};
    use crate::host::record::DecidedBy;
    use crate::host::state::tests::{feed, state_with, to_json};
    use ringbuf::traits::Consumer;
    use serde_json::json;

    fn ask(n: u64, mode: &str, accept: &str) -> serde_json::Value {
        json!({"type":"prompt_request","kind":"file_chooser","tab_id":3,"id":n,"url":"https://site/form",
            "mode":mode,"accept":accept,"label":"Your CV"})
    }

    #[test]
    fn a_rule_gives_its_files_and_the_most_specific_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let (cv, pic) = (tmp.path().join("cv.pdf"), tmp.path().join("me.png"));
        std::fs::write(&cv, b"%PDF-1").unwrap();
        std::fs::write(&pic, b"png").unwrap();
        let mut s = state_with(Policy::Auto);
        let rule = |files: Vec<PathBuf>, accept: Option<&str>| {
            RuleSpec::own(FileChooserRule {
                files,
                matcher: accept.map_or_else(MatchArg::default, |a| MatchArg::default().with("accept_contains", a)),
            })
        };
        s.interact(DialogCall::Setup { tab: None, once: false, rule: rule(vec![cv.clone()], None) }).unwrap();
        s.interact(DialogCall::Setup { tab: None, once: true, rule: rule(vec![pic.clone()], Some("IMAGE/")) }).unwrap();
        let out = to_json(&feed(&mut s, ask(1, "single", "image/png")).unwrap());
        assert_eq!((out[1]["decision"].as_str(), out[1]["files"][0].as_str()), (Some("accept"), pic.to_str()));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by, rec.accepted), (KIND, DecidedBy::Rule, Some(true)));
        let d = rec.details.read::<FileChooserDetails>().expect("its kind's details");
        assert_eq!((d.mode.as_str(), d.files.len(), d.files[0].size), ("single", 1, 3));
        assert!(!rec.explanation.contains("png\"") && rec.message.contains("Your CV"), "{rec:?}");
        // The once-rule is spent: the general one answers the next.
        let out = to_json(&feed(&mut s, ask(2, "multiple", ".pdf")).unwrap());
        assert_eq!(out[1]["files"], json!([cv.to_str().unwrap()]));
        // A file that went away meanwhile is not given: the chooser is cancelled.
        std::fs::remove_file(&cv).unwrap();
        let out = to_json(&feed(&mut s, ask(3, "single", "")).unwrap());
        assert_eq!(out[1]["decision"], "refuse");
        assert!(s.history.iter().last().unwrap().explanation.contains("is gone"));
    }

    /// Where every chooser is cancelled whatever it is, the browser cancels each itself
    /// (`choosers_cancel`); a rule that gives files, or must_respond, needs them held.
    #[test]
    fn the_browser_cancels_choosers_itself_only_where_all_are_cancelled() {
        let modes = |s: &mut crate::host::state::State| match s.config_message(3) {
            ToBrowser::Config { fields, .. } => {
                let on = |name| fields.get(name).is_some_and(|v| v == true);
                (on("choosers"), on("choosers_cancel"))
            }
            other => panic!("{other:?}"),
        };
        let refuse = || RuleSpec::own(FileChooserRule { files: vec![], matcher: MatchArg::default() });
        let mut s = state_with(Policy::Auto);
        assert_eq!(modes(&mut s), (false, false));
        s.interact(DialogCall::Setup { tab: None, once: false, rule: refuse() }).unwrap();
        assert_eq!(modes(&mut s), (true, true));
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("cv.pdf"), b"%PDF-1").unwrap();
        let matcher = MatchArg::default().with("accept_contains", "pdf");
        let give = RuleSpec::own(FileChooserRule { files: vec![tmp.path().join("cv.pdf")], matcher });
        s.interact(DialogCall::Setup { tab: None, once: false, rule: give }).unwrap();
        assert_eq!(modes(&mut s), (true, false));
        let mut held = state_with(Policy::MustRespond);
        held.interact(DialogCall::Setup { tab: None, once: false, rule: refuse() }).unwrap();
        assert_eq!(modes(&mut held), (true, false));
    }

    #[test]
    fn a_folder_input_takes_a_directory_and_the_default_cancels() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), b"abcd").unwrap();
        let mut s = state_with(Policy::Auto);
        let out = to_json(&feed(&mut s, ask(1, "folder", "")).unwrap());
        assert_eq!(out[1]["decision"], "refuse");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::DefaultPolicy);
        let rule =
            RuleSpec::own(FileChooserRule { files: vec![tmp.path().join("a.txt")], matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(2, "folder", "")).unwrap())[1]["decision"], "refuse");
        let rule =
            RuleSpec::own(FileChooserRule { files: vec![tmp.path().to_path_buf()], matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
        let out = to_json(&feed(&mut s, ask(3, "folder", "")).unwrap());
        assert_eq!(out[1]["decision"], "accept");
        let d = s.history.iter().last().unwrap().details.read::<FileChooserDetails>().expect("its kind's details");
        assert_eq!(d.files[0].size, 4);
        assert!(
            feed(&mut s, json!({"type":"prompt_request","kind":"file_chooser","tab_id":3,"id":4,"mode":"x"})).is_err()
        );
    }

    #[test]
    fn must_respond_holds_it_for_the_agents_files() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("up.txt");
        std::fs::write(&f, b"hello").unwrap();
        let mut s = state_with(Policy::MustRespond);
        let out = to_json(&feed(&mut s, ask(1, "single", "")).unwrap());
        assert_eq!(out[1]["type"], "prompt_hold");
        let id = s.held[0].record.id;
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: Some(id) });
        assert!(err.is_err_and(|e| e.message.contains("answer it with files")));
        let done = s
            .interact(DialogCall::Carrying { tab: None, dialog_id: Some(id), with: Carry::new(Files(vec![f.clone()])) })
            .unwrap();
        let msg = to_json(&done.msgs);
        assert_eq!((msg[0]["decision"].as_str(), msg[0]["files"][0].as_str()), (Some("accept"), f.to_str()));
        let d = s.held[0].record.details.read::<FileChooserDetails>().expect("its kind's details");
        assert_eq!(d.files[0].size, 5);
    }

    #[test]
    fn a_copy_to_a_remote_browser_that_failed_cancels_a_rules_pick_and_fails_an_agents_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("up.txt");
        std::fs::write(&f, b"hello").unwrap();
        let mut s = state_with(Policy::Auto);
        let rule = RuleSpec::own(FileChooserRule { files: vec![f.clone()], matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(1, "single", "")).unwrap())[1]["decision"], "accept");
        let rec = s.history.iter().last().unwrap().id;
        let out = to_json(&s.upload_failed(3, 1, rec, "no space left"));
        assert_eq!((out[0]["decision"].as_str(), out[0]["id"].as_u64()), (Some("refuse"), Some(1)));
        let r = s.record(rec).unwrap();
        assert_eq!(r.accepted, Some(false));
        assert!(r.explanation.contains("no space left") && r.explanation.contains("cancel"), "{}", r.explanation);
        // Held: the agent's answer fails, and the chooser waits for another one.
        let mut s = state_with(Policy::MustRespond);
        feed(&mut s, ask(2, "single", "")).unwrap();
        let id = s.held[0].record.id;
        s.interact(DialogCall::Carrying { tab: None, dialog_id: Some(id), with: Carry::new(Files(vec![f])) }).unwrap();
        let out = to_json(&s.upload_failed(3, 2, id, "no space left"));
        assert_eq!(out[0]["type"], "prompt_hold");
        assert!(out[0]["wait_ms"].as_u64().unwrap() > 5000);
        let e = s.answered(id).unwrap_err();
        assert!(e.message.contains("could not be copied") && e.message.contains("no space left"), "{}", e.message);
        assert!(s.interact(DialogCall::Respond { tab: None, accept: false, text: None, dialog_id: Some(id) }).is_ok());
    }

    #[test]
    fn a_picker_is_refused_whatever_answers_it() {
        let picker = json!({"type":"prompt_request","kind":"file_chooser","tab_id":3,"id":1,"url":"https://site/","mode":"open_picker"});
        let mut s = state_with(Policy::Auto);
        assert_eq!(to_json(&feed(&mut s, picker.clone()).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!(
            (rec.message.as_str(), rec.decided_by),
            ("file picker: showOpenFilePicker()", DecidedBy::DefaultPolicy)
        );
        let rule = RuleSpec::own(FileChooserRule {
            files: vec![PathBuf::from("/etc/hostname")],
            matcher: MatchArg::default(),
        });
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        let mut again = picker.clone();
        again["id"] = json!(2);
        assert_eq!(to_json(&feed(&mut s, again).unwrap())[1]["decision"], "refuse");
        assert!(s.history.iter().last().unwrap().explanation.contains("no protocol gives"));
        let mut s = state_with(Policy::MustRespond);
        feed(&mut s, picker).unwrap();
        let id = s.held[0].record.id;
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: Some(id) });
        assert!(err.is_err_and(|e| e.message.contains("File System Access picker")));
        let err = s.interact(DialogCall::Carrying {
            tab: None,
            dialog_id: Some(id),
            with: Carry::new(Files(vec![PathBuf::from("/x")])),
        });
        assert!(err.is_err());
        assert!(s.interact(DialogCall::Respond { tab: None, accept: false, text: None, dialog_id: Some(id) }).is_ok());
    }
}
