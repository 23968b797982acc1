//! Validator lists as list sites publish them (`vl.json`).
//!
//! ```json
//! {"public_key": "ED…", "manifest": "<base64>", "blob": "<base64>", "signature": "<hex>", "version": 1}
//! {"public_key": "ED…", "manifest": "<base64>", "version": 2,
//!  "blobs_v2": [{"blob": "<base64>", "signature": "<hex>", "manifest": "<base64, optional>"}]}
//! ```
//!
//! The trust chain: the key one trusts is the publisher's master key
//! (`public_key`); its manifest delegates to a signing key; that key signs
//! the blob (the raw bytes, not a hash of them); the blob is JSON
//! `{"sequence", "expiration", "effective"?, "validators": [{"validation_public_key",
//! "manifest"}]}`, each validator's manifest delegating its master key to the
//! key that signs its validations. Times are seconds since 2000-01-01 (the
//! XRP Ledger's epoch).

use base64::Engine as _;
use serde_json::Value;

use crate::error::AuthError;
use crate::keys::{KeyPair, PublicKey};
use crate::manifest::Manifest;

/// A validator on a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedValidator {
    /// Its master key (`validation_public_key`).
    pub master: PublicKey,
    /// The key its manifest delegates to; `None` when the manifest revokes the master key.
    pub signing: Option<PublicKey>,
    /// Its manifest's sequence.
    pub manifest_sequence: u32,
}

/// A validator list whose every signature has been checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatorList {
    /// The publisher's master key (the trusted key).
    pub publisher: PublicKey,
    /// The publisher's signing key (from its manifest) that signed the blob.
    pub publisher_signing: PublicKey,
    /// The list's sequence.
    pub sequence: u64,
    /// When it takes effect (seconds since 2000-01-01), if it says.
    pub effective: Option<u64>,
    /// When it expires (seconds since 2000-01-01).
    pub expiration: u64,
    /// The validators, in the list's order.
    pub validators: Vec<ListedValidator>,
    /// The list as given (for writing it into an XPOP unchanged).
    pub json: Value,
}

impl ValidatorList {
    /// The number of validations a ledger needs: ⌈0.8 × validators⌉, as
    /// rippled and XLS-41 compute it (at least 1).
    pub fn quorum(&self) -> usize {
        (self.validators.len() * 4).div_ceil(5).max(1)
    }

    /// Whether the list was in force at `time` (seconds since 2000-01-01).
    pub fn in_force_at(&self, time: u64) -> bool {
        self.effective.is_none_or(|e| e <= time) && time < self.expiration
    }

    /// The listed validator with this master or signing key.
    pub fn find(&self, key: &PublicKey) -> Option<&ListedValidator> {
        self.validators
            .iter()
            .find(|v| v.master == *key || v.signing.as_ref() == Some(key))
    }

