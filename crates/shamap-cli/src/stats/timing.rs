//! Where the time of a root hash goes.
//!
//! The root is recomputed from scratch ([`ShaMap::invalidate_hashes`], then
//! [`ShaMap::root_hash_serial`]: every leaf and inner node hashed once, on
//! one thread). The engine hashes in batches: it gathers the stale leaves'
//! inputs (`prefix ‖ data ‖ key`) 512 at a time and hands each batch to
//! the map's multi-lane batch function (`sha512-lanes`, or `blake3-lanes`
//! for a BLAKE3 map; several messages per SIMD kernel call), then the
//! inner nodes level by level, 516 bytes each.
//!
//! The **hash floor** is the time that function alone needs for the same
//! work: the same number of messages of exactly the same sizes (per leaf
//! `4 + len + 32` bytes, `4 + len` for transaction sets; per inner node 516),
//! in batches of the same size, leaves in a random order like the engine's
//! (key order is random with respect to length), from buffers that stay in
//! cache. Only the hash calls are timed; building the batches is not.
//! `floor / root` is the share of the root's time spent inside the hash
//! function; the rest is walking the tree (loading nodes and child hashes
//! from memory), copying inputs together and bookkeeping.
//!
//! Short measurements are repeated (up to 10 runs or 0.3 s) and the fastest
//! run is kept, for both figures alike.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use shamap::{Hash256, HashFunction, MapKind, ShaMap};

use super::synth::SplitMix64;

/// Bytes hashed per inner node (the node hash format's inner message).
pub const INNER_INPUT: u64 = shamap::node_hash::INNER_MESSAGE_LEN as u64;

/// Messages per batch call, as the engine's batched rehash uses.
const BATCH: usize = 512;
/// Largest per-message buffer region (bounds the floor's buffer to 8 MiB).
const MAX_REGION: usize = 16 * 1024;

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
    /// The multi-lane SHA-512 back end in use (`avx512`, `avx2`, `scalar`).
    pub backend: &'static str,
}

impl HashTiming {
    /// `floor / root`, the share of the root's time inside the hash
    /// function (`None` when nothing was hashed).
    pub fn floor_share(&self) -> Option<f64> {
        (self.root_seconds > 0.0 && self.leaf_hashes > 0)
            .then(|| self.floor_seconds / self.root_seconds)
    }
}

/// Runs `f` once, or repeatedly while short, and returns the fastest of
/// the durations it reports.
fn fastest(mut f: impl FnMut() -> Duration) -> (Duration, u32) {
    let mut best = Duration::MAX;
    let mut spent = Duration::ZERO;
    let mut runs = 0;
    loop {
        let d = f();
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
        let t = Instant::now();
        root = map.root_hash_serial();
        t.elapsed()
    });
    let leaf_hashes: u64 = lengths.values().sum();
    let inner_hashes = if map.is_empty() {
        0
    } else {
        map.shape_stats().inner_nodes()
    };
    let inputs: BTreeMap<usize, u64> = lengths
        .iter()
        .map(|(len, n)| (leaf_input_len(kind, *len as u64) as usize, *n))
        .collect();
    let f = map.hash_function();
    let (floor_time, floor_runs) = fastest(|| hash_floor(f, &inputs, inner_hashes));
    let hashed_bytes =
        inputs.iter().map(|(len, n)| n * *len as u64).sum::<u64>() + inner_hashes * INNER_INPUT;
    let timing = HashTiming {
        root_seconds: root_time.as_secs_f64(),
        floor_seconds: floor_time.as_secs_f64(),
        runs: root_runs.min(floor_runs),
        leaf_hashes,
        inner_hashes,
        hashed_bytes,
        backend: f.backend_name(),
    };
    (timing, root)
}

/// Draws lengths from a multiset without replacement, uniformly: a random
/// permutation of it, produced a draw at a time (Fenwick tree over the
/// distinct lengths, so no list of every length is held).
struct Shuffled {
    lens: Vec<usize>,
    tree: Vec<u64>,
    left: u64,
    rng: SplitMix64,
}

