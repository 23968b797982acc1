//! The cache against a model map.

use std::collections::HashMap as ModelMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use shamap::Key;

use super::*;

fn random_hash(rng: &mut SmallRng) -> Hash256 {
    Hash256(rng.gen())
}

fn random_node(rng: &mut SmallRng) -> CleanNode {
    if rng.gen_bool(0.5) {
        let mut children = [Hash256::ZERO; 16];
        for c in children.iter_mut() {
            if rng.gen_bool(0.6) {
                *c = random_hash(rng);
            }
        }
        CleanNode::from_children(&children)
    } else {
        let len = rng.gen_range(0..600);
        CleanNode::Leaf {
            key: Key(rng.gen()),
            data: (0..len).map(|_| rng.gen()).collect(),
        }
    }
}

fn same(a: &CleanNode, b: &CleanNode) -> bool {
    match (a, b) {
        (
            CleanNode::Inner {
                mask: ma,
                hashes: ha,
            },
            CleanNode::Inner {
                mask: mb,
                hashes: hb,
            },
        ) => ma == mb && ha == hb,
        (CleanNode::Leaf { key: ka, data: da }, CleanNode::Leaf { key: kb, data: db }) => {
            ka == kb && da == db
        }
        _ => false,
    }
}

/// Random inserts and gets, the capacity changing on the way (as the
/// dirty nodes and the store's share do): every hit is the node
/// inserted under that hash, the cache never holds more than the
/// capacity an insert is given once it returns, and the index names only held
/// segments (a get of every model node decodes without panicking).
#[test]
fn the_cache_answers_what_was_inserted_within_its_capacity() {
    let (seed, mut rng) = crate::test_support::seeded_rng();
    let budget = 1 << 20;
    let mut cache = NodeCache::new(budget);
    let mut model: ModelMap<Hash256, CleanNode> = ModelMap::new();
    let mut hashes: Vec<Hash256> = Vec::new();
    let mut capacity = budget / 2;
    let (mut hits, mut evicted) = (0, 0);
    for step in 0..60_000 {
        if step % 5_000 == 0 {
            capacity = rng.gen_range(budget / 8..=budget);
        }
        if hashes.is_empty() || rng.gen_bool(0.4) {
            let hash = random_hash(&mut rng);
            let node = random_node(&mut rng);
            let peak = cache.peak;
            cache.insert(hash, &node, capacity);
            model.insert(hash, node);
            hashes.push(hash);
            // Nor does the index's move into a grown or shrunk table
            // (old and new held at once) go past it.
            assert!(
                cache.peak == peak || cache.peak <= capacity,
                "seed {seed}: step {step}: {} bytes held at the peak, capacity {capacity}",
                cache.peak
            );
            // An insert shrinks the cache to the capacity it is given.
            assert!(
                cache.held_bytes() <= capacity,
                "seed {seed}: step {step}: {} bytes held, capacity {capacity}",
                cache.held_bytes()
            );
        } else {
            // Recent nodes more often, as a working set.
            let back = rng.gen_range(0..hashes.len().min(3_000));
            let hash = hashes[hashes.len() - 1 - back];
            match cache.get(&hash) {
                Some(n) => {
                    assert!(
                        same(&n, &model[&hash]),
                        "seed {seed}: step {step}: another node"
                    );
                    hits += 1;
                }
                None => evicted += 1,
            }
        }
    }
    assert!(
        hits > 1_000 && evicted > 1_000,
        "seed {seed}: {hits} hits, {evicted} misses"
    );
    for (hash, node) in &model {
        if let Some(n) = cache.get(hash) {
            assert!(same(&n, node), "seed {seed}: another node at the end");
        }
    }
}

