//! Decoded-JSON ledger entries (a `ledger` response requested without
//! `"binary": true`), encoded into rippled's binary form so that they can be
//! hashed.
//!
//! The encoding is our own (`decoded/encode.rs` follows rippled's
//! `Serializer`, `STObject`, `STAmount`, `to_currency` and `STPathSet`), on
//! the field definitions of the XRPL codec `xrpl-rust` (pinned to one exact
//! version in `Cargo.toml`; this module is the only place in the workspace
//! that names it). What makes a wrong hash impossible to get silently:
//!
//! - Every key of the object is checked, recursively into nested objects
//!   and arrays (`Memos`, `Signers`, metadata `AffectedNodes`,
//!   `FinalFields`, …), against the definitions: it must name a serialized
//!   field, with a value of a form rippled prints for that field's type.
//!   Anything else is an error naming the entry and the field
//!   ([`FieldError`]).
//! - Values are encoded over rippled's whole range (issued amounts with a
//!   16-digit mantissa and exponents −96..80, negative XRP, MPT amounts,
//!   currency codes of rippled's ISO set or 40 hex digits, an empty
//!   account) and refused, naming the field and why, outside it: nothing is
//!   rounded, dropped or guessed.
//! - The keys that rippled and Clio add to decoded objects without their
//!   being serialized fields are handled deliberately, each in one place:
//!   [`NON_SERIALIZED_KEYS`] lists them, where they may appear, and what is
//!   done with each (used, checked, or skipped).
//! - A transaction's `hash` must be the ID of the transaction as encoded.
//! - Each value is read once, in time linear in its length.

mod encode;

use serde_json::{Map, Value};
use xrpl::core::binarycodec::types::AccountId;

use shamap::hash::{decode_hex, encode_hex_upper, Hash256, Key};
use shamap::xrpl::transaction_id;

use crate::error::{EntryProblem, FieldError, FieldProblem};

type Object = Map<String, Value>;

pub use crate::error::CODEC;

/// Where in a decoded entry a non-serialized key may appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The top level of a state entry (`accountState`, `state`).
    StateEntry,
    /// The top level of a transaction entry: the transaction's own object
    /// in API v1 (fields, `hash` and `metaData` side by side), the wrapper
    /// around `tx_json` and `meta` in API v2.
    TxEntry,
    /// The transaction's fields themselves (the v1 entry, or v2 `tx_json`).
    TxFields,
    /// The top level of a transaction's metadata (`metaData` or `meta`).
    Metadata,
    /// One step of a path in a `Paths` path set.
    PathStep,
}

/// What is done with a non-serialized key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Read: it carries part of the entry (its key, its metadata).
    Used,
    /// Compared with what the encoded entry implies; a difference is an error.
    Checked,
    /// An API alias of the serialized field named: it stands for that
    /// field when the field is absent, and must equal it when present.
    AliasOf(&'static str),
    /// Left out of the encoding unread: computed by the server, or where
    /// and when the transaction was seen; not part of the hashed bytes.
    Skipped,
}

/// A key that rippled or Clio put into decoded ledger JSON which is not a
/// serialized field: where it may appear, and how it is handled.
#[derive(Clone, Copy, Debug)]
pub struct NonSerializedKey {
    /// Where it is accepted. Anywhere else it is an unknown field.
    pub place: Place,
    /// The key.
    pub key: &'static str,
    /// What is done with it.
    pub handling: Handling,
    /// Why it is there.
    pub about: &'static str,
}

