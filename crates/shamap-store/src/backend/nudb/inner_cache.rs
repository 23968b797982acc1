//! The inner nodes the audit's scan checked, kept for its walk.
//!
//! A ledger's state map has about one inner node for every three leaves
//! (1M random keys: 360,000), and the walk must read each to learn its
//! children: one random read apiece. The scan meets every one of them on
//! its sequential pass and checks its hash, so it keeps their stored
//! encodings (rippled's codec type 2 or 3: a type byte, a branch mask and
//! the hashes present, or 16 hashes) in a few large buffers, up to
//! the budget's share ([`super::budget`]); the walk takes a node's children from here and
//! reads from the data file only what did not fit. Memory is bounded by
//! that constant whatever the store's size.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hashbrown::HashMap;
use shamap::Hash256;

/// Bytes an index entry is counted as.
const ENTRY_COST: usize = 64;

/// Where a cached inner node is.
#[derive(Clone, Copy, Debug)]
struct Place {
    /// Which buffer, and where in it its encoding starts.
    buffer: u32,
    start: u32,
    /// Its record: directory and byte offset.
    part: u32,
    offset: u64,
}

/// One scan worker's share, filled in file order.
#[derive(Debug, Default)]
pub struct InnerShare {
    buffer: Vec<u8>,
    nodes: Vec<(Hash256, u32, u32, u64)>,
}

impl InnerShare {
    /// Keeps the stored encoding `raw` (type byte first) of the inner node
    /// `key` of directory `part` at `offset`, when `budget` allows.
    pub fn keep(
        &mut self,
        budget: &InnerBudget,
        key: Hash256,
        part: usize,
        offset: u64,
        raw: &[u8],
    ) {
        let cost = raw.len() + 2 + ENTRY_COST;
        if raw.len() > usize::from(u16::MAX)
            || self.buffer.len() + raw.len() + 2 > u32::MAX as usize
            || !budget.take(cost)
        {
            return;
        }
        let start = self.buffer.len() as u32;
        self.buffer
            .extend_from_slice(&(raw.len() as u16).to_le_bytes());
        self.buffer.extend_from_slice(raw);
        self.nodes.push((key, start, part as u32, offset));
    }
}

/// The bytes the cache may still take, shared by the scan's workers.
#[derive(Debug)]
pub struct InnerBudget {
    left: AtomicUsize,
    full: AtomicBool,
}

impl InnerBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> InnerBudget {
        InnerBudget {
            left: AtomicUsize::new(bytes),
            full: AtomicBool::new(false),
        }
    }

    /// Takes `cost` bytes; false (and from then on) when they are not left.
    fn take(&self, cost: usize) -> bool {
        if self.full.load(Ordering::Relaxed) {
            return false;
        }
        let ok = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
                l.checked_sub(cost)
            })
            .is_ok();
        if !ok {
            self.full.store(true, Ordering::Relaxed);
        }
        ok
    }

    /// True once a node did not fit.
    pub fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }
}

/// The inner nodes kept by the scan, by key.
#[derive(Default)]
pub struct InnerCache {
    buffers: Vec<Vec<u8>>,
    index: HashMap<Hash256, Place>,
}

impl std::fmt::Debug for InnerCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InnerCache({} inner nodes)", self.index.len())
    }
}

impl InnerCache {
    /// The cache of the workers' shares.
    pub fn from_shares(shares: Vec<InnerShare>) -> InnerCache {
        let mut c = InnerCache {
            buffers: Vec::with_capacity(shares.len()),
            index: HashMap::with_capacity(shares.iter().map(|s| s.nodes.len()).sum()),
        };
        for (b, s) in shares.into_iter().enumerate() {
            for (key, start, part, offset) in s.nodes {
                c.index.insert(
                    key,
                    Place {
                        buffer: b as u32,
                        start,
                        part,
                        offset,
                    },
                );
            }
            c.buffers.push(s.buffer);
        }
        c
    }

    /// Inner nodes held.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The children of the inner node `key`, and its record (directory and
    /// byte offset), when the cache holds it.
    pub fn children(&self, key: &Hash256) -> Option<([Hash256; 16], (usize, u64))> {
        let p = self.index.get(key)?;
        let b = self.buffers.get(p.buffer as usize)?;
        let start = p.start as usize;
        let len = usize::from(u16::from_le_bytes([*b.get(start)?, *b.get(start + 1)?]));
        let raw = b.get(start + 2..start + 2 + len)?;
        let children = crate::inner_codec::decode_children(raw)?;
        Some((children, (p.part as usize, p.offset)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_inner(seed: u8) -> Vec<u8> {
        let mut raw = vec![3u8];
        for i in 0..16u8 {
            raw.extend_from_slice(&[seed.wrapping_add(i); 32]);
        }
        raw
    }

    #[test]
    fn kept_nodes_come_back_and_the_budget_holds() {
        let budget = InnerBudget::new(3 * (513 + 2 + ENTRY_COST));
        let mut shares = vec![InnerShare::default(), InnerShare::default()];
        for i in 0..5u8 {
            shares[usize::from(i % 2)].keep(
                &budget,
                Hash256([i; 32]),
                0,
                u64::from(i) * 100,
                &full_inner(i),
            );
        }
        assert!(budget.is_full());
        let c = InnerCache::from_shares(shares);
        assert_eq!(c.len(), 3);
        for i in 0..3u8 {
            let (children, at) = c.children(&Hash256([i; 32])).expect("kept");
            assert_eq!(at, (0, u64::from(i) * 100));
            assert_eq!(children[15], Hash256([i + 15; 32]));
        }
        assert!(c.children(&Hash256([4; 32])).is_none());
    }
}
