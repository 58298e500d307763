//! Print: a `window.print()` in any frame. In headless Chromium its job never ends (no
//! `afterprint`; later prints do nothing; `Page.printToPDF` fails until the page navigates),
//! and in a headful browser it blocks the page's script until a person closes the preview.
//! With the pilot on the page hook (`manifest/inject/49-print.js`) answers it itself, as a
//! person's cancel of the preview, without calling the browser's print(); the request tells
//! the host, through `manifest/print.js`. The prompt pipeline (`prompt.rs`) decides:
//! - cancel: nothing more (the page already has the cancel);
//! - print (a rule with `accept: true`, `auto_accept`, the agent): the worker prints the
//!   tab's page with `Page.printToPDF` (the page gets `beforeprint` and `afterprint`, its
//!   print styles apply) and sends the PDF here, which writes it where the agent said
//!   (`save_to`, checked against the allowed directories by `unmodal mcp`: `files.rs`) or
//!   in Unmodal's prints directory; the record names the file and its size.
//!
//! Pilot off: the browser's print(), recorded.

use super::args::{self, Api, Given, NoFields, Owned};
use super::rule::{Carry, CarryOf};
use super::{
    Carries, Described, EXPIRED_CANCELLED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, With, Words,
    configured, pilot_off, url_fits,
};
use crate::api::{MatchArg, ParamError, absolute_path, bad};
use crate::host::protocol::Carried;
use crate::host::protocol::{PromptDecision, ToBrowser};
use crate::host::record::{self, Details, DialogRecord, FileJob};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use ringbuf::traits::Consumer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("print");

/// Where printed pages go when the agent names no file (inside the data directory).
const PRINTS: &str = "prints";

/// The largest PDF written (base64 from the worker: about 4/3 of it).
const MAX_PDF: usize = 32 * 1024 * 1024;
/// New files a host writes into the prints directory, at most: a page printing in a loop
/// under `auto_accept` must not fill the disk (a `save_to` file is written over instead).
const MAX_NEW_PRINTS: u32 = 200;

/// Each policy's answer.
const POLICIES: Policies = Policies {
    hold: "print() held for the agent (policy must_respond): the page's call returned as after a cancel; interact \
{action:\"handle_dialog\", dialog_id, accept:true, save_to?} prints the page to a PDF file, accept:false leaves it \
cancelled",
    auto: Says::Refuse(
        "print() answered by the default policy as a person's cancel of the preview: the call returned, no print job \
was left behind (the browser's own would never end in headless, and would block PDF printing); a print rule with \
accept: true prints the page to a PDF file",
    ),
    auto_accept: Says::Accept(
        "print() printed to a PDF file in Unmodal's prints directory (the tab's auto_accept policy)",
    ),
    auto_dismiss: Says::Refuse("print() cancelled by the tab's auto_dismiss policy"),
};

/// A print once recorded.
pub(super) struct Print;

/// A print rule: print the page to a PDF file (accept; `save_to`, else Unmodal's prints
/// directory) or cancel it (the preview closed); `match.url_contains` is on the frame's URL.
#[derive(Clone, PartialEq)]
pub(crate) struct PrintRule {
    pub accept: bool,
    pub save_to: Option<PathBuf>,
    pub matcher: MatchArg,
}

crate::own_rule!(PrintRule, "Print", KIND, accept: |r| r.accept, in_config: |_| false, show: [accept, save_to]);

/// Its own field of `interact`.
#[derive(Deserialize, JsonSchema)]
struct PrintFields {
    /// dialog_type "print" (with setup and accept: true, or answering a held print): the PDF
    /// file to write, an absolute path inside the MCP client's roots or the directories
    /// configured for Unmodal. Default: Unmodal's prints directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    save_to: Option<String>,
}

static API: Api = Api {
    instructions: "window.print() is dialog_type \"print\": cancelled by default; accept:true prints the page to a PDF \
file (save_to: an absolute path inside your roots). ",
    description: "window.print(): accept = print the page to a PDF file (save_to), dismiss = the preview\ncancelled \
(the call returns, nothing printed).",
    fields: &[Owned { name: "save_to", held: Some("print"), in_clear: false, late: false }],
    schema: args::schema_of::<PrintFields, NoFields>,
    read: args::read_of::<PrintFields, NoFields>,
    rule: print_rule,
    answer: Some(print_answer),
    paths: &[("save_to", args::PathUse::Output)],
    own_dir: Some(PRINTS),
};

