//! alloy-trie: Ethereum's Merkle-Patricia trie root (Keccak-256, RLP) from
//! keys in sorted order with its streaming `HashBuilder`. It keeps no tree,
//! so it has no updates or gets: rebuilding from sorted keys is its model.
//! The sort is timed (the keys arrive in random order, as for the others).

use alloy_trie::{HashBuilder, Nibbles};

use super::{Engine, KeyBytes, Op, Workload};

pub struct AlloyPeer;

impl AlloyPeer {
    pub fn new() -> AlloyPeer {
        AlloyPeer
    }
}

impl Engine for AlloyPeer {
    fn build(&mut self, w: &Workload) -> Option<[u8; 32]> {
        let order = w.sorted_keys();
        let mut hb = HashBuilder::default();
        let mut buf = Vec::with_capacity(w.value_len());
        for (k, tag) in &order {
            w.value_into(*tag, &mut buf);
            hb.add_leaf(Nibbles::unpack(k), &buf);
        }
        Some(hb.root().0)
    }

    fn block(&mut self, _: &Workload, _: &[Op]) -> Option<[u8; 32]> {
        None
    }

    fn gets(&mut self, _: &[KeyBytes]) -> Option<usize> {
        None
    }
}
