//! Coordination, within one process, between backed-map writers and
//! garbage collection on the same store.
//!
//! A [`crate::BackedMap`] holds clean slots that name nodes by hash: the
//! subtree of the root it was opened at, or of its last spill or commit.
//! Those nodes may be reachable from no retained root (a map opened at an
//! arbitrary root, or spilled and not yet committed), so a concurrent
//! [`crate::gc()`] would sweep them. Each writer therefore *pins* that root
//! here, and writes (spills, commits) under a shared lock that `gc` takes
//! exclusively: a collection marks from the retained roots *and* the pins,
//! and no writer adds nodes between its mark and its sweep.
//!
//! Stores are told apart by [`NodeStore::location`] (each `MemStore` has
//! one of its own, `<memory N>`). Stores that share a location (two opens
//! of one Cassandra keyspace) share the lock and see each other's pins,
//! which costs contention, not correctness: `gc` marks from a pin only
//! what the store holds, and a pruning backed map that sees another pin
//! deletes nothing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use shamap::Hash256;

use crate::store::NodeStore;

/// The writers of one store location.
#[derive(Default)]
pub(crate) struct StoreWriters {
    lock: RwLock<()>,
    pins: Mutex<BTreeMap<u64, Hash256>>,
}

static REGISTRY: Mutex<BTreeMap<String, Arc<StoreWriters>>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each critical section is a single map operation: never half done.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The registry entry of `store`'s location.
pub(crate) fn for_store(store: &dyn NodeStore) -> Arc<StoreWriters> {
    Arc::clone(guard(&REGISTRY).entry(store.location()).or_default())
}

/// A writer's registration: its pin, removed on drop.
pub(crate) struct Pin {
    writers: Arc<StoreWriters>,
    id: u64,
}

impl Pin {
    /// Registers a writer of `store` whose clean slots hang under `root`.
    pub(crate) fn new(store: &dyn NodeStore, root: Hash256) -> Pin {
        let pin = Pin {
            writers: for_store(store),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        pin.set(root);
        pin
    }

    /// Moves the pin to `root` (after a spill or commit).
    pub(crate) fn set(&self, root: Hash256) {
        guard(&self.writers.pins).insert(self.id, root);
    }

    /// True when no other writer of the store is registered in this
    /// process.
    pub(crate) fn is_only_writer(&self) -> bool {
        guard(&self.writers.pins).len() == 1
    }

    /// Holds off collections while a write is under way.
    pub(crate) fn write_lock(&self) -> RwLockReadGuard<'_, ()> {
        self.writers.lock.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        guard(&self.writers.pins).remove(&self.id);
    }
}

/// What a collection holds while it runs: no writer of the store writes,
/// and the pinned roots.
pub(crate) struct Exclusive<'a> {
    _lock: RwLockWriteGuard<'a, ()>,
    /// The roots writers hang their clean slots under.
    pub(crate) pins: Vec<Hash256>,
}

impl StoreWriters {
    /// Waits for writes under way to finish and keeps new ones out.
    pub(crate) fn exclusive(&self) -> Exclusive<'_> {
        let lock = self.lock.write().unwrap_or_else(|p| p.into_inner());
        let pins = guard(&self.pins).values().copied().collect();
        Exclusive { _lock: lock, pins }
    }
}
