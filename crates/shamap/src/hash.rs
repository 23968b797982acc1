//! 256-bit values: node hashes ([`Hash256`]) and item keys ([`Key`]), plus the
//! [`Nibble`] and [`Depth`] newtypes used to address a path through the tree.

use std::fmt;
use std::str::FromStr;

/// A 256-bit hash: the SHA512Half of a node's prefix format.
///
/// The all-zero value is the hash of an empty branch and of the empty map.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Hash256(pub [u8; 32]);

/// A 256-bit item key. Keys order as big-endian unsigned integers, which is
/// also the order in which the tree stores them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// The key as four big-endian words, most significant first: comparing
    /// these in order is comparing the bytes lexicographically.
    #[inline]
    fn words(&self) -> [u64; 4] {
        std::array::from_fn(|i| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&self.0[8 * i..8 * i + 8]);
            u64::from_be_bytes(w)
        })
    }
}

// Byte order, compared a word at a time: the derived order calls `memcmp`
// for every comparison, which showed up at 12% of a bulk build's profile
// (sorting and the order checks).
impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One radix-16 digit of a key: the branch taken at some depth. Always < 16.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Nibble(u8);

/// A depth in the tree, counted in nibbles from the root (the root is at
/// depth 0; leaves sit at depth 1..=64).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Depth(u8);

impl Nibble {
    /// Branch 0.
    pub const ZERO: Nibble = Nibble(0);

    /// Makes a nibble, or `None` when `v >= 16`.
    pub const fn new(v: u8) -> Option<Self> {
        if v < 16 {
            Some(Nibble(v))
        } else {
            None
        }
    }

    /// The digit, 0..=15.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// The nibble of the low four bits of `v` (the others are ignored).
    #[inline]
    pub(crate) const fn low_bits(v: u32) -> Nibble {
        Nibble((v & 15) as u8)
    }

    /// All sixteen nibbles in ascending order.
    pub fn all() -> impl DoubleEndedIterator<Item = Nibble> + ExactSizeIterator {
        (0..16u8).map(Nibble)
    }
}

impl Depth {
    /// The root's depth.
    pub const ROOT: Depth = Depth(0);
    /// The deepest a leaf can sit: all 64 nibbles of the key consumed.
    pub const MAX: Depth = Depth(64);

    /// Makes a depth, or `None` when `v > 64`.
    pub const fn new(v: u8) -> Option<Self> {
        if v <= 64 {
            Some(Depth(v))
        } else {
            None
        }
    }

    /// The depth as a number of nibbles.
    pub const fn get(self) -> u8 {
        self.0
    }
}

macro_rules! bytes32_common {
    ($t:ident) => {
        impl $t {
            /// The all-zero value.
            pub const ZERO: $t = $t([0; 32]);

            /// The raw bytes.
            pub const fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }

            /// True when every byte is zero.
            pub fn is_zero(&self) -> bool {
                self.0 == [0; 32]
            }

            /// Parses exactly 64 hex digits (either case).
            pub fn from_hex(s: &str) -> Result<Self, ParseHexError> {
                let mut out = [0u8; 32];
                decode_hex_into(s, &mut out)?;
                Ok($t(out))
            }

            /// Takes a 32-byte slice, or `None` for any other length.
            pub fn from_slice(b: &[u8]) -> Option<Self> {
                <[u8; 32]>::try_from(b).ok().map($t)
            }

            /// Upper-case hex, as rippled prints hashes.
            pub fn to_hex(&self) -> String {
                encode_hex_upper(&self.0)
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                for b in &self.0 {
                    write!(f, "{b:02X}")?;
                }
                Ok(())
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({self})", stringify!($t))
            }
        }

        impl FromStr for $t {
            type Err = ParseHexError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $t::from_hex(s)
            }
        }

        impl From<[u8; 32]> for $t {
            fn from(b: [u8; 32]) -> Self {
                $t(b)
            }
        }

        impl AsRef<[u8]> for $t {
            fn as_ref(&self) -> &[u8] {
                &self.0
            }
        }
    };
}

bytes32_common!(Hash256);
bytes32_common!(Key);

impl Key {
    /// The branch this key takes at `depth` (high nibble of byte `depth/2`
    /// first). `depth` must be below 64; a leaf at depth 64 takes no branch.
    #[inline]
    pub fn nibble(&self, depth: usize) -> Nibble {
        debug_assert!(depth < 64, "depth {depth} has no nibble");
        let byte = self.0[depth / 2];
        Nibble(if depth.is_multiple_of(2) {
            byte >> 4
        } else {
            byte & 0x0F
        })
    }

