//! An in-memory node store for tests and benchmarks.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use shamap::Hash256;

use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, NodeStore, Op};

#[derive(Debug, Default)]
struct Inner {
    nodes: BTreeMap<Hash256, Vec<u8>>,
    meta: BTreeMap<String, Vec<u8>>,
}

/// Numbers the stores of this process, so that each has a location of its
/// own (writers register under the location: see `writers`).
static NEXT_STORE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A node store in a `BTreeMap` behind a lock. Cloning shares the store.
#[derive(Clone, Debug)]
pub struct MemStore {
    inner: Arc<RwLock<Inner>>,
    /// Its number in the process (clones share it).
    id: u64,
    fail_writes: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for MemStore {
    fn default() -> Self {
        MemStore {
            inner: Arc::default(),
            id: NEXT_STORE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            fail_writes: Arc::default(),
        }
    }
}

impl MemStore {
    /// An empty store with the current format version recorded.
    pub fn new() -> MemStore {
        let s = MemStore::default();
        s.write_lock()
            .meta
            .insert(meta::FORMAT_VERSION.to_owned(), meta::version_bytes());
        s
    }

    /// Stores `value` under `hash` without any check: for tests of how
    /// readers treat damaged stores.
    pub fn insert_raw(&self, hash: Hash256, value: Vec<u8>) {
        self.write_lock().nodes.insert(hash, value);
    }

    /// Makes every following [`NodeStore::write`] fail (or succeed again):
    /// for tests of how writers treat a store that refuses writes.
    pub fn fail_writes(&self, fail: bool) {
        self.fail_writes
            .store(fail, std::sync::atomic::Ordering::SeqCst);
    }

    /// Number of stored nodes.
    pub fn node_count(&self) -> usize {
        self.read_lock().nodes.len()
    }

    fn read_lock(&self) -> RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-changed
        // (each write is one insert or remove), so a poisoned lock is usable.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_lock(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl NodeStore for MemStore {
    fn location(&self) -> String {
        format!("<memory {}>", self.id)
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.read_lock().nodes.get(hash).cloned())
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        Ok(self.read_lock().nodes.contains_key(hash))
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        if self.fail_writes.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::backend(self.location(), "writes are refused"));
        }
        let mut g = self.write_lock();
        for op in batch.into_ops() {
            match op {
                Op::PutNode { hash, value } => {
                    g.nodes.insert(hash, value);
                }
                Op::DeleteNode(hash) => {
                    g.nodes.remove(&hash);
                }
                Op::PutMeta { name, value } => {
                    g.meta.insert(name, value);
                }
                Op::DeleteMeta(name) => {
                    g.meta.remove(&name);
                }
            }
        }
        Ok(())
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        // A consistent view without holding the lock during `f` (which may
        // write to this very store).
        let view: Vec<(Hash256, Vec<u8>)> = self
            .read_lock()
            .nodes
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        for (k, v) in &view {
            if f(*k, v).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.read_lock().meta.get(name).cloned())
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// Writes (memory has nothing more to make durable); an empty batch
    /// does nothing.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.write(batch)
    }
}
