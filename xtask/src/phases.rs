//! `cargo xtask test`'s phases, each timed against its budget: the closing table says
//! where the time went and which phase went over, so a suite that grows slower than its
//! tests is seen in the run that made it so, not months later.
//!
//! Budgets are a fresh clone's times on the 2-core CI machine kind with headroom
//! (BENCHMARKS.md, "Time budget per phase"). Going over fails nothing by itself: the
//! run's own outcome is its tests'; the table names the phase to look at.

use anyhow::Result;
use std::time::{Duration, Instant};

/// One phase of the test command and what it may take.
pub struct Phase {
    pub name: &'static str,
    pub budget: Duration,
}

const fn phase(name: &'static str, budget_s: u64) -> Phase {
    Phase { name, budget: Duration::from_secs(budget_s) }
}

pub const EXTENSION: Phase = phase("build the extension", 60);
pub const CROSS: Phase = phase("typecheck for the other systems", 180);
pub const WINE: Phase = phase("Windows build under Wine", 270);
pub const TOOLS: Phase = phase("test tools", 180);
pub const BUILD: Phase = phase("build the tests", 240);
pub const UNIT: Phase = phase("unit tests", 90);
pub const E2E: Phase = phase("end-to-end tests", 600);
pub const FRAMEWORK_TOOLS: Phase = phase("framework tools (Stagehand, browser-use venv)", 300);
pub const FRAMEWORKS: Phase = phase("frameworks (Stagehand, browser-use)", 120);

/// The phases run so far: name, time, budget, whether it passed.
#[derive(Default)]
pub struct Clock {
    done: Vec<(&'static str, Duration, Duration, bool)>,
}

impl Clock {
    /// Runs `f` as `phase`, printing its time as it ends.
    pub fn run<T>(&mut self, phase: &Phase, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let start = Instant::now();
        let out = f();
        let took = start.elapsed();
        eprintln!("xtask: {}: {:.1} s{}", phase.name, took.as_secs_f64(), if out.is_ok() { "" } else { " (failed)" });
        self.done.push((phase.name, took, phase.budget, out.is_ok()));
        out
    }

    /// The closing table, and a line per phase over its budget.
    pub fn report(&self) -> String {
        let mut out = String::from("xtask: phase                            time    budget\n");
        let mut total = Duration::ZERO;
        for (name, took, budget, ok) in &self.done {
            total += *took;
            let mark = match (ok, took > budget) {
                (false, _) => "  failed",
                (true, true) => "  OVER BUDGET",
                (true, false) => "",
            };
            out += &format!("xtask: {name:<32} {:>5.0} s {:>5} s{mark}\n", took.as_secs_f64(), budget.as_secs());
        }
        out += &format!("xtask: {:<32} {:>5.0} s\n", "all", total.as_secs_f64());
        for (name, took, budget, _) in self.done.iter().filter(|(_, took, budget, _)| took > budget) {
            out += &format!(
                "xtask: `{name}` went over its budget: {:.0} s of {} s (BENCHMARKS.md, \"Time budget per phase\")\n",
                took.as_secs_f64(),
                budget.as_secs()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_the_phase_over_its_budget_and_only_it() {
        let mut clock = Clock::default();
        clock.run(&phase("quick", 100), || Ok(())).unwrap();
        clock
            .run(&phase("slow", 0), || {
                std::thread::sleep(Duration::from_millis(5));
                Ok(())
            })
            .unwrap();
        let _ = clock.run(&phase("broken", 100), || -> Result<()> { anyhow::bail!("no") });
        let report = clock.report();
        assert!(report.contains("`slow` went over its budget"), "{report}");
        assert!(!report.contains("`quick` went over"), "{report}");
        assert!(report.lines().any(|l| l.contains("broken") && l.ends_with("failed")), "{report}");
        assert!(report.lines().any(|l| l.contains("slow") && l.ends_with("OVER BUDGET")), "{report}");
    }
}
