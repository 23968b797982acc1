//! The decoded-JSON encoder against known answers and hostile input.

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
        e["metaData"]["AffectedNodes"][0]["ModifiedNode"]["PreviousFields"]["Bogus"] = json!("1");
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
    assert!(tx_err(payment(index))
        .contains("field \"metaData.AffectedNodes[0].ModifiedNode.index\" is not a serialized"));
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
        tx_entry("field \"Destination\" is not a classic address (ledger JSON has no X-addresses)")
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
        tx_entry("field \"Paths[0][0].type_hex\" is not 0000000000000030, the kind of this step")
    );
    assert_eq!(
        tx_err(paths(json!({"type": 1}))),
        tx_entry("field \"Paths[0][0]\" is not a step with an account, a currency or an issuer")
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
        tx_entry("field \"meta\" is one of several metadata members (meta, meta_blob, metaData)")
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
