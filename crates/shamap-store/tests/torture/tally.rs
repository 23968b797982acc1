//! What each case came to, counted per fault class, and the table a run
//! prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::backend::Backend;
use super::faults::Class;

/// What one case came to.
#[derive(Clone, Debug)]
pub(super) enum Outcome {
    Kept,
    /// Opening refused, in one line.
    Refused(String),
    /// The store opened, but the verification of an acknowledged root
    /// failed in one line: the damage is found where it lies, late.
    RefusedAtVerify(String),
    Failed(String),
}

#[derive(Default)]
pub(super) struct Tally {
    /// kept, refused at opening, refused at a root's verification, FAILED.
    pub(super) counts: BTreeMap<Class, [u64; 4]>,
    /// One line per FAILED case: the seed, the fault and why.
    pub(super) failures: Vec<String>,
    /// A few refusal lines per class, to show what the store says.
    pub(super) refusals: BTreeMap<Class, Vec<String>>,
    pub(super) skipped: BTreeMap<Class, String>,
    pub(super) notes: Vec<String>,
    /// FAILED cases per class and kind of failure (the reason's words
    /// before its first colon).
    pub(super) kinds: BTreeMap<(Class, String), u64>,
}

/// The kind of a failure: its reason up to the first colon (every
/// reason starts with words of its kind).
pub(super) fn failure_kind(why: &str) -> String {
    why.split(':').next().unwrap_or(why).to_owned()
}

impl Tally {
    pub(super) fn add(&mut self, class: Class, outcome: &Outcome, context: &str) {
        let c = self.counts.entry(class).or_default();
        match outcome {
            Outcome::Kept => c[0] += 1,
            Outcome::Refused(line) | Outcome::RefusedAtVerify(line) => {
                c[if matches!(outcome, Outcome::Refused(_)) {
                    1
                } else {
                    2
                }] += 1;
                let r = self.refusals.entry(class).or_default();
                if r.len() < 3 {
                    r.push(line.clone());
                }
            }
            Outcome::Failed(why) => {
                c[3] += 1;
                *self.kinds.entry((class, failure_kind(why))).or_default() += 1;
                let line = format!("FAILED [{}] {context}: {why}", class.name());
                eprintln!("{line}");
                self.failures.push(line);
            }
        }
    }

    pub(super) fn failed(&self) -> u64 {
        self.counts.values().map(|c| c[3]).sum()
    }

    pub(super) fn table(&self, backend: Backend, seed: u64, secs: f64) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "torture table: backend {} seed {seed} ({secs:.0} s)",
            backend.name()
        );
        let _ = writeln!(
            t,
            "| backend | fault class | cases | kept | refused (opening) | refused (verify) | FAILED |"
        );
        let _ = writeln!(t, "|---|---|---:|---:|---:|---:|---:|");
        for class in backend.classes() {
            match (self.counts.get(class), self.skipped.get(class)) {
                (Some(c), _) => {
                    let _ = writeln!(
                        t,
                        "| {} | {} | {} | {} | {} | {} | {} |",
                        backend.name(),
                        class.name(),
                        c.iter().sum::<u64>(),
                        c[0],
                        c[1],
                        c[2],
                        c[3]
                    );
                }
                (None, Some(why)) => {
                    let _ = writeln!(
                        t,
                        "| {} | {} | skipped: {why} | | | | |",
                        backend.name(),
                        class.name()
                    );
                }
                (None, None) => {
                    let _ = writeln!(t, "| {} | {} | 0 | | | | |", backend.name(), class.name());
                }
            }
        }
        for class in backend.classes() {
            let _ = writeln!(t, "  {:9} {}", class.name(), class.what());
        }
        for (class, lines) in &self.refusals {
            for l in lines {
                let _ = writeln!(t, "  refused [{}]: {l}", class.name());
            }
        }
        for ((class, kind), n) in &self.kinds {
            let _ = writeln!(t, "  FAILED [{}] {n} x {kind}", class.name());
        }
        for n in &self.notes {
            let _ = writeln!(t, "  note: {n}");
        }
        for f in self.failures.iter().take(40) {
            let _ = writeln!(t, "  {f}");
        }
        if self.failures.len() > 40 {
            let _ = writeln!(
                t,
                "  ... and {} more FAILED lines",
                self.failures.len() - 40
            );
        }
        t
    }
}
