//! The [`Loader`]: a walk's node lookups answered from the cache or from
//! the store, through the store's one verified fetch.

use std::sync::{Mutex, MutexGuard};

use hashbrown::HashMap;

use shamap::{Hash256, MapKind};

use super::{CleanNode, Keep, NodeCache};
use crate::error::StoreError;
use crate::map::fetch::fetch_required;
use crate::node::NodeType;
use crate::node_id::MapNode;
use crate::node_id::NodeId;
use crate::store::NodeStore;

/// A verified node as the cache holds it.
pub(super) fn clean_node(node: MapNode) -> CleanNode {
    match node {
        MapNode::Inner(children) => CleanNode::from_children(&children),
        MapNode::Leaf { key, data } => CleanNode::Leaf { key, data },
    }
}

/// The store, map kind and cache: everything a walk needs besides the tree.
pub(crate) struct Loader<'s> {
    pub(crate) store: &'s dyn NodeStore,
    pub(crate) kind: MapKind,
    pub(crate) node_type: NodeType,
    pub(crate) budget: usize,
    cache: Mutex<NodeCache>,
}

impl<'s> Loader<'s> {
    /// A loader for a map of kind `kind` on `store`, its cache empty, for
    /// a memory budget of `budget` bytes.
    pub(crate) fn new(store: &'s dyn NodeStore, kind: MapKind, budget: usize) -> Loader<'s> {
        Loader {
            store,
            kind,
            node_type: NodeType::for_map(kind),
            budget,
            cache: Mutex::new(NodeCache::new(budget)),
        }
    }

    pub(crate) fn cache(&self) -> MutexGuard<'_, NodeCache> {
        // A panic while holding the lock leaves the cache consistent (every
        // mutation completes before the next can start), so poison is moot.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The node under `hash` at `id`: from the cache, or through the
    /// store's one verified fetch (`crate::map::fetch`: hash, type and place; a
    /// cache hit is checked against the place too). `keep` says whether a
    /// loaded node enters the cache.
    pub(crate) fn fetch(
        &self,
        hash: &Hash256,
        id: &NodeId,
        keep: Keep,
    ) -> Result<CleanNode, StoreError> {
        {
            let mut cache = self.cache();
            if let Some(n) = cache.get(hash) {
                n.check_place(hash, id)?;
                return Ok(n);
            }
            // Used twice: admitted (a scan, which keeps nothing, reads
            // the store instead).
            let capacity = match keep {
                Keep::Nothing => None,
                Keep::All { capacity } | Keep::Reused { capacity } => Some(capacity),
            };
            if let Some(capacity) = capacity {
                if let Some(n) = cache.take_on_probation(hash) {
                    n.check_place(hash, id)?;
                    cache.hits += 1;
                    cache.insert(*hash, &n, capacity);
                    return Ok(n);
                }
            }
        }
        let clean = clean_node(fetch_required(self.store, hash, self.kind, id)?.node);
        let mut cache = self.cache();
        cache.loads += 1;
        match keep {
            Keep::Nothing => {}
            Keep::All { capacity } => cache.insert(*hash, &clean, capacity),
            Keep::Reused { capacity } => {
                if matches!(clean, CleanNode::Inner { .. }) || cache.seen_before(hash, capacity) {
                    cache.insert(*hash, &clean, capacity);
                } else {
                    cache.put_on_probation(*hash, clean.clone(), capacity);
                }
            }
        }
        Ok(clean)
    }

    /// [`Loader::fetch`] of many nodes, each a hash and the position it was
    /// reached at, cached within `capacity`: the ones not cached are read
    /// in one go ([`NodeStore::read_values`]) and verified together (their
    /// hashes in one multi-lane batch), instead of one by one. Calls
    /// `each(i, node)` with the node of `wanted[i]`, the cached ones first;
    /// the first failure is returned.
    pub(crate) fn fetch_many(
        &self,
        wanted: &[(Hash256, NodeId)],
        capacity: usize,
        mut each: impl FnMut(usize, &CleanNode),
    ) -> Result<(), StoreError> {
        // The nodes to read, and which of `wanted` each answers.
        let mut missing: Vec<(Hash256, NodeId)> = Vec::new();
        let mut answers: Vec<(usize, usize)> = Vec::new();
        let mut reading: HashMap<Hash256, usize> = HashMap::new();
        {
            let mut cache = self.cache();
            for (i, (hash, id)) in wanted.iter().enumerate() {
                let cached = match cache.get(hash) {
                    Some(n) => Some(n),
                    None => cache.take_on_probation(hash).inspect(|n| {
                        // Used twice: admitted.
                        cache.hits += 1;
                        cache.insert(*hash, n, capacity);
                    }),
                };
                match cached {
                    Some(n) => {
                        n.check_place(hash, id)?;
                        each(i, &n);
                    }
                    None => {
                        // A node on several paths is read once; at another
                        // place (a damaged store: a valid node has one),
                        // read and checked again there.
                        let at = match reading.get(hash) {
                            Some(&at) if missing[at].1 == *id => at,
                            _ => {
                                reading.insert(*hash, missing.len());
                                missing.push((*hash, *id));
                                missing.len() - 1
                            }
                        };
                        answers.push((i, at));
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let hashes: Vec<Hash256> = missing.iter().map(|m| m.0).collect();
        let values = self.store.read_values(&hashes)?;
        let mut loaded = Vec::with_capacity(missing.len());
        for f in crate::map::fetch::fetched_values(self.kind, &missing, values) {
            loaded.push(clean_node(f?.node));
        }
        {
            let mut cache = self.cache();
            cache.loads += loaded.len() as u64;
            for ((hash, _), node) in missing.iter().zip(&loaded) {
                cache.insert(*hash, node, capacity);
            }
        }
        for (i, at) in answers {
            each(i, &loaded[at]);
        }
        Ok(())
    }
}
