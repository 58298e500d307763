//! Downloads a DevTools client took over, seen through the host's own connection.
//! Playwright's `connectOverCDP` (its defaults) sets `Browser.setDownloadBehavior
//! {allowAndName}` for the default context: the browser then saves every download
//! GUID-named into the driver's directory and the extension's `chrome.downloads` hears
//! nothing (`docs/cdp-answers.md`). The CDP answerer still hears each one, through a browser
//! context of its own (`Want::transfers`). What the extension never reported is recorded
//! here, and the download rules apply to the finished file: a `save_dir` gets a copy (the
//! driver's file stays where the driver expects it); a remote browser's file is copied to
//! this machine as any remote download is. Nothing can be cancelled or held: the driver had
//! it already. The file is the browser's word on the host's own connection, never the
//! worker's, and is checked as a download the worker reports is (`check_taken`).

use super::{DownloadAsk, DownloadDetails, DownloadRule, KIND, names_for};
use crate::host::answerer::{Seen, TransferView};
use crate::host::kinds::{Answered, PromptKind, RuleSpec};
use crate::host::protocol::{FetchJob, ToBrowser};
use crate::host::record::{self, DecidedBy, Details, DialogRecord};
use crate::host::state::State;
use ringbuf::traits::Consumer as _;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Downloads being followed, at most (the oldest forgotten past it).
const MAX_FOLLOWED: usize = 256;

/// How far back a record the worker made may be to be this download's (its ask came before
/// the browser wrote a byte; a clock step or a slow start are allowed for).
const PAIR_SLACK: std::time::Duration = std::time::Duration::from_secs(5);

/// What the answerer said of downloads: when each began, and which records are known to be
/// a download the worker reported (paired) or one recorded here.
#[derive(Debug, Default)]
struct Taken {
    began: HashMap<String, SystemTime>,
    order: VecDeque<String>,
    /// Worker-made records already paired with a download seen here.
    paired: HashSet<u64>,
    /// Downloads recorded here (by GUID).
    recorded: HashSet<String>,
    /// Where the browser wrote each file the worker reported, by record (its record's
    /// `path` says where it is now: moved into a rule's `save_dir`, maybe before the
    /// browser's word on the host's connection is heard).
    written: HashMap<u64, PathBuf>,
    written_order: VecDeque<u64>,
    /// Each finished download as it was settled, newest last (at most `MAX_FOLLOWED`).
    settled: VecDeque<Settled>,
}

/// How a finished download the host's connection heard was settled: paired with the
/// record the worker made of it, or recorded here as one a driver took.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) struct Settled {
    pub guid: String,
    pub record: u64,
    pub worker_reported: bool,
}

/// The finished downloads heard on the host's connection, as each was settled, oldest
/// first (the end-to-end tests' barrier: the host has heard the browser's own word).
pub(super) fn settled(s: &State) -> Vec<Settled> {
    s.kinds.peek::<Taken>().map(|t| t.settled.iter().cloned().collect()).unwrap_or_default()
}

/// The worker reported where the browser wrote record `record`'s file (before any move).
pub(super) fn written(s: &mut State, record: u64, path: &Path) {
    let taken = s.kinds.get::<Taken>();
    if taken.written_order.len() >= MAX_FOLLOWED
        && let Some(old) = taken.written_order.pop_front()
    {
        taken.written.remove(&old);
    }
    taken.written_order.push_back(record);
    taken.written.insert(record, path.to_owned());
}

impl Taken {
    fn settle(&mut self, guid: &str, record: u64, worker_reported: bool) {
        if self.settled.len() >= MAX_FOLLOWED {
            self.settled.pop_front();
        }
        self.settled.push_back(Settled { guid: guid.to_owned(), record, worker_reported });
    }

    fn began(&mut self, guid: &str) {
        if self.began.contains_key(guid) {
            return;
        }
        if self.order.len() >= MAX_FOLLOWED
            && let Some(old) = self.order.pop_front()
        {
            self.began.remove(&old);
            self.recorded.remove(&old);
        }
        self.order.push_back(guid.to_owned());
        self.began.insert(guid.to_owned(), SystemTime::now());
    }
}

