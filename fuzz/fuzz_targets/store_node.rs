//! Fuzz target: the store layer takes bytes it did not write (values read
//! back from disk, wire blobs from peers). For any input, decoding, parsing,
//! syncing and walking a backed map over hostile nodes return values or
//! errors, never panic, and never accept a node whose bytes do not hash to
//! its key.
//!
//! The first byte picks a mode, the rest feeds it.
//!
//! | mode | what |
//! |---|---|
//! | 0 value | 32-byte key, then a stored value: `NodeObject::decode` + `parse` + `to_wire` |
//! | 1 hashed value | a stored value keyed by its own hash (so the hash check passes): structure checks |
//! | 2 sync | wire blobs offered to a `SyncSession` for a small real map, at node IDs from the input; anything accepted verifies |
//! | 3 hostile store | values stored under their own hashes; a `BackedMap` opened at the first one walks, scans and writes through them |

#![no_main]

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use shamap::xrpl::sha512_half;
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{
    import_ledger, verify_all, AddOutcome, BackedMap, BackedOptions, MemStore, NodeId, NodeObject,
    NodeStore, SyncSession,
};

#[path = "common.rs"]
mod common;
use common::take32;

fn split_blobs(data: &[u8]) -> Vec<Vec<u8>> {
    common::split_blobs(data, 64)
}

/// A stored value keyed by the SHA512Half of its prefix part.
fn keyed(value: &[u8]) -> Hash256 {
    sha512_half(&[value.get(9..).unwrap_or_default()])
}

fn value_mode(mut data: &[u8]) {
    let key = Hash256(take32(&mut data));
    if let Ok(obj) = NodeObject::decode(key, data.to_vec()) {
        assert_eq!(obj.hash(), key);
        assert_eq!(
            keyed(obj.value()),
            key,
            "accepted a value that does not hash to its key"
        );
        let _ = obj.parse();
        let _ = obj.to_wire();
    }
}

fn hashed_value_mode(data: &[u8]) {
    let key = keyed(data);
    if let Ok(obj) = NodeObject::decode(key, data.to_vec()) {
        if let Ok(node) = obj.parse() {
            let _ = node.describe();
        }
        let _ = obj.to_wire();
    }
}

fn sync_mode(data: &[u8]) {
    let mut map = ShaMap::new(MapKind::AccountState);
    for i in 0..40u8 {
        let mut k = [i.wrapping_mul(37); 32];
        k[1] = i;
        map.insert(Key(k), &[i; 5]).expect("distinct keys");
    }
    let snap = map.snapshot();
    let target = MemStore::new();
    let mut s = SyncSession::new(&target, snap.root_hash(), MapKind::AccountState);
    for (n, blob) in split_blobs(data).into_iter().enumerate() {
        let outcome = if n == 0 {
            s.add_root_node(&blob)
        } else {
            let depth = blob.first().map_or(0, |b| b % 66);
            let mut k = [0u8; 32];
            for (i, b) in blob.iter().take(32).enumerate() {
                k[i] = *b;
            }
            match NodeId::new(&Key(k), depth) {
                Some(id) => s.add_known_node(&id, &blob),
                None => continue,
            }
        };
        let _ = outcome;
        let _ = s.missing_nodes(16);
    }
    // Whatever was accepted is a real node of the map: every stored value
    // verifies, and a complete sync verifies as a whole.
    let _ = target.for_each_value(&mut |h, v| {
        NodeObject::decode(h, v.to_vec()).expect("stored nodes verify");
        ControlFlow::Continue(())
    });
    if s.missing_nodes(1).map(|m| m.is_empty()).unwrap_or(false)
        && target.contains(&snap.root_hash()).unwrap_or(false)
    {
        verify_all(&target, &snap.root_hash()).expect("a complete sync verifies");
    }
    let _ = AddOutcome::Duplicate;
    let _ = import_ledger;
}

/// Builds the hostile store: blobs from last to first; a blob whose first
/// byte is odd becomes an inner node whose children (mask from its next two
/// bytes) are the nodes after it, so walks get past the hash checks and
/// reach the structure checks; other blobs are stored as they are.
fn hostile_store_mode(data: &[u8]) {
    let store = MemStore::new();
    let blobs = split_blobs(data);
    let mut hashes: Vec<Hash256> = vec![Hash256::ZERO; blobs.len()];
    for i in (0..blobs.len()).rev() {
        let b = &blobs[i];
        let value = if b.first().is_some_and(|x| x % 2 == 1) {
            let mask = u16::from_le_bytes([
                b.get(1).copied().unwrap_or(0),
                b.get(2).copied().unwrap_or(0),
            ]);
            let mut v = vec![0u8; 8];
            v.push(b.get(3).map_or(3, |t| if t % 3 == 0 { 4 } else { 3 }));
            let mut next = i + 1;
            let mut children = [Hash256::ZERO; 16];
            for (j, child) in children.iter_mut().enumerate() {
                if mask & (1 << j) != 0 && next < blobs.len() {
                    next += 1;
                    *child = hashes[next - 1];
                }
            }
            v.extend_from_slice(&shamap::node_hash::inner_message(&children));
            v
        } else {
            b.clone()
        };
        hashes[i] = keyed(&value);
        store.insert_raw(hashes[i], value);
    }
    let Some(&root) = hashes.first() else { return };
    let opts = BackedOptions {
        budget_bytes: 4096,
        ..BackedOptions::default()
    };
    let Ok(mut m) = BackedMap::open(&store, root, MapKind::AccountState, opts) else {
        return;
    };
    for b in &blobs {
        let mut k = [0u8; 32];
        for (i, x) in b.iter().rev().take(32).enumerate() {
            k[i] = *x;
        }
        let _ = m.get(&Key(k));
        let _ = m.upsert(Key(k), b.get(..8).unwrap_or_default());
        let _ = m.remove(&Key(k));
    }
    let mut n = 0;
    let _ = m.for_each(&mut |_, _| {
        n += 1;
        if n > 10_000 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let _ = m.root_hash();
    let _ = m.commit("fuzz");
}

fuzz_target!(|data: &[u8]| {
    common::run_mode(
        data,
        &[value_mode, hashed_value_mode, sync_mode, hostile_store_mode],
    );
});
