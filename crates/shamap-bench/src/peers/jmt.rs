//! jmt (Penumbra's jellyfish-merkle-tree): a radix-16 sparse Merkle tree
//! hashed with SHA-256, over its in-memory `MockTreeStore`. Each build or
//! block is one version: `put_value_set` computes the root and the node
//! batch, which is written to the store (both timed); nodes made stale by a
//! block are purged right after it, so memory holds one version.

use jmt::mock::MockTreeStore;
use jmt::{KeyHash, Sha256Jmt};

use super::{Engine, KeyBytes, Op, Workload};

pub struct JmtPeer {
    store: MockTreeStore,
    version: u64,
}

impl JmtPeer {
    pub fn new() -> JmtPeer {
        JmtPeer {
            store: MockTreeStore::default(),
            version: 0,
        }
    }

    fn put(&mut self, values: Vec<(KeyHash, Option<Vec<u8>>)>) -> [u8; 32] {
        let tree = Sha256Jmt::new(&self.store);
        let (root, batch) = tree
            .put_value_set(values, self.version)
            .expect("jmt put_value_set");
        self.store
            .write_tree_update_batch(batch)
            .expect("jmt write batch");
        if self.version > 0 {
            self.store
                .purge_stale_nodes(self.version)
                .expect("jmt purge");
        }
        self.version += 1;
        root.0
    }
}

impl Engine for JmtPeer {
    fn build(&mut self, w: &Workload) -> Option<[u8; 32]> {
        let values = w
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| (KeyHash(*k), Some(w.value(i as u64))))
            .collect();
        Some(self.put(values))
    }

    fn block(&mut self, w: &Workload, ops: &[Op]) -> Option<[u8; 32]> {
        let values = ops
            .iter()
            .map(|op| match *op {
                Op::Insert(k, tag) | Op::Update(k, tag) => (KeyHash(k), Some(w.value(tag))),
                Op::Remove(k) => (KeyHash(k), None),
            })
            .collect();
        Some(self.put(values))
    }

    fn gets(&mut self, probes: &[KeyBytes]) -> Option<usize> {
        let tree = Sha256Jmt::new(&self.store);
        let latest = self.version.checked_sub(1)?;
        Some(
            probes
                .iter()
                .filter(|k| tree.get(KeyHash(**k), latest).expect("jmt get").is_some())
                .count(),
        )
    }
}
