//! Fuzz target: one entry of a ledger dump, read as a state entry and as a
//! transaction (binary or decoded JSON, the decoded ones encoded through
//! the XRPL codec behind its field guard). Never a panic; every error one
//! line; and for a decoded entry that encodes:
//!
//! - the codec decodes what it encoded, and that decoded JSON, read again,
//!   encodes to the same bytes;
//! - the same entry with one more key the codec does not know is an error
//!   (the guard: no field is ever dropped silently).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use shamap::xrpl::transaction_id;
use shamap_ledger::decoded::{decode_blob, read_state_entry, read_tx_entry};

/// The key added to check the guard: not a field of any XRPL definitions.
const UNKNOWN: &str = "ZzNotAField";

/// A decoded entry: an object without the hex members of a binary one.
fn is_decoded_state(o: &Map<String, Value>) -> bool {
    !o.contains_key("data") && !o.contains_key("tx_blob")
}

fn decoded_object(blob: &[u8]) -> Map<String, Value> {
    match decode_blob(blob) {
        Some(Value::Object(o)) => o,
        other => panic!("the codec does not decode what it encoded: {other:?}"),
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
            let mut back = decoded_object(&entry.data);
            back.insert("index".into(), Value::String(entry.key.to_hex()));
            let again = read_state_entry(&Value::Object(back))
                .unwrap_or_else(|e| panic!("decoded JSON of an encoded entry is refused: {e}"));
            assert_eq!(&again, entry, "decode and encode again changes the bytes");
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
                let mut back = decoded_object(&entry.tx);
                back.insert(
                    "hash".into(),
                    Value::String(transaction_id(&entry.tx).to_hex()),
                );
                if let Some(Value::Object(_)) = obj.get("meta").or_else(|| obj.get("metaData")) {
                    back.insert("metaData".into(), Value::Object(decoded_object(&entry.meta)));
                } else {
                    back.insert(
                        "meta".into(),
                        Value::String(shamap::hash::encode_hex_upper(&entry.meta)),
                    );
                }
                let again = read_tx_entry(&Value::Object(back))
                    .unwrap_or_else(|e| panic!("decoded JSON of an encoded tx is refused: {e}"));
                assert_eq!(&again, entry, "decode and encode again changes the bytes");
                let mut extra = obj.clone();
                extra.insert(UNKNOWN.into(), Value::from(1));
                assert!(read_tx_entry(&Value::Object(extra)).is_err());
            }
        }
    }
});