/// Why this download was not the extension's to decide.
const TAKEN: &str = "A DevTools client (a driver such as Playwright's connectOverCDP with its defaults) took this \
browser's downloads: the browser saved it into the driver's directory and the extension was not told, so Unmodal \
neither held nor cancelled it; it saw it through its own DevTools connection";

/// A download the answerer saw: recorded once it finished, unless the worker reported it.
pub(super) fn on_seen(s: &mut State, seen: &Seen, out: &mut Answered) {
    let Seen::Transfer(t) = seen else { return };
    // The bridge's own helper pages (`transport/remote_uploads.rs`) download `blob:` URLs
    // from `about:blank` in a context of their own: no page of the browser's. (A frame the
    // answerer does not list as a target has no URL here: recorded, with no tab.)
    if t.page_url == "about:blank" {
        return;
    }
    let taken = s.kinds.get::<Taken>();
    match t.state.as_str() {
        "in_progress" => taken.began(&t.guid),
        "completed" if !taken.recorded.contains(&t.guid) => {
            let Some(began) = taken.began.get(&t.guid).copied() else { return };
            if let Some(rec) = worker_record(s, t, began) {
                let taken = s.kinds.get::<Taken>();
                taken.paired.insert(rec);
                taken.settle(&t.guid, rec, true);
                return;
            }
            s.kinds.get::<Taken>().recorded.insert(t.guid.clone());
            let (id, msgs) = record_taken(s, t, began);
            s.kinds.get::<Taken>().settle(&t.guid, id, false);
            out.to_browser.extend(msgs);
        }
        _ => {}
    }
}

/// The record the worker made of this download, if it reported it (the driver did not take
/// it): the same URL or file name, asked for since it began. The worker is the browser
/// side's word, which anyone with code in it can forge, so the browser's own word on the
/// host's connection rules a pairing out where it can:
/// - a file named by its GUID was saved by a driver's `allowAndName`, which the extension
///   is never told of: no worker report can be this download's;
/// - a worker record that says where its file is must name the same file.
fn worker_record(s: &State, t: &TransferView, began: SystemTime) -> Option<u64> {
    let file = t.file_path.as_deref().map(Path::new);
    if file.and_then(Path::file_name).is_some_and(|n| n == t.guid.as_str()) {
        return None;
    }
    let (url, _) = s.redactor.apply(&record::clip(&t.url, 2048).0);
    let (name, _) = s.redactor.apply(&record::clip(&t.suggested_filename, 256).0);
    let taken = s.kinds.peek::<Taken>();
    let paired = taken.map(|k| &k.paired);
    let since = began.checked_sub(PAIR_SLACK).unwrap_or(began);
    s.held.iter().map(|h| &h.record).chain(s.history.iter()).find_map(|r| {
        let d = r.details.read::<DownloadDetails>()?;
        let fresh = humantime::parse_rfc3339(&r.timestamp).is_ok_and(|at| at >= since);
        let same = r.url == url || (!name.is_empty() && d.file_name == name);
        // Where the browser wrote it, not where a rule moved it since.
        let theirs = taken.and_then(|k| k.written.get(&r.id)).cloned().or_else(|| d.path.as_deref().map(PathBuf::from));
        let same_file = match (theirs, file) {
            (Some(theirs), Some(ours)) => theirs == ours,
            _ => true,
        };
        (r.kind == KIND && fresh && same && same_file && !paired.is_some_and(|p| p.contains(&r.id))).then_some(r.id)
    })
}

/// The tab whose page started it (the host's tab list, by the page's URL as the answerer
/// saw it), preferring one with a download rule that fits; and that rule.
fn tab_and_rule(s: &State, t: &TransferView, ask: &DownloadAsk) -> (Option<i64>, Option<(u32, bool, RuleSpec)>) {
    let tabs: Vec<i64> = s.tabs.iter().filter(|tab| tab.url == t.page_url).map(|tab| tab.id).collect();
    for &tab in &tabs {
        if let Some(r) = s.rules.best(tab, |r| ask.fits(r, &t.url)) {
            return (Some(tab), Some((r.id, r.once, r.rule.clone())));
        }
    }
    (tabs.first().copied(), None)
}

