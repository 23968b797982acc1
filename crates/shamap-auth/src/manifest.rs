//! Manifests: a master key delegating to an ephemeral signing key.
//!
//! A manifest is a serialized object with `sfSequence`, `sfPublicKey` (the
//! master key), `sfSigningPubKey`, `sfSignature` (by the signing key),
//! `sfMasterSignature` (by the master key), optionally `sfDomain` and
//! `sfVersion`. Both signatures cover `MAN\0` ‖ the object without its two
//! signature fields. A sequence of `0xFFFFFFFF` revokes the master key: such
//! a manifest carries no signing key, and a validator whose manifest is
//! revoked signs nothing that counts.

use crate::error::AuthError;
use crate::keys::{KeyPair, PublicKey};
use shamap::xrpl::fields::{read_fields, type_code, u32_of, without, Field};

/// `MAN\0`: the prefix of a manifest's signed bytes.
pub const MANIFEST_PREFIX: &[u8; 4] = b"MAN\0";

/// The sequence that revokes a master key.
pub const REVOKED: u32 = u32::MAX;

const SEQUENCE: (u8, u8) = (type_code::UINT32, 4);
const VERSION: (u8, u8) = (type_code::UINT16, 16);
const PUBLIC_KEY: (u8, u8) = (type_code::BLOB, 1);
const SIGNING_PUB_KEY: (u8, u8) = (type_code::BLOB, 3);
const SIGNATURE: (u8, u8) = (type_code::BLOB, 6);
const DOMAIN: (u8, u8) = (type_code::BLOB, 7);
const MASTER_SIGNATURE: (u8, u8) = (type_code::BLOB, 18);

/// A manifest whose signatures have been checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The master key.
    pub master: PublicKey,
    /// The signing key it delegates to (`None` when revoked).
    pub signing: Option<PublicKey>,
    /// The manifest's sequence.
    pub sequence: u32,
    /// The domain it claims, if any (not verified here).
    pub domain: Option<String>,
}

impl Manifest {
    /// Whether this manifest revokes its master key.
    pub fn revoked(&self) -> bool {
        self.sequence == REVOKED
    }

    /// Parses a serialized manifest and checks both signatures (the master
    /// signature always; the signing key's unless revoked). `what` names it
    /// in errors ("the publisher's manifest", "validator nH…'s manifest").
    ///
    /// Manifests verified before (the same bytes) are taken from a bounded
    /// process-wide cache: a verifier checking many XPOPs of one list checks
    /// each validator's two manifest signatures once.
    pub fn verify(bytes: &[u8], what: &str) -> Result<Manifest, AuthError> {
        let digest = shamap::xrpl::sha512_half(&[bytes]);
        if let Some(m) = cache().lock().ok().and_then(|c| c.get(&digest).cloned()) {
            return Ok(m);
        }
        let m = Self::verify_uncached(bytes, what)?;
        if let Ok(mut c) = cache().lock() {
            if c.len() >= CACHE_ENTRIES {
                c.clear();
            }
            c.insert(digest, m.clone());
        }
        Ok(m)
    }

    fn verify_uncached(bytes: &[u8], what: &str) -> Result<Manifest, AuthError> {
        let fields = read_fields(bytes, what)?;
        let find = |id: (u8, u8)| fields.iter().find(|f| f.is(id.0, id.1));
        for f in &fields {
            let id = (f.type_code, f.field_code);
            if ![
                SEQUENCE,
                VERSION,
                PUBLIC_KEY,
                SIGNING_PUB_KEY,
                SIGNATURE,
                DOMAIN,
                MASTER_SIGNATURE,
            ]
            .contains(&id)
            {
                return Err(AuthError::malformed(
                    what,
                    &format!(
                        "holds field ({}, {}), which a manifest has not",
                        f.type_code, f.field_code
                    ),
                ));
            }
        }
        let need = |id: (u8, u8), name: &str| {
            find(id).ok_or_else(|| AuthError::malformed(what, &format!("has no {name}")))
        };
        let master_bytes = need(PUBLIC_KEY, "sfPublicKey")?.value(bytes);
        let master = PublicKey::from_bytes(master_bytes).ok_or_else(|| {
            AuthError::malformed(what, "sfPublicKey is not a secp256k1 or ed25519 key")
        })?;
        let sequence = u32_of(need(SEQUENCE, "sfSequence")?.value(bytes));
        let master_sig = need(MASTER_SIGNATURE, "sfMasterSignature")?;
        let signing = match find(SIGNING_PUB_KEY) {
            Some(f) => Some(PublicKey::from_bytes(f.value(bytes)).ok_or_else(|| {
                AuthError::malformed(what, "sfSigningPubKey is not a secp256k1 or ed25519 key")
            })?),
            None => None,
        };
        if let Some(v) = find(VERSION) {
            if u16::from_be_bytes([v.value(bytes)[0], v.value(bytes)[1]]) != 0 {
                return Err(AuthError::malformed(what, "sfVersion is not 0"));
            }
        }
        let domain = match find(DOMAIN) {
            Some(f) => {
                let d = f.value(bytes);
                if d.is_empty() || d.len() > 253 || !d.iter().all(|c| c.is_ascii_graphic()) {
                    return Err(AuthError::malformed(what, "sfDomain is not a domain name"));
                }
                Some(String::from_utf8_lossy(d).into_owned())
            }
            None => None,
        };
        let signature = find(SIGNATURE);
        let revoked = sequence == REVOKED;
        if !revoked && signing.is_none() {
            return Err(AuthError::malformed(
                what,
                "has no sfSigningPubKey and does not revoke its key",
            ));
        }
        if signing == Some(master) {
            return Err(AuthError::invalid(format!(
                "{what}: the signing key is the master key"
            )));
        }
        let mut cut: Vec<Field> = vec![*master_sig];
        if let Some(s) = signature {
            cut.push(*s);
        }
        cut.sort_by_key(|f| f.start);
        let mut signed = MANIFEST_PREFIX.to_vec();
        signed.extend_from_slice(&without(bytes, &cut));
        master
            .verify(&signed, master_sig.value(bytes), true)
            .map_err(|e| AuthError::signature(&format!("{what}: the master signature"), e))?;
        if let Some(key) = signing {
            let sig = signature.ok_or_else(|| {
                AuthError::malformed(what, "has a signing key but no sfSignature")
            })?;
            key.verify(&signed, sig.value(bytes), true).map_err(|e| {
                AuthError::signature(&format!("{what}: the signing key's signature"), e)
            })?;
        }
        Ok(Manifest {
            master,
            signing: if revoked { None } else { signing },
            sequence,
            domain,
        })
    }

