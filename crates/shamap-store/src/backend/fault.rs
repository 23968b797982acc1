//! Fault injection: a [`NodeStore`] wrapper that fails a chosen operation.
//!
//! [`FaultyStore`] counts the operations it passes to the store it wraps,
//! by class (reads, writes, syncs), and makes the k-th operation of the
//! classes a [`Fault`] names fail with an I/O error or "no space left on
//! device", as a failing disk would. A sticky fault keeps failing every
//! later operation of those classes too, as a full disk does, until
//! [`FaultyStore::clear`]. Tests drive every command over every k up to a
//! small case's operation count and check that the last committed root
//! still verifies and that a retry after the fault clears succeeds.
//!
//! A failed write applies nothing of its batch (the batch is never handed
//! to the wrapped store), which is what every backend promises for a batch
//! it could not commit.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use shamap::Hash256;

use crate::error::StoreError;
use crate::store::{Batch, NodeStore};

/// A class of store operations, counted separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// `read_value`, `contains`, `for_each_value`, `get_meta`, `disk_bytes`.
    Read,
    /// `write` (one atomic batch).
    Write,
    /// `sync`.
    Sync,
}

/// The error an injected fault returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// `EIO`: the device failed.
    Io,
    /// `ENOSPC`: no space left on the device.
    NoSpace,
}

impl FaultError {
    /// The operating system's error: `EIO` (5) and `ENOSPC` (28), the same
    /// numbers on Linux, the BSDs and macOS.
    fn io_error(self) -> std::io::Error {
        std::io::Error::from_raw_os_error(match self {
            FaultError::Io => 5,
            FaultError::NoSpace => 28,
        })
    }
}

/// Which operation fails, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The classes whose operations are counted toward `at`.
    pub classes: Vec<OpClass>,
    /// The operation that fails: 1 for the first operation of `classes`
    /// after the fault is set.
    pub at: u64,
    /// The error it fails with.
    pub error: FaultError,
    /// Whether every later operation of `classes` fails too (a full disk),
    /// or only the `at`-th (a transient error).
    pub sticky: bool,
}

/// Operations passed to the wrapped store so far, by class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Reads.
    pub reads: u64,
    /// Writes (batches).
    pub writes: u64,
    /// Syncs.
    pub syncs: u64,
}

impl OpCounts {
    /// The count of one class.
    pub fn of(&self, class: OpClass) -> u64 {
        match class {
            OpClass::Read => self.reads,
            OpClass::Write => self.writes,
            OpClass::Sync => self.syncs,
        }
    }
}

#[derive(Debug, Default)]
struct Plan {
    fault: Option<Fault>,
    /// Operations of the fault's classes seen since it was set.
    seen: u64,
    /// Faults injected since the plan was set.
    injected: u64,
}

/// A [`NodeStore`] that passes every operation to `S` except the one a
/// [`Fault`] chooses, which fails. See the module docs.
#[derive(Debug)]
pub struct FaultyStore<S> {
    inner: S,
    plan: Mutex<Plan>,
    reads: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
}

impl<S: NodeStore> FaultyStore<S> {
    /// Wraps `inner`, with no fault set.
    pub fn new(inner: S) -> FaultyStore<S> {
        FaultyStore {
            inner,
            plan: Mutex::new(Plan::default()),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
        }
    }

    /// Sets the fault (replacing any other); counting starts now.
    pub fn set(&self, fault: Fault) {
        *self.plan() = Plan {
            fault: Some(fault),
            seen: 0,
            injected: 0,
        };
    }

    /// Removes the fault: every operation passes again.
    pub fn clear(&self) {
        *self.plan() = Plan::default();
    }

    /// How many operations failed by the current fault.
    pub fn injected(&self) -> u64 {
        self.plan().injected
    }

    /// Operations passed to (or failed in front of) the wrapped store so far.
    pub fn counts(&self) -> OpCounts {
        OpCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        // The plan is a few integers, consistent after any panic.
        self.plan.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one operation of `class`; the injected error if it is to fail.
    fn enter(&self, class: OpClass) -> Result<(), StoreError> {
        let counter = match class {
            OpClass::Read => &self.reads,
            OpClass::Write => &self.writes,
            OpClass::Sync => &self.syncs,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let mut plan = self.plan();
        let Some(fault) = plan.fault.clone() else {
            return Ok(());
        };
        if !fault.classes.contains(&class) {
            return Ok(());
        }
        plan.seen += 1;
        let fails = plan.seen == fault.at || (fault.sticky && plan.seen > fault.at);
        if !fails {
            return Ok(());
        }
        plan.injected += 1;
        let what = match class {
            OpClass::Read => "cannot read",
            OpClass::Write => "cannot write batch",
            OpClass::Sync => "cannot sync",
        };
        Err(StoreError::backend(
            self.inner.location(),
            format!("{what}: {} (injected fault)", fault.error.io_error()),
        ))
    }
}

impl<S: NodeStore> NodeStore for FaultyStore<S> {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        self.enter(OpClass::Read)?;
        self.inner.read_value(hash)
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        self.enter(OpClass::Read)?;
        self.inner.contains(hash)
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        self.enter(OpClass::Write)?;
        self.inner.write(batch)
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.enter(OpClass::Read)?;
        self.inner.for_each_value(f)
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.enter(OpClass::Read)?;
        self.inner.get_meta(name)
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        self.enter(OpClass::Read)?;
        self.inner.disk_bytes()
    }

    /// A write (unless the batch is empty), then a sync: each counted and
    /// failed as its own operation.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if !batch.is_empty() {
            self.write(batch)?;
        }
        self.enter(OpClass::Sync)?;
        self.inner.write_durably(Batch::new())
    }
}

