//! Validations (`STValidation`): a validator's signed statement that a
//! ledger hash is the ledger it built.
//!
//! The fields rippled writes (its `validationFormat`): `sfFlags`,
//! `sfLedgerHash`, `sfLedgerSequence`, `sfSigningTime`, `sfSigningPubKey`,
//! `sfSignature` (required); `sfCloseTime`, `sfLoadFee`, `sfAmendments`,
//! `sfBaseFee`, `sfReserveBase`, `sfReserveIncrement`, `sfConsensusHash`,
//! `sfCookie`, `sfValidatedHash`, `sfServerVersion`, `sfBaseFeeDrops`,
//! `sfReserveBaseDrops`, `sfReserveIncrementDrops` (optional). Any other
//! field is refused, as rippled's parser refuses it. The signature covers
//! `VAL\0` ‖ every field but `sfSignature`; it is checked fully canonical
//! when the flags carry `vfFullyCanonicalSig` (`0x80000000`), as rippled
//! does. `vfFullValidation` (`0x00000001`) marks a full validation.

use std::path::Path;

use serde_json::Value;
use shamap::Hash256;

use crate::error::AuthError;
use crate::keys::{KeyPair, PublicKey};
use shamap::xrpl::fields::{read_fields, type_code as t, u32_of, without};

/// `VAL\0`: the prefix of a validation's signed bytes.
pub const VALIDATION_PREFIX: &[u8; 4] = b"VAL\0";
/// The flag of a full validation.
pub const FULL_VALIDATION: u32 = 0x0000_0001;
/// The flag asking that the signature be checked fully canonical.
pub const FULLY_CANONICAL_SIG: u32 = 0x8000_0000;

const FLAGS: (u8, u8) = (t::UINT32, 2);
const LEDGER_SEQUENCE: (u8, u8) = (t::UINT32, 6);
const SIGNING_TIME: (u8, u8) = (t::UINT32, 9);
const LEDGER_HASH: (u8, u8) = (t::HASH256, 1);
const SIGNING_PUB_KEY: (u8, u8) = (t::BLOB, 3);
const SIGNATURE: (u8, u8) = (t::BLOB, 6);

/// Every field a validation may hold.
const KNOWN: [(u8, u8); 19] = [
    FLAGS,
    LEDGER_SEQUENCE,
    (t::UINT32, 7), // sfCloseTime
    SIGNING_TIME,
    (t::UINT32, 24), // sfLoadFee
    (t::UINT32, 31), // sfReserveBase
    (t::UINT32, 32), // sfReserveIncrement
    (t::UINT64, 5),  // sfBaseFee
    (t::UINT64, 10), // sfCookie
    (t::UINT64, 11), // sfServerVersion
    LEDGER_HASH,
    (t::HASH256, 23), // sfConsensusHash
    (t::HASH256, 25), // sfValidatedHash
    (t::AMOUNT, 22),  // sfBaseFeeDrops
    (t::AMOUNT, 23),  // sfReserveBaseDrops
    (t::AMOUNT, 24),  // sfReserveIncrementDrops
    SIGNING_PUB_KEY,
    SIGNATURE,
    (t::VECTOR256, 3), // sfAmendments
];

/// A validation whose signature has been checked against the key it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// The key that signed it (`sfSigningPubKey`): a validator's signing key.
    pub signing_key: PublicKey,
    /// The ledger it validates.
    pub ledger_hash: Hash256,
    /// That ledger's sequence.
    pub ledger_seq: u32,
    /// `sfFlags`.
    pub flags: u32,
    /// `sfSigningTime` (seconds since 2000-01-01).
    pub signing_time: u32,
    /// The serialized validation.
    pub raw: Vec<u8>,
}

impl Validation {
    /// Whether this is a full validation.
    pub fn full(&self) -> bool {
        self.flags & FULL_VALIDATION != 0
    }

    /// Parses a serialized validation and checks its signature with the key
    /// it names. `what` names it in errors.
    pub fn verify(raw: &[u8], what: &str) -> Result<Validation, AuthError> {
        let fields = read_fields(raw, what)?;
        for f in &fields {
            if !KNOWN.contains(&(f.type_code, f.field_code)) {
                return Err(AuthError::malformed(
                    what,
                    &format!(
                        "holds field ({}, {}), which rippled does not write in a validation",
                        f.type_code, f.field_code
                    ),
                ));
            }
        }
        let get = |id: (u8, u8), name: &str| {
            fields
                .iter()
                .find(|f| f.is(id.0, id.1))
                .ok_or_else(|| AuthError::malformed(what, &format!("has no {name}")))
        };
        let flags = u32_of(get(FLAGS, "sfFlags")?.value(raw));
        let ledger_seq = u32_of(get(LEDGER_SEQUENCE, "sfLedgerSequence")?.value(raw));
        let signing_time = u32_of(get(SIGNING_TIME, "sfSigningTime")?.value(raw));
        let ledger_hash = Hash256::from_slice(get(LEDGER_HASH, "sfLedgerHash")?.value(raw))
            .ok_or_else(|| AuthError::malformed(what, "sfLedgerHash is not 32 bytes"))?;
        let signing_key =
            PublicKey::from_bytes(get(SIGNING_PUB_KEY, "sfSigningPubKey")?.value(raw)).ok_or_else(
                || AuthError::malformed(what, "sfSigningPubKey is not a secp256k1 or ed25519 key"),
            )?;
        let sig = get(SIGNATURE, "sfSignature")?;
        let mut signed = VALIDATION_PREFIX.to_vec();
        signed.extend_from_slice(&without(raw, std::slice::from_ref(sig)));
        signing_key
            .verify(&signed, sig.value(raw), flags & FULLY_CANONICAL_SIG != 0)
            .map_err(|e| AuthError::signature(&format!("{what}: the signature"), e))?;
        Ok(Validation {
            signing_key,
            ledger_hash,
            ledger_seq,
            flags,
            signing_time,
            raw: raw.to_vec(),
        })
    }

