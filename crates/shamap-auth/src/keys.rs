//! Node public keys and the signatures the XRP Ledger's validators and list
//! publishers make with them.
//!
//! A key is 33 bytes: a compressed secp256k1 point (`02`/`03` ‖ x) or `ED` ‖
//! an ed25519 key. People write it as hex or as a base58 *node public key*
//! (`n9…` for an ephemeral signing key, `nH…` for most master keys: the XRP
//! Ledger's alphabet, type byte 28, a 4-byte double-SHA-256 check).
//!
//! A message is signed as rippled signs it:
//! - secp256k1: ECDSA over `SHA512Half(message)`, the signature in DER.
//!   rippled accepts only *canonical* DER (minimal lengths and integers,
//!   `r` and `s` below the group order) and, when *fully canonical* is asked
//!   for (always for manifests and list blobs; for a validation when its
//!   flags carry `vfFullyCanonicalSig`), only the low `s`.
//! - ed25519: over the message itself, 64 bytes, `S` below the group order.

use ed25519_dalek::Verifier as _;
use k256::ecdsa::signature::hazmat::PrehashVerifier as _;
use shamap::xrpl::sha512_half;

use crate::error::{AuthError, SignatureError};

/// The type byte of a base58 node public key.
const NODE_PUBLIC_TYPE: u8 = 28;

/// A validator's or publisher's public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PublicKey {
    /// A compressed secp256k1 point (33 bytes, `02`/`03` first).
    Secp256k1([u8; 33]),
    /// An ed25519 key (written with an `ED` byte first: 33 bytes).
    Ed25519([u8; 32]),
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.to_hex())
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base58())
    }
}

impl PublicKey {
    /// Reads the 33-byte form. Returns `None` for any other length or a first
    /// byte that is neither `02`, `03` nor `ED`. (A secp256k1 point is checked
    /// to be on the curve when a signature is verified with it.)
    pub fn from_bytes(b: &[u8]) -> Option<PublicKey> {
        if b.len() != 33 {
            return None;
        }
        let mut out = [0u8; 33];
        out.copy_from_slice(b);
        match b[0] {
            0x02 | 0x03 => Some(PublicKey::Secp256k1(out)),
            0xED => {
                let mut k = [0u8; 32];
                k.copy_from_slice(&b[1..]);
                Some(PublicKey::Ed25519(k))
            }
            _ => None,
        }
    }

    /// Reads a key written as 66 hex digits or as a base58 node public key.
    pub fn parse(text: &str) -> Result<PublicKey, AuthError> {
        let text = text.trim();
        if text.len() == 66 && text.bytes().all(|c| c.is_ascii_hexdigit()) {
            let bytes = const_hex::decode(text).map_err(|_| AuthError::key(text, "not hex"))?;
            return PublicKey::from_bytes(&bytes)
                .ok_or_else(|| AuthError::key(text, "the first byte is neither 02, 03 nor ED"));
        }
        PublicKey::from_base58(text)
    }

    /// Reads a base58 node public key (`n…`).
    pub fn from_base58(text: &str) -> Result<PublicKey, AuthError> {
        let bytes = bs58::decode(text)
            .with_alphabet(bs58::Alphabet::RIPPLE)
            .with_check(Some(NODE_PUBLIC_TYPE))
            .into_vec()
            .map_err(|e| AuthError::key(text, &format!("not a node public key in base58 ({e})")))?;
        PublicKey::from_bytes(&bytes[1..])
            .ok_or_else(|| AuthError::key(text, "its 33 bytes are not a secp256k1 or ed25519 key"))
    }

    /// The 33-byte form.
    pub fn to_bytes(&self) -> [u8; 33] {
        match self {
            PublicKey::Secp256k1(b) => *b,
            PublicKey::Ed25519(k) => {
                let mut out = [0u8; 33];
                out[0] = 0xED;
                out[1..].copy_from_slice(k);
                out
            }
        }
    }

    /// The 33-byte form in upper-case hex, as validator lists write keys.
    pub fn to_hex(&self) -> String {
        const_hex::encode_upper(self.to_bytes())
    }

    /// The base58 node public key (`n9…`, `nH…`).
    pub fn to_base58(&self) -> String {
        bs58::encode(self.to_bytes())
            .with_alphabet(bs58::Alphabet::RIPPLE)
            .with_check_version(NODE_PUBLIC_TYPE)
            .into_string()
    }

