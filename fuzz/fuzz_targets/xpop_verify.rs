//! Fuzz target: XPOPs, validator lists, manifests, validations and skip
//! lists are outside bytes. For any input, every reader returns a value or
//! an error, never panics; and an XPOP mutated from a valid one verifies
//! only if it still proves what it proved (the same ledger and transaction).
//!
//! Input: the first byte picks a mode, the rest feeds it.
//!
//! | mode | what |
//! |---|---|
//! | 0 | the bytes as an XPOP's JSON text, verified against the real XPOPs' key |
//! | 1 | the bytes as a serialized validation, a manifest, a skip list, a metadata blob's fields |
//! | 2 | a real XPOP (`data/xpop-xahaud`) with one byte of its JSON text replaced at a position the input picks |
//! | 3 | the bytes as a validator list's JSON, verified against that key |

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use shamap::xrpl::fields::read_fields;
use shamap::xrpl::skip_list::SkipList;
use shamap_auth::manifest::Manifest;
use shamap_auth::validation::Validation;
use shamap_auth::{xpop, PublicKey, ValidatorList};

const KEY: &str = "ED74D4036C6591A4BDF9C54CEFA39B996A5DCE5F86D11FDA1874481CE9D5A1CDC1";
const REAL: &str = include_str!("../../data/xpop-xahaud/ImportTCAccountSet.w_seed.json");

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let key = PublicKey::parse(KEY).expect("the real key parses");
    match mode % 4 {
        0 => {
            if let Ok(v) = serde_json::from_slice::<Value>(rest) {
                let _ = xpop::verify(&v, &key);
            }
        }
        1 => {
            let _ = Validation::verify(rest, "v");
            let _ = Manifest::verify(rest, "m");
            let _ = SkipList::decode(rest);
            let _ = read_fields(rest, "f");
            let _ = PublicKey::from_bytes(rest);
            if let Ok(text) = std::str::from_utf8(rest) {
                let _ = PublicKey::parse(text);
            }
        }
        2 => {
            if rest.len() < 3 {
                return;
            }
            let mut text = REAL.as_bytes().to_vec();
            let at = usize::from(u16::from_le_bytes([rest[0], rest[1]])) % text.len();
            if text[at] == rest[2] {
                return;
            }
            text[at] = rest[2];
            let original: Value = serde_json::from_str(REAL).expect("real JSON");
            let good = xpop::verify(&original, &key).expect("the real XPOP verifies");
            if let Ok(v) = serde_json::from_slice::<Value>(&text) {
                if let Ok(r) = xpop::verify(&v, &key) {
                    // A change that still verifies proves the same thing
                    // (e.g. the case of a hex digit, or the order of keys).
                    assert_eq!(r.ledger_hash, good.ledger_hash);
                    assert_eq!(r.tx_hash, good.tx_hash);
                }
            }
        }
        _ => {
            if let Ok(v) = serde_json::from_slice::<Value>(rest) {
                let _ = ValidatorList::verify(&v, &key, None);
            }
        }
    }
});
