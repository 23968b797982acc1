//! The RocksDB backend (feature `rocksdb`). Same layout as the fjall
//! backend: column families `nodes` and `meta`; a [`Batch`] is one RocksDB
//! `WriteBatch`, written to the WAL before `write` returns.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, DB};
use shamap::Hash256;

use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, NodeStore, Op};

const NODES: &str = "nodes";
const META: &str = "meta";

/// A node store in a RocksDB directory.
#[derive(Clone)]
pub struct RocksStore {
    path: PathBuf,
    db: Arc<DB>,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl RocksStore {
    /// Opens (or creates) the store in directory `path` and checks its
    /// format version.
    pub fn open(path: impl AsRef<Path>) -> Result<RocksStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let cfs = [NODES, META].map(|n| ColumnFamilyDescriptor::new(n, Options::default()));
        let db = DB::open_cf_descriptors(&opts, &path, cfs).map_err(|e| {
            StoreError::backend(path.display().to_string(), format!("cannot open: {e}"))
        })?;
        let store = RocksStore {
            path,
            db: Arc::new(db),
        };
        meta::check_format(&store)?;
        Ok(store)
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::backend(self.location(), format!("{what}: {e}"))
    }

    fn cf(&self, name: &str) -> Result<&rocksdb::ColumnFamily, StoreError> {
        self.db
            .cf_handle(name)
            .ok_or_else(|| self.fail("cannot open column family", name))
    }
}

impl NodeStore for RocksStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        self.db
            .get_cf(self.cf(NODES)?, hash.0)
            .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        let nodes = self.cf(NODES)?;
        let metas = self.cf(META)?;
        let mut b = WriteBatch::default();
        for op in batch.into_ops() {
            match op {
                Op::PutNode { hash, value } => b.put_cf(nodes, hash.0, value),
                Op::DeleteNode(hash) => b.delete_cf(nodes, hash.0),
                Op::PutMeta { name, value } => b.put_cf(metas, name.as_bytes(), value),
                Op::DeleteMeta(name) => b.delete_cf(metas, name.as_bytes()),
            }
        }
        self.db
            .write(b)
            .map_err(|e| self.fail("cannot write batch", e))
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let snap = self.db.snapshot();
        for item in snap.iterator_cf(self.cf(NODES)?, IteratorMode::Start) {
            let (k, v) = item.map_err(|e| self.fail("cannot iterate nodes", e))?;
            let hash = Hash256::from_slice(&k)
                .ok_or_else(|| self.fail("cannot iterate nodes", "a key is not a node hash"))?;
            if f(hash, &v).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.db
            .get_cf(self.cf(META)?, name.as_bytes())
            .map_err(|e| self.fail(&format!("cannot read metadata record '{name}'"), e))
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        crate::backend::directory::dir_bytes(&self.path)
            .map_err(|e| self.fail("cannot measure the directory", e))
    }

    /// Writes, then flushes and syncs the write-ahead log.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if !batch.is_empty() {
            self.write(batch)?;
        }
        self.db
            .flush_wal(true)
            .map_err(|e| self.fail("cannot sync", e))
    }
}