    /// Makes and signs a manifest: `master` delegates to `signing` (or, with
    /// `None`, revokes itself; pass [`REVOKED`] as the sequence then).
    pub fn make(
        master: &KeyPair,
        signing: Option<&KeyPair>,
        sequence: u32,
        domain: Option<&str>,
    ) -> Vec<u8> {
        let mut body = Vec::new();
        body.push(0x24);
        body.extend_from_slice(&sequence.to_be_bytes());
        push_vl(&mut body, &[0x71], &master.public().to_bytes());
        if let Some(s) = signing {
            push_vl(&mut body, &[0x73], &s.public().to_bytes());
        }
        // The domain (7,7) sorts after the signature (7,6): signed bytes hold
        // it, so it is written in place below.
        let mut signed = MANIFEST_PREFIX.to_vec();
        signed.extend_from_slice(&body);
        if let Some(d) = domain {
            push_vl(&mut signed, &[0x77], d.as_bytes());
        }
        let mut out = body;
        if let Some(s) = signing {
            push_vl(&mut out, &[0x76], &s.sign(&signed));
        }
        if let Some(d) = domain {
            push_vl(&mut out, &[0x77], d.as_bytes());
        }
        push_vl(&mut out, &[0x70, 0x12], &master.sign(&signed));
        out
    }
}

/// Manifests kept verified: at most this many (then the cache starts over).
const CACHE_ENTRIES: usize = 4096;

/// The manifests verified so far, by the SHA512Half of their bytes.
fn cache() -> &'static std::sync::Mutex<std::collections::HashMap<shamap::Hash256, Manifest>> {
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<shamap::Hash256, Manifest>>,
    > = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Appends a VL field: its id, length prefix and bytes.
pub(crate) fn push_vl(out: &mut Vec<u8>, id: &[u8], value: &[u8]) {
    out.extend_from_slice(id);
    shamap::xrpl::vl::append_vl(value, out).expect("keys and signatures are short");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_manifests_verify_and_each_byte_matters() {
        for (master, signing) in [
            (
                KeyPair::ed25519([1; 32]),
                KeyPair::secp256k1([2; 32]).expect("key"),
            ),
            (
                KeyPair::secp256k1([3; 32]).expect("key"),
                KeyPair::ed25519([4; 32]),
            ),
        ] {
            let m = Manifest::make(&master, Some(&signing), 5, Some("example.com"));
            let got = Manifest::verify(&m, "m").expect("verifies");
            assert_eq!(got.master, master.public());
            assert_eq!(got.signing, Some(signing.public()));
            assert_eq!(got.sequence, 5);
            assert_eq!(got.domain.as_deref(), Some("example.com"));
            for i in 0..m.len() {
                let mut bad = m.clone();
                bad[i] ^= 0x01;
                assert!(
                    Manifest::verify(&bad, "m").is_err(),
                    "byte {i} flipped still verifies"
                );
            }
        }
    }

    #[test]
    fn a_revocation_verifies_without_a_signing_key() {
        let master = KeyPair::ed25519([8; 32]);
        let m = Manifest::make(&master, None, REVOKED, None);
        let got = Manifest::verify(&m, "m").expect("verifies");
        assert!(got.revoked());
        assert_eq!(got.signing, None);
    }
}
