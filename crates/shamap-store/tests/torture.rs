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
//! only); and, after a file fault that was kept, writes going on on the
//! faulted copy (a worker, SIGKILL, the check again). On the node log the copy's index checkpoint (`nodes.idx`), which
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

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::log_store::{checkpoint, format, LOG_FILE};
use shamap_store::{
    gc, import_ledger, meta, verify_all, BackedMap, BackedOptions, FjallStore, LogStore, NodeStore,
    StoreError, StoredMap,
};

use crate::support::copy_store_dir;
use crate::tmpfs::Tmpfs;

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

// ---- the backends ----

/// A store the harness tortures: how to open it and which of its files
/// the file faults aim at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// The node log (`LogStore`), the default store.
    Log,
    /// fjall (`FjallStore`).
    Fjall,
    /// RocksDB (`RocksStore`), with the `rocksdb` feature.
    #[cfg(feature = "rocksdb")]
    Rocks,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Log => "log",
            Backend::Fjall => "fjall",
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => "rocks",
        }
    }

    fn from_name(name: &str) -> Option<Backend> {
        match name {
            "log" => Some(Backend::Log),
            "fjall" => Some(Backend::Fjall),
            #[cfg(feature = "rocksdb")]
            "rocks" => Some(Backend::Rocks),
            _ => None,
        }
    }

    fn open(self, dir: &Path) -> Result<Box<dyn NodeStore>, StoreError> {
        Ok(match self {
            Backend::Log => Box::new(LogStore::open(dir)?),
            Backend::Fjall => Box::new(FjallStore::open(dir)?),
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => Box::new(shamap_store::RocksStore::open(dir)?),
        })
    }

    /// Opens for a look that changes nothing, where the backend has such
    /// an opening that is cheap (the node log: a writer's opening removes
    /// the index checkpoint, which the copies taken next should keep).
    fn open_read_only(self, dir: &Path) -> Result<Box<dyn NodeStore>, StoreError> {
        match self {
            Backend::Log => Ok(Box::new(LogStore::open_read_only(dir)?)),
            other => other.open(dir),
        }
    }

    /// True when `dir` holds a store of this backend.
    fn is_store(self, dir: &Path) -> bool {
        match self {
            Backend::Log => LogStore::is_store(dir),
            Backend::Fjall => FjallStore::is_store(dir),
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => dir.join("CURRENT").is_file(),
        }
    }

    /// The writer's lock file.
    fn lock_file(self) -> &'static str {
        match self {
            Backend::Log => "LOCK",
            Backend::Fjall => "lock",
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => "LOCK",
        }
    }

    /// The fault classes that apply to this backend's files.
    fn classes(self) -> &'static [Class] {
        match self {
            Backend::Log => &Class::ALL,
            // Batches are the node log's own format; elsewhere the files
            // are the engine's.
            _ => &[
                Class::Sigkill,
                Class::Close,
                Class::Truncate,
                Class::Flip,
                Class::Fifo,
                Class::Lock,
                Class::Enospc,
                Class::After,
            ],
        }
    }
}

// ---- the fault classes and the tally ----

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Class {
    Sigkill,
    Close,
    Truncate,
    Flip,
    Replay,
    Swap,
    Fifo,
    Lock,
    Enospc,
    After,
}

impl Class {
    const ALL: [Class; 10] = [
        Class::Sigkill,
        Class::Close,
        Class::Truncate,
        Class::Flip,
        Class::Replay,
        Class::Swap,
        Class::Fifo,
        Class::Lock,
        Class::Enospc,
        Class::After,
    ];
    /// The faults applied to a copy of the files.
    const FILE: [Class; 5] = [
        Class::Truncate,
        Class::Flip,
        Class::Replay,
        Class::Swap,
        Class::Fifo,
    ];

    fn name(self) -> &'static str {
        match self {
            Class::Sigkill => "sigkill",
            Class::Close => "close",
            Class::Truncate => "truncate",
            Class::Flip => "flip",
            Class::Replay => "replay",
            Class::Swap => "swap",
            Class::Fifo => "fifo",
            Class::Lock => "lock",
            Class::Enospc => "enospc",
            Class::After => "after",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Class::Sigkill => "SIGKILL of the live worker at a random moment",
            Class::Close => "the live worker stopped and closed cleanly",
            Class::Truncate => "a file cut at a random length (node log: often at a batch boundary or in its last 4 KiB)",
            Class::Flip => "one bit flipped (node log: anywhere, the last batch, a batch header, nodes.idx)",
            Class::Replay => "an earlier whole batch appended again",
            Class::Swap => "two whole batches swapped",
            Class::Fifo => "a FIFO in place of one of the store's files",
            Class::Lock => "the lock file deleted while a writer runs, then a second writer",
            Class::Enospc => "a full disk (a tmpfs barely larger than the store)",
            Class::After => "writes go on after a file fault that was kept: a worker on the faulted copy, SIGKILL, the check again",
        }
    }
}

/// What one case came to.
#[derive(Clone, Debug)]
enum Outcome {
    Kept,
    /// Opening refused, in one line.
    Refused(String),
    /// The store opened, but the verification of an acknowledged root
    /// failed in one line: the damage is found where it lies, late.
    RefusedAtVerify(String),
    Failed(String),
}

#[derive(Default)]
struct Tally {
    /// kept, refused at opening, refused at a root's verification, FAILED.
    counts: BTreeMap<Class, [u64; 4]>,
    /// One line per FAILED case: the seed, the fault and why.
    failures: Vec<String>,
    /// A few refusal lines per class, to show what the store says.
    refusals: BTreeMap<Class, Vec<String>>,
    skipped: BTreeMap<Class, String>,
    notes: Vec<String>,
    /// FAILED cases per class and kind of failure (the reason's words
    /// before its first colon).
    kinds: BTreeMap<(Class, String), u64>,
}

/// The kind of a failure: its reason up to the first colon (every
/// reason starts with words of its kind).
fn failure_kind(why: &str) -> String {
    why.split(':').next().unwrap_or(why).to_owned()
}