/// Every non-serialized key accepted in decoded entries: the one list.
///
/// From rippled's `STLedgerEntry::getJson` (`index`, `mpt_issuance_id`),
/// `STTx::getJson` (`hash`), `LedgerToJson.cpp` `fillJsonTx` (`metaData`,
/// API v2 `tx_json`/`meta`/`hash`/`ledger_hash`/`ledger_index`/
/// `close_time_iso`/`validated`, `owner_funds`, `DeliverMax` through
/// `insertDeliverMax`, `delivered_amount` through `insertDeliveredAmount`,
/// `mpt_issuance_id` through `insertMPTokenIssuanceID`), the NFT synthetic
/// fields of `insertNFTSyntheticInJson` (`nftoken_id`, `nftoken_ids`,
/// `offer_id`), the `tx`/`account_tx` members a transaction copied from
/// those responses keeps (`inLedger`, `date`, `ctid`), and the path-step
/// members of `STPathSet::getJson` (`type`, `type_hex`). `DeliveredAmount`
/// (capitalized) is a serialized metadata field, not in this list: it is
/// encoded.
pub const NON_SERIALIZED_KEYS: &[NonSerializedKey] = &[
    NonSerializedKey {
        place: Place::StateEntry,
        key: "index",
        handling: Handling::Used,
        about: "the entry's key in the state map (required)",
    },
    NonSerializedKey {
        place: Place::StateEntry,
        key: "mpt_issuance_id",
        handling: Handling::Checked,
        about: "an MPTokenIssuance's ID: its Sequence then its Issuer",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "hash",
        handling: Handling::Checked,
        about: "the transaction ID: SHA512Half of TXN\\0 and the encoded transaction",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "metaData",
        handling: Handling::Used,
        about: "the metadata (API v1), decoded or hex",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "meta",
        handling: Handling::Used,
        about: "the metadata (API v2, and binary responses), decoded or hex",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "tx_json",
        handling: Handling::Used,
        about: "the transaction's fields (API v2)",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "owner_funds",
        handling: Handling::Skipped,
        about: "an OfferCreate owner's balance, computed by the server",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "ledger_hash",
        handling: Handling::Skipped,
        about: "the ledger the transaction is in (API v2)",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "ledger_index",
        handling: Handling::Skipped,
        about: "the ledger the transaction is in",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "inLedger",
        handling: Handling::Skipped,
        about: "the ledger the transaction is in (old name)",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "close_time_iso",
        handling: Handling::Skipped,
        about: "the ledger's close time (API v2)",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "date",
        handling: Handling::Skipped,
        about: "the ledger's close time",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "validated",
        handling: Handling::Skipped,
        about: "whether the ledger was validated when served",
    },
    NonSerializedKey {
        place: Place::TxEntry,
        key: "ctid",
        handling: Handling::Skipped,
        about: "the compact transaction ID (ledger, index, network)",
    },
    NonSerializedKey {
        place: Place::TxFields,
        key: "DeliverMax",
        handling: Handling::AliasOf("Amount"),
        about: "a Payment's Amount under its API name (beside Amount in v1, instead of it in v2)",
    },
    NonSerializedKey {
        place: Place::Metadata,
        key: "delivered_amount",
        handling: Handling::Skipped,
        about: "the amount delivered, computed by the server (Payment, CheckCash)",
    },
    NonSerializedKey {
        place: Place::Metadata,
        key: "mpt_issuance_id",
        handling: Handling::Skipped,
        about: "the ID of the MPT issuance created, computed by the server",
    },
    NonSerializedKey {
        place: Place::Metadata,
        key: "nftoken_id",
        handling: Handling::Skipped,
        about: "the NFToken minted or accepted, computed by the server",
    },
    NonSerializedKey {
        place: Place::Metadata,
        key: "nftoken_ids",
        handling: Handling::Skipped,
        about: "the NFTokens of the offers cancelled, computed by the server",
    },
    NonSerializedKey {
        place: Place::Metadata,
        key: "offer_id",
        handling: Handling::Skipped,
        about: "the NFToken offer created, computed by the server",
    },
    NonSerializedKey {
        place: Place::PathStep,
        key: "type",
        handling: Handling::Checked,
        about: "the step's kind, from which of account, currency and issuer it has",
    },
    NonSerializedKey {
        place: Place::PathStep,
        key: "type_hex",
        handling: Handling::Checked,
        about: "the same kind as 16 hex digits",
    },
];

/// How `key` is handled at `place`, if it is a non-serialized key there.
fn non_serialized(place: Place, key: &str) -> Option<Handling> {
    NON_SERIALIZED_KEYS
        .iter()
        .find(|k| k.place == place && k.key == key)
        .map(|k| k.handling)
}

/// A decoded state entry's fields encoded; `key` is its `index`, read and
/// checked by the caller ([`crate::entry::read_state_entry`]).
pub(crate) fn state_entry(obj: &Object, key: Key) -> Result<Vec<u8>, EntryProblem> {
    let entry = format!("index {}", Hash256::from(key));
    let fields = without(obj, Place::StateEntry);
    let data = encode_object(&fields).map_err(|error| field(&entry, error))?;
    if let Some(v) = obj.get("mpt_issuance_id") {
        check_mpt_issuance_id(&fields, v).map_err(|error| field(&entry, error))?;
    }
    Ok(data)
}

/// The transaction of a decoded v1 entry (fields beside `hash` and
/// `metaData`) or a v2 `tx_json`, encoded; `in_wrapper` is true for v2.
/// `name` is how the entry is named in errors.
pub(crate) fn transaction(
    fields: &Object,
    in_wrapper: bool,
    name: &str,
) -> Result<Vec<u8>, EntryProblem> {
    let mut tx = if in_wrapper {
        fields.clone()
    } else {
        without(fields, Place::TxEntry)
    };
    if let Some(alias) = tx.remove("DeliverMax") {
        deliver_max(&mut tx, alias).map_err(|error| field(name, error))?;
    }
    unl_modify_account(&mut tx);
    encode_object(&tx).map_err(|error| field(name, error))
}

/// The base58 spelling of the all-zero account ID.
const ZERO_ACCOUNT: &str = "rrrrrrrrrrrrrrrrrrrrrhoLvTp";

/// A UNLModify pseudo-transaction's `Account` is a default (empty)
/// STAccount, serialized as an empty VL. rippled prints it as `""`; the
/// ripple-binary-codec and xrpl-rust spell it as the zero account: both
/// become `""` here.
fn unl_modify_account(tx: &mut Object) {
    if tx.get("TransactionType").and_then(Value::as_str) == Some("UNLModify")
        && tx.get("Account").and_then(Value::as_str) == Some(ZERO_ACCOUNT)
    {
        tx.insert("Account".to_owned(), Value::String(String::new()));
    }
}