    /// `"secp256k1"` or `"ed25519"`.
    pub fn key_type(&self) -> &'static str {
        match self {
            PublicKey::Secp256k1(_) => "secp256k1",
            PublicKey::Ed25519(_) => "ed25519",
        }
    }

    /// Checks `signature` over `message` as rippled does (see the module
    /// documentation); `fully_canonical` asks for the low `s` of secp256k1.
    pub fn verify(
        &self,
        message: &[u8],
        signature: &[u8],
        fully_canonical: bool,
    ) -> Result<(), SignatureError> {
        match self {
            PublicKey::Secp256k1(point) => {
                let key = k256::ecdsa::VerifyingKey::from_sec1_bytes(point)
                    .map_err(|_| SignatureError::BadKey)?;
                let (r, s) = canonical_der(signature)?;
                let sig = k256::ecdsa::Signature::from_scalars(r, s)
                    .map_err(|_| SignatureError::NotCanonical)?;
                if fully_canonical && sig.normalize_s().is_some() {
                    return Err(SignatureError::HighS);
                }
                // k256 verifies only low-S signatures: check the low form of
                // one that rippled accepts as merely canonical.
                let sig = sig.normalize_s().unwrap_or(sig);
                let digest = sha512_half(&[message]);
                key.verify_prehash(&digest.0, &sig)
                    .map_err(|_| SignatureError::Mismatch)
            }
            PublicKey::Ed25519(k) => {
                let key = ed25519_dalek::VerifyingKey::from_bytes(k)
                    .map_err(|_| SignatureError::BadKey)?;
                let sig: [u8; 64] = signature
                    .try_into()
                    .map_err(|_| SignatureError::NotCanonical)?;
                // `verify` refuses an `S` at or above the group order, as rippled does.
                key.verify(message, &ed25519_dalek::Signature::from_bytes(&sig))
                    .map_err(|_| SignatureError::Mismatch)
            }
        }
    }
}

/// The order of secp256k1's group, big-endian.
const SECP256K1_ORDER: [u8; 32] = [
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
    0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48, 0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41,
];

/// Splits a DER signature into `r` and `s` (32 bytes each) when it is
/// canonical as rippled defines it: `30 len 02 rlen r 02 slen s`, the lengths
/// exact, each integer positive, minimally encoded, non-zero and below the
/// group order.
fn canonical_der(sig: &[u8]) -> Result<([u8; 32], [u8; 32]), SignatureError> {
    let bad = SignatureError::NotCanonical;
    if sig.len() < 8 || sig.len() > 72 || sig[0] != 0x30 || sig[1] as usize != sig.len() - 2 {
        return Err(bad);
    }
    let (r, rest) = der_integer(&sig[2..])?;
    let (s, rest) = der_integer(rest)?;
    if !rest.is_empty() {
        return Err(bad);
    }
    Ok((r, s))
}

fn der_integer(b: &[u8]) -> Result<([u8; 32], &[u8]), SignatureError> {
    let bad = SignatureError::NotCanonical;
    if b.len() < 3 || b[0] != 0x02 {
        return Err(bad);
    }
    let len = b[1] as usize;
    if len == 0 || len > 33 || b.len() < 2 + len {
        return Err(bad);
    }
    let int = &b[2..2 + len];
    // Negative, or a leading zero that is not needed for the sign bit.
    if int[0] & 0x80 != 0 || (len > 1 && int[0] == 0 && int[1] & 0x80 == 0) {
        return Err(bad);
    }
    let digits = if int[0] == 0 { &int[1..] } else { int };
    if digits.len() > 32 {
        return Err(bad);
    }
    let mut out = [0u8; 32];
    out[32 - digits.len()..].copy_from_slice(digits);
    if out == [0u8; 32] || out >= SECP256K1_ORDER {
        return Err(bad);
    }
    Ok((out, &b[2 + len..]))
}

/// A key pair that signs as validators and list publishers do: for making
/// validator lists, manifests and validations (tests, fixtures, and lists of
/// one's own). Deterministic from its 32-byte seed.
#[derive(Clone)]
pub enum KeyPair {
    /// secp256k1 (signatures RFC 6979, low `s`, DER).
    Secp256k1(k256::ecdsa::SigningKey),
    /// ed25519.
    Ed25519(ed25519_dalek::SigningKey),
}

impl KeyPair {
    /// A secp256k1 pair whose secret is `seed` (reduced into range: a seed of
    /// zero or above the order is refused).
    pub fn secp256k1(seed: [u8; 32]) -> Option<KeyPair> {
        k256::ecdsa::SigningKey::from_bytes(&seed.into())
            .ok()
            .map(KeyPair::Secp256k1)
    }

