//! Tests of the node arena.

use super::*;

fn nib(v: u8) -> Nibble {
    Nibble::new(v).expect("< 16")
}

#[test]
fn leaves_hold_key_and_data_of_every_length_class() {
    let mut a = NodeArena::new(SizeClasses::DEFAULT);
    for len in [0usize, 1, 7, 8, 9, 167, 4031, 4032, 4033, 70_000] {
        let data: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
        let key = Key([len as u8; 32]);
        let mut leaf = a.new_leaf(&key, &data);
        assert_eq!(leaf.leaf().expect("leaf").data(), &data[..], "len {len}");
        assert_eq!(leaf.leaf().expect("leaf").key(), &key);
        assert!(leaf.hash().is_zero());
        leaf.set_hash(Hash256([9; 32]));
        let shorter = &data[..len / 2];
        a.set_leaf_data(&mut leaf, shorter);
        assert_eq!(leaf.leaf().expect("leaf").data(), shorter);
        assert_eq!(leaf.leaf().expect("leaf").key(), &key);
        assert!(leaf.hash().is_zero(), "changed data marks the hash stale");
        a.free_node(leaf);
    }
    let c = a.counters();
    assert_eq!((c.leaves, c.leaf_data_bytes, c.large_leaves), (0, 0, 0));
    a.audit().expect("pools consistent");
}

/// Hashless leaves: key and data read back at every length class,
/// pooled chunks 32 bytes smaller (no hash), neighbours untouched by
/// writes, and every chunk returned to its pool.
#[test]
fn hashless_leaves_hold_key_and_data_without_a_hash() {
    let mut a = NodeArena::with_policy(
        SizeClasses::DEFAULT,
        HugePages::Never,
        LeafHashes::Recomputed,
    );
    let lens = [0usize, 1, 7, 8, 9, 167, 952, 953, 960, 961, 4033, 70_000];
    let mut leaves = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|j| (j * 31 + i) as u8).collect();
        // Two leaves of each size, side by side in their pool.
        for k in 0..2u8 {
            let key = Key([len as u8 ^ k; 32]);
            leaves.push((key, data.clone(), a.new_leaf(&key, &data)));
        }
    }
    let c = a.counters();
    let pooled: usize = c
        .leaf_pools
        .iter()
        .map(|p| p.live_chunks * p.chunk_size)
        .sum();
    let want: usize = lens
        .iter()
        .map(|&l| leaf_chunk_size(l))
        .filter(|&c| c <= MAX_POOLED_CHUNK)
        .map(|c| 2 * (c - LEAF_HASH_ROOM))
        .sum();
    assert_eq!(pooled, want, "pooled hashless leaves are 32 bytes smaller");
    for (_, data, leaf) in &mut leaves {
        let half = data[..data.len() / 2].to_vec();
        a.set_leaf_data(leaf, &half);
        *data = half;
    }
    for (key, data, leaf) in &leaves {
        let l = leaf.leaf().expect("leaf");
        assert_eq!((l.key(), l.data()), (key, &data[..]));
    }
    for (_, _, leaf) in leaves {
        a.free_node(leaf);
    }
    let c = a.counters();
    assert_eq!((c.leaves, c.leaf_data_bytes, c.large_leaves), (0, 0, 0));
    assert!(c.leaf_pools.is_empty(), "every chunk went back");
    a.audit().expect("pools consistent");
}

#[test]
fn children_grow_and_shrink_through_every_class() {
    let mut a = NodeArena::new(SizeClasses::DEFAULT);
    let mut inner = a.new_inner();
    let order = [7u8, 0, 15, 3, 9, 1, 12, 5, 14, 2, 11, 4, 8, 6, 13, 10];
    for (i, &b) in order.iter().enumerate() {
        let leaf = a.new_leaf(&Key([b; 32]), &[b]);
        a.insert_child(&mut inner, nib(b), leaf);
        let view = inner.inner().expect("inner");
        assert_eq!(view.mask().count(), i + 1);
        assert_eq!(
            a.classes().capacity(view.class()),
            a.classes().capacity(a.classes().class_for(i + 1))
        );
        let keys: Vec<u8> = view
            .children()
            .iter()
            .map(|c| c.leaf().expect("leaf").key().0[0])
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "children stay in branch order");
        assert_eq!(
            view.child(nib(b)).map(|c| c.leaf().expect("leaf").data()),
            Some(&[b][..])
        );
    }
    for (i, &b) in order.iter().rev().enumerate() {
        let child = a.remove_child(&mut inner, nib(b));
        assert_eq!(child.leaf().expect("leaf").data(), &[b]);
        a.free_node(child);
        let view = inner.inner().expect("inner");
        assert_eq!(view.mask().count(), 15 - i);
        assert_eq!(view.class(), a.classes().class_for(15 - i));
    }
    a.free_node(inner);
    let c = a.counters();
    assert_eq!(c.child_slots_used, 0);
    assert!(c.inner_pools.iter().all(|(_, p)| p.live_chunks == 0));
    a.audit().expect("pools consistent");
}