/// `save_to` as given.
fn absolute(to: &str) -> Result<PathBuf, ParamError> {
    absolute_path("save_to", to, || "an absolute path to a file, such as /home/me/work/page.pdf".into())
}

fn print_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a print", "leave match out")?;
    let accept = g.accept();
    let f: PrintFields = g.fields()?;
    if f.save_to.is_some() && !accept {
        return Err(bad("save_to", "where an accepting print rule writes its PDF; leave it out with accept: false"));
    }
    g.no_text("a print rule takes no text")?;
    let save_to = f.save_to.as_deref().map(absolute).transpose()?;
    Ok(RuleSpec::own(PrintRule { accept, save_to, matcher }))
}

fn print_answer(g: &Given) -> Result<Carry, ParamError> {
    if g.args.accept == Some(false) || g.args.text.is_some() {
        return Err(bad("save_to", "prints a held print to this file: only with accept: true, without text"));
    }
    let f: PrintFields = g.fields()?;
    Ok(Carry::new(SaveTo(absolute(f.save_to.as_deref().unwrap_or_default())?)))
}

/// The agent's answer to a held print: the PDF file to write.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SaveTo(pub PathBuf);

impl CarryOf for SaveTo {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, s: &mut State, ids: (i64, u64, u64), accept: bool) -> Carried {
        Box::new(Pdf { to: Some(self.0) }).apply(s, ids, accept)
    }
    crate::own_plumbing!(carry);
}

/// An accept's PDF file (none: Unmodal's prints directory).
#[derive(Clone, Debug, PartialEq)]
struct Pdf {
    to: Option<PathBuf>,
}

impl CarryOf for Pdf {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, s: &mut State, ids: (i64, u64, u64), accept: bool) -> Carried {
        if accept {
            leave_job(s, ids, self.to);
        }
        Carried::default()
    }
    crate::own_plumbing!(carry);
}

const WORDS: Words = Words {
    kind: KIND,
    group: "print",
    closed: (
        "printed to a PDF file (the page got beforeprint and afterprint)",
        "cancelled (as a person closes the preview)",
    ),
    expired: EXPIRED_CANCELLED,
};

impl Spec for Print {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<PrintAsk>(fields)
    }

    fn message(&self) -> Option<&'static str> {
        Some("print_pdf")
    }

    fn on_message(&self, s: &mut State, fields: serde_json::Value) -> Result<Vec<ToBrowser>, serde_json::Error> {
        let m = PrintPdf::deserialize(fields)?;
        s.on_print_pdf(m.tab_id, m.id, m.data.as_deref(), m.error.as_deref());
        Ok(Vec::new())
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(PrintRule { save_to: Some(to), .. }) = rule.of() {
            v.insert("save_to".into(), to.display().to_string().into());
        }
    }

    fn accept_with(&self, _held: &DialogRecord) -> With {
        With::own(Pdf { to: None })
    }

    fn carries(&self) -> Option<Carries> {
        Some(Carries {
            only: "save_to answers only a print",
            none_held: "No print is held open for the agent (only the must_respond policy holds them). To print the \
next one to a file, set up a rule first: interact {action:\"handle_dialog\", setup:true, dialog_type:\"print\", \
save_to}.",
        })
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let PrintRule { accept, .. } = rule.of()?;
        let will = if *accept { "print the page to a PDF file" } else { "cancel it (as a person closes the preview)" };
        Some(configured("print()", will, once))
    }
}