/// The binary form of one decoded object (a ledger entry without `index`,
/// a transaction without `hash`, or metadata), as the dump reader encodes
/// it; for tests against other projects' vectors and the fuzz target.
#[doc(hidden)]
pub fn encode_json_object(v: &Value) -> Result<Vec<u8>, FieldError> {
    let obj = v
        .as_object()
        .ok_or_else(|| FieldError::new("", FieldProblem::Shape("an object")))?;
    let mut obj = obj.clone();
    unl_modify_account(&mut obj);
    encode_object(&obj)
}

/// Checks the keys of a v2 wrapper (`tx_json`, `meta`, `hash`, …): each must
/// be one of the entry-level keys.
pub(crate) fn check_wrapper(obj: &Object, name: &str) -> Result<(), EntryProblem> {
    match obj
        .keys()
        .find(|k| non_serialized(Place::TxEntry, k).is_none())
    {
        Some(k) => Err(field(name, FieldError::new(k, FieldProblem::NotAField))),
        None => Ok(()),
    }
}

/// Decoded metadata, encoded.
pub(crate) fn metadata(meta: &Object, path: &str, name: &str) -> Result<Vec<u8>, EntryProblem> {
    let fields = without(meta, Place::Metadata);
    encode_object(&fields).map_err(|error| field(name, error.under(path)))
}

/// The ID of a transaction, checked against its claimed `hash`.
pub(crate) fn check_id(claimed: Option<Hash256>, tx: &[u8]) -> Result<(), EntryProblem> {
    let computed = transaction_id(tx);
    match claimed {
        Some(claimed) if claimed != computed => {
            Err(EntryProblem::DecodedIdMismatch { claimed, computed })
        }
        _ => Ok(()),
    }
}

fn field(entry: &str, error: FieldError) -> EntryProblem {
    EntryProblem::Field {
        entry: entry.to_owned(),
        error,
    }
}

/// `obj` without the non-serialized keys of `place`.
fn without(obj: &Object, place: Place) -> Object {
    obj.iter()
        .filter(|(k, _)| non_serialized(place, k).is_none())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `DeliverMax` (already removed from `tx`): the same as `Amount`, or
/// `Amount` itself when that is absent; only on a Payment.
fn deliver_max(tx: &mut Object, alias: Value) -> Result<(), FieldError> {
    let is_payment = tx.get("TransactionType").and_then(Value::as_str) == Some("Payment");
    if !is_payment {
        return Err(FieldError::new(
            "DeliverMax",
            FieldProblem::Inconsistent("is an alias of \"Amount\" only on a Payment".to_owned()),
        ));
    }
    match tx.get("Amount") {
        None => {
            tx.insert("Amount".to_owned(), alias);
            Ok(())
        }
        Some(amount) if *amount == alias => Ok(()),
        Some(_) => Err(FieldError::new(
            "DeliverMax",
            FieldProblem::Inconsistent("differs from \"Amount\"".to_owned()),
        )),
    }
}

/// An MPTokenIssuance's `mpt_issuance_id` must be its `Sequence` (4 bytes,
/// big-endian) then its `Issuer`'s account ID.
fn check_mpt_issuance_id(fields: &Object, v: &Value) -> Result<(), FieldError> {
    let expected = (|| {
        if fields.get("LedgerEntryType").and_then(Value::as_str) != Some("MPTokenIssuance") {
            return None;
        }
        let seq = fields.get("Sequence").and_then(Value::as_u64)?;
        let seq = u32::try_from(seq).ok()?;
        let issuer = fields.get("Issuer").and_then(Value::as_str)?;
        let issuer = AccountId::try_from(issuer).ok()?;
        let mut id = seq.to_be_bytes().to_vec();
        id.extend_from_slice(issuer.as_ref());
        Some(id)
    })();
    let given = v.as_str().and_then(|s| decode_hex(s).ok());
    match (expected, given) {
        (Some(e), Some(g)) if e == g => Ok(()),
        (None, _) => Err(FieldError::new(
            "mpt_issuance_id",
            FieldProblem::Inconsistent(
                "is only for an MPTokenIssuance with a Sequence and an Issuer".to_owned(),
            ),
        )),
        _ => Err(FieldError::new(
            "mpt_issuance_id",
            FieldProblem::Inconsistent("is not the entry's Sequence and Issuer".to_owned()),
        )),
    }
}

/// Checks every key of `obj` (recursively) and encodes it as rippled does
/// (see [`encode`]).
fn encode_object(obj: &Object) -> Result<Vec<u8>, FieldError> {
    encode::object(obj)
}

/// The codec's decoding of a serialized object (for round trips in tests
/// and the fuzz target): `None` when it does not decode.
pub fn decode_blob(blob: &[u8]) -> Option<Value> {
    xrpl::core::binarycodec::decode(&encode_hex_upper(blob)).ok()
}

#[cfg(test)]
mod tests;
