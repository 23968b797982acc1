//! The node hash function: SHA512Half (the XRP Ledger's, the default) or
//! BLAKE3 (an option for uses outside the XRPL).
//!
//! Both hash the same byte strings: a leaf is `prefix ‖ data ‖ key` (no key
//! for transaction-set leaves), an inner node `MIN\0 ‖ 16 child hashes`
//! (the layouts are [`crate::node_hash`]'s); only the function differs, and
//! both give 32 bytes. Batches of nodes go
//! through a multi-lane kernel in either case: `sha512-lanes` (8 messages
//! per AVX-512 instruction stream) or `blake3-lanes` (16).
//!
//! A BLAKE3 map has no XRPL meaning: its root is not a ledger's account or
//! transaction hash, its nodes cannot go into a node store (which names
//! nodes by their SHA512Half), and its proofs verify only with the
//! `_with` verifiers given [`HashFunction::Blake3`].

use std::fmt;
use std::str::FromStr;

use crate::hash::Hash256;
use crate::sha512half::sha512_half;

/// Hashes `msgs[i]` into `out[i]`, any number at once: a function's
/// multi-lane kernel ([`HashFunction::batch`]).
pub(crate) type BatchHasher = fn(&[&[u8]], &mut [[u8; 32]]);

/// The function that hashes a map's nodes; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HashFunction {
    /// SHA512Half: the first 32 bytes of SHA-512, as rippled hashes nodes.
    #[default]
    Sha512Half,
    /// BLAKE3 with its default 32-byte output. Not XRPL-compatible.
    Blake3,
}

impl HashFunction {
    /// The hash of the concatenation of `parts`.
    pub fn hash(self, parts: &[&[u8]]) -> Hash256 {
        match self {
            HashFunction::Sha512Half => sha512_half(parts),
            HashFunction::Blake3 => {
                let mut h = blake3::Hasher::new();
                for p in parts {
                    h.update(p);
                }
                Hash256(*h.finalize().as_bytes())
            }
        }
    }

    /// Hashes `msgs[i]` into `out[i]`, many messages per SIMD kernel call
    /// (the engine's batched path). Panics when the lengths differ.
    pub fn hash_batch(self, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
        (self.batch())(msgs, out);
    }

    /// The multi-lane kernel's name (`avx512`, `avx2`, `scalar`, ...) on
    /// this machine.
    pub fn backend_name(self) -> &'static str {
        match self {
            HashFunction::Sha512Half => sha512_lanes::backend().name(),
            HashFunction::Blake3 => blake3_lanes::backend().name(),
        }
    }

    /// The multi-lane batch hasher of this function.
    pub(crate) fn batch(self) -> BatchHasher {
        match self {
            HashFunction::Sha512Half => sha512_lanes::sha512_half_batch,
            HashFunction::Blake3 => blake3_lanes::hash_batch,
        }
    }

    /// True for the XRP Ledger's function.
    pub fn is_xrpl(self) -> bool {
        self == HashFunction::Sha512Half
    }

    /// Short name: `sha512half` or `blake3`.
    pub const fn name(self) -> &'static str {
        match self {
            HashFunction::Sha512Half => "sha512half",
            HashFunction::Blake3 => "blake3",
        }
    }
}

impl fmt::Display for HashFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HashFunction::Sha512Half => "SHA512Half",
            HashFunction::Blake3 => "BLAKE3",
        })
    }
}

/// An unknown hash function name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown hash function {0:?} (expected sha512half or blake3)")]
pub struct UnknownHashFunction(pub String);

impl FromStr for HashFunction {
    type Err = UnknownHashFunction;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "sha512half" | "sha512" => Ok(HashFunction::Sha512Half),
            "blake3" => Ok(HashFunction::Blake3),
            _ => Err(UnknownHashFunction(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Key;
    use crate::kind::MapKind;

    #[test]
    fn both_functions_hash_the_same_bytes_and_batches_agree() {
        let key = Key([3; 32]);
        for f in [HashFunction::Sha512Half, HashFunction::Blake3] {
            let kind = MapKind::AccountState;
            let leaf = f.leaf_hash(kind, &key, b"data");
            let msg = crate::node_hash::leaf_message(kind, &key, b"data");
            assert_eq!(leaf, f.hash(&[&msg]));
            let mut out = [[0u8; 32]; 1];
            (f.batch())(&[&msg], &mut out);
            assert_eq!(Hash256(out[0]), leaf, "{f}");
        }
        assert_eq!(
            HashFunction::Sha512Half.leaf_hash(MapKind::AccountState, &key, b"data"),
            MapKind::AccountState.leaf_hash(&key, b"data")
        );
        assert_eq!(
            HashFunction::Blake3.hash(&[b"abc"]).0,
            *blake3::hash(b"abc").as_bytes()
        );
        assert_eq!("BLAKE3".parse(), Ok(HashFunction::Blake3));
        assert!("md5".parse::<HashFunction>().is_err());
    }
}