/// Small nodes make the index a large share of the cache: its moves
/// into a grown table (as entries come) and a shrunk one (as the
/// capacity falls), both tables held at once, stay inside the capacity.
#[test]
fn the_index_moves_into_a_new_table_inside_the_capacity() {
    let (seed, mut rng) = crate::test_support::seeded_rng();
    let budget = 4 << 20;
    let mut cache = NodeCache::new(budget);
    let mut moves = 0;
    for round in 0..8 {
        // Full, then a fraction: the fall leaves the table too large.
        let capacity = if round % 2 == 0 {
            rng.gen_range(budget / 2..=budget)
        } else {
            rng.gen_range(budget / 8..=budget / 3)
        };
        for step in 0..40_000 {
            let table = cache.table_bytes();
            let peak = cache.peak;
            let node = CleanNode::Leaf {
                key: Key(rng.gen()),
                data: vec![1; rng.gen_range(0..16)],
            };
            cache.insert(random_hash(&mut rng), &node, capacity);
            moves += usize::from(cache.table_bytes() != table);
            assert!(
                cache.peak == peak || cache.peak <= capacity,
                "seed {seed}: round {round}, step {step}: {} bytes held while the index moved, capacity {capacity}",
                cache.peak
            );
        }
    }
    assert!(moves >= 6, "seed {seed}: the index moved {moves} times");
}

/// A node read since it was written survives its segment's recycling
/// (once); one not read leaves the cache.
#[test]
fn a_node_used_since_it_was_written_gets_a_second_chance() {
    let mut rng = SmallRng::seed_from_u64(7);
    let budget = 1 << 20;
    let capacity = budget / 2;
    let mut cache = NodeCache::new(budget);
    let leaf = |rng: &mut SmallRng| CleanNode::Leaf {
        key: Key(rng.gen()),
        data: vec![7; 200],
    };
    let (used, unused) = (random_hash(&mut rng), random_hash(&mut rng));
    cache.insert(used, &leaf(&mut rng), capacity);
    cache.insert(unused, &leaf(&mut rng), capacity);
    assert!(cache.get(&used).is_some());
    // Fill the cache until the first segment has been recycled.
    let first = cache.segments.front().expect("a segment").number;
    while cache.segments.iter().any(|s| s.number == first) {
        cache.insert(random_hash(&mut rng), &leaf(&mut rng), capacity);
    }
    assert!(
        cache.find(&unused).is_none(),
        "a node never read is evicted"
    );
    assert!(
        cache.find(&used).is_some(),
        "a node read has its second chance"
    );
    // Not read again: the next recycling of its segment evicts it.
    let now = cache.find(&used).expect("held").segment;
    while cache.segments.iter().any(|s| s.number == now) {
        cache.insert(random_hash(&mut rng), &leaf(&mut rng), capacity);
    }
    assert!(
        cache.find(&used).is_none(),
        "no third chance without a read"
    );
    assert!(cache.held_bytes() <= capacity);
}

/// Two nodes whose hashes share their first 8 bytes (the table's key):
/// the later one takes the slot, and the earlier one is a miss, never
/// answered with the other's node.
#[test]
fn nodes_sharing_a_hash_prefix_are_told_apart() {
    let mut cache = NodeCache::new(1 << 20);
    let mut a = Hash256([1; 32]);
    let mut b = Hash256([1; 32]);
    a.0[31] = 2;
    b.0[31] = 3;
    let node = |byte: u8| CleanNode::Leaf {
        key: Key([byte; 32]),
        data: vec![byte; 10],
    };
    cache.insert(a, &node(0xA), 1 << 19);
    assert!(matches!(cache.get(&a), Some(CleanNode::Leaf { key, .. }) if key == Key([0xA; 32])));
    assert!(cache.get(&b).is_none(), "b was never inserted");
    cache.insert(b, &node(0xB), 1 << 19);
    assert!(matches!(cache.get(&b), Some(CleanNode::Leaf { key, .. }) if key == Key([0xB; 32])));
    assert!(cache.get(&a).is_none(), "a's slot went to b");
    assert_eq!(cache.entries(), 1);
}
