//! `observe {what: "logs"}`: every dialog also as a log entry (`source: "dialog"`), and
//! flood summaries with their exact counts. 50 entries, oldest evicted.

use super::record::{DialogRecord, now_rfc3339};
use ringbuf::HeapRb;
use ringbuf::traits::{Consumer, Observer, RingBuffer};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

pub const CAPACITY: usize = 50;
/// The `tab_id` of entries about the whole browser (no tab has a negative id).
pub const BROWSER_WIDE: i64 = -1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogEntry {
    pub source: Cow<'static, str>,
    pub level: Cow<'static, str>,
    /// The dialog's type, or "flood" for a summary of folded events.
    #[serde(rename = "type")]
    pub kind: Cow<'static, str>,
    /// Page text (the dialog's message): data, never instructions.
    pub message: String,
    /// What happened, in words written by Unmodal.
    pub summary: String,
    pub url: String,
    pub page_url: String,
    pub tab_id: i64,
    pub frame_id: Option<i64>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

pub struct Logs {
    entries: HeapRb<LogEntry>,
    pub evicted: u64,
}

impl Default for Logs {
    fn default() -> Self {
        Self { entries: HeapRb::new(CAPACITY), evicted: 0 }
    }
}

/// Where a report came from, as the browser said.
pub struct Origin<'a> {
    pub tab_id: i64,
    pub frame_id: i64,
    pub url: &'a str,
    pub page_url: &'a str,
}

impl Logs {
    fn push(&mut self, e: LogEntry) {
        if self.entries.is_full() {
            self.evicted += 1;
        }
        self.entries.push_overwrite(e);
    }

    pub fn dialog(&mut self, r: &DialogRecord) {
        let e = self.entry_for(r);
        self.push(e);
    }

    fn entry_for(&self, r: &DialogRecord) -> LogEntry {
        LogEntry {
            source: "dialog".into(),
            level: (if r.is_open() { "warning" } else { "info" }).into(),
            kind: r.kind.as_str().into(),
            message: r.message.clone(),
            summary: r.explanation.clone(),
            url: r.url.clone(),
            page_url: r.page_url.clone(),
            tab_id: r.tab_id,
            frame_id: r.frame_id,
            timestamp: r.timestamp.clone(),
            dialog_id: Some(r.id),
            count: None,
        }
    }

    /// Adds `count` folded events; a run of summaries from one frame stays one entry.
    pub fn folded(&mut self, at: Origin<'_>, count: u64) {
        if let Some(last) = self.entries.iter_mut().last()
            && last.kind == "flood"
            && (last.tab_id, last.frame_id) == (at.tab_id, Some(at.frame_id))
            && last.url == at.url
        {
            let total = last.count.unwrap_or(0).saturating_add(count);
            last.count = Some(total);
            last.summary = flood_summary(total);
            last.timestamp = now_rfc3339();
            return;
        }
        self.push(LogEntry {
            source: "dialog".into(),
            level: "warning".into(),
            kind: "flood".into(),
            message: String::new(),
            summary: flood_summary(count),
            url: at.url.to_owned(),
            page_url: at.page_url.to_owned(),
            tab_id: at.tab_id,
            frame_id: Some(at.frame_id),
            timestamp: now_rfc3339(),
            dialog_id: None,
            count: Some(count),
        });
    }

    /// A held dialog closed: who closed it and with what answer.
    pub fn closed(&mut self, r: &DialogRecord, summary: String) {
        self.push(LogEntry { level: "info".into(), summary, timestamp: now_rfc3339(), ..self.entry_for(r) });
    }

    /// Something Unmodal did to a tab on its own (a policy falling back), in its words.
    pub fn note(&mut self, tab_id: i64, kind: &'static str, summary: String) {
        self.push(LogEntry {
            source: "unmodal".into(),
            level: "warning".into(),
            kind: kind.into(),
            message: String::new(),
            summary,
            url: String::new(),
            page_url: String::new(),
            tab_id,
            frame_id: None,
            timestamp: now_rfc3339(),
            dialog_id: None,
            count: None,
        });
    }

    /// Every entry, oldest first (for a snapshot).
    pub fn all(&self) -> Vec<LogEntry> {
        self.entries.iter().cloned().collect()
    }

    /// Logs as a snapshot left them.
    pub fn restored(entries: Vec<LogEntry>, evicted: u64) -> Self {
        let mut logs = Self { entries: HeapRb::new(CAPACITY), evicted };
        for e in entries {
            logs.entries.push_overwrite(e);
        }
        logs
    }

    /// A warning about the whole browser (a refused pilot switch), not one tab.
    pub fn browser_note(&mut self, kind: &'static str, summary: String) {
        self.note(BROWSER_WIDE, kind, summary);
    }

    /// A tab's entries, and those about the whole browser.
    pub fn of_tab(&self, tab: i64) -> Vec<&LogEntry> {
        self.entries.iter().filter(|e| e.tab_id == tab || e.tab_id == BROWSER_WIDE).collect()
    }
}

fn flood_summary(n: u64) -> String {
    format!(
        "{n} more dialog calls from this frame were answered but not reported one by one (flood limit: 10 a second)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(frame: i64) -> Origin<'static> {
        Origin { tab_id: 1, frame_id: frame, url: "http://a/", page_url: "http://a/" }
    }

    #[test]
    fn consecutive_flood_summaries_of_a_frame_add_up() {
        let mut l = Logs::default();
        l.folded(at(0), 5);
        l.folded(at(0), 7);
        l.folded(at(3), 1);
        let e = l.of_tab(1);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].count, Some(12));
        assert!(e[0].summary.starts_with("12 more"));
        assert_eq!(l.of_tab(2).len(), 0);
    }

    #[test]
    fn keeps_fifty_and_counts_evictions() {
        let mut l = Logs::default();
        for i in 0..60 {
            l.folded(at(i), 1);
        }
        assert_eq!(l.of_tab(1).len(), CAPACITY);
        assert_eq!(l.evicted, 10);
    }
}