impl Tally {
    fn add(&mut self, class: Class, outcome: &Outcome, context: &str) {
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

    fn failed(&self) -> u64 {
        self.counts.values().map(|c| c[3]).sum()
    }

    fn table(&self, backend: Backend, seed: u64, secs: f64) -> String {
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

// ---- the oracle ----

type Contents = BTreeMap<Key, Vec<u8>>;
type Roots = Vec<(String, Hash256)>;

/// The changes of version `seed` over `base`, in order (`None`: a
/// remove). A pure function: the worker applies them to the store, the
/// parent to its model.
fn changes(base: &Contents, seed: u64) -> Vec<(Key, Option<Vec<u8>>)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut keys: Vec<Key> = base.keys().copied().collect();
    let value = |rng: &mut SmallRng| -> Vec<u8> {
        let len = rng.gen_range(8..80);
        (0..len).map(|_| rng.gen()).collect()
    };
    let mut out = Vec::new();
    if keys.is_empty() {
        for _ in 0..FIRST_ENTRIES {
            out.push((Key(rng.gen()), Some(value(&mut rng))));
        }
        return out;
    }
    for _ in 0..rng.gen_range(20..200) {
        match rng.gen_range(0..10) {
            0..=6 => {
                let k = keys[rng.gen_range(0..keys.len())];
                out.push((k, Some(value(&mut rng))));
            }
            7 | 8 => {
                let k = Key(rng.gen());
                keys.push(k);
                out.push((k, Some(value(&mut rng))));
            }
            _ if keys.len() > 100 => {
                let k = keys.swap_remove(rng.gen_range(0..keys.len()));
                out.push((k, None));
            }
            _ => {}
        }
    }
    out
}

fn apply(base: &Contents, seed: u64) -> Contents {
    let mut next = base.clone();
    for (k, v) in changes(base, seed) {
        match v {
            Some(v) => next.insert(k, v),
            None => next.remove(&k),
        };
    }
    next
}

/// The root of a state map holding `contents`, computed in memory.
fn root_of(contents: &Contents) -> Hash256 {
    let mut map = ShaMap::new(MapKind::AccountState);
    for (k, v) in contents {
        map.insert(*k, v).expect("fresh key");
    }
    map.snapshot().root_hash()
}

/// What the parent knows: the retained roots the store must show (as
/// acknowledged), the contents of every root it may show, and the change
/// in flight (begun, not acknowledged), which may or may not be there.
#[derive(Clone, Default)]
struct Model {
    roots: Roots,
    contents: HashMap<Hash256, Arc<Contents>>,
    /// The retained list if the change in flight took effect.
    pending: Option<Roots>,
    /// The acknowledged list from before a change in flight was adopted
    /// because a read-only check after a crash showed it: that change was
    /// never acknowledged to the worker, and no writer has opened the
    /// store since (a writer's opening records what it recovered as
    /// acknowledged). Until one does, a copy that shows this list lost
    /// nothing acknowledged.
    provisional: Option<Roots>,
    /// Acknowledgements read.
    acks: u64,
}

fn roots_text(roots: &Roots) -> String {
    let names: Vec<String> = roots
        .iter()
        .map(|(n, h)| format!("{n}={}", &h.to_hex()[..8]))
        .collect();
    format!("[{}]", names.join(" "))
}

impl Model {
    /// The contents of `base` (zero: empty), which must be a root the
    /// oracle holds.
    fn base(&self, base: Hash256) -> Result<Arc<Contents>, String> {
        if base.is_zero() {
            return Ok(Arc::new(Contents::new()));
        }
        self.contents.get(&base).cloned().ok_or_else(|| {
            format!("the worker built on an unknown root: {base}, which the oracle never saw")
        })
    }

    /// Checks a retained list the store showed: the acknowledged one, or
    /// the one with the change in flight applied (then adopted). Any
    /// other is a silent rollback or a wrong list.
    fn resolve(&mut self, seen: &Roots) -> Result<(), String> {
        if *seen == self.roots {
            self.pending = None;
            return Ok(());
        }
        if self.provisional.as_ref() == Some(seen) {
            // Only the adopted, never acknowledged change is missing: this
            // store goes on from the list before it (a writer opening it
            // acknowledges that list), so the oracle does too.
            self.roots = self.provisional.take().unwrap_or_default();
            self.pending = None;
            return Ok(());
        }
        if self.pending.as_ref() == Some(seen) {
            self.roots = self.pending.take().unwrap_or_default();
            return Ok(());
        }
        let missing: Vec<String> = self
            .roots
            .iter()
            .filter(|r| !seen.contains(r))
            .map(|(n, h)| format!("{n}={}", &h.to_hex()[..8]))
            .collect();
        let extra = seen.iter().any(|r| !self.roots.contains(r));
        let what = if !missing.is_empty() {
            "silent rollback: acknowledged roots missing"
        } else if extra {
            "an older retained list: roots no longer (or never) acknowledged are listed"
        } else {
            "the retained roots in another order"
        };
        Err(format!(
            "{what}: the store lists {} but {} were acknowledged{}{}",
            roots_text(seen),
            roots_text(&self.roots),
            if missing.is_empty() {
                String::new()
            } else {
                format!(" (missing: {})", missing.join(" "))
            },
            match &self.pending {
                Some(p) => format!(" (or {} with the change in flight)", roots_text(p)),
                None => String::new(),
            }
        ))
    }

    /// Takes one protocol line of a worker. `Err`: a violation.
    fn take(&mut self, line: &str) -> Result<(), String> {
        let words: Vec<&str> = line.split(' ').collect();
        let hash = |s: &str| Hash256::from_hex(s).map_err(|e| format!("bad hash {s:?}: {e}"));
        match words.as_slice() {
            ["opened", list @ ..] => {
                let seen = parse_roots(list)?;
                self.resolve(&seen)?;
                // A writer's opening records what it recovered as
                // acknowledged: the adopted change is the store's now.
                self.provisional = None;
                Ok(())
            }
            ["begin", "import", name, base, seed] | ["begin", "commit", name, base, seed] => {
                let base = self.base(hash(base)?)?;
                let seed: u64 = seed.parse().map_err(|_| format!("bad seed in {line:?}"))?;
                let next = apply(&base, seed);
                let root = root_of(&next);
                self.contents.insert(root, Arc::new(next));
                let mut roots = self.roots.clone();
                if words[1] == "import" {
                    roots.retain(|r| r.1 != root);
                    roots.push((name.to_string(), root));
                } else {
                    match roots.iter_mut().find(|r| r.0 == *name) {
                        Some(r) => r.1 = root,
                        None => roots.push((name.to_string(), root)),
                    }
                }
                self.pending = Some(roots);
                Ok(())
            }
            ["ack", "import" | "commit", name, root] => {
                let root = hash(root)?;
                let pending = self
                    .pending
                    .take()
                    .ok_or_else(|| format!("an ack without a change in flight: {line}"))?;
                let expected = pending.iter().find(|r| r.0 == *name).map(|r| r.1);
                if expected != Some(root) {
                    return Err(format!(
                        "wrong value: the worker's {name} recorded root {root}, the oracle computes {}",
                        expected.map_or("nothing".to_owned(), |h| h.to_string())
                    ));
                }
                self.roots = pending;
                self.acks += 1;
                Ok(())
            }
            ["begin", "gc", keep @ ..] => {
                let keep = keep
                    .iter()
                    .map(|h| hash(h))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut roots = self.roots.clone();
                roots.retain(|r| keep.contains(&r.1));
                self.pending = Some(roots);
                Ok(())
            }
            ["ack", "gc"] => {
                self.roots = self
                    .pending
                    .take()
                    .ok_or_else(|| "an ack of a gc never begun".to_owned())?;
                self.acks += 1;
                // Only what the store may still show is worth keeping.
                let roots = self.roots.clone();
                self.contents.retain(|h, _| roots.iter().any(|r| r.1 == *h));
                Ok(())
            }
            // A failed change may or may not have taken effect: it stays
            // in flight until an opening shows which.
            ["error", ..] | ["refused", ..] | ["closed"] => Ok(()),
            _ => Err(format!("an unknown line from the worker: {line:?}")),
        }
    }
}

fn parse_roots(words: &[&str]) -> Result<Roots, String> {
    words
        .iter()
        .filter(|w| !w.is_empty())
        .map(|w| {
            let (name, hash) = w
                .rsplit_once('=')
                .ok_or_else(|| format!("bad root {w:?}"))?;
            let hash = Hash256::from_hex(hash).map_err(|e| format!("bad root {w:?}: {e}"))?;
            Ok((name.to_owned(), hash))
        })
        .collect()
}

fn roots_line(roots: &[meta::RetainedRoot]) -> String {
    roots
        .iter()
        .map(|r| format!("{}={}", r.name, r.hash.to_hex()))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- the children ----

/// One protocol line to the parent, flushed: once the parent has read it,
/// it is acknowledged.
/// Appends `line` to the file `SHAMAP_TORTURE_TRACE` names, if any: every
/// protocol line of every child, for reading a FAILED case afterwards.
fn trace(who: &str, line: &str) {
    if let Ok(path) = std::env::var("SHAMAP_TORTURE_TRACE") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{who}: {line}");
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{TAG}{line}");
    let _ = out.flush();
}

/// An error as one protocol word-safe line, and whether it was more than
/// one line.
fn one_line(e: &dyn std::fmt::Display) -> String {
    let s = e.to_string();
    if s.contains('\n') {
        format!("MULTILINE {}", s.replace('\n', " | "))
    } else {
        s
    }
}

fn child_env() -> Option<(PathBuf, Backend)> {
    let dir = std::env::var(ENV_DIR).ok();
    let backend = std::env::var(ENV_BACKEND)
        .ok()
        .and_then(|b| Backend::from_name(&b));
    match (dir, backend) {
        (Some(d), Some(b)) => Some((PathBuf::from(d), b)),
        _ => {
            eprintln!("not a test on its own: a child process of the torture tests, which set {ENV_DIR} and {ENV_BACKEND}");
            None
        }
    }
}

/// The contents of the state map at `root`, read through a `StoredMap`.
fn read_map(store: &dyn NodeStore, root: Hash256) -> Result<Contents, StoreError> {
    if root.is_zero() {
        return Ok(Contents::new());
    }
    StoredMap::open(store, root, MapKind::AccountState)?
        .iter()
        .collect()
}

#[test]
#[ignore = "child process of the torture tests (torture::torture_*)"]
fn torture_worker() {
    let Some((dir, backend)) = child_env() else {
        return;
    };
    let seed: u64 = std::env::var(ENV_WORKER_SEED)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let hold = std::env::var(ENV_HOLD).is_ok();
    let mut rng = SmallRng::seed_from_u64(seed);
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            stop.store(true, Ordering::SeqCst);
        });
    }
    let open = |stop: &AtomicBool| -> Option<Box<dyn NodeStore>> {
        loop {
            match backend
                .open(&dir)
                .and_then(|s| meta::retained(&*s).map(|r| (s, r)))
            {
                Ok((s, roots)) => {
                    say(&format!("opened {}", roots_line(&roots)));
                    return Some(s);
                }
                Err(e) => {
                    say(&format!("refused {}", one_line(&e)));
                    std::thread::sleep(Duration::from_millis(100));
                    if stop.load(Ordering::SeqCst) {
                        return None;
                    }
                }
            }
        }
    };
    let Some(mut store) = open(&stop) else {
        say("closed");
        return;
    };
    loop {
        if stop.load(Ordering::SeqCst) {
            drop(store);
            say("closed");
            return;
        }
        let op = rng.gen_range(0..100);
        let done = match op {
            0..=39 => worker_import(&*store, &mut rng),
            40..=77 => worker_commit(&*store, &mut rng),
            78..=91 => worker_gc(&*store, &mut rng),
            _ => Err(None),
        };
        match done {
            Ok(()) => continue,
            Err(Some((what, e))) => {
                say(&format!("error {what} {}", one_line(&e)));
                if hold {
                    // Still the writer, but no more changes: the failed
                    // one stays in flight until a check shows which.
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    continue;
                }
            }
            Err(None) if hold => continue,
            // A clean close and reopening.
            Err(None) => {}
        }
        drop(store);
        store = match open(&stop) {
            Some(s) => s,
            None => {
                say("closed");
                return;
            }
        };
    }
}

