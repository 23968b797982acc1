//! Fuzz target: one entry of a ledger dump, read as a state entry and as a
//! transaction (binary or decoded JSON, the decoded ones encoded by
//! `shamap_ledger::decoded`). Never a panic; every error one line; and for
//! a decoded entry that encodes:
//!
//! - the XRPL codec's decoder (an independent reading of the bytes), when
//!   it decodes them, gives JSON that encodes again to the same bytes;
//!   except where that decoder is known to lose information: it drops the
//!   sign of a negative XRP amount (rippled writes them in metadata), so an
//!   entry with one is not round-tripped;
//! - the same entry with one more key the definitions do not know is an
//!   error (no field is ever dropped silently).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use shamap::xrpl::transaction_id;
use shamap_ledger::decoded::decode_blob;
use shamap_ledger::entry::{read_state_entry, read_tx_entry};

/// The key added to check the guard: not a field of any XRPL definitions.
const UNKNOWN: &str = "ZzNotAField";

/// A decoded entry: an object without the hex members of a binary one.
fn is_decoded_state(o: &Map<String, Value>) -> bool {
    !o.contains_key("data") && !o.contains_key("tx_blob")
}

/// The codec's decoding of `blob`, when it has one (its decoder is not
/// ours to test: it refuses some of what rippled writes).
fn decoded_object(blob: &[u8]) -> Option<Map<String, Value>> {
    match decode_blob(blob) {
        Some(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// Whether `v` holds, anywhere, a string of a negative integer (a negative
/// XRP amount, which the codec's decoder turns positive).
fn has_negative_integer(v: &Value) -> bool {
    match v {
        Value::String(s) => s
            .strip_prefix('-')
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())),
        Value::Array(a) => a.iter().any(has_negative_integer),
        Value::Object(o) => o.values().any(has_negative_integer),
        _ => false,
    }
}

fn one_line(e: &impl std::fmt::Display) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Value::Object(obj) = &v else {
        let _ = read_state_entry(&v).map_err(|e| one_line(&e));
        let _ = read_tx_entry(&v).map_err(|e| one_line(&e));
        return;
    };

    let state = read_state_entry(&v);
    assert_eq!(read_state_entry(&v), state, "deterministic");
    match &state {
        Err(e) => one_line(e),
        Ok(entry) if is_decoded_state(obj) => {
            // Round trip through the codec's decoder.
            if let Some(mut back) =
                decoded_object(&entry.data).filter(|_| !has_negative_integer(&v))
            {
                back.insert("index".into(), Value::String(entry.key.to_hex()));
                let again = read_state_entry(&Value::Object(back))
                    .unwrap_or_else(|e| panic!("decoded JSON of an encoded entry is refused: {e}"));
                assert_eq!(&again, entry, "decode and encode again changes the bytes");
            }
            // The guard.
            let mut extra = obj.clone();
            extra.insert(UNKNOWN.into(), Value::from(1));
            assert!(read_state_entry(&Value::Object(extra)).is_err());
        }
        Ok(_) => {}
    }

    let tx = read_tx_entry(&v);
    assert_eq!(read_tx_entry(&v), tx, "deterministic");
    match &tx {
        Err(e) => one_line(e),
        Ok(entry) => {
            if !obj.contains_key("tx_blob") && !obj.contains_key("tx_json") {
                // A decoded v1 transaction: round trip, ID and guard.
                let tx_back = decoded_object(&entry.tx).filter(|_| !has_negative_integer(&v));
                let meta_decoded = matches!(
                    obj.get("meta").or_else(|| obj.get("metaData")),
                    Some(Value::Object(_))
                );
                let meta_back = if meta_decoded {
                    decoded_object(&entry.meta).map(Value::Object)
                } else {
                    Some(Value::String(shamap::hash::encode_hex_upper(&entry.meta)))
                };
                if let (Some(mut back), Some(meta)) = (tx_back, meta_back) {
                    back.insert(
                        "hash".into(),
                        Value::String(transaction_id(&entry.tx).to_hex()),
                    );
                    let key = if meta_decoded { "metaData" } else { "meta" };
                    back.insert(key.into(), meta);
                    let again = read_tx_entry(&Value::Object(back)).unwrap_or_else(|e| {
                        panic!("decoded JSON of an encoded tx is refused: {e}")
                    });
                    assert_eq!(&again, entry, "decode and encode again changes the bytes");
                }
                let mut extra = obj.clone();
                extra.insert(UNKNOWN.into(), Value::from(1));
                assert!(read_tx_entry(&Value::Object(extra)).is_err());
            }
        }
    }
});