/// Records download `t` a driver took: its record's id and what goes to the browser.
fn record_taken(s: &mut State, t: &TransferView, began: SystemTime) -> (u64, Vec<ToBrowser>) {
    let ask = DownloadAsk {
        file_name: t.suggested_filename.clone(),
        mime: String::new(),
        size: i64::try_from(t.total_bytes).unwrap_or(-1),
    };
    let (tab, rule) = tab_and_rule(s, t, &ask);
    let described = ask.describe(&s.redactor, &t.url);
    let mut d: DownloadDetails = described.details.read().unwrap_or(DownloadDetails {
        file_name: String::new(),
        mime: String::new(),
        size: None,
        download_state: String::new(),
        path: None,
        remote_path: None,
    });
    d.download_state = "complete".into();
    d.size = Some(t.received_bytes);
    let by = if rule.is_some() { DecidedBy::Rule } else { DecidedBy::Remote };
    let id = s.next_id();
    let mut out = Vec::new();
    let file = t.file_path.clone().unwrap_or_default();
    let remote = s.browser.over_cdp.is_some();
    let save_dir = match &rule {
        Some((_, _, r)) => match r.of::<DownloadRule>() {
            Some(DownloadRule { accept: true, save_dir, .. }) => Ok(save_dir.clone()),
            _ => Err(()),
        },
        None => Ok(None),
    };
    let mut said = vec![format!("{TAKEN}.")];
    if remote {
        d.remote_path = Some(file.clone());
        let to =
            save_dir.clone().ok().flatten().or_else(|| crate::paths::data_dir().ok().map(|d| d.join(super::COPIED)));
        match to {
            Some(dir) if !file.is_empty() => {
                let name = Some(t.suggested_filename.clone()).filter(|n| !n.is_empty());
                s.fetches.push(FetchJob { kind: KIND, record: id, remote: file.clone(), name, dir });
                said.push(format!(
                    "Saved by the driver on the browser's machine as {file}; being copied to this machine."
                ));
            }
            _ => said.push(format!("Saved by the driver on the browser's machine as {file}; not copied here.")),
        }
    } else {
        d.path = Some(file.clone()).filter(|f| !f.is_empty());
        said.push(format!("Saved by the driver as {file}."));
        if let Ok(Some(dir)) = &save_dir {
            match check_taken(Path::new(&file), began).and_then(|held| copy_taken(&held, &ask.file_name, dir)) {
                Ok(to) => {
                    d.path = Some(to.display().to_string());
                    said.push(format!("Copied into {} (the driver's file left where it is).", to.display()));
                }
                Err(e) => {
                    tracing::warn!(record = id, reason = %e, "a download a driver took was not copied");
                    said.push(format!("Not copied into {}: {e}.", dir.display()));
                }
            }
        }
    }
    if let Some((rule_id, once, _)) = &rule {
        let what = match &save_dir {
            Err(()) => "it says cancel, but the driver had the file already: it was left to the driver",
            Ok(_) => "it was applied to the finished file",
        };
        said.insert(1, format!("Download rule {rule_id} matched: {what}."));
        if *once && save_dir.is_ok() {
            out.extend(tab.and_then(|tab| s.spend_rule(tab, *rule_id)));
        }
    }
    let rec = DialogRecord {
        message: described.message,
        message_truncated: described.truncated,
        redacted: described.redacted,
        accepted: Some(true),
        closed_by: Some(by),
        rule_id: rule.as_ref().map(|r| r.0),
        explanation: said.join(" "),
        url: described.url,
        page_url: s.redactor.apply(&record::clip(&t.page_url, 2048).0).0,
        details: Details::of(&d),
        ..DialogRecord::new(id, KIND, tab.unwrap_or(-1), by)
    };
    s.logs.dialog(&rec);
    out.push(ToBrowser::recorded(&rec));
    s.remember(rec);
    (id, out)
}