type WorkerResult = Result<(), Option<(&'static str, StoreError)>>;

/// A new import (`imp-<seed>`) of the last imported version with changes.
fn worker_import(store: &dyn NodeStore, rng: &mut SmallRng) -> WorkerResult {
    let fail = |e| Some(("import", e));
    let roots = meta::retained(store).map_err(fail)?;
    let base = roots
        .iter()
        .rev()
        .find(|r| r.name.starts_with("imp-"))
        .map_or(Hash256::ZERO, |r| r.hash);
    let contents = read_map(store, base).map_err(fail)?;
    let seed: u64 = rng.gen();
    let name = format!("imp-{seed:016x}");
    say(&format!("begin import {name} {} {seed}", base.to_hex()));
    let next = apply(&contents, seed);
    let mut map = ShaMap::new(MapKind::AccountState);
    for (k, v) in &next {
        map.insert(*k, v).expect("fresh key");
    }
    let r = import_ledger(store, &name, Some(&map.snapshot()), None, None, &mut |_| {})
        .map_err(fail)?;
    say(&format!("ack import {name} {}", r.recorded.to_hex()));
    Ok(())
}

/// A backed-map commit of `head` with changes.
fn worker_commit(store: &dyn NodeStore, rng: &mut SmallRng) -> WorkerResult {
    let fail = |e| Some(("commit", e));
    let roots = meta::retained(store).map_err(fail)?;
    let base = roots
        .iter()
        .find(|r| r.name == "head")
        .map_or(Hash256::ZERO, |r| r.hash);
    let contents = read_map(store, base).map_err(fail)?;
    let opts = BackedOptions {
        budget_bytes: BACKED_BUDGET,
        ..BackedOptions::default()
    };
    let mut map = if base.is_zero() {
        BackedMap::new(store, MapKind::AccountState, opts)
    } else {
        BackedMap::open(store, base, MapKind::AccountState, opts).map_err(fail)?
    };
    let seed: u64 = rng.gen();
    say(&format!("begin commit head {} {seed}", base.to_hex()));
    for (k, v) in changes(&contents, seed) {
        match v {
            Some(v) => map.upsert(k, &v).map(|_| ()),
            None => map.remove(&k).map(|_| ()),
        }
        .map_err(fail)?;
    }
    let root = map.commit("head").map_err(fail)?;
    say(&format!("ack commit head {}", root.to_hex()));
    Ok(())
}

/// gc keeping the last import, `head`, and now and then another root.
fn worker_gc(store: &dyn NodeStore, rng: &mut SmallRng) -> WorkerResult {
    let fail = |e| Some(("gc", e));
    let roots = meta::retained(store).map_err(fail)?;
    let mut keep: Vec<Hash256> = Vec::new();
    if let Some(r) = roots.iter().rev().find(|r| r.name.starts_with("imp-")) {
        keep.push(r.hash);
    }
    if let Some(r) = roots.iter().find(|r| r.name == "head") {
        keep.push(r.hash);
    }
    if rng.gen_bool(0.3) {
        if let Some(r) = roots.choose(rng) {
            if !keep.contains(&r.hash) {
                keep.push(r.hash);
            }
        }
    }
    if keep.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = keep.iter().map(|h| h.to_hex()).collect();
    say(&format!("begin gc {}", list.join(" ")));
    gc(store, &keep).map_err(fail)?;
    say("ack gc");
    Ok(())
}

/// The checker: opens the store (read-only when asked), lists the retained
/// roots, verifies each and reads it whole, rebuilding it in memory.
#[test]
#[ignore = "child process of the torture tests (torture::torture_*)"]
fn torture_checker() {
    let Some((dir, backend)) = child_env() else {
        return;
    };
    let read_only = std::env::var(ENV_READ_ONLY).is_ok();
    let opened = if read_only {
        backend.open_read_only(&dir)
    } else {
        backend.open(&dir)
    };
    let store = match opened.and_then(|s| meta::retained(&*s).map(|r| (s, r))) {
        Ok((store, roots)) => {
            say(&format!("opened {}", roots_line(&roots)));
            for r in &roots {
                let checked = verify_all(&*store, &r.hash).and_then(|report| {
                    let contents = read_map(&*store, r.hash)?;
                    Ok((report.leaves, contents.len(), root_of(&contents)))
                });
                match checked {
                    Ok((leaves, items, rebuilt)) => say(&format!(
                        "root {} ok {leaves} {items} {}",
                        r.hash.to_hex(),
                        rebuilt.to_hex()
                    )),
                    Err(e) => say(&format!("root {} err {}", r.hash.to_hex(), one_line(&e))),
                }
            }
            Some(store)
        }
        Err(e) => {
            say(&format!("refused {}", one_line(&e)));
            None
        }
    };
    drop(store);
    say("done");
}

// ---- running children ----

/// The lines a child prints, read by a thread: complete lines only (a
/// line cut by a kill is not one).
fn line_reader(out: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if !line.ends_with('\n') => return,
                Ok(_) => {
                    // The test harness may have begun the line
                    // (`test torture::... ... ` without a newline).
                    if let Some(l) = line.trim_end().split_once(TAG).map(|(_, l)| l) {
                        if tx.send(l.to_owned()).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
    rx
}

fn child_command(test: &str, backend: Backend, dir: &Path, stderr: &Path) -> Command {
    let exe = std::env::current_exe().expect("test binary");
    let mut c = Command::new(exe);
    c.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ENV_DIR, dir)
    .env(ENV_BACKEND, backend.name())
    .env_remove(ENV_READ_ONLY)
    .env_remove(ENV_HOLD)
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(stderr).expect("stderr file"));
    c
}

fn stderr_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("note: run with"))
        .collect();
    // A panic: where, and its message (the line after).
    if let Some(i) = lines.iter().position(|l| l.contains("panicked at")) {
        return lines[i..(i + 2).min(lines.len())].join(" | ");
    }
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// A worker process.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: PathBuf,
    /// Lines read so far (for messages).
    seen: u64,
}

