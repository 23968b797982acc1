//! Synthetic maps: uniformly random 256-bit keys, with data whose sizes are
//! drawn from a mixture shaped like mainnet account state.
//!
//! The mixture (a table in `docs/stats.md`, where its sources are stated):
//!
//! | type | share | size in bytes |
//! |---|---|---|
//! | AccountRoot | 40.0% | 87 (60%), else uniform 88..=180 |
//! | RippleState | 30.0% | 193 (68%) or 211 (32%) |
//! | DirectoryNode | 17.0% | 98 + 32·m, m ~ geometric(0.45) capped at 31; +18 for 30% (book directories) |
//! | Offer | 10.0% | 183 or 223, evenly |
//! | NFTokenPage | 0.9% | 50 + Σ over 1..=32 tokens of 35 + (URI of 40..=120 bytes, for 90% of tokens) |
//! | Ticket, Escrow, PayChannel | 0.7% each | uniform 100..=300 |
//!
//! Mean about 167 bytes, at most 5,010 bytes. Each datum starts with the
//! `0x11` field code and the entry type, so per-type reports work on
//! synthetic maps too; the rest is pseudo-random bytes. Everything is a
//! function of the seed (SplitMix64), identical on every platform, and the
//! keys do not depend on the data sizes chosen.

use shamap::Key;

/// SplitMix64: a small, fast generator whose output depends only on the
/// seed (Steele, Lea and Flood, 2014).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0), by multiply-and-shift (bias below 2^-32
    /// for the small `n` used here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// Ledger-entry type codes used by the mixture.
mod code {
    pub const ACCOUNT_ROOT: u16 = 0x0061;
    pub const RIPPLE_STATE: u16 = 0x0072;
    pub const DIRECTORY_NODE: u16 = 0x0064;
    pub const OFFER: u16 = 0x006F;
    pub const NFTOKEN_PAGE: u16 = 0x0050;
    pub const TICKET: u16 = 0x0054;
    pub const ESCROW: u16 = 0x0075;
    pub const PAY_CHANNEL: u16 = 0x0078;
}

/// Draws one entry's type and total size in bytes (see the module table).
pub fn sample_entry(rng: &mut SplitMix64) -> (u16, usize) {
    let r = rng.below(1000);
    match r {
        0..400 => {
            let len = if rng.chance(600) {
                87
            } else {
                rng.between(88, 180)
            };
            (code::ACCOUNT_ROOT, len)
        }
        400..700 => (code::RIPPLE_STATE, if rng.chance(680) { 193 } else { 211 }),
        700..870 => {
            let mut m = 0;
            while m < 31 && !rng.chance(450) {
                m += 1;
            }
            let book = if rng.chance(300) { 18 } else { 0 };
            (code::DIRECTORY_NODE, 98 + 32 * m + book)
        }
        870..970 => (code::OFFER, if rng.chance(500) { 183 } else { 223 }),
        970..979 => {
            let tokens = rng.between(1, 32);
            let mut len = 50;
            for _ in 0..tokens {
                len += 35;
                if rng.chance(900) {
                    len += rng.between(40, 120);
                }
            }
            (code::NFTOKEN_PAGE, len)
        }
        979..986 => (code::TICKET, rng.between(100, 300)),
        986..993 => (code::ESCROW, rng.between(100, 300)),
        _ => (code::PAY_CHANNEL, rng.between(100, 300)),
    }
}

/// Bytes of pseudo-random filler that data windows are cut from.
const POOL_BYTES: usize = 1 << 16;

/// How long each datum is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataSize {
    /// Drawn from the mainnet-shaped mixture, with the type header.
    Mainnet,
    /// Exactly this many pseudo-random bytes (at most 65,536), no header.
    Fixed(usize),
}

/// Produces the entries of a synthetic map one at a time, holding only one
/// entry's data (never the whole set).
pub struct Synth {
    /// Keys have a stream of their own, so that the same seed gives the
    /// same keys (the same tree) whatever the data sizes.
    keys: SplitMix64,
    rng: SplitMix64,
    size: DataSize,
    pool: Vec<u8>,
    data: Vec<u8>,
}

/// Longest datum a synthetic entry can have.
pub const MAX_DATA: usize = POOL_BYTES;

impl Synth {
    /// A generator for `seed`.
    pub fn new(seed: u64, size: DataSize) -> Synth {
        let keys = SplitMix64::new(seed);
        let mut rng = SplitMix64::new(seed ^ 0xDA7A_DA7A_DA7A_DA7A);
        let pool = (0..POOL_BYTES / 8)
            .flat_map(|_| rng.next_u64().to_le_bytes())
            .collect();
        Synth {
            keys,
            rng,
            size,
            pool,
            data: Vec::with_capacity(POOL_BYTES),
        }
    }

    /// The next entry: a uniformly random key and its data.
    pub fn next_entry(&mut self) -> (Key, &[u8]) {
        let mut key = [0u8; 32];
        for chunk in key.chunks_exact_mut(8) {
            chunk.copy_from_slice(&self.keys.next_u64().to_le_bytes());
        }
        let (ty, len) = match self.size {
            DataSize::Mainnet => {
                let (ty, len) = sample_entry(&mut self.rng);
                (Some(ty), len)
            }
            DataSize::Fixed(len) => (None, len),
        };
        let len = len.min(POOL_BYTES);
        let start = self.rng.below((POOL_BYTES - len + 1) as u64) as usize;
        self.data.clear();
        self.data.extend_from_slice(&self.pool[start..start + len]);
        if let Some(ty) = ty {
            self.data[0] = 0x11;
            self.data[1..3].copy_from_slice(&ty.to_be_bytes());
        }
        (Key(key), &self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_have_the_documented_mean_and_tail() {
        let mut rng = SplitMix64::new(42);
        let n = 400_000;
        let mut total = 0usize;
        let mut max = 0;
        let mut over_1k = 0;
        for _ in 0..n {
            let (_, len) = sample_entry(&mut rng);
            total += len;
            max = max.max(len);
            over_1k += usize::from(len > 1024);
        }
        let mean = total as f64 / n as f64;
        assert!((mean - 167.0).abs() < 3.0, "mean {mean}");
        assert!((3000..=5200).contains(&max), "max {max}");
        assert!(over_1k > n / 400 && over_1k < n / 50, "{over_1k}");
    }

    #[test]
    fn entries_depend_only_on_the_seed() {
        let take = |seed| {
            let mut s = Synth::new(seed, DataSize::Mainnet);
            (0..50)
                .map(|_| {
                    let (k, d) = s.next_entry();
                    (k, d.to_vec())
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(take(7), take(7));
        assert_ne!(take(7), take(8));
        let first = &take(7)[0];
        assert_eq!(first.1[0], 0x11);
        let mut fixed = Synth::new(7, DataSize::Fixed(32));
        assert_eq!(fixed.next_entry().1.len(), 32);
        assert_eq!(
            fixed.next_entry().0,
            take(7)[1].0,
            "keys do not depend on sizes"
        );
    }

    #[test]
    fn splitmix_matches_reference_output() {
        // First outputs for seed 0 from the reference implementation.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