    /// Reads and checks a published list against the trusted publisher key
    /// `trusted`: the publisher's manifest (its master key must be
    /// `trusted`), the blob's signature by the manifest's signing key, and
    /// every validator's manifest. For a version-2 list the blob chosen is
    /// the one in force at `at` (seconds since 2000-01-01) when given, else
    /// the highest sequence; each blob's signature is checked.
    pub fn verify(
        json: &Value,
        trusted: &PublicKey,
        at: Option<u64>,
    ) -> Result<ValidatorList, AuthError> {
        let what = "the validator list";
        let obj = json
            .as_object()
            .ok_or_else(|| AuthError::malformed(what, "is not a JSON object"))?;
        let text = |name: &str| -> Result<&str, AuthError> {
            obj.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| AuthError::malformed(what, &format!("has no string field {name:?}")))
        };
        let claimed = PublicKey::parse(text("public_key")?)?;
        if claimed != *trusted {
            return Err(AuthError::invalid(format!(
                "the validator list is published by {}, not by the trusted key {}",
                claimed.to_hex(),
                trusted.to_hex()
            )));
        }
        let manifest_bytes = base64_field(text("manifest")?, "the publisher's manifest")?;
        let manifest = Manifest::verify(&manifest_bytes, "the publisher's manifest")?;
        if manifest.master != *trusted {
            return Err(AuthError::invalid(
                "the publisher's manifest is for another master key",
            ));
        }
        let version = obj.get("version").and_then(Value::as_u64).unwrap_or(1);
        let mut blobs: Vec<(String, String, Option<String>)> = Vec::new();
        if version == 0 || version > 2 {
            return Err(AuthError::malformed(
                what,
                &format!("has version {version}; versions 1 and 2 are known"),
            ));
        }
        // Version 2 carries `blobs_v2`; a list of either version may carry
        // one `blob` and its `signature` (xahaud's test network writes
        // version 2 with a single blob).
        match obj.get("blobs_v2") {
            Some(v) => {
                let list = v
                    .as_array()
                    .ok_or_else(|| AuthError::malformed(what, "\"blobs_v2\" is not an array"))?;
                for b in list {
                    let field =
                        |name: &str| b.get(name).and_then(Value::as_str).map(str::to_string);
                    blobs.push((
                        field("blob").ok_or_else(|| {
                            AuthError::malformed(what, "a blobs_v2 entry has no blob")
                        })?,
                        field("signature").ok_or_else(|| {
                            AuthError::malformed(what, "a blobs_v2 entry has no signature")
                        })?,
                        field("manifest"),
                    ));
                }
                if blobs.is_empty() {
                    return Err(AuthError::malformed(what, "\"blobs_v2\" is empty"));
                }
            }
            None => blobs.push((
                text("blob")?.to_string(),
                text("signature")?.to_string(),
                None,
            )),
        }
        let mut lists = Vec::new();
        for (blob, signature, blob_manifest) in blobs {
            let signing = match blob_manifest {
                Some(m) => {
                    let bytes = base64_field(&m, "a blob's publisher manifest")?;
                    let m = Manifest::verify(&bytes, "a blob's publisher manifest")?;
                    if m.master != *trusted {
                        return Err(AuthError::invalid(
                            "a blob's publisher manifest is for another master key",
                        ));
                    }
                    m.signing
                }
                None => manifest.signing,
            };
            let signing = signing
                .ok_or_else(|| AuthError::invalid("the publisher's manifest revokes its key"))?;
            let raw = base64_field(&blob, "the list blob")?;
            let sig = const_hex::decode(signature.trim())
                .map_err(|_| AuthError::malformed(what, "the blob signature is not hex"))?;
            signing.verify(&raw, &sig, true).map_err(|e| {
                AuthError::signature(
                    "the list blob's signature by the publisher's signing key",
                    e,
                )
            })?;
            lists.push(Self::read_blob(&raw, *trusted, signing, json)?);
        }
        let chosen = match at {
            Some(t) => lists.iter().position(|l| l.in_force_at(t)),
            None => None,
        }
        .unwrap_or_else(|| {
            let mut best = 0;
            for (i, l) in lists.iter().enumerate() {
                if l.sequence > lists[best].sequence {
                    best = i;
                }
            }
            best
        });
        Ok(lists.swap_remove(chosen))
    }

    fn read_blob(
        raw: &[u8],
        publisher: PublicKey,
        signing: PublicKey,
        json: &Value,
    ) -> Result<ValidatorList, AuthError> {
        let what = "the list blob";
        let blob: Value = serde_json::from_slice(raw)
            .map_err(|e| AuthError::malformed(what, &format!("is not JSON ({e})")))?;
        let num = |name: &str| blob.get(name).and_then(Value::as_u64);
        let sequence = num("sequence")
            .ok_or_else(|| AuthError::malformed(what, "has no integer \"sequence\""))?;
        let expiration = num("expiration")
            .ok_or_else(|| AuthError::malformed(what, "has no integer \"expiration\""))?;
        let effective = match blob.get("effective") {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| AuthError::malformed(what, "\"effective\" is not an integer"))?,
            ),
        };
        if effective.is_some_and(|e| e >= expiration) {
            return Err(AuthError::invalid(
                "the list blob expires before it takes effect",
            ));
        }
        let entries = blob
            .get("validators")
            .and_then(Value::as_array)
            .ok_or_else(|| AuthError::malformed(what, "has no \"validators\" array"))?;
        let mut validators: Vec<ListedValidator> = Vec::with_capacity(entries.len());
        for (i, v) in entries.iter().enumerate() {
            let key_text = v
                .get("validation_public_key")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    AuthError::malformed(
                        what,
                        &format!("validator {i} has no validation_public_key"),
                    )
                })?;
            let master = PublicKey::parse(key_text)?;
            let name = format!("validator {}'s manifest", master.to_base58());
            let m64 = v.get("manifest").and_then(Value::as_str).ok_or_else(|| {
                AuthError::malformed(
                    what,
                    &format!("validator {} has no manifest", master.to_base58()),
                )
            })?;
            let m = Manifest::verify(&base64_field(m64, &name)?, &name)?;
            if m.master != master {
                return Err(AuthError::invalid(format!(
                    "{name} is for another master key"
                )));
            }
            if validators.iter().any(|x| x.master == master) {
                return Err(AuthError::invalid(format!(
                    "validator {} is listed twice",
                    master.to_base58()
                )));
            }
            validators.push(ListedValidator {
                master,
                signing: m.signing,
                manifest_sequence: m.sequence,
            });
        }
        Ok(ValidatorList {
            publisher,
            publisher_signing: signing,
            sequence,
            effective,
            expiration,
            validators,
            json: json.clone(),
        })
    }

    /// Makes and signs a version-1 list as a list site publishes it: for
    /// tests and for lists of one's own. `validators` are `(master, signing)`
    /// pairs; each gets a manifest of sequence 1.
    pub fn make(
        publisher: &KeyPair,
        publisher_signing: &KeyPair,
        validators: &[(KeyPair, KeyPair)],
        sequence: u64,
        expiration: u64,
    ) -> Value {
        let b64 = base64::engine::general_purpose::STANDARD;
        let entries: Vec<Value> = validators
            .iter()
            .map(|(master, signing)| {
                serde_json::json!({
                    "validation_public_key": master.public().to_hex(),
                    "manifest": b64.encode(Manifest::make(master, Some(signing), 1, None)),
                })
            })
            .collect();
        let blob = serde_json::json!({"sequence": sequence, "expiration": expiration, "validators": entries});
        let raw = serde_json::to_vec(&blob).expect("JSON serializes");
        serde_json::json!({
            "public_key": publisher.public().to_hex(),
            "manifest": b64.encode(Manifest::make(publisher, Some(publisher_signing), 1, None)),
            "blob": b64.encode(&raw),
            "signature": const_hex::encode_upper(publisher_signing.sign(&raw)),
            "version": 1,
        })
    }
}