impl Worker {
    fn spawn(backend: Backend, dir: &Path, seed: u64, stderr: &Path) -> Worker {
        Worker::start(
            child_command("torture::torture_worker", backend, dir, stderr),
            seed,
            stderr,
        )
    }

    /// A worker that holds the store from its opening until it is killed
    /// ([`ENV_HOLD`]): its writer's lock is never free while it lives.
    fn spawn_holding(backend: Backend, dir: &Path, seed: u64, stderr: &Path) -> Worker {
        let mut c = child_command("torture::torture_worker", backend, dir, stderr);
        c.env(ENV_HOLD, "1");
        Worker::start(c, seed, stderr)
    }

    fn start(mut command: Command, seed: u64, stderr: &Path) -> Worker {
        let mut child = command
            .env(ENV_WORKER_SEED, seed.to_string())
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn the worker");
        let stdin = child.stdin.take();
        let lines = line_reader(child.stdout.take().expect("stdout"));
        Worker {
            child,
            stdin,
            lines,
            stderr: stderr.to_path_buf(),
            seen: 0,
        }
    }

    /// The next line before `until`; `Err(true)` at the end of the output,
    /// `Err(false)` when the time is up.
    fn next(&mut self, until: Instant) -> Result<String, bool> {
        let wait = until.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(l) => {
                self.seen += 1;
                trace(&format!("worker {}", self.child.id()), &l);
                Ok(l)
            }
            Err(RecvTimeoutError::Timeout) => Err(false),
            Err(RecvTimeoutError::Disconnected) => Err(true),
        }
    }

    fn kill(&mut self) -> Result<(), String> {
        let _ = self.child.kill();
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if status.signal() == Some(libc::SIGKILL) {
            Ok(())
        } else {
            Err(format!(
                "the worker ended on its own before the kill: {status}: {}",
                stderr_tail(&self.stderr)
            ))
        }
    }

    /// Asks the worker to stop (it closes the store cleanly).
    fn ask_to_stop(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
    }

    /// Waits for the worker's exit after [`Worker::ask_to_stop`] (its lines
    /// are read by the caller); a worker still running is killed.
    fn wait_exit(&mut self, until: Instant) -> Result<(), String> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!(
                        "the worker failed: {status}: {}",
                        stderr_tail(&self.stderr)
                    ))
                }
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "a hang: the worker did not close within {} s",
                        CHILD_PATIENCE.as_secs()
                    ));
                }
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The check of one root: leaves verified, items read and the rebuilt
/// root; or the error.
type RootCheck = Result<(u64, u64, Hash256), String>;

/// What the checker found.
enum Check {
    Refused(String),
    Opened {
        roots: Roots,
        /// Per root: leaves verified, items read and the rebuilt root; or
        /// the error.
        results: Vec<(Hash256, RootCheck)>,
    },
    /// No answer in time, or a child that died: the reason.
    Broken(String),
}

fn run_checker(backend: Backend, dir: &Path, read_only: bool, stderr: &Path) -> Check {
    let mut cmd = child_command("torture::torture_checker", backend, dir, stderr);
    if read_only {
        cmd.env(ENV_READ_ONLY, "1");
    }
    let mut child = cmd.stdin(Stdio::null()).spawn().expect("spawn the checker");
    let lines = line_reader(child.stdout.take().expect("stdout"));
    // A hang is no line for CHILD_PATIENCE: the checker says a line when
    // it has opened the store and one per root it has verified, and a
    // store with many roots on a loaded machine takes longer in all.
    let mut until = Instant::now() + CHILD_PATIENCE;
    let mut got = Vec::new();
    // `finished`: it said it is done; `ended`: its output ended (done,
    // or it died), so it exits by itself.
    let (finished, ended) = loop {
        let wait = until.saturating_duration_since(Instant::now());
        match lines.recv_timeout(wait) {
            Ok(l) if l == "done" => break (true, true),
            Ok(l) => {
                trace(&format!("checker of {}", dir.display()), &l);
                got.push(l);
                until = Instant::now() + CHILD_PATIENCE;
            }
            Err(RecvTimeoutError::Disconnected) => break (false, true),
            Err(RecvTimeoutError::Timeout) => break (false, false),
        }
    };
    // Closing the store is part of the check: bounded too. A checker
    // that did not finish is killed (and reaped) here.
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if ended && Instant::now() < until + Duration::from_secs(1) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    if status.is_none() {
        return Check::Broken(format!(
            "a hang: no answer within {} s; its last line {:?}",
            CHILD_PATIENCE.as_secs(),
            got.last()
        ));
    }
    if !finished || !status.is_some_and(|s| s.success()) {
        return Check::Broken(format!(
            "the checker died (a panic or an abort): {}",
            stderr_tail(stderr)
        ));
    }
    parse_check(&got).unwrap_or_else(Check::Broken)
}

fn parse_check(lines: &[String]) -> Result<Check, String> {
    let Some(first) = lines.first() else {
        return Err("the checker printed nothing".to_owned());
    };
    if let Some(line) = first.strip_prefix("refused ") {
        return Ok(Check::Refused(line.to_owned()));
    }
    let Some(list) = first.strip_prefix("opened") else {
        return Err(format!("unexpected checker line: {first:?}"));
    };
    let words: Vec<&str> = list.split(' ').collect();
    let roots = parse_roots(&words)?;
    let mut results = Vec::new();
    for l in &lines[1..] {
        let words: Vec<&str> = l.splitn(4, ' ').collect();
        let hash = |s: &str| Hash256::from_hex(s).map_err(|e| format!("{l:?}: {e}"));
        match words.as_slice() {
            ["root", h, "ok", rest] => {
                let v: Vec<&str> = rest.split(' ').collect();
                let [leaves, items, rebuilt] = v.as_slice() else {
                    return Err(format!("bad checker line: {l:?}"));
                };
                let num = |s: &str| s.parse::<u64>().map_err(|_| format!("bad number in {l:?}"));
                results.push((hash(h)?, Ok((num(leaves)?, num(items)?, hash(rebuilt)?))));
            }
            ["root", h, "err", e] => results.push((hash(h)?, Err(e.to_string()))),
            _ => return Err(format!("bad checker line: {l:?}")),
        }
    }
    Ok(Check::Opened { roots, results })
}