impl Shuffled {
    fn new(counts: &BTreeMap<usize, u64>, seed: u64) -> Shuffled {
        let lens: Vec<usize> = counts.keys().copied().collect();
        let mut tree = vec![0u64; lens.len() + 1];
        for (i, n) in counts.values().enumerate() {
            let mut j = i + 1;
            while j < tree.len() {
                tree[j] += n;
                j += j & j.wrapping_neg();
            }
        }
        Shuffled {
            lens,
            tree,
            left: counts.values().sum(),
            rng: SplitMix64::new(seed),
        }
    }

    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        // Find the bucket holding the r-th remaining item, and take it.
        let mut r = self.rng.below(self.left);
        let mut pos = 0;
        let mut step = self.tree.len().next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] <= r {
                pos = next;
                r -= self.tree[next];
            }
            step /= 2;
        }
        let mut j = pos + 1;
        while j < self.tree.len() {
            self.tree[j] -= 1;
            j += j & j.wrapping_neg();
        }
        self.left -= 1;
        Some(self.lens[pos])
    }
}

/// The engine's hash work for one root computation, through the same batch
/// function; returns the time spent inside it.
fn hash_floor(f: HashFunction, inputs: &BTreeMap<usize, u64>, inner: u64) -> Duration {
    let longest = inputs.keys().next_back().copied().unwrap_or(0);
    // Each message of a batch gets its own region, so no two lanes read the
    // same bytes (as in the engine, where inputs are laid end to end);
    // messages longer than a region share one buffer of their own.
    let region = longest.clamp(INNER_INPUT as usize, MAX_REGION);
    let fill = |n: usize| -> Vec<u8> { (0..n).map(|i| (i * 131 % 251) as u8).collect() };
    let buf = fill(region * BATCH);
    let long = fill(if longest > region { longest } else { 0 });
    let mut out = vec![[0u8; 32]; BATCH];
    let mut spent = Duration::ZERO;
    let mut msgs: Vec<&[u8]> = Vec::with_capacity(BATCH);
    let mut order = Shuffled::new(inputs, 0x5EED);
    loop {
        msgs.clear();
        while msgs.len() < BATCH {
            let Some(len) = order.next() else { break };
            let at = msgs.len() * region;
            msgs.push(if len <= region {
                &buf[at..at + len]
            } else {
                &long[..len]
            });
        }
        if msgs.is_empty() {
            break;
        }
        let t = Instant::now();
        f.hash_batch(&msgs, &mut out[..msgs.len()]);
        spent += t.elapsed();
    }
    let mut left = inner;
    while left > 0 {
        let n = left.min(BATCH as u64) as usize;
        msgs.clear();
        msgs.extend((0..n).map(|i| &buf[i * region..i * region + INNER_INPUT as usize]));
        let t = Instant::now();
        f.hash_batch(&msgs, &mut out[..n]);
        spent += t.elapsed();
        left -= n as u64;
    }
    std::hint::black_box(&out);
    spent
}

#[cfg(test)]
mod tests {
    use super::*;
    use shamap::Key;

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
        // The engine's own account of the same work agrees.
        map.invalidate_hashes();
        let (_, work) = map.root_hash_with_work();
        assert_eq!(work.leaves, t.leaf_hashes);
        assert_eq!(work.inner, t.inner_hashes);
        assert_eq!(work.leaf_bytes + 516 * work.inner, t.hashed_bytes);
        assert!(t.floor_share().is_some());
    }

    #[test]
    fn shuffled_lengths_are_a_permutation_of_the_multiset() {
        let counts: BTreeMap<usize, u64> = [(3, 5), (7, 1), (100, 9), (4000, 2)].into();
        let mut s = Shuffled::new(&counts, 1);
        let mut seen = BTreeMap::new();
        let mut order = Vec::new();
        while let Some(l) = s.next() {
            *seen.entry(l).or_insert(0) += 1;
            order.push(l);
        }
        assert_eq!(seen, counts);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_ne!(order, sorted, "shuffled, not sorted");
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