/// Where an injected failure of the acknowledgment record strikes
/// ([`fail_acknowledgments`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckStage {
    /// Opening (or creating) the record: nothing is written, as when the
    /// file is immutable, its permissions forbid it, or the process is out
    /// of file descriptors.
    Open,
    /// Writing the record: it may or may not have been written, as after
    /// an I/O error.
    Record,
}

/// An injected failure of the acknowledgment record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFault {
    /// Where it strikes.
    pub stage: AckStage,
    /// The operating system's error number it fails with (`libc::EPERM`,
    /// `EACCES`, `ENOSPC`, `EMFILE`, `EIO`, ...).
    pub errno: i32,
    /// Acknowledgments that succeed first; every one after fails.
    pub after: u64,
}

/// The failures set by [`fail_acknowledgments`]: per store directory,
/// the fault and the acknowledgments let through so far.
static ACK_FAULTS: std::sync::Mutex<Vec<(std::path::PathBuf, AckFault, u64)>> =
    std::sync::Mutex::new(Vec::new());

/// Makes every acknowledgment record of the store in `dir` (the node log's
/// `nodes.ack`, fjall's `shamap.ack`) fail as `fault` says, in this
/// process, from its `after`-th acknowledgment on; `None` clears it. `dir`
/// is the path the store was opened with. For tests of what a failed
/// acknowledgment leaves (the store's own I/O, not a wrapper: the record is
/// the store's, below its [`NodeStore`] face).
pub fn fail_acknowledgments(dir: &std::path::Path, fault: Option<AckFault>) {
    let mut all = ACK_FAULTS.lock().unwrap_or_else(|p| p.into_inner());
    all.retain(|(d, _, _)| d != dir);
    if let Some(f) = fault {
        all.push((dir.to_path_buf(), f, 0));
    }
}

/// The injected failure for an acknowledgment of the store in `dir` at
/// `stage`, if one is set and due (counted once per acknowledgment, at
/// [`AckStage::Open`], which every acknowledgment passes first).
pub(crate) fn ack_fault(dir: &std::path::Path, stage: AckStage) -> Option<std::io::Error> {
    let mut all = ACK_FAULTS.lock().unwrap_or_else(|p| p.into_inner());
    let (_, f, seen) = all.iter_mut().find(|(d, _, _)| d == dir)?;
    if stage == AckStage::Open {
        *seen += 1;
    }
    (*seen > f.after && f.stage == stage).then(|| std::io::Error::from_raw_os_error(f.errno))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemStore, NodeStoreExt};

    #[test]
    fn the_kth_write_fails_and_a_sticky_fault_keeps_failing() {
        let s = FaultyStore::new(MemStore::new());
        s.set(Fault {
            classes: vec![OpClass::Write],
            at: 2,
            error: FaultError::NoSpace,
            sticky: true,
        });
        s.put_meta("a", vec![1]).expect("first write passes");
        let err = s.put_meta("b", vec![2]).expect_err("second fails");
        assert!(err.to_string().contains("No space left"), "{err}");
        assert!(s.put_meta("c", vec![3]).is_err(), "sticky");
        assert_eq!(
            s.get_meta("b").expect("reads pass"),
            None,
            "nothing applied"
        );
        assert_eq!(s.injected(), 2);
        s.clear();
        s.put_meta("b", vec![2]).expect("cleared");
        assert_eq!(s.counts().writes, 4);
    }

    #[test]
    fn a_transient_read_fault_fails_once() {
        let s = FaultyStore::new(MemStore::new());
        s.set(Fault {
            classes: vec![OpClass::Read, OpClass::Sync],
            at: 1,
            error: FaultError::Io,
            sticky: false,
        });
        let err = s.get_meta("x").expect_err("first read fails");
        assert!(err.to_string().contains("Input/output error"), "{err}");
        s.get_meta("x").expect("then passes");
        s.sync().expect("syncs are counted but past the fault");
    }
}
