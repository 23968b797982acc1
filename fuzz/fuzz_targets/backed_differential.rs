//! Differential fuzz target: the store's `BackedMap` (over a `MemStore`,
//! with a budget small enough that it evicts, reloads and spills) and the
//! engine's in-memory `ShaMap` are two trees by design; fed the same blocks
//! of upserts and removes they are one in behaviour. After every block both
//! roots agree and the backed map commits; at the end both hold the same
//! items, and so does a backed map reopened from the store alone.
//!
//! Input: a header byte, then operations of three bytes each.
//!
//! | byte | what |
//! |---|---|
//! | header, bits 0-1 | map kind: state, transactions with metadata, transactions without |
//! | header, bits 2-3 | budget: 4, 8, 16 or 64 KiB |
//! | op byte 0, bits 0-1 | 0-1 upsert, 2 remove, 3 end of block (commit; reopen when bit 2) |
//! | op byte 1 | the key: one of 256, sharing prefixes of 1 to 31 bytes |
//! | op byte 2 | the data: 12 to 75 bytes, a pattern from this byte |
//!
//! In a transaction map without metadata the key is the data's transaction
//! ID (as rippled requires), so byte 2 alone picks it and keys still
//! collide.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use shamap::xrpl::transaction_id;
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{verify_all, BackedMap, BackedOptions, MemStore};

#[path = "../../crates/shamap-store/tests/backed_common.rs"]
mod backed_common;
use backed_common::{contents, small_key};

/// At most this many operations per input, so that one run stays short.
const MAX_OPS: usize = 3000;

/// 12 to 75 bytes, a pattern of `b` (the same `b` gives the same data).
fn small_data(b: u8) -> Vec<u8> {
    let len = 12 + usize::from(b % 64);
    (0..len)
        .map(|i| b.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

fn engine_items(m: &ShaMap) -> BTreeMap<Key, Vec<u8>> {
    m.iter().map(|(k, v)| (*k, v.to_vec())).collect()
}

/// Ends a block: the roots agree, the backed map commits that root, and
/// (when `reopen`) is replaced by one opened from the store alone.
fn end_block<'s>(
    store: &'s MemStore,
    backed: &mut BackedMap<'s>,
    engine: &mut ShaMap,
    opts: BackedOptions,
    reopen: bool,
    block: u32,
) {
    let root = engine.root_hash();
    assert_eq!(backed.root_hash(), root, "block {block}: roots differ");
    assert_eq!(
        backed.commit("head").expect("commit to a memory store"),
        root,
        "block {block}: committed root differs"
    );
    assert!(!backed.is_dirty());
    if reopen {
        *backed =
            BackedMap::open(store, root, engine.kind(), opts).expect("reopen the committed root");
        assert_eq!(backed.root_hash(), root);
    }
}

fn run(data: &[u8]) {
    let Some((&header, ops)) = data.split_first() else {
        return;
    };
    let kind = match header & 3 {
        0 | 3 => MapKind::AccountState,
        1 => MapKind::TransactionWithMeta,
        _ => MapKind::TransactionNoMeta,
    };
    let opts = BackedOptions {
        budget_bytes: [4 << 10, 8 << 10, 16 << 10, 64 << 10][usize::from((header >> 2) & 3)],
        ..BackedOptions::default()
    };
    let store = MemStore::new();
    let mut backed = BackedMap::new(&store, kind, opts);
    let mut engine = ShaMap::new(kind);
    let mut block = 0u32;
    for op in ops.chunks_exact(3).take(MAX_OPS) {
        let d = small_data(op[2]);
        let key = if kind == MapKind::TransactionNoMeta {
            Key::from(transaction_id(&d))
        } else {
            small_key(op[1])
        };
        match op[0] & 3 {
            0 | 1 => {
                let added = engine.upsert(key, &d).expect("engine upsert");
                let backed_added = backed.upsert(key, &d).expect("backed upsert");
                assert_eq!(backed_added, added, "upsert: was the key new?");
            }
            2 => {
                let present = engine.remove(&key).is_ok();
                let backed_present = backed.remove(&key).expect("backed remove");
                assert_eq!(backed_present, present, "remove: was the key present?");
            }
            _ => {
                end_block(
                    &store,
                    &mut backed,
                    &mut engine,
                    opts,
                    op[0] & 4 != 0,
                    block,
                );
                block += 1;
            }
        }
        assert_eq!(
            backed.get(&key).expect("backed get"),
            engine.get(&key).map(<[u8]>::to_vec),
            "after the operation the key reads the same"
        );
    }
    end_block(&store, &mut backed, &mut engine, opts, false, block);
    let items = engine_items(&engine);
    assert_eq!(contents(&backed), items, "contents differ");
    let root = engine.root_hash();
    let reopened = BackedMap::open(&store, root, kind, opts).expect("reopen at the end");
    assert_eq!(contents(&reopened), items, "reopened contents differ");
    if root != Hash256::ZERO {
        let report = verify_all(&store, &root).expect("every committed node verifies");
        assert_eq!(report.leaves as usize, items.len());
    }
    let st = backed.stats();
    assert!(st.cache_peak_bytes <= opts.budget_bytes, "{st:?}");
}

fuzz_target!(|data: &[u8]| run(data));