/// Judges what the checker found against the model (adopting the change
/// in flight if the store shows it). `refusal_fails`: a refusal is a
/// failure here (after a crash or a clean close: nothing was damaged).
/// `read_only`: the checker opened the store read-only (an adoption is
/// then provisional, see [`Model::provisional`]).
fn judge(model: &mut Model, check: Check, refusal_fails: bool, read_only: bool) -> Outcome {
    match check {
        Check::Broken(why) => Outcome::Failed(why),
        Check::Refused(line) if line.starts_with("MULTILINE") => {
            Outcome::Failed(format!("a refusal of more than one line: {line}"))
        }
        Check::Refused(line) if refusal_fails => Outcome::Failed(format!(
            "the store refuses to open although nothing damaged it: {line}"
        )),
        Check::Refused(line) => Outcome::Refused(line),
        Check::Opened { roots, results } => {
            let before = model.roots.clone();
            let adopts = roots != before && model.pending.as_ref() == Some(&roots);
            if let Err(why) = model.resolve(&roots) {
                return Outcome::Failed(why);
            }
            if adopts && read_only {
                model.provisional = Some(before);
            }
            let mut refused = None;
            // The list resolved: the acknowledged one, or (a copy taken
            // before any writer recovered the store) the provisional one.
            for (name, root) in &roots {
                let Some((_, result)) = results.iter().find(|r| r.0 == *root) else {
                    return Outcome::Failed(format!("a root was not checked: {name}"));
                };
                match result {
                    Err(e) if e.starts_with("MULTILINE") => {
                        return Outcome::Failed(format!("an error of more than one line: {e}"))
                    }
                    Err(e) => {
                        refused.get_or_insert_with(|| format!("root {name}: {e}"));
                    }
                    Ok((leaves, items, rebuilt)) => {
                        let want = model.contents.get(root).map_or(0, |c| c.len() as u64);
                        if rebuilt != root || *leaves != want || *items != want {
                            return Outcome::Failed(format!(
                                "wrong value: root {name} ({root}) reads as {items} items, {leaves} leaves verified, rebuilding to {rebuilt}; the oracle holds {want} items"
                            ));
                        }
                    }
                }
            }
            match refused {
                Some(line) if refusal_fails => Outcome::Failed(format!(
                    "a root fails to verify although nothing damaged the store: {line}"
                )),
                Some(line) => Outcome::RefusedAtVerify(line),
                None => Outcome::Kept,
            }
        }
    }
}

// ---- the faults on files ----

/// Points the copy's index checkpoint (if any) at the copied log: it names
/// its log by device and inode, which a copy changes, and would be
/// ignored. The layout is the one `log_store::checkpoint` documents
/// (device and inode at bytes 16..32, a crc32c of everything before it
/// last); a checkpoint of another layout is left as it is.
fn rehome_checkpoint(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let path = dir.join(checkpoint::CHECKPOINT_FILE);
    let Ok(mut bytes) = std::fs::read(&path) else {
        return false;
    };
    let Ok(log) = std::fs::metadata(dir.join(LOG_FILE)) else {
        return false;
    };
    if bytes.len() < 40 || &bytes[..8] != b"SHMAPIDX" || !matches!(bytes[8..12], [1 | 2, 0, 0, 0]) {
        return false;
    }
    let n = bytes.len();
    if crc32c::crc32c(&bytes[..n - 4]).to_le_bytes() != bytes[n - 4..] {
        return false;
    }
    bytes[16..24].copy_from_slice(&log.dev().to_le_bytes());
    bytes[24..32].copy_from_slice(&log.ino().to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).is_ok()
}

/// The whole batches of a node log's bytes: offset and length of each.
fn log_batches(log: &[u8]) -> Vec<(usize, usize)> {
    crate::support::log_batches(log)
        .into_iter()
        .map(|b| (b.at, b.len))
        .collect()
}

/// Every regular file under `dir`, with its length.
fn files_under(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                let len = e.metadata().map_or(0, |m| m.len());
                out.push((e.path(), len));
            }
        }
    }
    out.sort();
    out
}

fn rel(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir).unwrap_or(p).display().to_string()
}

/// Applies a fault of `class` to the store copy in `dir`; returns what was
/// done, or `None` when the class does not apply to this copy (a log of
/// fewer batches than it needs).
fn apply_file_fault(
    backend: Backend,
    class: Class,
    dir: &Path,
    rng: &mut SmallRng,
) -> Option<String> {
    let log_path = dir.join(LOG_FILE);
    match (backend, class) {
        (Backend::Log, Class::Truncate) => {
            let log = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&log);
            let len = log.len();
            let (to, how) = match rng.gen_range(0..10) {
                // At a batch boundary: the last 1..=3 whole batches gone.
                0..=3 if batches.len() > 1 => {
                    let k = rng.gen_range(1..=3.min(batches.len() - 1));
                    (
                        batches[batches.len() - k].0,
                        format!(
                            "at a batch boundary, the last {k} of {} batches gone",
                            batches.len()
                        ),
                    )
                }
                // In the last 4 KiB.
                4..=6 => (
                    len - rng.gen_range(1..=4096.min(len)),
                    "in its last 4 KiB".to_owned(),
                ),
                _ => (rng.gen_range(0..len), "anywhere".to_owned()),
            };
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&log_path)
                .ok()?;
            f.set_len(to as u64).ok()?;
            Some(format!("nodes.log cut from {len} to {to} bytes ({how})"))
        }
        (Backend::Log, Class::Flip) => {
            let idx = dir.join(checkpoint::CHECKPOINT_FILE);
            let mut target = log_path.clone();
            let mut bytes = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&bytes);
            let (at, region) = match rng.gen_range(0..20) {
                0..=2 if idx.is_file() => {
                    target = idx;
                    bytes = std::fs::read(&target).ok()?;
                    (rng.gen_range(0..bytes.len()), "nodes.idx")
                }
                3..=7 if !batches.is_empty() => {
                    let (off, len) = batches[batches.len() - 1];
                    (off + rng.gen_range(0..len), "the last batch")
                }
                8..=10 if !batches.is_empty() => {
                    let (off, _) = *batches.choose(rng)?;
                    (
                        off + rng.gen_range(0..format::BATCH_HEADER_LEN),
                        "a batch header",
                    )
                }
                11..=12 if !batches.is_empty() => {
                    let (off, _) = *batches.choose(rng)?;
                    (off + rng.gen_range(16..24), "a batch's sequence number")
                }
                _ => (rng.gen_range(0..bytes.len()), "anywhere"),
            };
            let bit = rng.gen_range(0..8);
            bytes[at] ^= 1 << bit;
            std::fs::write(&target, &bytes).ok()?;
            let what = batches
                .iter()
                .position(|&(o, l)| target.ends_with(LOG_FILE) && at >= o && at < o + l)
                .map_or(String::new(), |i| {
                    format!(", batch {i} of {} at byte {}", batches.len(), batches[i].0)
                });
            Some(format!(
                "bit {bit} of byte {at} of {} flipped ({region}{what})",
                rel(dir, &target)
            ))
        }
        (Backend::Log, Class::Replay) => {
            let mut log = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&log);
            if batches.len() < 2 {
                return None;
            }
            let (end_off, end_len) = batches[batches.len() - 1];
            // Whole batches only: a torn tail after the last is dropped.
            log.truncate(end_off + end_len);
            let i = rng.gen_range(0..batches.len() - 1);
            let (off, len) = batches[i];
            let copy = log[off..off + len].to_vec();
            log.extend_from_slice(&copy);
            std::fs::write(&log_path, &log).ok()?;
            Some(format!(
                "batch {i} of {} (bytes {off}..{}) appended again",
                batches.len(),
                off + len
            ))
        }
        (Backend::Log, Class::Swap) => {
            let log = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&log);
            if batches.len() < 2 {
                return None;
            }
            let i = rng.gen_range(0..batches.len() - 1);
            let j = if rng.gen_bool(0.6) {
                i + 1
            } else {
                rng.gen_range(i + 1..batches.len())
            };
            let (a, alen) = batches[i];
            let (b, blen) = batches[j];
            let mut out = log[..a].to_vec();
            out.extend_from_slice(&log[b..b + blen]);
            out.extend_from_slice(&log[a + alen..b]);
            out.extend_from_slice(&log[a..a + alen]);
            out.extend_from_slice(&log[b + blen..]);
            std::fs::write(&log_path, &out).ok()?;
            Some(format!("batches {i} and {j} of {} swapped", batches.len()))
        }
        (_, Class::Fifo) => {
            let names: Vec<String> = match backend {
                Backend::Log => vec![
                    checkpoint::CHECKPOINT_FILE.to_owned(),
                    backend.lock_file().to_owned(),
                    LOG_FILE.to_owned(),
                ],
                _ => {
                    let mut v = vec![backend.lock_file().to_owned()];
                    v.extend(files_under(dir).into_iter().map(|(p, _)| rel(dir, &p)));
                    v
                }
            };
            let name = names.choose(rng)?.clone();
            let path = dir.join(&name);
            let _ = std::fs::remove_file(&path);
            let ok = Command::new("mkfifo")
                .arg(&path)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "mkfifo {}", path.display());
            assert!(std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_fifo()));
            Some(format!("a FIFO in place of {name}"))
        }
        (_, Class::Truncate) => {
            let files: Vec<_> = files_under(dir).into_iter().filter(|f| f.1 > 0).collect();
            let (path, len) = files.choose(rng)?.clone();
            let to = if rng.gen_bool(0.5) {
                len - rng.gen_range(1..=4096.min(len))
            } else {
                rng.gen_range(0..len)
            };
            let f = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
            f.set_len(to).ok()?;
            Some(format!("{} cut from {len} to {to} bytes", rel(dir, &path)))
        }
        (_, Class::Flip) => {
            let files: Vec<_> = files_under(dir).into_iter().filter(|f| f.1 > 0).collect();
            let (path, len) = files.choose(rng)?.clone();
            let at = rng.gen_range(0..len);
            let bit = rng.gen_range(0..8);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .ok()?;
            use std::os::unix::fs::FileExt;
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, at).ok()?;
            b[0] ^= 1 << bit;
            f.write_all_at(&b, at).ok()?;
            Some(format!(
                "bit {bit} of byte {at} of {} ({len} bytes) flipped",
                rel(dir, &path)
            ))
        }
        _ => None,
    }
}

