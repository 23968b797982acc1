//! SHA512Half: the first 32 bytes of SHA-512, the XRPL's node hash (one
//! message; [`crate::HashFunction`] picks it or BLAKE3, and their batch
//! kernels).

use sha2::{Digest, Sha512};

use crate::hash::Hash256;

/// An incremental SHA512Half hasher.
#[derive(Clone, Default)]
pub struct Sha512Half(Sha512);

impl Sha512Half {
    /// A fresh hasher.
    pub fn new() -> Self {
        Sha512Half(Sha512::new())
    }

    /// Feeds bytes.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The first half of the SHA-512 digest.
    #[inline]
    pub fn finish(self) -> Hash256 {
        let full = self.0.finalize();
        let mut out = [0u8; 32];
        out.copy_from_slice(&full[..32]);
        Hash256(out)
    }
}

/// SHA512Half of the concatenation of `parts`.
#[inline]
pub fn sha512_half(parts: &[&[u8]]) -> Hash256 {
    let mut h = Sha512Half::new();
    for p in parts {
        h.update(p);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_first_half_of_sha512() {
        // SHA-512("") starts cf83e135 7eefb8bd f1542850 d66d8007 ...
        let h = sha512_half(&[]);
        assert_eq!(
            h.to_hex(),
            "CF83E1357EEFB8BDF1542850D66D8007D620E4050B5715DC83F4A921D36CE9CE"
        );
    }

    #[test]
    fn parts_concatenate() {
        assert_eq!(sha512_half(&[b"ab", b"c"]), sha512_half(&[b"abc"]));
    }
}
