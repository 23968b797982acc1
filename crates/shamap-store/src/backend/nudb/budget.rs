//! The NuDB audit's memory budget: how the bytes an operator allows are
//! shared between the audit's caches. Every cache is bounded by its share;
//! what is not cached is read again from the files (slower, never wrong).
//!
//! | share | what | bytes an item |
//! |---|---|---|
//! | 27/32 | the records the scan checked, by fingerprint ([`super::record_index`]) | 13 |
//! | 1/16 | inner nodes the scan checked ([`super::inner_cache`]) | their encoding + 64 |
//! | 1/64 | buckets the key file check read, shared by the walkers | 26 an entry |
//! | 1/64 | each walker's bucket cache, split between the walkers | 26 an entry |
//! | 1/64 | each of the two sets of visited inner nodes | 20 |
//!
//! The record index comes first: with it, the walk finds a node in memory
//! (a hash and a directory load) where without it a node costs a bucket
//! read and often a record read (at 10M entries, 13M random reads and most
//! of the audit's time: docs/measurements.md, "NuDB audit"); the caches
//! serve what it leaves out. Not counted: the scan's blocks in flight (2
//! MiB each, two per worker and three more), the ledger list (`ledger.db`'s
//! rows, about 150 bytes each) and the report (a few hundred bytes a
//! ledger).

/// The default budget: room in the record index for a 10M-entry store's
/// 13.3M records (docs/measurements.md, "NuDB audit", has the peaks).
pub const DEFAULT_BUDGET: u64 = 200 << 20;
/// The smallest budget accepted.
pub const MIN_BUDGET: u64 = 16 << 20;
/// Bytes a bucket entry is counted as in the caches.
const ENTRY_BYTES: u64 = 26;
/// Bytes a visited node is counted as.
const VISITED_BYTES: u64 = 20;

/// The caches' shares of a budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes of the record index.
    pub record_index: usize,
    /// Bytes of inner nodes kept from the scan.
    pub inner_cache: usize,
    /// Bucket entries kept from the key file check.
    pub kept_bucket_entries: usize,
    /// Bucket entries each walker caches.
    pub walker_entries: usize,
    /// Inner nodes each visited set keeps.
    pub visited: usize,
}

impl MemoryBudget {
    /// The shares of `bytes` (at least [`MIN_BUDGET`]) for `walkers`
    /// walkers.
    pub fn of(bytes: u64, walkers: usize) -> MemoryBudget {
        let b = bytes.max(MIN_BUDGET);
        let walkers = walkers.max(1) as u64;
        let size = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
        MemoryBudget {
            record_index: size(b / 32 * 27),
            inner_cache: size(b / 16),
            kept_bucket_entries: size(b / 64 / ENTRY_BYTES),
            walker_entries: size(b / 64 / walkers / ENTRY_BYTES),
            visited: size(b / 64 / VISITED_BYTES),
        }
    }
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::of(DEFAULT_BUDGET, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_add_up_to_the_budget() {
        for (bytes, walkers) in [(DEFAULT_BUDGET, 2), (256 << 20, 2), (1 << 30, 8), (1, 1)] {
            let m = MemoryBudget::of(bytes, walkers);
            let used = m.inner_cache as u64
                + m.record_index as u64
                + m.kept_bucket_entries as u64 * ENTRY_BYTES
                + m.walker_entries as u64 * ENTRY_BYTES * walkers as u64
                + 2 * m.visited as u64 * VISITED_BYTES;
            assert!(used <= bytes.max(MIN_BUDGET), "{bytes} {walkers}: {used}");
            assert!(
                used >= bytes.max(MIN_BUDGET) * 9 / 10,
                "{bytes} {walkers}: {used}"
            );
        }
    }
}