// ---- the supervisor ----

struct Torture {
    backend: Backend,
    seed: u64,
    rng: SmallRng,
    /// The live store and its model.
    live: tempfile::TempDir,
    model: Model,
    /// Scratch space: copies, logs.
    scratch: tempfile::TempDir,
    tally: Tally,
    round: u64,
    classes: Vec<Class>,
    keep: Option<PathBuf>,
    tmpfs_ok: Option<bool>,
    /// Changes acknowledged by the live workers, over every live store.
    acks: u64,
    /// Full-disk cases where writes failed, and the failed operations.
    full_disks: u64,
    full_disk_errors: u64,
}

impl Torture {
    fn new(backend: Backend, seed: u64) -> Torture {
        let only: Option<Vec<String>> = std::env::var("SHAMAP_TORTURE_CLASSES")
            .ok()
            .map(|s| s.split(',').map(|c| c.trim().to_owned()).collect());
        let classes = backend
            .classes()
            .iter()
            .copied()
            .filter(|c| {
                only.as_ref()
                    .is_none_or(|o| o.iter().any(|n| n == c.name()))
            })
            .collect();
        Torture {
            backend,
            seed,
            rng: SmallRng::seed_from_u64(seed),
            live: tempfile::tempdir().expect("tempdir"),
            model: Model::default(),
            scratch: tempfile::tempdir().expect("tempdir"),
            tally: Tally::default(),
            round: 0,
            classes,
            keep: std::env::var("SHAMAP_TORTURE_KEEP").ok().map(PathBuf::from),
            tmpfs_ok: None,
            acks: 0,
            full_disks: 0,
            full_disk_errors: 0,
        }
    }

    fn live_dir(&self) -> PathBuf {
        self.live.path().join("db")
    }

    fn context(&self, fault: &str) -> String {
        let classes = std::env::var("SHAMAP_TORTURE_CLASSES")
            .map(|c| format!("SHAMAP_TORTURE_CLASSES={c} "))
            .unwrap_or_default();
        format!(
            "backend {} seed {} round {}: {fault} (replay: SHAMAP_TORTURE_SEED={} {classes}cargo test -p shamap-store --test main torture::torture_{} -- --nocapture)",
            self.backend.name(),
            self.seed,
            self.round,
            self.seed,
            self.backend.name()
        )
    }

    fn record(&mut self, class: Class, outcome: &Outcome, fault: &str, copy: Option<&Path>) {
        let context = self.context(fault);
        trace(
            "harness",
            &format!("round {} {}: {}", self.round, class.name(), fault),
        );
        if let (Outcome::Failed(_), Some(keep), Some(copy)) = (outcome, &self.keep, copy) {
            let to = keep.join(format!(
                "{}-{}-r{}-{}",
                self.backend.name(),
                self.seed,
                self.round,
                class.name()
            ));
            let _ = std::fs::create_dir_all(keep);
            let _ = std::fs::remove_dir_all(&to);
            copy_store_dir(copy, &to);
            let before = self.scratch.path().join("before-after");
            if class == Class::After && before.exists() {
                copy_store_dir(&before, &to.with_extension("before"));
            }
        }
        self.tally.add(class, outcome, &context);
    }

    /// A fresh live store (after a failure left the old one unusable).
    fn restart(&mut self) {
        self.acks += self.model.acks;
        self.live = tempfile::tempdir().expect("tempdir");
        self.model = Model::default();
    }

    fn stderr_path(&self, what: &str) -> PathBuf {
        self.scratch.path().join(format!("{what}.stderr"))
    }

    /// Feeds `w`'s lines to `model` for `run`, then SIGKILLs it (`kill`) or
    /// asks it to stop, and takes what it printed before it ended (that
    /// counts too). Returns the outcome and whether its output ended.
    fn drive(
        model: &mut Model,
        w: &mut Worker,
        run: Duration,
        kill: bool,
        errors_allowed: bool,
        errors: &mut u64,
    ) -> (Result<(), String>, bool) {
        let mut result =
            Self::pump(model, w, Instant::now() + run, errors_allowed, errors).map(|_| ());
        if result.is_ok() {
            if kill {
                result = w.kill();
            } else {
                w.ask_to_stop();
            }
        }
        let drained = Self::pump(
            model,
            w,
            Instant::now() + CHILD_PATIENCE,
            errors_allowed,
            errors,
        );
        let ended = matches!(drained, Ok(true));
        (result.and(drained.map(|_| ())), ended)
    }

