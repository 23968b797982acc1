//! A verification run: the ledgers wanted ([`ledgers_wanted`]), the memory
//! policy of the verified state ([`StatePolicy`]), and the run itself
//! ([`ClioRun`]): ledgers verified in order from where the state left
//! off, stopping at the first that does not match or cannot be read, then
//! the final audit. The CLI parses arguments, shows progress and prints
//! what the run returns.

use shamap_store::{BackedOptions, HeapProbe, NodeStore};

use crate::reader::ClioReader;
use crate::report::summary;
use crate::verify::{AuditFinding, ClioVerifier, LedgerCheck};

/// The ledgers to verify, `(from, to)`: one `ledger`, or `from..=to`, each
/// end defaulting to Clio's `ledger_range` (`range`), which every ledger
/// wanted must be within. Errors are one line.
pub fn ledgers_wanted(
    ledger: Option<u32>,
    from: Option<u32>,
    to: Option<u32>,
    range: Option<(u32, u32)>,
) -> Result<(u32, u32), String> {
    let (from, to) = match (ledger, from, to, range) {
        (Some(n), ..) => (n, n),
        (None, Some(a), Some(b), _) => (a, b),
        (None, a, b, Some((r0, r1))) => (a.unwrap_or(r0), b.unwrap_or(r1)),
        (None, ..) => return Err(
            "table ledger_range is empty: no ledgers to verify (give --ledger or --from and --to)"
                .to_owned(),
        ),
    };
    if from > to {
        return Err(format!("--from {from} is after --to {to}"));
    }
    if let Some((r0, r1)) = range {
        if from < r0 || to > r1 {
            return Err(format!(
                "ledgers {from}..{to} are not all within ledger_range {r0}..{r1}"
            ));
        }
    }
    Ok((from, to))
}

/// Where the verified state lives and how much memory it may take.
#[derive(Clone, Copy, Debug)]
pub enum StatePolicy {
    /// In memory only (on a `MemStore`), with a budget that never spills.
    InMemory,
    /// In a store (`--state`): committed after each ledger that matched.
    Stored {
        /// The node cache's budget, MiB.
        cache_mb: u64,
        /// Keep every verified ledger's header and state (else the last
        /// one's only: each commit deletes the nodes it replaced).
        keep_history: bool,
        /// The process heap's probe, so that the budget covers the heap's
        /// growth and not only the map's own accounting.
        heap_probe: Option<HeapProbe>,
    },
}

impl StatePolicy {
    /// The backed map's options under this policy. A stored state's
    /// ledger changes are a few hundred KiB of dirty nodes; only the first
    /// ledger's build spills, and it peaks lower spilling a sixteenth of
    /// the budget at a time than a quarter (docs/design.md).
    pub fn backed_options(&self) -> BackedOptions {
        match *self {
            StatePolicy::InMemory => BackedOptions {
                budget_bytes: usize::MAX / 8,
                ..BackedOptions::default()
            },
            StatePolicy::Stored {
                cache_mb,
                keep_history,
                heap_probe,
            } => {
                let opts = BackedOptions {
                    dirty_share: 16,
                    heap_probe,
                    ..BackedOptions::with_budget_mb(cache_mb)
                };
                if keep_history {
                    opts
                } else {
                    opts.pruning()
                }
            }
        }
    }

    /// True when the state is committed to a store.
    pub fn persists(&self) -> bool {
        matches!(self, StatePolicy::Stored { .. })
    }
}

impl<'r, 's> ClioVerifier<'r, 's> {
    /// A verifier of `reader`'s ledgers whose state lives in `store` as
    /// `policy` says (a `MemStore` for [`StatePolicy::InMemory`]).
    pub fn with_state(
        reader: &'r ClioReader,
        store: &'s dyn NodeStore,
        policy: StatePolicy,
    ) -> Result<ClioVerifier<'r, 's>, crate::ClioError> {
        ClioVerifier::new(reader, store, policy.backed_options(), policy.persists())
    }
}

/// Why a run stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// A ledger could not be checked (a row missing or unreadable, the
    /// state's store failing): one line. Exit status 2.
    Unusable(String),
    /// A ledger or the audit did not match: one line naming the ledger
    /// and key. Exit status 1.
    Mismatch(String),
}

/// Ledgers verified in order, from where the state left off.
pub struct ClioRun<'v, 'r, 's> {
    verifier: &'v mut ClioVerifier<'r, 's>,
    next: u32,
    to: u32,
    resumed_after: Option<u32>,
    verified: u64,
    last_checked: Option<u32>,
    stop: Option<Stop>,
}

