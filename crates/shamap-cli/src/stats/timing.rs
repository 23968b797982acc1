//! Where the time of a root hash goes.
//!
//! The root is recomputed from scratch ([`ShaMap::invalidate_hashes`], then
//! [`ShaMap::root_hash_serial`]: every leaf and inner node hashed once, on
//! one thread). The **hash floor** is the time the hash function alone
//! needs for the same work: the same number of calls on inputs of exactly
//! the same sizes — per leaf `kind.leaf_hash` over a datum of the leaf's
//! length (`4 + len + 32` bytes hashed, `4 + len` for transaction sets), per
//! inner node SHA512Half of 516 bytes — run in a tight loop on a buffer that
//! stays in cache. `floor / root` is the share of the root's time spent
//! inside the hash function; the rest is walking the tree (loading nodes
//! and child hashes from memory) and bookkeeping.
//!
//! Short measurements are repeated (up to 10 runs or 0.3 s) and the fastest
//! run is kept, for both figures alike.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use shamap::xrpl::sha512_half;
use shamap::{Hash256, Key, MapKind, ShaMap};

/// Bytes hashed per inner node: `MIN\0` and sixteen child hashes.
pub const INNER_INPUT: u64 = 4 + 16 * 32;

/// A run shorter than this is repeated.
const REPEAT_BELOW: Duration = Duration::from_millis(100);
/// Repeats stop once the runs add up to this.
const REPEAT_BUDGET: Duration = Duration::from_millis(300);
/// Most runs of one measurement.
const MAX_RUNS: u32 = 10;

/// The hashing-cost figures of one map.
#[derive(Clone, Debug, PartialEq)]
pub struct HashTiming {
    /// Fastest from-scratch serial root computation, seconds.
    pub root_seconds: f64,
    /// Fastest run of the hash floor, seconds.
    pub floor_seconds: f64,
    /// Runs each figure is the fastest of.
    pub runs: u32,
    /// Leaf hashes per root computation.
    pub leaf_hashes: u64,
    /// Inner-node hashes per root computation.
    pub inner_hashes: u64,
    /// Bytes fed to the hash function per root computation.
    pub hashed_bytes: u64,
}

impl HashTiming {
    /// `floor / root`, the share of the root's time inside the hash
    /// function (`None` when nothing was hashed).
    pub fn floor_share(&self) -> Option<f64> {
        (self.root_seconds > 0.0 && self.leaf_hashes > 0)
            .then(|| self.floor_seconds / self.root_seconds)
    }
}

/// Runs `f` once, or repeatedly while short, and returns the fastest run.
fn fastest(mut f: impl FnMut()) -> (Duration, u32) {
    let mut best = Duration::MAX;
    let mut spent = Duration::ZERO;
    let mut runs = 0;
    loop {
        let t = Instant::now();
        f();
        let d = t.elapsed();
        best = best.min(d);
        spent += d;
        runs += 1;
        if runs >= MAX_RUNS || best >= REPEAT_BELOW || spent >= REPEAT_BUDGET {
            return (best, runs);
        }
    }
}

/// Bytes one leaf of `len` data bytes feeds to the hash function.
pub fn leaf_input_len(kind: MapKind, len: u64) -> u64 {
    match kind {
        MapKind::TransactionNoMeta => 4 + len,
        _ => 4 + len + 32,
    }
}

/// Times the from-scratch root of `map` and its hash floor. `lengths` maps
/// each data length to the number of leaves with it. Returns the figures
/// and the root.
pub fn measure(map: &mut ShaMap, lengths: &BTreeMap<usize, u64>) -> (HashTiming, Hash256) {
    let kind = map.kind();
    let mut root = Hash256::ZERO;
    let (root_time, root_runs) = fastest(|| {
        map.invalidate_hashes();
        root = map.root_hash_serial();
    });
    let leaf_hashes: u64 = lengths.values().sum();
    let inner_hashes = if map.is_empty() {
        0
    } else {
        map.shape_stats().inner_nodes()
    };
    let (floor_time, floor_runs) = fastest(|| hash_floor(kind, lengths, inner_hashes));
    let hashed_bytes = lengths
        .iter()
        .map(|(len, n)| n * leaf_input_len(kind, *len as u64))
        .sum::<u64>()
        + inner_hashes * INNER_INPUT;
    let timing = HashTiming {
        root_seconds: root_time.as_secs_f64(),
        floor_seconds: floor_time.as_secs_f64(),
        runs: root_runs.min(floor_runs),
        leaf_hashes,
        inner_hashes,
        hashed_bytes,
    };
    (timing, root)
}

/// The hash function's work for one root computation, alone.
fn hash_floor(kind: MapKind, lengths: &BTreeMap<usize, u64>, inner: u64) {
    let longest = lengths.keys().next_back().copied().unwrap_or(0);
    let data: Vec<u8> = (0..longest).map(|i| (i * 131 % 251) as u8).collect();
    let key = Key([0x5A; 32]);
    for (&len, &count) in lengths {
        for _ in 0..count {
            black_box(kind.leaf_hash(black_box(&key), black_box(&data[..len])));
        }
    }
    let node = [0xA5u8; INNER_INPUT as usize];
    for _ in 0..inner {
        black_box(sha512_half(&[black_box(&node[..])]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_hash_of_a_root_computation() {
        let mut map = ShaMap::new(MapKind::AccountState);
        let mut lengths = BTreeMap::new();
        for i in 0..40u8 {
            let data = vec![i; 10 + usize::from(i % 3)];
            map.insert(Key([i; 32]), &data).expect("insert");
            *lengths.entry(data.len()).or_insert(0) += 1;
        }
        let expected = map.root_hash();
        let (t, root) = measure(&mut map, &lengths);
        assert_eq!(root, expected);
        assert_eq!(t.leaf_hashes, 40);
        assert_eq!(t.inner_hashes, map.shape_stats().inner_nodes());
        let leaf_bytes: u64 = lengths.iter().map(|(l, n)| n * (36 + *l as u64)).sum();
        assert_eq!(t.hashed_bytes, leaf_bytes + 516 * t.inner_hashes);
        assert!(t.floor_share().is_some());
    }

    #[test]
    fn empty_map_hashes_nothing() {
        let mut map = ShaMap::new(MapKind::TransactionNoMeta);
        let (t, root) = measure(&mut map, &BTreeMap::new());
        assert_eq!(root, Hash256::ZERO);
        assert_eq!((t.leaf_hashes, t.inner_hashes, t.hashed_bytes), (0, 0, 0));
        assert_eq!(t.floor_share(), None);
        assert_eq!(leaf_input_len(MapKind::TransactionNoMeta, 10), 14);
    }
}