    /// An ed25519 pair whose secret is `seed`.
    pub fn ed25519(seed: [u8; 32]) -> KeyPair {
        KeyPair::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        match self {
            KeyPair::Secp256k1(k) => {
                let point = k.verifying_key().to_encoded_point(true);
                PublicKey::from_bytes(point.as_bytes()).expect("a compressed point is 33 bytes")
            }
            KeyPair::Ed25519(k) => PublicKey::Ed25519(k.verifying_key().to_bytes()),
        }
    }

    /// Signs `message` as rippled would.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self {
            KeyPair::Secp256k1(k) => {
                use k256::ecdsa::signature::hazmat::PrehashSigner as _;
                let digest = sha512_half(&[message]);
                let sig: k256::ecdsa::Signature =
                    k.sign_prehash(&digest.0).expect("a 32-byte digest signs");
                let sig = sig.normalize_s().unwrap_or(sig);
                sig.to_der().as_bytes().to_vec()
            }
            KeyPair::Ed25519(k) => {
                use ed25519_dalek::Signer as _;
                k.sign(message).to_bytes().to_vec()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base58_round_trip_and_known_key() {
        // The first validator of the xahaud test lists: hex and base58 name one key.
        let k = PublicKey::parse("n94QWAYxKUHacmyFTnzK4bvqVcUfr6RwtaNxCM2cJRY59UHmz1Fr")
            .expect("parses");
        assert_eq!(PublicKey::parse(&k.to_hex()).expect("hex"), k);
        assert_eq!(
            k.to_base58(),
            "n94QWAYxKUHacmyFTnzK4bvqVcUfr6RwtaNxCM2cJRY59UHmz1Fr"
        );
        let mut wrong = "n94QWAYxKUHacmyFTnzK4bvqVcUfr6RwtaNxCM2cJRY59UHmz1Fr".to_string();
        wrong.replace_range(5..6, "z");
        assert!(PublicKey::parse(&wrong).is_err());
    }

    #[test]
    fn both_key_types_sign_and_verify_and_refuse_tampering() {
        let pairs = [
            KeyPair::secp256k1([7u8; 32]).expect("in range"),
            KeyPair::ed25519([9u8; 32]),
        ];
        for pair in pairs {
            let public = pair.public();
            let sig = pair.sign(b"VAL\0hello");
            assert_eq!(public.verify(b"VAL\0hello", &sig, true), Ok(()));
            assert_eq!(
                public.verify(b"VAL\0hellp", &sig, true),
                Err(SignatureError::Mismatch)
            );
            let mut bad = sig.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(public.verify(b"VAL\0hello", &bad, true).is_err());
        }
    }

    #[test]
    fn high_s_is_canonical_but_not_fully() {
        let pair = KeyPair::secp256k1([3u8; 32]).expect("in range");
        let der = pair.sign(b"m");
        let (r, s) = canonical_der(&der).expect("canonical");
        let low = k256::ecdsa::Signature::from_scalars(r, s).expect("scalars");
        // n - s: the high twin of the low signature.
        let s_scalar = low.s();
        let high =
            k256::ecdsa::Signature::from_scalars(low.r().to_bytes(), (-*s_scalar).to_bytes())
                .expect("high");
        let high_der = high.to_der().as_bytes().to_vec();
        assert_eq!(
            pair.public().verify(b"m", &high_der, true),
            Err(SignatureError::HighS)
        );
        assert_eq!(pair.public().verify(b"m", &high_der, false), Ok(()));
    }

    #[test]
    fn non_minimal_der_is_refused() {
        let pair = KeyPair::secp256k1([5u8; 32]).expect("in range");
        let der = pair.sign(b"m");
        // Pad r with a needless zero byte.
        let rlen = der[3] as usize;
        let mut padded = vec![0x30, der[1] + 1, 0x02, der[3] + 1, 0x00];
        padded.extend_from_slice(&der[4..4 + rlen]);
        padded.extend_from_slice(&der[4 + rlen..]);
        if der[4] & 0x80 == 0 {
            assert_eq!(
                pair.public().verify(b"m", &padded, true),
                Err(SignatureError::NotCanonical)
            );
        }
        assert_eq!(
            pair.public().verify(b"m", &der[..der.len() - 1], true),
            Err(SignatureError::NotCanonical)
        );
    }
}