#[test]
fn release_frees_an_unshared_tree() {
    let mut a = NodeArena::new(SizeClasses::new(&[2, 4, 10, 16]).expect("valid"));
    let mut root = a.new_inner();
    for b in 0..16u8 {
        let mut mid = a.new_inner();
        for c in 0..(b % 5 + 1) {
            let leaf = a.new_leaf(&Key([c; 32]), &vec![c; 100 * usize::from(c)]);
            a.insert_child(&mut mid, nib(c), leaf);
        }
        a.insert_child(&mut root, nib(b), mid);
    }
    assert!(chunk_addr(&root).as_ptr().addr().is_multiple_of(8));
    a.release(root);
    let c = a.counters();
    assert_eq!((c.leaves, c.child_slots_used, c.leaf_data_bytes), (0, 0, 0));
    assert!(c.inner_pools.iter().all(|(_, p)| p.live_chunks == 0));
    a.audit().expect("pools consistent");
}

/// An arena of the default size classes with stored leaf hashes that
/// moves to huge pages past `threshold` bytes.
fn beyond(threshold: usize) -> NodeArena {
    NodeArena::with_policy(
        SizeClasses::DEFAULT,
        HugePages::Beyond(threshold),
        LeafHashes::Stored,
    )
}

/// The key whose first four bytes are `i`, big-endian, and the rest zero.
fn numbered_key(i: u32) -> Key {
    let mut k = [0u8; 32];
    k[..4].copy_from_slice(&i.to_be_bytes());
    Key(k)
}

#[test]
fn a_beyond_policy_moves_new_blocks_to_huge_regions_past_its_threshold() {
    let mut a = beyond(1 << 20);
    assert_eq!(a.source(), BlockSource::Pages);
    let mut leaves = Vec::new();
    for i in 0..40_000u32 {
        leaves.push(a.new_leaf(&numbered_key(i), &[7u8; 64]));
    }
    assert_eq!(a.source(), BlockSource::Huge, "switched past 1 MiB");
    let never = NodeArena::with_policy(SizeClasses::DEFAULT, HugePages::Never, LeafHashes::Stored);
    assert_eq!(never.source(), BlockSource::Pages);
    for leaf in leaves {
        a.free_node(leaf);
    }
    a.audit().expect("pools consistent");
}

/// Many leaf sizes, each pool with one mostly untouched block: the
/// blocks held (100 pools of 256 KiB) are far past the threshold, the
/// bytes touched are not, and only those count.
#[test]
fn a_beyond_policy_counts_touched_bytes_not_blocks_held() {
    let mut a = beyond(8 << 20);
    let mut leaves = Vec::new();
    for i in 0..8192u32 {
        let len = (i as usize % 100 + 1) * 8;
        leaves.push(a.new_leaf(&numbered_key(i), &vec![7u8; len]));
    }
    let c = a.counters();
    let (blocks, touched) = c
        .leaf_pools
        .iter()
        .fold((0, 0), |(b, t), p| (b + p.blocks, t + p.touched_bytes));
    assert!(
        blocks * crate::alloc::BLOCK_SIZE > 16 << 20,
        "{blocks} blocks"
    );
    assert!(touched < 8 << 20, "{touched} bytes touched");
    assert_eq!(a.source(), BlockSource::Pages, "stayed on base pages");
    for leaf in leaves {
        a.free_node(leaf);
    }
    a.audit().expect("pools consistent");
}