    /// Makes and signs a full validation of `ledger_hash` (for tests and
    /// fixtures): flags full and fully canonical, the fields rippled always
    /// writes.
    pub fn make(
        signing: &KeyPair,
        ledger_hash: &Hash256,
        ledger_seq: u32,
        signing_time: u32,
    ) -> Vec<u8> {
        let mut body = Vec::new();
        body.push(0x22);
        body.extend_from_slice(&(FULL_VALIDATION | FULLY_CANONICAL_SIG).to_be_bytes());
        body.push(0x26);
        body.extend_from_slice(&ledger_seq.to_be_bytes());
        body.push(0x29);
        body.extend_from_slice(&signing_time.to_be_bytes());
        body.push(0x51);
        body.extend_from_slice(&ledger_hash.0);
        crate::manifest::push_vl(&mut body, &[0x73], &signing.public().to_bytes());
        let mut signed = VALIDATION_PREFIX.to_vec();
        signed.extend_from_slice(&body);
        let mut out = body;
        crate::manifest::push_vl(&mut out, &[0x76], &signing.sign(&signed));
        out
    }
}

/// A validation as found: the key it was filed under (the XPOP's `data`
/// key, a stream message's `validation_public_key`; `None` for raw hex),
/// its bytes, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundValidation {
    /// The key it was filed under, if any.
    pub filed_under: Option<String>,
    /// The serialized validation.
    pub raw: Vec<u8>,
    /// Where it came from (a file name), for messages.
    pub source: String,
}

/// What a directory of validations holds: the collector's layout
/// (`vl.json` beside `validation_n….json` files) or any `.json` and hex files.
#[derive(Debug, Default)]
pub struct ValidationSet {
    /// The validations found.
    pub validations: Vec<FoundValidation>,
    /// A validator list found among them (`vl.json`, or any file holding one).
    pub vl: Option<Value>,
}

/// Reads validations from files and directories: rippled's `validations`
/// stream messages (JSON with `validation_public_key` and `data`), one per
/// file or many in a JSON array or one per line, or raw hex. A directory
/// is read file by file (sorted by name); a validator list met there is kept.
pub fn read_validations(paths: &[impl AsRef<Path>]) -> Result<ValidationSet, AuthError> {
    let mut set = ValidationSet::default();
    for p in paths {
        let p = p.as_ref();
        if p.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(p)
                .map_err(|e| {
                    AuthError::invalid(format!("{}: cannot read the directory: {e}", p.display()))
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|e| e.is_file())
                .collect();
            entries.sort();
            for e in entries {
                read_one(&e, &mut set)?;
            }
        } else {
            read_one(p, &mut set)?;
        }
    }
    Ok(set)
}

fn read_one(path: &Path, set: &mut ValidationSet) -> Result<(), AuthError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| AuthError::invalid(format!("{name}: cannot read: {e}")))?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(AuthError::malformed(&name, "is empty"));
    }
    if trimmed.bytes().all(|c| c.is_ascii_hexdigit()) {
        let raw =
            const_hex::decode(trimmed).map_err(|_| AuthError::malformed(&name, "is not hex"))?;
        set.validations.push(FoundValidation {
            filed_under: None,
            raw,
            source: name,
        });
        return Ok(());
    }
    let values: Vec<Value> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Array(a)) => a,
        Ok(v) => vec![v],
        Err(_) => {
            // One message per line (a captured stream).
            let mut out = Vec::new();
            for (i, line) in trimmed
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                out.push(serde_json::from_str(line).map_err(|e| {
                    AuthError::malformed(
                        &name,
                        &format!("line {} is neither JSON nor hex ({e})", i + 1),
                    )
                })?);
            }
            out
        }
    };
    for v in values {
        if v.get("public_key").is_some() && (v.get("blob").is_some() || v.get("blobs_v2").is_some())
        {
            set.vl = Some(v);
            continue;
        }
        let data = v.get("data").and_then(Value::as_str).ok_or_else(|| {
            AuthError::malformed(&name, "is not a validations stream message (no \"data\")")
        })?;
        let raw = const_hex::decode(data.trim())
            .map_err(|_| AuthError::malformed(&name, "\"data\" is not hex"))?;
        let filed_under = v
            .get("validation_public_key")
            .and_then(Value::as_str)
            .map(str::to_string);
        set.validations.push(FoundValidation {
            filed_under,
            raw,
            source: name.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_validation_verifies_and_each_byte_matters() {
        for k in [
            KeyPair::secp256k1([5; 32]).expect("key"),
            KeyPair::ed25519([6; 32]),
        ] {
            let h = Hash256([0xAB; 32]);
            let v = Validation::make(&k, &h, 77, 1000);
            let got = Validation::verify(&v, "v").expect("verifies");
            assert_eq!(got.ledger_hash, h);
            assert_eq!(got.ledger_seq, 77);
            assert!(got.full());
            assert_eq!(got.signing_key, k.public());
            for i in 0..v.len() {
                let mut bad = v.clone();
                bad[i] ^= 0x04;
                assert!(
                    Validation::verify(&bad, "v").is_err(),
                    "byte {i} flipped still verifies"
                );
            }
        }
    }
}