    /// Feeds the worker's lines to `model` until `until`. `Ok(true)` when
    /// the worker's output ended.
    fn pump(
        model: &mut Model,
        w: &mut Worker,
        until: Instant,
        errors_allowed: bool,
        errors: &mut u64,
    ) -> Result<bool, String> {
        loop {
            match w.next(until) {
                Ok(line) => {
                    if line.starts_with("error ") || line.starts_with("refused ") {
                        if line.contains("MULTILINE") {
                            return Err(format!("an error of more than one line: {line}"));
                        }
                        *errors += 1;
                        if !errors_allowed {
                            return Err(format!("the worker failed on a healthy store: {line}"));
                        }
                    }
                    model.take(&line)?;
                }
                Err(ended) => return Ok(ended),
            }
        }
    }

    /// One run of the worker on the live store, ended by a SIGKILL or a
    /// clean close, then the live store checked.
    fn live_round(&mut self) {
        let dir = self.live_dir();
        let run = Duration::from_millis(self.rng.gen_range(50..2500));
        let kill = self.rng.gen_bool(0.7);
        let class = if kill { Class::Sigkill } else { Class::Close };
        let wseed = self.rng.gen();
        let fault = format!(
            "{} after {} ms (worker seed {wseed})",
            if kill {
                "SIGKILL"
            } else {
                "stop and clean close"
            },
            run.as_millis()
        );
        let mut w = Worker::spawn(self.backend, &dir, wseed, &self.stderr_path("worker"));
        let mut errors = 0;
        let (mut result, ended) =
            Self::drive(&mut self.model, &mut w, run, kill, false, &mut errors);
        if result.is_ok() && !kill {
            let patience = if ended {
                CHILD_PATIENCE
            } else {
                Duration::ZERO
            };
            result = w.wait_exit(Instant::now() + patience);
        }
        drop(w);
        let outcome = match result {
            Err(why) => Outcome::Failed(why),
            // Killed before it made the store: nothing to check (its
            // next opening makes it, or says why not).
            Ok(()) if self.model.roots.is_empty() && !self.backend.is_store(&dir) => Outcome::Kept,
            Ok(()) => {
                let check = run_checker(self.backend, &dir, true, &self.stderr_path("check"));
                judge(&mut self.model, check, true, true)
            }
        };
        let failed = matches!(outcome, Outcome::Failed(_));
        self.record(class, &outcome, &fault, Some(&dir));
        if failed {
            self.restart();
        }
    }

    /// A fresh copy of the live store (a quiet moment: no worker runs).
    fn copy(&self, name: &str) -> PathBuf {
        let to = self.scratch.path().join(name);
        let _ = std::fs::remove_dir_all(&to);
        if self.live_dir().exists() {
            copy_store_dir(&self.live_dir(), &to);
        } else {
            std::fs::create_dir_all(&to).expect("mkdir");
        }
        to
    }

    /// One file fault of `class` on a copy, checked.
    fn file_fault(&mut self, class: Class) -> bool {
        let copy = self.copy("copy");
        let rehomed = self.backend == Backend::Log && rehome_checkpoint(&copy);
        let Some(fault) = apply_file_fault(self.backend, class, &copy, &mut self.rng) else {
            return false;
        };
        let fault = if rehomed {
            format!("{fault} [with the index checkpoint]")
        } else {
            fault
        };
        let check = run_checker(self.backend, &copy, false, &self.stderr_path("check"));
        let mut model = self.model.clone();
        let outcome = judge(&mut model, check, false, false);
        self.record(class, &outcome, &fault, Some(&copy));
        if matches!(outcome, Outcome::Kept)
            && class != Class::Fifo
            && self.classes.contains(&Class::After)
            && self.rng.gen_bool(0.5)
        {
            if self.keep.is_some() {
                // What the writer after the fault starts from, kept with
                // the case if it fails.
                let before = self.scratch.path().join("before-after");
                let _ = std::fs::remove_dir_all(&before);
                copy_store_dir(&copy, &before);
            }
            self.go_on_after(class, &copy, &mut model, &fault);
        }
        let _ = std::fs::remove_dir_all(&copy);
        true
    }

    /// Writes go on after a file fault that opening and verification did
    /// not see (damage nothing acknowledged needed, or damage unseen): a
    /// worker on the faulted copy for a while, SIGKILL, and the copy
    /// checked again. Nothing acknowledged before or after may be lost.
    fn go_on_after(&mut self, class: Class, copy: &Path, model: &mut Model, fault: &str) {
        let wseed = self.rng.gen();
        let run = Duration::from_millis(self.rng.gen_range(300..1500));
        let mut errors = 0;
        let mut w = Worker::spawn(self.backend, copy, wseed, &self.stderr_path("after"));
        // The store may refuse in words now (a write meeting the damage).
        let (result, _) = Self::drive(model, &mut w, run, true, true, &mut errors);
        drop(w);
        let fault = format!(
            "after [{}] {fault}: a worker (seed {wseed}) {} ms on the copy, SIGKILL; {errors} failed operations",
            class.name(),
            run.as_millis()
        );
        let outcome = match result {
            Err(why) => Outcome::Failed(why),
            Ok(()) => {
                let check = run_checker(self.backend, copy, false, &self.stderr_path("check"));
                judge(model, check, false, false)
            }
        };
        self.record(Class::After, &outcome, &fault, Some(copy));
    }

    /// The lock file deleted while a writer runs on a copy, then a second
    /// writer: it must be refused, and nothing acknowledged lost. Writer A
    /// holds the store from its opening until it is killed (a worker that
    /// closes and reopens frees the lock for that moment, and B, trying
    /// all along, may then rightly become the writer and change what A
    /// acknowledged), and B is killed before A: every attempt of B must be
    /// refused, and the copy must show exactly what A acknowledged.
    fn lock_fault(&mut self) {
        let copy = self.copy("lock");
        let mut model = self.model.clone();
        let (sa, sb) = (self.rng.gen(), self.rng.gen());
        let run = Duration::from_millis(self.rng.gen_range(300..1500));
        let fault = format!(
            "{} deleted under writer A (seed {sa}), writer B (seed {sb}) started, both run {} ms",
            self.backend.lock_file(),
            run.as_millis()
        );
        let mut errors = 0;
        // A is the writer once it has opened the store, until it dies.
        let mut a = Worker::spawn_holding(self.backend, &copy, sa, &self.stderr_path("a"));
        let until = Instant::now() + CHILD_PATIENCE;
        let mut outcome = None;
        loop {
            match a.next(until) {
                Ok(line) => {
                    let opened = line.starts_with("opened");
                    if let Err(why) = model.take(&line) {
                        outcome = Some(Outcome::Failed(why));
                        break;
                    }
                    if opened {
                        break;
                    }
                }
                Err(_) => {
                    outcome = Some(Outcome::Failed(format!(
                        "writer A never opened the store: {}",
                        stderr_tail(&a.stderr)
                    )));
                    break;
                }
            }
        }
        if outcome.is_none() {
            let _ = std::fs::remove_file(copy.join(self.backend.lock_file()));
            let mut b = Worker::spawn(self.backend, &copy, sb, &self.stderr_path("b"));
            // B's first line: refused (good) or opened (two writers). It
            // goes on trying (each opening waits up to a second for the
            // lock) for as long as A runs.
            let b_first = b.next(Instant::now() + CHILD_PATIENCE);
            let until = Instant::now() + run;
            // A may fail in words once its lock file is gone; only losses
            // count.
            let pumped = Self::pump(&mut model, &mut a, until, true, &mut errors);
            // B dies first: A holds the store until it dies, so there is
            // no moment at which B could rightly open it, and every line
            // of B must be a refusal.
            let b_end = b.kill();
            let a_end = pumped.and_then(|_| a.kill());
            let a_rest = Self::pump(
                &mut model,
                &mut a,
                Instant::now() + CHILD_PATIENCE,
                true,
                &mut errors,
            );
            let a_end = a_end.and(a_rest.map(|_| ()));
            let mut b_lines = Vec::new();
            while let Ok(l) = b.next(Instant::now() + Duration::from_secs(5)) {
                b_lines.push(l);
            }
            outcome = Some(match b_first {
                Err(ended) => Outcome::Failed(format!(
                    "{} writer B neither opened nor was refused within {} s: {}",
                    if ended { "a crash:" } else { "a hang:" },
                    CHILD_PATIENCE.as_secs(),
                    stderr_tail(&b.stderr)
                )),
                Ok(first) => {
                    b_lines.insert(0, first);
                    self.judge_lock(&copy, &mut model, &b_lines, b_end, a_end)
                }
            });
        }
        let outcome = outcome.unwrap_or(Outcome::Kept);
        self.record(Class::Lock, &outcome, &fault, Some(&copy));
        let _ = std::fs::remove_dir_all(&copy);
    }

