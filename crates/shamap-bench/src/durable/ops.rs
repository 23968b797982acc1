//! The operations of the `durable` workload, as pure functions of the seed,
//! so that every engine (each in its own process) applies exactly the same
//! writes and reads, and no process holds a key list it does not need:
//! key `i` is computed from `(seed, i)`, and the live set is one bit per
//! key ever made.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A 256-bit key, as every engine here takes it.
pub type KeyBytes = [u8; 32];

/// One write of a block. Values are named by a tag ([`Values::value_into`]).
#[derive(Clone, Copy, Debug)]
pub enum Write {
    Insert { index: u64, tag: u64 },
    Update { index: u64, tag: u64 },
    Remove { index: u64 },
}

impl Write {
    /// The index of the key written.
    pub fn index(&self) -> u64 {
        match *self {
            Write::Insert { index, .. } | Write::Update { index, .. } | Write::Remove { index } => {
                index
            }
        }
    }
}

/// SplitMix64's output function: a bijection on u64 with good avalanche.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Key `index` of the workload of `seed`: 32 bytes that look random (distinct
/// for distinct indexes with overwhelming probability).
pub fn key(seed: u64, index: u64) -> KeyBytes {
    let mut k = [0u8; 32];
    let base = mix(seed ^ 0x6b65_7973) ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for (lane, chunk) in k.chunks_exact_mut(8).enumerate() {
        let word = mix(base.wrapping_add((lane as u64).wrapping_mul(0xd1b5_4a32_d192_ed03)));
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    k
}

/// Values: a template of `--data-len` bytes whose first 8 bytes are replaced
/// by the value's tag, so all values differ and have the same length.
pub struct Values {
    template: Vec<u8>,
}

impl Values {
    pub fn new(seed: u64, len: usize) -> Values {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x7661_6c75_6573);
        Values::from_template((0..len.max(8)).map(|_| rng.gen()).collect())
    }

    /// Values made from `template` (at least 8 bytes: the tag's).
    pub fn from_template(template: Vec<u8>) -> Values {
        assert!(template.len() >= 8, "a value template holds an 8-byte tag");
        Values { template }
    }

    /// Bytes of every value (the peer comparison reports it).
    #[cfg(feature = "peers-any")]
    pub fn value_len(&self) -> usize {
        self.template.len()
    }

    pub fn value_into(&self, tag: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.template);
        out[..8].copy_from_slice(&tag.to_le_bytes());
    }

    pub fn value(&self, tag: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.template.len());
        self.value_into(tag, &mut v);
        v
    }
}

/// The keys of the imported map, `(key, tag)` sorted by key (the tag is the
/// key's index): what both engines' bulk builds take.
pub fn import_keys(seed: u64, entries: u64) -> Vec<(KeyBytes, u64)> {
    let mut keys: Vec<(KeyBytes, u64)> = (0..entries).map(|i| (key(seed, i), i)).collect();
    keys.sort_unstable_by_key(|k| k.0);
    keys
}

/// Generates the blocks of writes after an import of `entries` keys, and
/// then random present keys: 60% updates, 20% inserts, 20% removes, no key
/// twice in a block, as the `peers` comparison does.
pub struct Blocks {
    rng: SmallRng,
    /// Keys made so far (indexes `0..made`).
    made: u64,
    /// One bit per key made: set when removed.
    removed: Vec<u64>,
    live: u64,
    next_tag: u64,
}

impl Blocks {
    pub fn new(seed: u64, entries: u64) -> Blocks {
        Blocks {
            rng: SmallRng::seed_from_u64(seed ^ 0x626c_6f63_6b73),
            made: entries,
            removed: vec![0; (entries as usize).div_ceil(64)],
            live: entries,
            next_tag: entries,
        }
    }

    fn is_removed(&self, index: u64) -> bool {
        self.removed[(index / 64) as usize] >> (index % 64) & 1 == 1
    }

    fn mark_removed(&mut self, index: u64) {
        self.removed[(index / 64) as usize] |= 1 << (index % 64);
        self.live -= 1;
    }

    /// A random live key's index (not in `touched`).
    fn pick_live(&mut self, touched: &HashSet<u64>) -> u64 {
        loop {
            let i = self.rng.gen_range(0..self.made);
            if !self.is_removed(i) && !touched.contains(&i) {
                return i;
            }
        }
    }

    /// The next block of `size` writes.
    pub fn next_block(&mut self, size: usize) -> Vec<Write> {
        let mut touched = HashSet::with_capacity(size);
        let mut ops = Vec::with_capacity(size);
        while ops.len() < size {
            let roll = self.rng.gen_range(0..10);
            let tag = self.next_tag;
            self.next_tag += 1;
            if (6..8).contains(&roll) || self.live < 2 + touched.len() as u64 {
                let index = self.made;
                self.made += 1;
                if self.made as usize > self.removed.len() * 64 {
                    self.removed.push(0);
                }
                self.live += 1;
                touched.insert(index);
                ops.push(Write::Insert { index, tag });
            } else if roll < 6 {
                let index = self.pick_live(&touched);
                touched.insert(index);
                ops.push(Write::Update { index, tag });
            } else {
                let index = self.pick_live(&touched);
                touched.insert(index);
                self.mark_removed(index);
                ops.push(Write::Remove { index });
            }
        }
        ops
    }

    /// Skips `blocks` blocks of `size` (generating them, applying nothing).
    pub fn skip(&mut self, blocks: usize, size: usize) {
        for _ in 0..blocks {
            self.next_block(size);
        }
    }

    /// `count` random present keys' indexes (repeats allowed).
    pub fn present(&mut self, count: usize) -> Vec<u64> {
        let none = HashSet::new();
        (0..count).map(|_| self.pick_live(&none)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_a_function_of_the_seed_and_keep_the_mix() {
        let mut a = Blocks::new(3, 1000);
        let mut b = Blocks::new(3, 1000);
        let (x, y) = (a.next_block(500), b.next_block(500));
        assert_eq!(format!("{x:?}"), format!("{y:?}"));
        let inserts = x
            .iter()
            .filter(|w| matches!(w, Write::Insert { .. }))
            .count();
        let removes = x
            .iter()
            .filter(|w| matches!(w, Write::Remove { .. }))
            .count();
        assert!((60..140).contains(&inserts), "{inserts} inserts of 500");
        assert!((60..140).contains(&removes), "{removes} removes of 500");
        assert_eq!(a.live, 1000 + inserts as u64 - removes as u64);
        let mut seen = HashSet::new();
        for w in &x {
            let i = match *w {
                Write::Insert { index, .. }
                | Write::Update { index, .. }
                | Write::Remove { index } => index,
            };
            assert!(seen.insert(i), "key {i} twice in a block");
        }
        for i in a.present(1000) {
            assert!(!a.is_removed(i) && i < a.made);
        }
    }

    #[test]
    fn keys_differ() {
        let keys: HashSet<KeyBytes> = (0..100_000).map(|i| key(9, i)).collect();
        assert_eq!(keys.len(), 100_000);
        assert_ne!(key(1, 0), key(2, 0));
    }
}