    /// Sets the branch this key takes at `depth` (< 64) to `nibble`, the
    /// other nibbles unchanged: the inverse of [`Key::nibble`].
    #[inline]
    pub fn set_nibble(&mut self, depth: usize, nibble: Nibble) {
        let byte = &mut self.0[depth / 2];
        *byte = if depth.is_multiple_of(2) {
            (*byte & 0x0F) | (nibble.get() << 4)
        } else {
            (*byte & 0xF0) | nibble.get()
        };
    }

    /// Number of leading nibbles `self` and `other` share (64 when equal).
    #[inline]
    pub fn common_prefix_nibbles(&self, other: &Key) -> usize {
        for (i, (a, b)) in self.words().into_iter().zip(other.words()).enumerate() {
            let x = a ^ b;
            if x != 0 {
                return 16 * i + (x.leading_zeros() / 4) as usize;
            }
        }
        64
    }

    /// The key masked to its first `depth` nibbles (the rest zero), as used in
    /// rippled's node IDs.
    pub fn masked(&self, depth: usize) -> Key {
        let mut out = [0u8; 32];
        let full = depth / 2;
        out[..full].copy_from_slice(&self.0[..full]);
        if depth % 2 == 1 {
            out[full] = self.0[full] & 0xF0;
        }
        Key(out)
    }
}

impl From<Hash256> for Key {
    fn from(h: Hash256) -> Self {
        Key(h.0)
    }
}

impl From<Key> for Hash256 {
    fn from(k: Key) -> Self {
        Hash256(k.0)
    }
}

/// A hex string that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseHexError {
    /// The string had the wrong number of digits.
    #[error("expected {expected} hex digits, found {found}")]
    Length {
        /// Digits required.
        expected: usize,
        /// Digits present.
        found: usize,
    },
    /// An odd number of digits cannot encode whole bytes.
    #[error("odd number of hex digits ({found})")]
    OddLength {
        /// Digits present.
        found: usize,
    },
    /// A character that is not a hex digit.
    #[error("bad hex digit at position {position}")]
    Digit {
        /// Zero-based character offset.
        position: usize,
    },
}

/// Decodes hex digits into `out`, which must be exactly half as long as `s`.
pub(crate) fn decode_hex_into(s: &str, out: &mut [u8]) -> Result<(), ParseHexError> {
    let bytes = s.as_bytes();
    if bytes.len() != out.len() * 2 {
        return Err(ParseHexError::Length {
            expected: out.len() * 2,
            found: bytes.len(),
        });
    }
    // The SIMD decoder of `const-hex` for valid input (ledger dumps are
    // mostly hex: it took a third of `shamap verify`'s time before). It also
    // takes a `0x` prefix, which the exact length check above leaves two
    // digits short, so such input fails here too; any failure is located,
    // or decoded after all, by the scan below.
    if const_hex::decode_to_slice(bytes, out).is_ok() {
        return Ok(());
    }
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let hi = hex_val(pair[0]).ok_or(ParseHexError::Digit { position: 2 * i })?;
        let lo = hex_val(pair[1]).ok_or(ParseHexError::Digit {
            position: 2 * i + 1,
        })?;
        out[i] = (hi << 4) | lo;
    }
    Ok(())
}

/// Decodes a hex string of any even length.
pub fn decode_hex(s: &str) -> Result<Vec<u8>, ParseHexError> {
    if !s.len().is_multiple_of(2) {
        return Err(ParseHexError::OddLength { found: s.len() });
    }
    let mut out = vec![0u8; s.len() / 2];
    decode_hex_into(s, &mut out)?;
    Ok(out)
}