/// Decodes a base64 field (standard alphabet, padding optional).
pub(crate) fn base64_field(text: &str, what: &str) -> Result<Vec<u8>, AuthError> {
    let cleaned: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .or_else(|_| {
            base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(cleaned.trim_end_matches('=').as_bytes())
        })
        .map_err(|_| AuthError::malformed(what, "is not base64"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(n: u8) -> Vec<(KeyPair, KeyPair)> {
        (0..n)
            .map(|i| {
                (
                    KeyPair::ed25519([i + 10; 32]),
                    KeyPair::secp256k1([i + 100; 32]).expect("key"),
                )
            })
            .collect()
    }

    #[test]
    fn a_made_list_verifies_and_refuses_another_publisher() {
        let publisher = KeyPair::ed25519([1; 32]);
        let signing = KeyPair::secp256k1([2; 32]).expect("key");
        let vl = ValidatorList::make(&publisher, &signing, &pairs(5), 3, 900_000_000);
        let list = ValidatorList::verify(&vl, &publisher.public(), None).expect("verifies");
        assert_eq!(list.validators.len(), 5);
        assert_eq!(list.quorum(), 4);
        assert_eq!(list.sequence, 3);
        let other = KeyPair::ed25519([3; 32]);
        assert!(ValidatorList::verify(&vl, &other.public(), None).is_err());
    }

    #[test]
    fn quorum_is_the_ceiling_of_four_fifths() {
        let publisher = KeyPair::ed25519([1; 32]);
        let signing = KeyPair::ed25519([2; 32]);
        for (n, q) in [
            (1u8, 1usize),
            (2, 2),
            (3, 3),
            (4, 4),
            (5, 4),
            (10, 8),
            (35, 28),
            (36, 29),
        ] {
            let vl = ValidatorList::make(&publisher, &signing, &pairs(n), 1, 900_000_000);
            let list = ValidatorList::verify(&vl, &publisher.public(), None).expect("verifies");
            assert_eq!(list.quorum(), q, "{n} validators");
        }
    }
}
