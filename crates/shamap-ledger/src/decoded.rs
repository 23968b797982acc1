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
mod tests {
    use super::encode::serialized_field;
    use super::*;
    use crate::dump::parse;
    use serde_json::json;

    const KEY: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
    const ACCOUNT: &str = "rBKPS4oLSaV2KVVuHH8EpQqMGgGefGFQs7";
    const ISSUER: &str = "r3kmLJN5D28dHuH8vZNUZpMC43pEHpaocV";

    /// An AccountRoot state entry of ledger 38129 (decoded), with `change`
    /// applied.
    fn account_root(change: impl FnOnce(&mut Value)) -> Value {
        let mut e = json!({
            "LedgerEntryType": "AccountRoot", "index": KEY, "Account": ACCOUNT,
            "PreviousTxnID": "8D7F42ED0621FBCFAE55CC6F2A9403A2AFB205708CCBA3109BB61DB8DDA261B4",
            "PreviousTxnLgrSeq": 8901, "OwnerCount": 0, "Flags": 0, "Sequence": 1,
            "Balance": "370000000"
        });
        change(&mut e);
        e
    }

    /// The Payment of ledger 38129 (decoded, API v1), with `change` applied.
    fn payment(change: impl FnOnce(&mut Value)) -> Value {
        let mut t = json!({
            "Account": ISSUER, "Amount": "10000000000",
            "Destination": "rLQBHVhFnaC5gLEkgr6HgBJJ3bgeZHg9cj", "Fee": "10", "Flags": 0,
            "Sequence": 62,
            "SigningPubKey": "034AADB09CFF4A4804073701EC53C3510CDC95917C2BB0150FB742D0C66E6CEE9E",
            "TransactionType": "Payment",
            "TxnSignature": "3045022022EB32AECEF7C644C891C19F87966DF9C62B1F34BABA6BE774325E4BB8E2DD62022100A51437898C28C2B297112DF8131F2BB39EA5FE613487DDD611525F1796264639",
            "hash": TX_HASH,
            "metaData": {"AffectedNodes": [{"ModifiedNode": {
                "FinalFields": {"Account": ISSUER, "Balance": "981481999380", "Flags": 0,
                                "OwnerCount": 0, "Sequence": 63},
                "LedgerEntryType": "AccountRoot",
                "LedgerIndex": "B33FDD5CF3445E1A7F2BE9B06336BEBD73A5E3EE885D3EF93F7E3E2992E46F1A",
                "PreviousFields": {"Balance": "991481999390", "Sequence": 62}}}],
              "TransactionIndex": 0, "TransactionResult": "tesSUCCESS"}
        });
        change(&mut t);
        t
    }

    const TX_HASH: &str = "3B1A4E1C9BB6A7208EB146BCDB86ECEA6068ED01466D933528CA2B4C64F753EF";