/// Upper-case hex of any byte string.
pub fn encode_hex_upper(b: &[u8]) -> String {
    const_hex::encode_upper(b)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys that differ in one chosen byte or nibble, and random ones: the
    /// word-wise order and prefix agree with the byte-wise definitions.
    #[test]
    fn key_order_and_prefix_match_the_bytes() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let seed = 0x6b65_7973;
        let mut rng = SmallRng::seed_from_u64(seed);
        for i in 0..20_000 {
            let a = Key(rng.gen());
            let mut b = a;
            if i % 4 != 0 {
                let byte = rng.gen_range(0..32);
                b.0[byte] ^= if rng.gen() { 0x0F } else { rng.gen() };
            } else {
                b = Key(rng.gen());
            }
            assert_eq!(a.cmp(&b), a.0.cmp(&b.0), "seed {seed:#x}, {a:?} vs {b:?}");
            assert_eq!(a.partial_cmp(&b), Some(a.0.cmp(&b.0)));
            let naive = (0..64).find(|&d| a.nibble(d) != b.nibble(d)).unwrap_or(64);
            assert_eq!(
                a.common_prefix_nibbles(&b),
                naive,
                "seed {seed:#x}, {a:?} vs {b:?}"
            );
        }
    }

    #[test]
    fn nibbles_take_high_half_first() {
        let k = Key::from_hex(&format!("a5{}", "0".repeat(62))).expect("valid hex");
        assert_eq!(k.nibble(0).get(), 0xA);
        assert_eq!(k.nibble(1).get(), 0x5);
        assert_eq!(k.nibble(2).get(), 0);
    }

    #[test]
    fn common_prefix_counts_nibbles() {
        let a = Key([0x12; 32]);
        let mut b = a;
        assert_eq!(a.common_prefix_nibbles(&b), 64);
        b.0[3] = 0x13;
        assert_eq!(a.common_prefix_nibbles(&b), 7);
        b.0[3] = 0x22;
        assert_eq!(a.common_prefix_nibbles(&b), 6);
    }

    /// Every value at every depth, on a key and on its complement (so the
    /// nibbles around it hold ones and zeros): only that nibble changes,
    /// and [`Key::nibble`] reads it back.
    #[test]
    fn set_nibble_changes_that_nibble_alone() {
        let k = Key::from_hex(&"0123456789ABCDEF".repeat(4)).expect("hex");
        for key in [k, Key(k.0.map(|b| !b))] {
            for depth in 0..64 {
                for v in Nibble::all() {
                    let mut set = key;
                    set.set_nibble(depth, v);
                    let want = |d: usize| if d == depth { v } else { key.nibble(d) };
                    assert!(
                        (0..64).all(|d| set.nibble(d) == want(d)),
                        "{key:?} {depth} {v:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn masked_keeps_prefix_only() {
        let k = Key([0xFF; 32]);
        let m = k.masked(3);
        assert_eq!(&m.0[..3], &[0xFF, 0xF0, 0]);
    }

    #[test]
    fn hex_round_trip_and_errors() {
        let h = Hash256([0xAB; 32]);
        assert_eq!(Hash256::from_hex(&h.to_hex()), Ok(h));
        assert_eq!(
            Hash256::from_hex("00"),
            Err(ParseHexError::Length {
                expected: 64,
                found: 2
            })
        );
        let mut bad = h.to_hex();
        bad.replace_range(5..6, "g");
        assert_eq!(
            Hash256::from_hex(&bad),
            Err(ParseHexError::Digit { position: 5 })
        );
        assert_eq!(
            decode_hex("abc"),
            Err(ParseHexError::OddLength { found: 3 })
        );
        // A `0x` prefix is not hex, even at the right total length.
        let prefixed = format!("0x{}", &h.to_hex()[2..]);
        assert_eq!(
            Hash256::from_hex(&prefixed),
            Err(ParseHexError::Digit { position: 1 })
        );
        assert_eq!(decode_hex("0x"), Err(ParseHexError::Digit { position: 1 }));
    }

    /// The SIMD fast path and the scalar scan agree on random strings of
    /// hex digits (any case) and on ones with a bad character anywhere,
    /// whose exact position is reported.
    #[test]
    fn hex_decoding_matches_a_scalar_decoder() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let seed = 0x0068_6578;
        let mut rng = SmallRng::seed_from_u64(seed);
        let digits = b"0123456789abcdefABCDEF";
        for round in 0..5_000 {
            let n = rng.gen_range(0..300);
            let mut s: Vec<u8> = (0..2 * n)
                .map(|_| digits[rng.gen_range(0..digits.len())])
                .collect();
            let want: Vec<u8> = s
                .chunks_exact(2)
                .map(|p| {
                    let digit = |c| hex_val(c).expect("drawn from the digits");
                    (digit(p[0]) << 4) | digit(p[1])
                })
                .collect();
            let text = String::from_utf8(s.clone()).expect("ASCII");
            assert_eq!(decode_hex(&text), Ok(want), "seed {seed} round {round}");
            if n > 0 && round % 2 == 0 {
                let at = rng.gen_range(0..2 * n);
                let bad = b"gGxX /:@`\x7f"; // next to the digit ranges, and DEL
                s[at] = bad[rng.gen_range(0..bad.len())];
                let text = String::from_utf8(s).expect("ASCII");
                assert_eq!(
                    decode_hex(&text),
                    Err(ParseHexError::Digit { position: at }),
                    "seed {seed} round {round}"
                );
            }
        }
        assert_eq!(encode_hex_upper(&[0x0f, 0xa0, 0x5c]), "0FA05C");
    }
}