impl PromptKind for PrintAsk {
    fn describe(&self, _: &Redactor, url: &str) -> Described {
        Described {
            message: "print the page (window.print)".into(),
            truncated: false,
            redacted: Vec::new(),
            url: record::clip(url, 2048).0,
            details: Details::default(),
        }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let PrintRule { matcher, .. } = rule.of()?;
        url_fits(matcher.url_contains.as_ref(), url).then(|| usize::from(matcher.url_contains.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let Some(PrintRule { accept: true, save_to, .. }) = rule.of() else {
            return Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!("print() cancelled as a person closes the preview: print rule {id} matched"),
            );
        };
        let why = format!("print() printed to a PDF file: print rule {id} matched");
        Verdict::rule(PromptDecision::Accept, id, why).carrying(With::own(Pdf { to: save_to.clone() }))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        // Only an accept leaves a print job: a refusal carries nothing.
        POLICIES.verdict(policy).carrying(With::own(Pdf { to: None }))
    }

    fn not_shown(&self) -> Option<String> {
        self.no_dialog.map(|why| {
            format!(
                "print() not shown: {}, where the browser shows no print preview; the browser's own print() ran and \
did nothing, as without Unmodal (no rule or policy applies)",
                why.why()
            )
        })
    }

    fn pilot_off(&self) -> String {
        pilot_off(
            "the browser's own print() ran (headless: a print job that never ends and blocks PDF printing until the \
page navigates; headful: the preview, which blocks the page's script until a person closes it)",
        )
    }
}

/// An accepted print waits for its PDF: the record, and the file the agent named (none:
/// the prints directory).
/// Accepted prints waiting for their PDF, by (tab, prompt id).
#[derive(Debug, Default)]
struct PrintJobs(std::collections::HashMap<(i64, u64), FileJob>);

fn leave_job(s: &mut State, (tab, id, record): (i64, u64, u64), to: Option<PathBuf>) {
    s.kinds.get::<PrintJobs>().0.insert((tab, id), FileJob { record, to });
}

impl State {
    /// Accepted prints whose PDF is awaited.
    pub fn prints_awaited(&self) -> usize {
        self.kinds.peek::<PrintJobs>().map_or(0, |j| j.0.len())
    }

    /// An accepted print's PDF came (or why it could not be made): written, and its record
    /// says where.
    pub(in crate::host) fn on_print_pdf(&mut self, tab_id: i64, id: u64, data: Option<&str>, error: Option<&str>) {
        let Some(job) = self.kinds.get::<PrintJobs>().0.remove(&(tab_id, id)) else { return };
        let fresh = job.to.is_none();
        let outcome = match (data, error) {
            (Some(_), _) if job.to.is_none() && self.kinds.get::<PrintsMade>().0 >= MAX_NEW_PRINTS => Err(format!(
                "this host already wrote {MAX_NEW_PRINTS} new files into the prints directory; name a file with save_to"
            )),
            (Some(d), _) => {
                save(job.to, job.record, d).inspect(|_| self.kinds.get::<PrintsMade>().0 += u32::from(fresh))
            }
            (None, e) => Err(format!("the browser made no PDF: {}", e.unwrap_or("no reason given"))),
        };
        let rec = match self.held.iter_mut().find(|h| h.record.id == job.record) {
            Some(h) => &mut h.record,
            None => match self.history.iter_mut().find(|r| r.id == job.record) {
                Some(r) => r,
                None => return,
            },
        };
        match outcome {
            Ok((file, size)) => {
                rec.explanation = format!("{}. Saved {} ({size} bytes).", rec.explanation, file.display());
                rec.details = Details::of(&PrintDetails { file: file.display().to_string(), size });
            }
            Err(e) => {
                tracing::warn!(error = %e, "a printed page was not saved");
                rec.explanation = format!("{}. Not saved: {e}.", rec.explanation);
            }
        }
    }
}

/// Decodes and writes the PDF: to `to`, else a new file in Unmodal's prints directory.
fn save(to: Option<PathBuf>, record: u64, data: &str) -> Result<(PathBuf, u64), String> {
    use base64::Engine as _;
    if data.len() > MAX_PDF / 3 * 4 + 4 {
        return Err(format!("the PDF is over {} MB", MAX_PDF >> 20));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("not base64: {e}"))?;
    if !bytes.starts_with(b"%PDF") {
        return Err("what the browser sent is not a PDF".into());
    }
    let file = match to {
        Some(f) => f,
        None => {
            let dir = crate::paths::data_dir().map_err(|e| e.to_string())?.join(PRINTS);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            dir.join(format!("print-{stamp}-{record}.pdf"))
        }
    };
    crate::paths::write_private(&file, &bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((file, bytes.len() as u64))
}

/// A print: the frame and its URL say which. `no_dialog`: the browser shows no preview
/// there, and its own print() did nothing (sent with `native`).
#[derive(Debug, Deserialize)]
pub struct PrintAsk {
    #[serde(default)]
    pub no_dialog: Option<crate::host::protocol::NoDialog>,
}

/// A print written to a PDF file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrintDetails {
    /// Where the PDF is.
    pub file: String,
    /// Its size in bytes.
    pub size: u64,
}

/// An accepted print's PDF (`Page.printToPDF`, base64), or why there is none.
#[derive(Debug, Deserialize)]
struct PrintPdf {
    tab_id: i64,
    id: u64,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// How many PDFs this host wrote into the prints directory.
#[derive(Debug, Default)]
struct PrintsMade(u32);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::record::DecidedBy;
    use crate::host::state::State;
    use crate::host::state::tests::{feed, to_json};
    use ringbuf::traits::Consumer;
    use serde_json::json;