impl<'v, 'r, 's> ClioRun<'v, 'r, 's> {
    /// A run of `from..=to`, starting after the last ledger the state
    /// verified where there is one; an error when that would skip
    /// ledgers.
    pub fn new(
        verifier: &'v mut ClioVerifier<'r, 's>,
        from: u32,
        to: u32,
    ) -> Result<ClioRun<'v, 'r, 's>, String> {
        let resumed_after = verifier.last_verified();
        let next = match resumed_after {
            None => from,
            Some(s) if from > s + 1 => {
                return Err(format!(
                "the state holds ledgers verified up to {s}; starting at {from} would skip {}..{}",
                s + 1,
                from - 1
            ))
            }
            Some(s) => s + 1,
        };
        verifier.prefetch_until(to);
        Ok(ClioRun {
            verifier,
            next,
            to,
            resumed_after,
            verified: 0,
            last_checked: None,
            stop: None,
        })
    }

    /// The last ledger verified before this run, when it resumed.
    pub fn resumed_after(&self) -> Option<u32> {
        self.resumed_after
    }

    /// The first ledger this run verifies.
    pub fn first(&self) -> u32 {
        self.next
    }

    /// The last ledger of the run.
    pub fn last(&self) -> u32 {
        self.to
    }

    /// Ledgers verified so far.
    pub fn verified(&self) -> u64 {
        self.verified
    }

    /// The last ledger verified, or, before any, the last ledger the state
    /// had verified.
    pub fn last_verified(&self) -> Option<u32> {
        self.verifier.last_verified()
    }

    /// Why the run stopped early, if it did.
    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// Lengthens the run to `to` (`--follow`, when the range grows).
    pub fn extend_to(&mut self, to: u32) {
        if to > self.to {
            self.to = to;
            self.verifier.prefetch_until(to);
        }
    }

    /// Verifies the next ledger: its check, or `None` when the run is at
    /// its end or has stopped. A ledger that does not match is returned
    /// and stops the run ([`ClioRun::stop`]).
    pub fn next_check(&mut self) -> Option<LedgerCheck> {
        if self.stop.is_some() || self.next > self.to {
            return None;
        }
        match self.verifier.verify(self.next) {
            Err(e) => {
                self.stop = Some(Stop::Unusable(e.to_string()));
                None
            }
            Ok(check) => {
                self.verified += 1;
                self.last_checked = Some(check.seq);
                self.next += 1;
                if !check.is_match() {
                    self.stop = Some(Stop::Mismatch(summary(&check)));
                }
                Some(check)
            }
        }
    }

    /// The ledger the final audit reads the state at.
    pub fn audited_at(&self) -> u32 {
        self.last_checked.unwrap_or(self.to)
    }

    /// Live entries of the verified state.
    pub fn map_entries(&self) -> u64 {
        self.verifier.map_entries()
    }

    /// The final audit, once every ledger matched and at least one was
    /// verified: its findings (the first one stops the run as a
    /// mismatch), or `None` when it does not run.
    pub fn audit(&mut self) -> Option<Vec<AuditFinding>> {
        if self.stop.is_some() || self.verified == 0 {
            return None;
        }
        match self.verifier.audit() {
            Err(e) => {
                self.stop = Some(Stop::Unusable(e.to_string()));
                None
            }
            Ok(found) => {
                if let Some(f) = found.first() {
                    let more = match found.len() {
                        1 => String::new(),
                        n => format!(" (and {} more)", n - 1),
                    };
                    self.stop = Some(Stop::Mismatch(format!(
                        "ledger {}: key {}: {}{more}",
                        f.seq, f.key, f.what
                    )));
                }
                Some(found)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledgers_wanted_come_from_the_arguments_and_the_range() {
        assert_eq!(ledgers_wanted(Some(5), None, None, None), Ok((5, 5)));
        assert_eq!(ledgers_wanted(None, None, None, Some((3, 9))), Ok((3, 9)));
        assert_eq!(
            ledgers_wanted(None, Some(4), None, Some((3, 9))),
            Ok((4, 9))
        );
        assert!(ledgers_wanted(None, None, None, None)
            .expect_err("refused")
            .contains("ledger_range is empty"));
        assert!(ledgers_wanted(None, Some(9), Some(3), None)
            .expect_err("refused")
            .contains("--from 9 is after --to 3"));
        assert!(ledgers_wanted(None, Some(1), Some(4), Some((3, 9)))
            .expect_err("refused")
            .contains("not all within ledger_range 3..9"));
    }
}
