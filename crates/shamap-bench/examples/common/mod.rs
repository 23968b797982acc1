//! What the phase examples share (included with `#[path]`).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::Key;

/// The phase examples' inputs: a generator seeded with 7, the data of
/// every item (64 bytes of 0x42), and `entries` random keys drawn from
/// that generator.
pub fn inputs(entries: usize) -> (SmallRng, Vec<u8>, Vec<Key>) {
    let mut rng = SmallRng::seed_from_u64(7);
    let keys = (0..entries).map(|_| Key(rng.gen())).collect();
    (rng, vec![0x42u8; 64], keys)
}