    #[test]
    fn the_default_cancels_and_the_record_has_no_details() {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        let out = to_json(
            &feed(&mut s, json!({"type":"prompt_request","kind":"print","tab_id":3,"id":1,"url":"http://a/r"}))
                .unwrap(),
        );
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"print","tab_id":3,"id":1,"decision":"refuse"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by, rec.accepted), (KIND, DecidedBy::DefaultPolicy, Some(false)));
        let back: crate::host::record::DialogRecord =
            serde_json::from_value(serde_json::to_value(rec).unwrap()).unwrap();
        assert!(back.details.is_empty());
    }

    #[test]
    fn an_accepting_rule_writes_the_pdf_where_it_says_and_the_record_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        let to = dir.path().join("p.pdf");
        let rule = RuleSpec::own(PrintRule { accept: true, save_to: Some(to.clone()), matcher: Default::default() });
        s.add_rule(3, true, rule).unwrap();
        let ask = json!({"type":"prompt_request","kind":"print","tab_id":3,"id":7,"url":"http://a/r"});
        assert_eq!(to_json(&feed(&mut s, ask).unwrap())[1]["decision"], "accept");
        // Not a PDF, or for a print nobody accepted: nothing is written.
        feed(&mut s, json!({"type":"print_pdf","tab_id":3,"id":8,"data":"JVBERi0="})).unwrap();
        assert!(!to.exists());
        feed(&mut s, json!({"type":"print_pdf","tab_id":3,"id":7,"data":"JVBERi0xLjQK"})).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"%PDF-1.4\n");
        let rec = s.history.iter().last().unwrap();
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!((j["file"].as_str(), j["size"].as_u64()), (to.to_str(), Some(9)), "{j}");
        let back: crate::host::record::DialogRecord = serde_json::from_value(j).unwrap();
        assert_eq!(back.details, rec.details, "the record's details survive a restart");
        // A second PDF for the same print is not written over the first.
        std::fs::write(&to, b"kept").unwrap();
        feed(&mut s, json!({"type":"print_pdf","tab_id":3,"id":7,"data":"JVBERi0xLjQK"})).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"kept");
    }

    #[test]
    fn a_print_the_browser_shows_nothing_for_is_recorded_as_its_own_whatever_the_policy() {
        let mut s = crate::host::state::tests::state_with(Policy::AutoAccept);
        let ask = json!({"type":"prompt_request","kind":"print","tab_id":3,"id":1,"url":"http://a/f","native":true,
                         "no_dialog":"sandboxed"});
        let out = to_json(&feed(&mut s, ask).unwrap());
        assert_eq!(out.len(), 1, "recorded, nothing answered or printed: {out:?}");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Browser, Some(DecidedBy::Browser), None));
        assert!(rec.explanation.contains("sandboxed without allow-modals"), "{}", rec.explanation);
        assert!(s.kinds.peek::<PrintJobs>().is_none_or(|j| j.0.is_empty()));
        let bad = json!({"type":"prompt_request","kind":"print","tab_id":3,"id":2,"url":"http://a/f","native":true,
                         "no_dialog":"because"});
        assert!(feed(&mut s, bad).is_err());
    }

    #[test]
    fn a_page_printing_in_a_loop_cannot_fill_the_prints_directory() {
        let mut s = crate::host::state::tests::state_with(Policy::AutoAccept);
        s.kinds.get::<PrintsMade>().0 = MAX_NEW_PRINTS;
        let ask = json!({"type":"prompt_request","kind":"print","tab_id":3,"id":1,"url":"http://a/r"});
        assert_eq!(to_json(&feed(&mut s, ask).unwrap())[1]["decision"], "accept");
        feed(&mut s, json!({"type":"print_pdf","tab_id":3,"id":1,"data":"JVBERi0xLjQK"})).unwrap();
        let rec = s.history.iter().last().unwrap();
        assert!(rec.details.is_empty() && rec.explanation.contains("name a file with save_to"), "{}", rec.explanation);
    }
}