    /// The judgement of a lock case from writer B's lines (all of them,
    /// B having died before A), how B and A ended, and then the check of
    /// the copy against A's acknowledged changes.
    fn judge_lock(
        &self,
        copy: &Path,
        model: &mut Model,
        b_lines: &[String],
        b_end: Result<(), String>,
        a_end: Result<(), String>,
    ) -> Outcome {
        if b_lines.iter().any(|l| l.starts_with("opened")) {
            let acks = b_lines.iter().filter(|l| l.starts_with("ack")).count();
            return Outcome::Failed(format!(
                "a second writer opened the store while the first held it (its lock file deleted): it acknowledged {acks} changes beside the first{}",
                match a_end {
                    Err(why) => format!("; writer A then: {why}"),
                    Ok(()) => String::new(),
                }
            ));
        }
        if let Err(why) = a_end {
            return Outcome::Failed(format!("writer A: {why}"));
        }
        if let Err(why) = b_end {
            return Outcome::Failed(format!("writer B: {why}"));
        }
        if let Some(l) = b_lines.iter().find(|l| l.contains("MULTILINE")) {
            return Outcome::Failed(format!("a refusal of more than one line: {l}"));
        }
        if let Some(l) = b_lines.iter().find(|l| !l.starts_with("refused ")) {
            return Outcome::Failed(format!("writer B: said {l:?}"));
        }
        // Nothing acknowledged by A may be lost.
        let check = run_checker(self.backend, copy, false, &self.stderr_path("check"));
        match judge(model, check, false, false) {
            Outcome::Kept => Outcome::Refused(b_lines[0].trim_start_matches("refused ").to_owned()),
            other => other,
        }
    }

    /// A worker on a copy in a tmpfs barely larger than the store, until
    /// the disk is full; then space again, and the copy checked.
    fn enospc_fault(&mut self) {
        if self.tmpfs_ok == Some(false) {
            return;
        }
        let Some(fs) = Tmpfs::mount("512m") else {
            self.tmpfs_ok = Some(false);
            self.tally.skipped.insert(
                Class::Enospc,
                "mounting a tmpfs needs root (not root here)".to_owned(),
            );
            return;
        };
        self.tmpfs_ok = Some(true);
        let db = fs.path.join("db");
        if self.live_dir().exists() {
            copy_store_dir(&self.live_dir(), &db);
        }
        let used = df_used_kib(&fs.path);
        let margin_kib = self.rng.gen_range(0..256u64);
        fs.remount(&format!("size={}k", used + margin_kib + 64));
        let wseed = self.rng.gen();
        let run = Duration::from_millis(self.rng.gen_range(1000..3000));
        let mut model = self.model.clone();
        let mut errors = 0;
        let mut w = Worker::spawn(self.backend, &db, wseed, &self.stderr_path("enospc"));
        let kill = self.rng.gen_bool(0.5);
        let (mut result, _) = Self::drive(&mut model, &mut w, run, kill, true, &mut errors);
        if result.is_ok() && !kill {
            result = w.wait_exit(Instant::now() + CHILD_PATIENCE);
        }
        drop(w);
        let fault = format!(
            "tmpfs of {used} KiB used + {} KiB, worker (seed {wseed}) {} ms then {}; {errors} failed operations",
            margin_kib + 64,
            run.as_millis(),
            if kill { "SIGKILL" } else { "stop" }
        );
        fs.remount("size=512m");
        let outcome = match result {
            Err(why) => Outcome::Failed(why),
            Ok(()) => {
                let check = run_checker(self.backend, &db, false, &self.stderr_path("check"));
                judge(&mut model, check, false, false)
            }
        };
        if errors == 0 {
            self.tally.notes.push(format!(
                "round {}: the disk never filled ({fault})",
                self.round
            ));
        } else {
            self.full_disks += 1;
            self.full_disk_errors += errors;
        }
        self.record(Class::Enospc, &outcome, &fault, Some(&db));
    }

    fn run(&mut self, budget: Duration) {
        let start = Instant::now();
        let file_classes: Vec<Class> = Class::FILE
            .iter()
            .copied()
            .filter(|c| self.classes.contains(c))
            .collect();
        while start.elapsed() < budget {
            self.round += 1;
            self.live_round();
            if start.elapsed() >= budget {
                break;
            }
            for _ in 0..self.rng.gen_range(1..=3) {
                let Some(&class) = file_classes.choose(&mut self.rng) else {
                    break;
                };
                // A class that needs more batches than the log has now
                // is tried again in a later round.
                self.file_fault(class);
            }
            if self.classes.contains(&Class::Lock) && self.rng.gen_bool(0.2) {
                self.lock_fault();
            }
            if self.classes.contains(&Class::Enospc) && self.rng.gen_bool(0.15) {
                self.enospc_fault();
            }
        }
        self.acks += std::mem::take(&mut self.model.acks);
        let mut table = self
            .tally
            .table(self.backend, self.seed, start.elapsed().as_secs_f64());
        let _ = writeln!(
            table,
            "  {} rounds, {} changes acknowledged by the live workers; {} full-disk cases saw {} operations fail (each in one line)",
            self.round,
            self.acks,
            self.full_disks,
            self.full_disk_errors
        );
        eprintln!("{table}");
        if let Ok(path) = std::env::var("SHAMAP_TORTURE_REPORT") {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{table}");
            }
        }
    }
}

/// KiB in use on the file system at `path` (`df`).
fn df_used_kib(path: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-k", "--output=used"])
        .arg(path)
        .output()
        .expect("df");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df's used KiB")
}

fn torture(backend: Backend, default_seed: u64) {
    let seed = std::env::var("SHAMAP_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seed);
    let secs = std::env::var("SHAMAP_TORTURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SECS);
    eprintln!(
        "torture of {}: seed {seed} (SHAMAP_TORTURE_SEED), {secs} s (SHAMAP_TORTURE_SECS)",
        backend.name()
    );
    let mut t = Torture::new(backend, seed);
    t.run(Duration::from_secs(secs));
    let cases: u64 = t.tally.counts.values().flatten().sum();
    assert!(cases > 0, "no case was run");
    assert!(
        t.acks > 0 || t.tally.failed() > 0,
        "the worker never acknowledged a change"
    );
    assert_eq!(
        t.tally.failed(),
        0,
        "{} FAILED cases on {} (seed {seed}):\n{}",
        t.tally.failed(),
        backend.name(),
        t.tally.failures.join("\n")
    );
}

#[test]
fn torture_log() {
    torture(Backend::Log, 2701);
}

#[test]
fn torture_fjall() {
    torture(Backend::Fjall, 2702);
}

#[cfg(feature = "rocksdb")]
#[test]
fn torture_rocks() {
    torture(Backend::Rocks, 2703);
}
