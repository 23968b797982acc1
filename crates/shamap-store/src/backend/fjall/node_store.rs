//! The [`NodeStore`] and [`BulkIngest`] traits for [`FjallStore`].

use std::ops::ControlFlow;

use shamap::Hash256;

use super::FjallStore;
use crate::error::StoreError;
use fjall::PersistMode;

use crate::store::{Batch, BatchedIngest, BulkIngest, NodeSink, NodeStore};

impl NodeStore for FjallStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        self.nodes
            .get(hash.0)
            .map(|v| v.map(|s| s.to_vec()))
            .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        self.nodes
            .contains_key(hash.0)
            .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        self.check_not_poisoned()?;
        self.write_with(batch, PersistMode::Buffer)
    }

    /// One batch persisted with `SyncAll`, numbered and acknowledged (an
    /// empty batch too: a sync); a read-only store only syncs its shadow.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if self.shadow.is_some() && batch.is_empty() {
            return self
                .db
                .persist(PersistMode::SyncAll)
                .map_err(|e| self.fail("cannot sync", e));
        }
        self.write_acknowledged(batch)
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        for guard in self.nodes.iter() {
            let (k, v) = guard
                .into_inner()
                .map_err(|e| self.fail("cannot iterate nodes", e))?;
            let hash = Hash256::from_slice(&k).ok_or_else(|| {
                self.fail(
                    "cannot iterate nodes",
                    format!("a key of {} bytes is not a node hash", k.len()),
                )
            })?;
            if f(hash, &v).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.meta
            .get(name.as_bytes())
            .map(|v| v.map(|s| s.to_vec()))
            .map_err(|e| self.fail(&format!("cannot read metadata record '{name}'"), e))
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        crate::backend::directory::dir_bytes(&self.path)
            .map_err(|e| self.fail("cannot measure the directory", e))
    }

    /// Table files built directly, then moved to the last level.
    fn bulk_ingest(&self) -> Option<&dyn BulkIngest> {
        Some(self)
    }
}

impl BulkIngest for FjallStore {
    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        if self.shadow.is_some() {
            return Err(self.fail(
                "cannot write",
                "the store is open read-only (its directory cannot be written)",
            ));
        }
        let mut ingestion = self
            .nodes
            .start_ingestion()
            .map_err(|e| self.fail("cannot start a bulk write", e))?;
        // fjall panics on keys out of order: refuse them here instead.
        let mut last: Option<Hash256> = None;
        for (hash, value) in nodes {
            if last.is_some_and(|l| l >= hash) {
                return Err(self.fail(
                    "cannot bulk-write nodes",
                    format!("node {hash} is out of hash order"),
                ));
            }
            last = Some(hash);
            ingestion
                .write(hash.0.to_vec(), value)
                .map_err(|e| self.fail("cannot bulk-write nodes", e))?;
        }
        // The table files and the version naming them are fsynced by fjall
        // before `finish` returns.
        ingestion
            .finish()
            .map_err(|e| self.fail("cannot finish a bulk write", e))
    }

    fn finish_bulk(&self) -> Result<(), StoreError> {
        // An ingested run lands in level 0, uncompressed. Left there, the first level-0
        // compaction after a few write-buffer flushes merges the whole
        // imported state into level 1, then on down through the levels, in
        // the background of whatever runs next (measured: a 10M-entry
        // import's first 20 commits ran at about 1k writes/s while fjall
        // rewrote its 3 GB). One major compaction moves it to the last
        // level in one pass (compressed: fjall's policy compresses the
        // deeper levels), into tables whose filter and index blocks are
        // pinned, so later compactions only touch what later writes
        // overlap. (`major_compact` is hidden in fjall's docs; it blocks
        // until done, and its tables and version are fsynced.)
        self.nodes
            .major_compact()
            .map_err(|e| self.fail("cannot compact the bulk-written nodes", e))
    }

    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        BatchedIngest(self).ingest_unordered(feed)
    }
}
