//! The torture harness: a store driven by a randomized workload in a child
//! process (imports, backed-map commits, gc, clean closes and reopenings),
//! against an oracle of acknowledged commits kept by the parent, with
//! faults injected at random. In the spirit of nomt's `torture` (a
//! supervisor, an agent process it crashes, a model of what was committed)
//! and SQLite's crash tests (damage the files, reopen, compare).
//!
//! **The worker** (`torture_worker`, this test binary re-run as a child, as
//! `crash.rs` does) opens the store and works until told to stop or killed.
//! It announces each change before writing anything (`begin ...`: the base
//! root it builds on and the seed of its changes), and prints one line
//! (`ack ...`, flushed) once the change is durable: the root the store
//! recorded. The parent counts a commit as acknowledged only when it has
//! read that line. Every opening prints the retained roots it found
//! (`opened ...`). The contents of a version are a pure function of its
//! base's contents and the seed ([`changes`]), so the parent recomputes
//! every version in memory (a `ShaMap` built from a `BTreeMap`) and checks
//! the root the worker reports against its own.
//!
//! **The checker** (`torture_checker`, also a child, under a timeout) opens
//! a store, lists its retained roots, runs `verify_all` on each, reads each
//! whole through a `StoredMap` and rebuilds it in memory: the rebuilt
//! root must be the oracle's (so the contents equal the oracle's).
//!
//! **Judgement**, after every fault: *kept* (the store opens, lists exactly
//! the acknowledged roots — or, after a SIGKILL or a failed write, those
//! plus the one change in flight — and every one verifies with the
//! oracle's contents), *refused* (opening, or the verification of a root,
//! fails with an error of one line), or *FAILED*: a silent rollback (an
//! acknowledged root missing, an older list of roots), a wrong value, a
//! panic, an error of more than one line, a hang (no answer within
//! [`CHILD_PATIENCE`]), or, for a SIGKILL or a clean close, any refusal at
//! all (a crash is not damage).
//!
//! Fault classes (see [`Class`]): SIGKILL of the live worker at a random
//! moment; a clean close; and, on a copy of the store directory taken at a
//! quiet moment (the run goes on with the original): truncation, a bit
//! flip, a batch replayed, two batches swapped, a FIFO in place of a file,
//! the lock file deleted with two writers, and a full disk (a tmpfs, root
//! only); a power loss under a worker on the crash file system
//! ([`crash_fs`]: FUSE, root only), which keeps what was synced and any
//! subset of the rest; a failing acknowledgment record; and, after a file
//! fault or a power loss that was kept, writes going on on the faulted
//! copy (a worker, SIGKILL, the check again). On the node log the copy's index checkpoint (`nodes.idx`), which
//! names its log by device and inode, is re-pointed at the copied log, so
//! that damage below a checkpoint is tried as it happens in place.
//!
//! Bounded by time: `SHAMAP_TORTURE_SECS` per backend (default
//! [`DEFAULT_SECS`]); `SHAMAP_TORTURE_SEED` replays a run's choices (the
//! workload, the faults and where they land; the instant of a kill is wall
//! time and varies); `SHAMAP_TORTURE_CLASSES` (comma-separated class names)
//! restricts the file faults; `SHAMAP_TORTURE_KEEP` names a directory where
//! the store copy of every FAILED case is kept (for a FAILED `after` case,
//! also the copy the writer started from, `….before`);
//! `SHAMAP_TORTURE_TRACE` names a file that gets every protocol line of
//! every child (workers and checkers) and the harness's cases, in order.
//! `scripts/torture.sh` runs it long and prints the tables.

mod backend;
mod child;
mod crash_fs;
mod faults;
mod oracle;
mod power;
mod protocol;
mod supervisor;
mod tally;
mod writers;

use std::time::Duration;

/// Seconds of torture per backend when `SHAMAP_TORTURE_SECS` is not set:
/// the bounded run of `cargo test` (two backends: about 70 s).
const DEFAULT_SECS: u64 = 35;
/// How long a child may take to answer (open, verify, close) before it is
/// a hang. Generous: the stores here open and verify in well under a
/// second, also on two busy cores.
const CHILD_PATIENCE: Duration = Duration::from_secs(10);
/// Entries of the first version of each line of versions.
const FIRST_ENTRIES: usize = 1200;
/// A backed map's budget in the worker: small, so dirty nodes spill
/// (unacknowledged writes between commits).
const BACKED_BUDGET: usize = 128 << 10;
/// What the worker's protocol lines start with (the test harness prints
/// its own lines on the same stdout).
const TAG: &str = "T> ";

const ENV_DIR: &str = "SHAMAP_TORTURE_DIR";
const ENV_BACKEND: &str = "SHAMAP_TORTURE_BACKEND";
const ENV_WORKER_SEED: &str = "SHAMAP_TORTURE_WORKER_SEED";
const ENV_READ_ONLY: &str = "SHAMAP_TORTURE_READ_ONLY";
/// Set for a worker that must hold the store (and so its writer's lock)
/// from its opening until it is killed: it never closes and reopens, and
/// after a failed operation it stops working but keeps the store open.
const ENV_HOLD: &str = "SHAMAP_TORTURE_HOLD";
/// Set for a worker whose store's acknowledgment record fails:
/// `stage,errno,after` (stage `open` or `record`; see
/// `shamap_store::fail_acknowledgments`).
const ENV_ACK_FAULT: &str = "SHAMAP_TORTURE_ACK_FAULT";

#[test]
#[ignore = "child process of the torture tests (torture::torture_*)"]
fn torture_worker() {
    child::worker();
}

/// The checker: opens the store (read-only when asked), lists the retained
/// roots, verifies each and reads it whole, rebuilding it in memory.
#[test]
#[ignore = "child process of the torture tests (torture::torture_*)"]
fn torture_checker() {
    child::checker();
}

#[test]
fn torture_log() {
    supervisor::torture(backend::Backend::Log, 2701);
}

#[test]
fn torture_fjall() {
    supervisor::torture(backend::Backend::Fjall, 2702);
}

#[cfg(feature = "rocksdb")]
#[test]
fn torture_rocks() {
    supervisor::torture(backend::Backend::Rocks, 2703);
}