    fn state_err(e: Value) -> String {
        let doc = json!({ "accountState": [e] });
        match parse(doc.to_string().as_bytes()) {
            Ok(d) => panic!("expected an error, parsed {d:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn tx_err(t: Value) -> String {
        let doc = json!({ "transactions": [t] });
        match parse(doc.to_string().as_bytes()) {
            Ok(d) => panic!("expected an error, parsed {d:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn state_ok(e: Value) -> Vec<u8> {
        let doc = json!({ "accountState": [e] });
        let dump = parse(doc.to_string().as_bytes()).expect("entry encodes");
        dump.state.expect("state").remove(0).data
    }

    fn tx_ok(t: Value) -> crate::TxEntry {
        let doc = json!({ "transactions": [t] });
        let dump = parse(doc.to_string().as_bytes()).expect("transaction encodes");
        dump.transactions.expect("transactions").remove(0)
    }

    fn entry(rest: &str) -> String {
        format!("accountState entry 0: index {KEY}: {rest}")
    }

    fn tx_entry(rest: &str) -> String {
        format!("transactions entry 0: transaction {TX_HASH}: {rest}")
    }

    #[test]
    fn every_non_serialized_key_is_outside_the_codec_definitions() {
        // A skipped or aliased key must never hide a real field.
        for k in NON_SERIALIZED_KEYS {
            assert!(serialized_field(k.key).is_none(), "{}", k.key);
        }
        assert!(serialized_field("DeliveredAmount").is_some());
        assert!(serialized_field("ObjectEndMarker").is_none());
        assert!(serialized_field("Generic").is_none());
    }

    #[test]
    fn unknown_fields_are_errors_at_every_depth() {
        let not_a_field = "is not a serialized field in the XRPL codec's definitions \
                           (xrpl-rust 1.3.0), so it would be left out of the hash";
        assert_eq!(
            state_err(account_root(|e| e["Foo"] = json!(1))),
            entry(&format!("field \"Foo\" {not_a_field}"))
        );
        // `hash` is in the codec's definitions, but not serialized.
        assert_eq!(
            state_err(account_root(|e| e["hash"] = json!(KEY))),
            entry(&format!("field \"hash\" {not_a_field}"))
        );
        // A transaction-level key on a state entry.
        assert_eq!(
            state_err(account_root(|e| e["validated"] = json!(true))),
            entry(&format!("field \"validated\" {not_a_field}"))
        );
        let memo = |e: &mut Value| {
            e["Memos"] = json!([{"Memo": {"MemoType": "AB", "MemoTyp": "CD"}}]);
        };
        assert_eq!(
            tx_err(payment(memo)),
            tx_entry(&format!("field \"Memos[0].Memo.MemoTyp\" {not_a_field}"))
        );
        let signer = |e: &mut Value| {
            e["Signers"] = json!([{"Signer": {"Account": ISSUER, "Weight": 1}}]);
        };
        assert_eq!(
            tx_err(payment(signer)),
            tx_entry(&format!("field \"Signers[0].Signer.Weight\" {not_a_field}"))
        );
        let meta = |e: &mut Value| {
            e["metaData"]["AffectedNodes"][0]["ModifiedNode"]["PreviousFields"]["Bogus"] =
                json!("1");
        };
        assert_eq!(
            tx_err(payment(meta)),
            tx_entry(&format!(
                "field \"metaData.AffectedNodes[0].ModifiedNode.PreviousFields.Bogus\" {not_a_field}"
            ))
        );
        // A metadata key at the transaction's top level is unknown there.
        assert_eq!(
            tx_err(payment(|e| e["delivered_amount"] = json!("5"))),
            tx_entry(&format!("field \"delivered_amount\" {not_a_field}"))
        );
        // …and `index` inside metadata.
        let index = |e: &mut Value| {
            e["metaData"]["AffectedNodes"][0]["ModifiedNode"]["index"] = json!(KEY);
        };
        assert!(tx_err(payment(index)).contains(
            "field \"metaData.AffectedNodes[0].ModifiedNode.index\" is not a serialized"
        ));
        // An API v2 wrapper with a stray member.
        let v2 = json!({"tx_json": {"TransactionType": "Payment"}, "meta": {}, "Fee": "10"});
        assert_eq!(
            tx_err(v2),
            format!("transactions entry 0: transaction: field \"Fee\" {not_a_field}")
        );
    }

    #[test]
    fn x_addresses_are_refused() {
        // An X-address of ISSUER with tag 12345: the codec would add a
        // DestinationTag field of its own.
        let x = xrpl::core::addresscodec::classic_address_to_xaddress(ISSUER, Some(12345), false)
            .expect("X-address");
        let e = tx_err(payment(|e| e["Destination"] = json!(x)));
        assert_eq!(
            e,
            tx_entry(
                "field \"Destination\" is not a classic address (ledger JSON has no X-addresses)"
            )
        );
    }

    /// A key with a line break or a quote is quoted with escapes: the
    /// message stays one line (found by the `json_entry` fuzz target).
    #[test]
    fn odd_key_names_stay_on_one_line() {
        let e = state_err(account_root(|e| e["Sequ\nce \"x\""] = json!(8)));
        assert!(
            e.starts_with(&entry(
                r#"field "Sequ\nce \"x\"" is not a serialized field"#
            )),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn values_of_the_wrong_shape_or_refused_name_the_field() {
        assert_eq!(
            state_err(account_root(|e| e["Flags"] = Value::Null)),
            entry("field \"Flags\" is not a value (it is null)")
        );
        // An empty account is a default STAccount (an empty VL), as in
        // UNLModify; anything else must be a classic address.
        let empty = state_ok(account_root(|e| e["Account"] = json!("")));
        let full = state_ok(account_root(|_| {}));
        assert_eq!(empty.len(), full.len() - 20);
        assert_eq!(
            state_err(account_root(|e| e["Account"] = json!("0xZZ"))),
            entry("field \"Account\" has a value rippled does not accept (\"0xZZ\"): is not a classic address")
        );
        // Negative XRP is what rippled prints in metadata: sign bit clear.
        let negative = state_ok(account_root(|e| e["Balance"] = json!("-5")));
        let positive = state_ok(account_root(|e| e["Balance"] = json!("5")));
        assert_eq!(negative.len(), positive.len());
        let at = positive
            .iter()
            .zip(&negative)
            .position(|(a, b)| a != b)
            .expect("the amounts differ");
        assert_eq!((positive[at], negative[at]), (0x40, 0x00));
        assert_eq!(
            state_err(account_root(|e| e["Sequence"] = json!(1.5))),
            entry("field \"Sequence\" has a value rippled does not accept (1.5): is not an integer in range")
        );
        assert_eq!(
            state_err(account_root(|e| e["Sequence"] = json!(true))),
            entry("field \"Sequence\" is not a string or a number")
        );
        assert_eq!(
            state_err(account_root(|e| e["LedgerEntryType"] = json!("Nope"))),
            entry("field \"LedgerEntryType\" has a value rippled does not accept (\"Nope\"): is not a name in the XRPL codec's definitions")
        );
        let big_meta = |e: &mut Value| {
            e["metaData"]["AffectedNodes"][0]["ModifiedNode"]["FinalFields"]["Balance"] =
                json!("100000000000000001");
        };
        assert_eq!(tx_err(payment(big_meta)), tx_entry(
            "field \"metaData.AffectedNodes[0].ModifiedNode.FinalFields.Balance\" has a value rippled does not accept (\"100000000000000001\"): is more than 100000000000000000, rippled's largest amount of XRP drops"
        ));
        let bad_memo = |e: &mut Value| e["Memos"] = json!([{"Memo": {"MemoData": "XYZ"}}]);
        assert_eq!(
            tx_err(payment(bad_memo)),
            tx_entry("field \"Memos[0].Memo.MemoData\" has a value rippled does not accept (\"XYZ\"): is not hex (an even number of hex digits)")
        );
    }

    #[test]
    fn arrays_amounts_issues_and_paths_are_checked_for_silently_dropped_parts() {
        // An array element with two members, or a non-object field.
        let two = |e: &mut Value| e["Memos"] = json!([{"Memo": {}, "Signer": {}}]);
        assert_eq!(
            tx_err(payment(two)),
            tx_entry("field \"Memos[0]\" is not an object with one member")
        );
        let scalar = |e: &mut Value| e["Memos"] = json!([{"Fee": "10"}]);
        assert_eq!(
            tx_err(payment(scalar)),
            tx_entry("field \"Memos[0].Fee\" is not an object field")
        );
        // Vector256 members must all be strings (the codec drops others).
        let dir = json!({"LedgerEntryType": "DirectoryNode", "index": KEY,
                         "Indexes": [KEY, 5], "RootIndex": KEY, "Flags": 0});
        assert_eq!(
            state_err(dir),
            entry("field \"Indexes[1]\" is not a hex string")
        );
        // An issued amount with an extra key (the codec ignores it).
        let iou = json!({"currency": "USD", "issuer": ISSUER, "value": "1", "counterparty": "x"});
        let e = state_err(account_root(|e| e["Balance"] = iou));
        assert!(
            e.contains("field \"Balance\" is not drops as a string"),
            "{e}"
        );
        // An XRP issue with an issuer (the codec ignores the issuer).
        let amm = json!({"LedgerEntryType": "AMM", "index": KEY,
                         "Asset": {"currency": "XRP", "issuer": ISSUER}});
        assert!(state_err(amm).contains("field \"Asset\" is not {currency: \"XRP\"}"));
        // Path steps: unknown members, and type/type_hex that disagree.
        let paths = |steps: Value| payment(|e| e["Paths"] = json!([[steps]]));
        assert_eq!(
            tx_err(paths(json!({"account": ISSUER, "foo": 1}))),
            tx_entry(
                "field \"Paths[0][0].foo\" is not a serialized field in the XRPL codec's \
                 definitions (xrpl-rust 1.3.0), so it would be left out of the hash"
            )
        );
        assert_eq!(
            tx_err(paths(json!({"account": ISSUER, "type": 48}))),
            tx_entry("field \"Paths[0][0].type\" is not 1, the kind of this step")
        );
        assert_eq!(
            tx_err(paths(
                json!({"currency": "USD", "issuer": ISSUER, "type_hex": "1"})
            )),
            tx_entry(
                "field \"Paths[0][0].type_hex\" is not 0000000000000030, the kind of this step"
            )
        );
        assert_eq!(
            tx_err(paths(json!({"type": 1}))),
            tx_entry(
                "field \"Paths[0][0]\" is not a step with an account, a currency or an issuer"
            )
        );
        // Consistent type and type_hex are accepted (rippled writes them).
        let step = json!({"account": ISSUER, "type": 1, "type_hex": "0000000000000001"});
        let with_types = tx_ok(payment(|e| {
            e.as_object_mut().map(|o| o.remove("hash"));
            e["Paths"] = json!([[step]]);
        }));
        let without = tx_ok(payment(|e| {
            e.as_object_mut().map(|o| o.remove("hash"));
            e["Paths"] = json!([[{"account": ISSUER}]]);
        }));
        assert_eq!(with_types, without);
    }

    #[test]
    fn transaction_hash_deliver_max_and_metadata_members() {
        // The fixture's payment encodes, with its hash checked.
        let base = tx_ok(payment(|_| {}));
        assert_eq!(transaction_id(&base.tx).to_hex(), TX_HASH);
        // A wrong hash names the transaction and gives its ID.
        let wrong = "AB".repeat(32);
        assert_eq!(
            tx_err(payment(|e| e["hash"] = json!(wrong))),
            format!(
                "transactions entry 0: transaction {wrong}: \"hash\" is not the ID of the \
                 transaction as encoded, which is {TX_HASH}"
            )
        );
        // So does a changed field under the original hash.
        let changed = tx_err(payment(|e| e["Fee"] = json!("11")));
        assert!(changed.starts_with(&format!(
            "transactions entry 0: transaction {TX_HASH}: \"hash\" is not the ID"
        )));
        // DeliverMax: beside an equal Amount (v1), instead of it (v2).
        let beside = tx_ok(payment(|e| e["DeliverMax"] = e["Amount"].clone()));
        assert_eq!(beside, base);
        let instead = tx_ok(payment(|e| {
            let amount = e.as_object_mut().and_then(|o| o.remove("Amount"));
            e["DeliverMax"] = amount.unwrap_or_default();
        }));
        assert_eq!(instead, base);
        assert_eq!(
            tx_err(payment(|e| e["DeliverMax"] = json!("1"))),
            tx_entry("field \"DeliverMax\" differs from \"Amount\"")
        );
        assert_eq!(
            tx_err(payment(|e| {
                e["TransactionType"] = json!("AccountSet");
                e["DeliverMax"] = json!("1");
            })),
            tx_entry("field \"DeliverMax\" is an alias of \"Amount\" only on a Payment")
        );
        // Server-added keys are skipped where rippled puts them.
        let extras = tx_ok(payment(|e| {
            for (k, v) in [
                ("owner_funds", json!("100")),
                ("ledger_index", json!(38129)),
                ("inLedger", json!(38129)),
                ("date", json!(410424200)),
                ("validated", json!(true)),
                ("ctid", json!("C00094F100000000")),
            ] {
                e[k] = v;
            }
            for (k, v) in [
                ("delivered_amount", json!("10000000000")),
                ("DeliveredAmount", json!("10000000000")),
                ("nftoken_id", json!(KEY)),
            ] {
                e["metaData"][k] = v;
            }
        }));
        assert_eq!(extras.tx, base.tx);
        // DeliveredAmount is a serialized field: the metadata differs.
        assert_ne!(extras.meta, base.meta);
        // Field header 0x60 0x12, then 8 bytes of drops.
        assert_eq!(extras.meta.len(), base.meta.len() + 10);
        // Two metadata members are refused.
        let two = tx_err(payment(|e| e["meta"] = e["metaData"].clone()));
        assert_eq!(
            two,
            tx_entry(
                "field \"meta\" is one of several metadata members (meta, meta_blob, metaData)"
            )
        );
        // An entry without hash is named by its ID once encoded.
        let meta_err = tx_err(payment(|e| {
            e.as_object_mut().map(|o| o.remove("hash"));
            e["metaData"]["TransactionIndex"] = json!(-1);
        }));
        assert!(
            meta_err.starts_with(&tx_entry("field \"metaData.TransactionIndex\" has a value")),
            "{meta_err}"
        );
    }

    #[test]
    fn state_entry_index_and_mpt_issuance_id() {
        assert_eq!(
            state_err(account_root(|e| {
                e.as_object_mut().map(|o| o.remove("index"));
            })),
            "accountState entry 0: missing \"index\""
        );
        assert_eq!(
            state_err(account_root(|e| e["index"] = json!("0".repeat(64)))),
            "accountState entry 0: index is all zeros, which rippled rejects as a key"
        );
        let issuer_id = AccountId::try_from(ISSUER).expect("account");
        let id = format!("00000005{}", encode_hex_upper(issuer_id.as_ref()));
        let mpt = |id: &str| {
            json!({"LedgerEntryType": "MPTokenIssuance", "index": KEY, "Issuer": ISSUER,
                   "Sequence": 5, "OutstandingAmount": "0", "Flags": 0,
                   "mpt_issuance_id": id})
        };
        let data = state_ok(mpt(&id));
        let mut without = mpt(&id);
        without.as_object_mut().map(|o| o.remove("mpt_issuance_id"));
        assert_eq!(state_ok(without), data);
        assert_eq!(
            state_err(mpt(&"00".repeat(24))),
            entry("field \"mpt_issuance_id\" is not the entry's Sequence and Issuer")
        );
    }

    #[test]
    fn decode_blob_reads_what_the_codec_wrote() {
        let data = state_ok(account_root(|_| {}));
        let mut back = decode_blob(&data).expect("decodes");
        back["index"] = json!(KEY);
        assert_eq!(back, account_root(|_| {}));
        assert_eq!(decode_blob(&[0xFF]), None);
    }
}
