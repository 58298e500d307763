//! Each message from the browser goes to the handler of its kind; this is the only file
//! that knows them all.

use super::kinds;
use super::protocol::{FromBrowser, ToBrowser};
use super::state::State;

impl State {
    /// Applies one message from the browser; returns what to send back. `Err` says why a
    /// message was refused (nothing changed).
    pub fn on_browser(&mut self, msg: FromBrowser) -> Result<Vec<ToBrowser>, String> {
        match msg {
            FromBrowser::Hello { version, worker, held, .. } => {
                self.extension_version = version;
                // The switch first: the worker serves its pages once it knows it.
                let mut out = vec![self.pilot_message(None, None)];
                out.extend(self.keep_held(&held));
                let upto = self.reports_seen.upto_for(worker.as_deref());
                self.worker = worker;
                // Every tab this host knows gets its config, the plain default too: the
                // worker may still act on what an earlier host said and this one does not
                // know (rules kept in memory only, such as an `automatic-downloads` grant,
                // the browser's setting the worker made). From here this host's word holds.
                let mut tabs: Vec<i64> = self.configured_tabs().chain(self.tabs.iter().map(|t| t.id)).collect();
                tabs.sort_unstable();
                tabs.dedup();
                out.extend(tabs.into_iter().map(|tab| self.config_message(tab)));
                out.push(ToBrowser::Resume { upto });
                Ok(out)
            }
            FromBrowser::Pilot { on, via, id } => Ok(self.on_pilot_from_browser(on, via, id)),
            FromBrowser::PilotRefused { via, reason } => {
                self.pilot_refused(via, &reason);
                Ok(Vec::new())
            }
            FromBrowser::PilotApplied { rev } => {
                self.pilot_seen = self.pilot_seen.max(rev);
                Ok(Vec::new())
            }
            FromBrowser::Tabs { tabs, tracked } => {
                self.set_tabs(tabs, tracked);
                super::kinds::tabs_changed(self);
                Ok(Vec::new())
            }
            FromBrowser::Dialog(m) if self.seen_before(m.n) => Ok(Vec::new()),
            FromBrowser::Dialog(m) => self.on_dialog(m),
            FromBrowser::Folded { n, .. } if self.seen_before(n) => Ok(Vec::new()),
            FromBrowser::Folded { from, count, .. } => {
                self.on_folded(&from, count);
                Ok(Vec::new())
            }
            FromBrowser::ConfigAck(ack) => Ok(self.on_config_ack(ack)),
            FromBrowser::Held(m) => self.on_held(m),
            FromBrowser::HeldClosed(m) => {
                self.on_held_closed(&m);
                Ok(Vec::new())
            }
            FromBrowser::AnswerResult(m) => {
                self.on_answer_result(m);
                Ok(Vec::new())
            }
            FromBrowser::DebuggerDetached { tab_id, reason } => Ok(self.on_detached(tab_id, &reason)),
            FromBrowser::FileAccess { allowed } => {
                self.file_access = Some(allowed);
                Ok(Vec::new())
            }
            FromBrowser::PromptRequest(mut m) => {
                let fields = std::mem::take(&mut m.fields);
                kinds::asked(m.kind, fields, |k| self.on_prompt(&m, k))
            }
            FromBrowser::PromptResult(m) => {
                self.on_prompt_result(&m);
                Ok(Vec::new())
            }
            // Goes to the call waiting for it (`host/mod.rs`), not to the state.
            FromBrowser::PilotResult(_) => Ok(Vec::new()),
            FromBrowser::Opened { tab_id, opener_tab_id } => Ok(self.on_opened(tab_id, opener_tab_id)),
            FromBrowser::Synced { id } => {
                self.on_synced(id);
                Ok(Vec::new())
            }
            FromBrowser::Kind(m) => kinds::on_message(self, m),
        }
    }
}