/// The driver's file, opened and checked as a download the worker reports is (a regular
/// file of this user's with one name, written since the download began), except for its
/// directory: a driver's own (Playwright's artifacts directory) is not one Unmodal knows.
/// The path is the browser's word on the host's own connection, not the worker's.
fn check_taken(file: &Path, began: SystemTime) -> Result<crate::platform::HeldFile, String> {
    let (Some(dir), Some(name)) = (file.parent().filter(|_| file.is_absolute()), file.file_name()) else {
        return Err("the browser's path names no file".into());
    };
    super::open_as_download(dir, name, began)
}

/// A copy of the checked file in `dir`, named as the page named the download (its last
/// name only), or the first of `names_for` free there.
fn copy_taken(held: &crate::platform::HeldFile, suggested: &str, dir: &Path) -> Result<PathBuf, String> {
    let last = suggested.rsplit(['/', '\\']).next().unwrap_or_default();
    let name = if last.is_empty() || last == "." || last == ".." { "download" } else { last };
    crate::platform::copy_held(held, dir, &mut names_for(std::ffi::OsStr::new(name))).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::{DialogCall, answerer_seen};
    use crate::host::state::tests::{feed, state_with};
    use serde_json::json;
    use unmodal_engine::Policy;

    fn transfer(guid: &str, page: &str, state: &str, file: Option<&Path>) -> Seen {
        Seen::Transfer(TransferView {
            guid: guid.into(),
            url: "http://a/report.csv".into(),
            suggested_filename: "report.csv".into(),
            frame_id: "F".into(),
            page_url: page.into(),
            state: state.into(),
            received_bytes: 5,
            total_bytes: 5,
            file_path: file.map(|f| f.display().to_string()),
        })
    }

    /// The driver's download `guid`, begun and finished: its GUID-named file in `dir`.
    fn driver_saves(s: &mut State, dir: &Path, guid: &str) -> (PathBuf, Answered) {
        answerer_seen(s, &transfer(guid, "http://a/", "in_progress", None));
        let file = dir.join(guid);
        std::fs::write(&file, b"a,b,c").unwrap();
        let out = answerer_seen(s, &transfer(guid, "http://a/", "completed", Some(&file)));
        (file, out)
    }

    /// Download g1 of http://a/report.csv began, and the worker reported a download of it.
    fn began_and_worker_reported(s: &mut State) {
        answerer_seen(s, &transfer("g1", "http://a/", "in_progress", None));
        feed(
            s,
            json!({"type":"prompt_request","kind":"download","tab_id":3,"id":1,"url":"http://a/report.csv",
                "file_name":"report.csv","mime":"text/csv","size":5}),
        )
        .unwrap();
    }

    fn taken(s: &State) -> Vec<&DialogRecord> {
        s.history.iter().filter(|r| r.kind == KIND).collect()
    }

    /// The pilot on, tab 3 at http://a/, and a download rule saving into `dir`.
    fn saving_into(dir: &Path, once: bool) -> State {
        let mut s = state_with(Policy::Auto);
        let rule =
            RuleSpec::own(DownloadRule { accept: true, save_dir: Some(dir.into()), matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once, rule }).unwrap();
        s
    }

    #[test]
    fn a_download_a_driver_took_is_recorded_once_and_a_rule_copies_it_leaving_the_drivers_file() {
        let (driver, keep) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut s = saving_into(keep.path(), false);
        let (file, out) = driver_saves(&mut s, driver.path(), "g1");
        assert!(out.to_browser.iter().any(|m| matches!(m, ToBrowser::Recorded { .. })), "the record is sent");
        let recs = taken(&s);
        assert_eq!(recs.len(), 1);
        let (rec, copy) = (recs[0], keep.path().join("report.csv"));
        assert_eq!((rec.tab_id, rec.decided_by, rec.accepted), (3, DecidedBy::Rule, Some(true)));
        assert!(rec.explanation.contains("took this browser's downloads"), "{}", rec.explanation);
        let d = rec.details.read::<DownloadDetails>().unwrap();
        assert_eq!((d.download_state.as_str(), d.path.as_deref()), ("complete", copy.to_str()));
        assert_eq!(std::fs::read(&copy).unwrap(), b"a,b,c");
        assert_eq!(std::fs::read(&file).unwrap(), b"a,b,c", "the driver's file stays");
        // The browser saying it again records nothing more.
        answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(&file)));
        assert_eq!(taken(&s).len(), 1);
    }

    #[test]
    fn a_download_the_worker_reported_is_not_recorded_again() {
        let driver = tempfile::tempdir().unwrap();
        let mut s = state_with(Policy::Auto);
        began_and_worker_reported(&mut s);
        let file = driver.path().join("report.csv");
        std::fs::write(&file, b"a,b,c").unwrap();
        answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(&file)));
        assert_eq!(taken(&s).len(), 1, "the worker's record only");
        // The next one of the same URL the worker did not report is recorded.
        driver_saves(&mut s, driver.path(), "g2");
        assert_eq!(taken(&s).len(), 2);
        let how: Vec<(&str, bool)> =
            s.kinds.peek::<Taken>().unwrap().settled.iter().map(|d| (d.guid.as_str(), d.worker_reported)).collect();
        assert_eq!(how, [("g1", true), ("g2", false)], "each settled once, as it was");
        assert_eq!(settled(&s).last().map(|d| d.record), taken(&s).last().map(|r| r.id));
    }

    /// Trust: a report the worker makes is the browser side's word. One forged for the
    /// driver's download (same URL and name, just before it) must not stand in for it: the
    /// driver's GUID-named file is a download the extension was never told of.
    #[test]
    fn a_forged_worker_report_does_not_stand_in_for_a_drivers_download() {
        let (driver, keep) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut s = saving_into(keep.path(), false);
        began_and_worker_reported(&mut s);
        let file = driver.path().join("g1");
        std::fs::write(&file, b"a,b,c").unwrap();
        answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(&file)));
        let recs = taken(&s);
        assert_eq!(recs.len(), 2, "the worker's record and the host's own: {recs:?}");
        let own = recs.iter().find(|r| r.explanation.contains("took this browser's downloads")).unwrap();
        assert_eq!(own.decided_by, DecidedBy::Rule);
        assert_eq!(std::fs::read(keep.path().join("report.csv")).unwrap(), b"a,b,c", "the rule's copy was made");
    }

    /// A worker record that names its file pairs only with the download of that file.
    #[test]
    fn a_worker_record_of_another_file_does_not_pair() {
        let driver = tempfile::tempdir().unwrap();
        let mut s = state_with(Policy::Auto);
        began_and_worker_reported(&mut s);
        let worker = s.history.iter().chain(s.held.iter().map(|h| &h.record)).find(|r| r.kind == KIND).unwrap().id;
        let elsewhere = driver.path().join("elsewhere.csv");
        let set = |s: &mut State| {
            let rec = s.record_mut(worker);
            let rec = rec.unwrap();
            let mut d = rec.details.read::<DownloadDetails>().unwrap();
            d.path = Some(elsewhere.display().to_string());
            rec.details = Details::of(&d);
        };
        set(&mut s);
        let file = driver.path().join("report.csv");
        std::fs::write(&file, b"a,b,c").unwrap();
        answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(&file)));
        assert_eq!(taken(&s).len(), 2, "another file's record does not pair");
    }

    /// The worker's record of a download a rule moved into its `save_dir` before the
    /// browser's word on the host's connection was heard still pairs with it (by where the
    /// browser wrote it): one record, not a second one saying a driver took it.
    #[test]
    fn a_worker_record_moved_into_save_dir_before_the_browser_said_it_finished_still_pairs() {
        let tmp = tempfile::tempdir().unwrap();
        let (downloads, keep) = (tmp.path().join("Downloads"), tmp.path().join("keep"));
        std::fs::create_dir_all(&downloads).unwrap();
        std::fs::create_dir_all(&keep).unwrap();
        let mut s = saving_into(&keep, false);
        super::super::tests::browser_saving_into(&mut s, tmp.path(), &downloads);
        began_and_worker_reported(&mut s);
        let written = downloads.join("report.csv");
        std::fs::write(&written, b"a,b,c").unwrap();
        let done = json!({"type":"download_done","tab_id":3,"id":1,"state":"complete","path":written,"size":5});
        feed(&mut s, done).unwrap();
        let worker = taken(&s)[0].details.read::<DownloadDetails>().unwrap();
        assert_eq!(worker.path.as_deref(), keep.join("report.csv").to_str(), "moved into save_dir");
        answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(&written)));
        assert_eq!(taken(&s).len(), 1, "the worker's record only: {:?}", taken(&s));
    }

    #[test]
    fn the_bridges_own_helper_downloads_and_unfinished_ones_are_not_recorded() {
        let driver = tempfile::tempdir().unwrap();
        let mut s = state_with(Policy::Auto);
        answerer_seen(&mut s, &transfer("h", "about:blank", "in_progress", None));
        answerer_seen(&mut s, &transfer("h", "about:blank", "completed", Some(driver.path())));
        answerer_seen(&mut s, &transfer("c", "http://a/", "in_progress", None));
        answerer_seen(&mut s, &transfer("c", "http://a/", "canceled", None));
        assert!(taken(&s).is_empty());
    }

    // The path is the browser's word: a file that is not the download's is not copied.
    #[cfg(unix)]
    #[test]
    fn a_path_naming_a_symlink_or_an_old_file_is_not_copied() {
        let (driver, keep) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let secret = driver.path().join("secret");
        std::fs::write(&secret, b"key").unwrap();
        let mut s = saving_into(keep.path(), false);
        answerer_seen(&mut s, &transfer("g1", "http://a/", "in_progress", None));
        let link = driver.path().join("g1");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(&link)));
        let rec = taken(&s)[0];
        assert!(rec.explanation.contains("Not copied into"), "{}", rec.explanation);
        assert_eq!(std::fs::read_dir(keep.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_remote_browsers_download_a_driver_took_is_copied_here() {
        let keep = tempfile::tempdir().unwrap();
        let mut s = saving_into(keep.path(), true);
        s.browser = crate::parent_browser::ParentBrowser::over_cdp("wss://fleet/…".into());
        answerer_seen(&mut s, &transfer("g1", "http://a/", "in_progress", None));
        let out = answerer_seen(&mut s, &transfer("g1", "http://a/", "completed", Some(Path::new("/remote/x/g1"))));
        let rec = taken(&s)[0].id;
        let jobs = std::mem::take(&mut s.fetches);
        assert_eq!(
            jobs,
            [FetchJob {
                kind: KIND,
                record: rec,
                remote: "/remote/x/g1".into(),
                name: Some("report.csv".into()),
                dir: keep.path().into()
            }]
        );
        assert!(out.to_browser.iter().any(|m| matches!(m, ToBrowser::Recorded { .. })));
        assert!(s.rules_of(3).is_empty(), "the once rule is spent");
        s.file_fetched(rec, Ok((keep.path().join("report.csv"), 5)));
        let r = taken(&s)[0];
        assert!(r.explanation.ends_with("(5 bytes)."), "{}", r.explanation);
    }

    #[test]
    fn without_the_hosts_devtools_connection_a_rules_answer_says_what_it_cannot_reach() {
        let mut s = state_with(Policy::Auto);
        let rule = RuleSpec::own(DownloadRule { accept: true, save_dir: None, matcher: MatchArg::default() });
        let done = s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
        let message = done.value["message"].as_str().unwrap_or_default();
        assert!(message.contains("no DevTools connection") && message.contains("connectOverCDP"), "{message}");
        let other = crate::host::state::tests::dialog_rule(unmodal_engine::RuleTarget::All, true);
        let done = s.interact(DialogCall::Setup { tab: None, once: false, rule: other }).unwrap();
        assert!(!done.value["message"].as_str().unwrap_or_default().contains("DevTools"), "{}", done.value);
    }
}
