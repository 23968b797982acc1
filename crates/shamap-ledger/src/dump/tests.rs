//! Tests of the dump reader: shapes, errors, the fast path against the DOM path.

use super::*;
use shamap::hash::Key;
use shamap::xrpl::transaction_id;

const LEDGER_38129: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/ledger-38129.json"
));
const TESTNET_42089779: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/ledger-testnet-42089779.json"
));

const KEY1: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
const KEY2: &str = "032d4205b5d7dcec8a4e56851c44555f6dc7d410aa823ae140c78674b8734dbf";
const H_A: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const H_B: &str = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

fn parse_str(s: &str) -> Result<LedgerDump, DumpError> {
    parse(s.as_bytes())
}

fn err(s: &str) -> String {
    match parse_str(s) {
        Ok(d) => panic!("expected an error, parsed {d:?}"),
        Err(e) => e.to_string(),
    }
}

/// A header for the tests of every module (the dump reader, the response
/// writer).
pub(crate) fn header() -> LedgerHeader {
    LedgerHeader {
        seq: 38129,
        total_coins: 99_999_999_999_996_310,
        parent_hash: Hash256([1; 32]),
        transaction_hash: Hash256([2; 32]),
        account_hash: Hash256([3; 32]),
        parent_close_time: 410_424_200,
        close_time: 410_424_210,
        close_time_resolution: 10,
        close_flags: 1,
    }
}

#[test]
fn ledger_38129_has_261_state_entries_one_transaction_and_a_full_header() {
    let d = parse(LEDGER_38129).expect("shipped data parses");
    assert_eq!(d.kind, DumpKind::Ledger);
    assert_eq!(d.state.as_ref().map(Vec::len), Some(261));
    assert_eq!(d.transactions.as_ref().map(Vec::len), Some(1));
    let h = d.header.complete_header().expect("header is complete");
    assert_eq!(h.seq, 38129);
    assert_eq!(h.total_coins, 99_999_999_999_996_310);
    assert_eq!(
        d.header.ledger_hash.map(|h| h.to_hex()).as_deref(),
        Some("E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E")
    );
    // The header's own values hash to the claimed ledger hash.
    assert_eq!(Some(h.hash()), d.header.ledger_hash);
    assert_eq!(
        d.state
            .as_ref()
            .and_then(|s| s.first())
            .map(|e| e.key.to_hex()),
        Some(KEY1.to_owned())
    );
}

#[test]
fn testnet_fixture_has_ten_transactions_and_a_header_object() {
    let d = parse(TESTNET_42089779).expect("shipped data parses");
    assert_eq!(d.kind, DumpKind::Ledger);
    assert!(d.state.is_none());
    assert_eq!(d.transactions.as_ref().map(Vec::len), Some(10));
    let h = d.header.complete_header().expect("header is complete");
    assert_eq!(h.seq, 42_089_779);
    assert_eq!(h.close_time, 750_773_461);
    assert_eq!(Some(h.hash()), d.header.ledger_hash);
    assert_eq!(
        d.header.transaction_hash.map(|h| h.to_hex()).as_deref(),
        Some("A9BB9AA12E16175C714677CB8A9557D29F3E506C7A1A92997CA57A0DCB3EBEE1")
    );
}

#[test]
fn ledger_response_under_result_with_binary_header_and_api_v2_fields() {
    let hex = shamap::hash::encode_hex_upper(&header().serialize());
    let tx = "120000";
    let id = transaction_id(&[0x12, 0, 0]);
    let json = format!(
        r#"{{"result": {{"ledger": {{"closed": true, "ledger_data": "{hex}",
                 "accountState": [{{"hash": "{KEY1}", "tx_blob": "11006122"}}],
                 "transactions": [{{"tx_blob": "{tx}", "meta_blob": "0102", "hash": "{id}"}}]}},
               "ledger_hash": "{H_A}", "ledger_index": 38129, "validated": true, "status": "success"}}}}"#
    );
    let d = parse_str(&json).expect("parses");
    assert_eq!(d.kind, DumpKind::Ledger);
    assert_eq!(d.header.complete_header(), Some(header()));
    assert_eq!(d.header.ledger_hash, Some(Hash256([0xAA; 32])));
    let state = d.state.expect("state present");
    assert_eq!(state[0].data, [0x11, 0x00, 0x61, 0x22]);
    let txs = d.transactions.expect("transactions present");
    assert_eq!(
        txs,
        [TxEntry {
            tx: vec![0x12, 0, 0],
            meta: vec![1, 2]
        }]
    );
}

#[test]
fn ledger_object_under_ledger_with_json_header_fields() {
    let json = format!(
        r#"{{"ledger": {{"ledger_index": "7", "total_coins": 100, "parent_hash": "{H_A}",
                 "transaction_hash": "{H_B}", "account_hash": "{H_A}", "parent_close_time": 1,
                 "close_time": 2, "close_time_resolution": 10, "close_flags": 0, "hash": "{H_B}",
                 "accountState": [{{"index": "{KEY2}", "data": ""}}], "transactions": []}}}}"#
    );
    let d = parse_str(&json).expect("parses");
    let h = d.header.complete_header().expect("complete");
    assert_eq!((h.seq, h.total_coins, h.close_time), (7, 100, 2));
    assert_eq!(d.header.ledger_hash, Some(Hash256([0xBB; 32])));
    // Lower-case hex and empty data are accepted.
    assert_eq!(d.state.expect("state")[0].data, Vec::<u8>::new());
    assert_eq!(d.transactions, Some(vec![]));
}

#[test]
fn bare_ledger_object_at_top_level() {
    let json =
        format!(r#"{{"ledger_index": 5, "accountState": [{{"index": "{KEY1}", "data": "00"}}]}}"#);
    let d = parse_str(&json).expect("parses");
    assert_eq!(d.header.ledger_index, Some(5));
    assert_eq!(d.header.missing_fields().len(), 8);
    assert!(d.transactions.is_none());
}

#[test]
fn ledger_data_page_with_binary_header_and_marker() {
    let hex = shamap::hash::encode_hex_upper(&header().serialize());
    let json = format!(
        r#"{{"result": {{"ledger_index": 38129, "ledger_hash": "{H_A}", "marker": "{KEY2}",
                 "ledger": {{"closed": true, "ledger_data": "{hex}"}},
                 "state": [{{"index": "{KEY1}", "data": "AB"}}, {{"index": "{KEY2}", "data": "cd"}}]}}}}"#
    );
    let d = parse_str(&json).expect("parses");
    assert_eq!(d.kind, DumpKind::LedgerDataPage);
    assert_eq!(d.header.complete_header(), Some(header()));
    assert_eq!(d.state.as_ref().map(Vec::len), Some(2));
    assert_eq!(d.marker.as_deref(), Some(KEY2));
}

#[test]
fn ledger_data_page_at_top_level_without_header() {
    let json = format!(r#"{{"ledger_index": 9, "state": [{{"index": "{KEY1}", "data": "AB"}}]}}"#);
    let d = parse_str(&json).expect("parses");
    assert_eq!(d.kind, DumpKind::LedgerDataPage);
    assert_eq!(d.header.ledger_index, Some(9));
    assert!(d.marker.is_none());
}

fn page(index: u32, key: &str, marker: Option<&str>) -> LedgerDump {
    let marker = marker
        .map(|m| format!(r#", "marker": "{m}""#))
        .unwrap_or_default();
    parse_str(&format!(
        r#"{{"ledger_index": {index}, "state": [{{"index": "{key}", "data": "AB"}}]{marker}}}"#
    ))
    .expect("page parses")
}

#[test]
fn merge_concatenates_pages_of_one_ledger() {
    let m = merge([page(9, KEY1, Some("x")), page(9, KEY2, None)]).expect("same ledger");
    assert_eq!(m.pending_marker(), None);
    let keys: Vec<String> = m
        .state
        .expect("state")
        .iter()
        .map(|e| e.key.to_hex())
        .collect();
    assert_eq!(keys, [KEY1.to_owned(), KEY2.to_uppercase()]);
    assert!(m.marker.is_none(), "the last page has no marker");
    let all_markers =
        merge([page(9, KEY1, Some("x")), page(9, KEY2, Some("y"))]).expect("same ledger");
    assert_eq!(all_markers.marker.as_deref(), Some("y"));
    assert_eq!(all_markers.pending_marker(), Some("y"));
    assert_eq!(page(9, KEY1, Some("x")).pending_marker(), Some("x"));
}

#[test]
fn merge_rejects_pages_of_different_ledgers_and_empty_input() {
    let e = merge([page(9, KEY1, None), page(10, KEY2, None)]).expect_err("different ledgers");
    assert_eq!(
        e.to_string(),
        "pages are from different ledgers: ledger 9 and ledger 10"
    );
    assert_eq!(merge(Vec::new()), Err(DumpError::NothingToMerge));
}

#[test]
fn merge_rejects_conflicting_header_fields() {
    let a = parse_str(r#"{"ledger_index": 1, "close_time": 5, "state": []}"#).expect("parses");
    let b = parse_str(r#"{"ledger_index": 1, "close_time": 6, "state": []}"#).expect("parses");
    let e = merge([a, b]).expect_err("conflict");
    assert_eq!(
        e.to_string(),
        r#"conflicting values for "close_time": 5 and 6"#
    );
}

#[test]
fn same_ledger_needs_a_shared_identifier() {
    let a = HeaderFields {
        ledger_index: Some(1),
        ..HeaderFields::default()
    };
    let b = HeaderFields {
        ledger_hash: Some(Hash256([1; 32])),
        ..HeaderFields::default()
    };
    assert!(a.same_ledger(&a));
    assert!(!a.same_ledger(&b));
    assert!(!HeaderFields::default().same_ledger(&HeaderFields::default()));
    let c = HeaderFields {
        ledger_index: Some(2),
        ..a
    };
    assert!(!a.same_ledger(&c));
}

#[test]
fn header_with_roots_substitutes_and_names_missing_fields() {
    let mut f = HeaderFields::from_header(&header());
    f.account_hash = None;
    assert_eq!(f.complete_header(), None);
    assert_eq!(f.missing_fields(), ["account_hash"]);
    let h = f
        .header_with_roots(Some(Hash256([9; 32])), None)
        .expect("complete with root");
    assert_eq!(h.account_hash, Hash256([9; 32]));
    assert_eq!(h.transaction_hash, Hash256([2; 32]));
    assert_eq!(
        HeaderFields::default()
            .header_with_roots(None, None)
            .expect_err("empty")
            .len(),
        9
    );
}

#[test]
fn entry_errors_name_list_index_and_field() {
    let bad_digit = format!(
        r#"{{"accountState": [{{"index": "{KEY1}", "data": "00"}}, {{"index": "{KEY2}", "data": "0011g2"}}]}}"#
    );
    assert_eq!(
        err(&bad_digit),
        r#"accountState entry 1: bad hex digit at position 4 in "data""#
    );
    let odd = format!(r#"{{"state": [{{"index": "{KEY1}", "data": "001"}}]}}"#);
    assert_eq!(
        err(&odd),
        r#"state entry 0: odd number of hex digits (3) in "data""#
    );
    let short = format!(
        r#"{{"accountState": [{{"index": "{}", "data": "00"}}]}}"#,
        &KEY1[..62]
    );
    assert_eq!(
        err(&short),
        "accountState entry 0: index is 31 bytes, expected 32"
    );
    let zero = format!(
        r#"{{"accountState": [{{"index": "{}", "data": "00"}}]}}"#,
        "0".repeat(64)
    );
    assert_eq!(
        err(&zero),
        "accountState entry 0: index is all zeros, which rippled rejects as a key"
    );
    assert_eq!(
        err(r#"{"accountState": [{"data": "00"}]}"#),
        r#"accountState entry 0: missing "index""#
    );
    assert_eq!(
        err(&format!(r#"{{"accountState": [{{"index": "{KEY1}"}}]}}"#)),
        r#"accountState entry 0: missing "data""#
    );
    assert_eq!(
        err(&format!(
            r#"{{"accountState": [{{"index": "{KEY1}", "data": 5}}]}}"#
        )),
        r#"accountState entry 0: "data" is not a string"#
    );
    assert_eq!(
        err(r#"{"accountState": [7]}"#),
        "accountState entry 0: is not a JSON object"
    );
    assert_eq!(
        err(r#"{"accountState": {}}"#),
        r#"field "accountState" is not an array"#
    );
}

#[test]
fn transaction_errors() {
    assert_eq!(
        err(r#"{"transactions": [{"tx_blob": "00"}]}"#),
        r#"transactions entry 0: missing "meta""#
    );
    assert_eq!(
        err(r#"{"transactions": [{"meta": "00"}]}"#),
        r#"transactions entry 0: missing "tx_blob""#
    );
    assert_eq!(
        err(r#"{"transactions": [{"tx_blob": "00", "meta_blob": "0x"}]}"#),
        r#"transactions entry 0: bad hex digit at position 1 in "meta_blob""#
    );
    let wrong_id =
        format!(r#"{{"transactions": [{{"tx_blob": "00", "meta": "00", "hash": "{H_A}"}}]}}"#);
    let e = err(&wrong_id);
    assert!(
        e.starts_with(r#"transactions entry 0: "hash" is not the transaction ID"#),
        "{e}"
    );
}

/// Decoded JSON used to be refused ("request it with binary: true");
/// it is now encoded with the XRPL codec. Only a hex member that holds
/// JSON, and hashes without `expand`, still say what to request.
#[test]
fn decoded_entries_are_encoded_and_non_expanded_dumps_say_what_to_request() {
    let json_state =
        format!(r#"{{"state": [{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot"}}]}}"#);
    let state = parse_str(&json_state).expect("decoded state entry").state;
    assert_eq!(
        state,
        Some(vec![StateEntry {
            key: Key::from_hex(KEY1).expect("key"),
            data: vec![0x11, 0x00, 0x61],
        }])
    );
    let tx = |json: &str| -> TxEntry {
        let txs = parse_str(json).expect("decoded transaction").transactions;
        txs.and_then(|t| t.into_iter().next())
            .expect("one transaction")
    };
    let json_tx =
        r#"{"ledger": {"transactions": [{"TransactionType": "Payment", "metaData": {}}]}}"#;
    assert_eq!(
        tx(json_tx),
        TxEntry {
            tx: vec![0x12, 0x00, 0x00],
            meta: vec![],
        }
    );
    let v2_json_tx = r#"{"transactions": [{"tx_json": {}, "meta": {}}]}"#;
    assert_eq!(
        tx(v2_json_tx),
        TxEntry {
            tx: vec![],
            meta: vec![]
        }
    );
    let meta_object = r#"{"transactions": [{"tx_blob": "00", "meta": {"TransactionIndex": 7}}]}"#;
    assert_eq!(
        tx(meta_object),
        TxEntry {
            tx: vec![0x00],
            meta: vec![0x20, 0x1C, 0, 0, 0, 7],
        }
    );
    let json_in_hex_member = format!(r#"{{"state": [{{"index": "{KEY1}", "data": {{}}}}]}}"#);
    assert_eq!(
        err(&json_in_hex_member),
        r#"state entry 0: is decoded JSON, not hex; request it with "binary": true"#
    );
    let hashes_only = format!(r#"{{"ledger": {{"accountState": ["{KEY1}"]}}}}"#);
    assert_eq!(
        err(&hashes_only),
        r#"accountState entry 0: is only a hash; request the ledger with "expand": true and "binary": true"#
    );
}

#[test]
fn header_field_errors() {
    for (input, message) in [
        (
            r#"{"ledger": {"close_time": 4294967296}}"#,
            r#"field "close_time" is not an unsigned 32-bit integer"#,
        ),
        (
            r#"{"ledger": {"close_time": -1}}"#,
            r#"field "close_time" is not an unsigned 32-bit integer"#,
        ),
        (
            r#"{"ledger": {"close_flags": 256}}"#,
            r#"field "close_flags" is not an unsigned 8-bit integer"#,
        ),
        (
            r#"{"ledger": {"close_time_resolution": 1.5}}"#,
            r#"field "close_time_resolution" is not an unsigned 8-bit integer"#,
        ),
        (
            r#"{"ledger": {"total_coins": "18446744073709551616"}}"#,
            r#"field "total_coins" is not an unsigned 64-bit integer"#,
        ),
        (
            r#"{"ledger": {"ledger_index": "+5"}}"#,
            r#"field "ledger_index" is not an unsigned 32-bit integer"#,
        ),
        (
            r#"{"ledger": {"parent_hash": "00"}}"#,
            r#"field "parent_hash": expected 64 hex digits, found 2"#,
        ),
        (
            r#"{"ledger": {"account_hash": 1}}"#,
            r#"field "account_hash" is not a hex string"#,
        ),
        (
            r#"{"ledger": {"ledger_data": "0011"}}"#,
            "field \"ledger_data\" holds 2 bytes, expected a 118-byte ledger header",
        ),
        (r#"{"ledger": 5}"#, r#"field "ledger" is not a JSON object"#),
    ] {
        assert_eq!(err(input), message, "{input}");
    }
    let total =
        parse_str(r#"{"ledger": {"total_coins": "18446744073709551615"}}"#).expect("u64::MAX");
    assert_eq!(total.header.total_coins, Some(u64::MAX));
}

#[test]
fn conflicting_header_values_are_rejected() {
    assert_eq!(
        err(r#"{"result": {"ledger_index": 5, "ledger": {"ledger_index": "6"}}}"#),
        r#"conflicting values for "ledger_index": 6 and 5"#
    );
    let binary_vs_field = format!(
        r#"{{"ledger": {{"ledger_data": "{}", "close_time": 1}}}}"#,
        shamap::hash::encode_hex_upper(&header().serialize())
    );
    assert!(err(&binary_vs_field).starts_with(r#"conflicting values for "close_time""#));
    assert_eq!(
        err(r#"{"ledger": {"accountState": []}, "accountState": []}"#),
        r#"both "ledger.accountState" and "accountState" are present; expected one state list"#
    );
}

#[test]
fn server_errors_are_quoted() {
    let rpc = r#"{"result": {"error": "lgrNotFound", "error_code": 21, "error_message": "ledgerNotFound", "status": "error"}}"#;
    assert_eq!(
        err(rpc),
        r#"server returned an error: "lgrNotFound": "ledgerNotFound""#
    );
    let ws = r#"{"type": "response", "status": "error", "error": "invalidParams"}"#;
    assert_eq!(err(ws), r#"server returned an error: "invalidParams""#);
    let multiline = "{\"error\": \"a\\nb\"}";
    assert_eq!(err(multiline), r#"server returned an error: "a\nb""#);
    let long = format!(r#"{{"error": "{}"}}"#, "x".repeat(1000));
    assert!(err(&long).chars().count() < 260);
}

#[test]
fn input_level_errors() {
    assert_eq!(err(""), "empty input");
    assert_eq!(err(" \n\t"), "empty input");
    assert_eq!(err("[1, 2]"), "the top-level JSON value is not an object");
    assert_eq!(err("{}"), "no ledger header, state or transactions found");
    assert_eq!(
        err(r#"{"server": "x"}"#),
        "no ledger header, state or transactions found"
    );
    let e = err("{\n  \"ledger\": {\n  \"a\": ]");
    assert!(e.starts_with("invalid JSON at line 3 column 8: "), "{e}");
    assert!(!e.contains('\n'));
    let truncated = &LEDGER_38129[..LEDGER_38129.len() / 2];
    assert!(matches!(parse(truncated), Err(DumpError::Json { .. })));
    assert!(matches!(parse(b"\xFF\xFE"), Err(DumpError::Json { .. })));
}

#[test]
fn byte_order_mark_and_nulls_are_tolerated() {
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend_from_slice(br#"{"ledger_index": 3, "ledger_hash": null}"#);
    let d = parse(&with_bom).expect("BOM skipped");
    assert_eq!(d.header.ledger_index, Some(3));
    assert_eq!(d.header.ledger_hash, None);
}

#[test]
fn every_prefix_of_real_data_is_an_error_not_a_panic() {
    for cut in (0..LEDGER_38129.len()).step_by(997) {
        assert!(
            parse(&LEDGER_38129[..cut]).is_err(),
            "prefix of {cut} bytes"
        );
    }
}

/// The fast path answers for the shipped dumps (so it is not simply
/// declining everything), with what the full parse gives.
#[test]
fn fast_path_reads_the_shipped_dumps() {
    for input in [LEDGER_38129, TESTNET_42089779] {
        let fast = super::fast::parse(input).expect("the fast path answers");
        assert_eq!(Ok(fast), parse_dom(input));
    }
}

/// Scalar members beside the hex ones (numbers among them) keep an
/// entry on the fast path, whatever serde_json's number features: the
/// XRPL codec's dependencies switch on `arbitrary_precision`, under
/// which a number read through `deserialize_any` is a map.
#[test]
fn fast_path_answers_for_entries_with_scalar_members() {
    let doc = format!(
        r#"{{"ledger_index": 5, "accountState": [{{"index": "{KEY1}", "data": "AB",
                "n": 15, "f": -1.5e3, "big": 1e400, "t": true, "s": "x", "z": null}}]}}"#
    );
    let fast = super::fast::parse(doc.as_bytes()).expect("the fast path answers");
    assert_eq!(Ok(fast), parse_dom(doc.as_bytes()));
}

/// Variants around every rule the fast path must follow or decline on:
/// `parse` (fast path first) always equals `parse_dom`.
#[test]
fn fast_path_agrees_with_the_full_parse() {
    let id = transaction_id(&[0x12, 0, 0]).to_hex();
    let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let entries = [
        format!(r#"{{"index": "{KEY1}", "data": "AB"}}"#),
        format!(r#"{{"hash": "{KEY1}", "tx_blob": "AB", "extra": 1.5e3, "flag": true}}"#),
        format!(r#"{{"index": "{KEY1}", "data": null, "tx_blob": "AB"}}"#),
        format!(r#"{{"index": "{KEY1}", "data": "AB", "data": null}}"#),
        format!(r#"{{"index": "{KEY1}", "data": "AB", "index": "{KEY2}"}}"#),
        format!(r#"{{"index": "{KEY1}", "data": "A\u0042"}}"#),
        format!(r#"{{"ind\u0065x": "{KEY1}", "data": "AB"}}"#),
        format!(r#"{{"index": "{KEY1}", "data": "AB", "junk": {{"a": 1}}}}"#),
        format!(
            r#"{{"index": "{KEY1}", "data": "AB", "junk": {}}}"#,
            deep(130)
        ),
        format!(r#"{{"index": "{KEY1}", "data": 12}}"#),
        format!(r#"{{"index": "{KEY1}"}}"#),
        format!(r#"{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot"}}"#),
        format!(r#"{{"index": "{}", "data": "AB"}}"#, "0".repeat(64)),
        format!(r#"{{"index": "{}", "data": "AB"}}"#, &KEY1[..62]),
        format!(r#"{{"index": "0x{}", "data": "AB"}}"#, &KEY1[2..]),
        format!(r#"{{"index": "{KEY1}", "data": "ABC"}}"#),
        format!(r#""{KEY1}""#),
        "[]".to_owned(),
        "7".to_owned(),
        format!(r#"{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot", "Flags": 0}}"#),
        format!(r#"{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot", "Foo": 1}}"#),
        format!(
            r#"{{"index": "{KEY1}", "LedgerEntryType": "DirectoryNode", "Indexes": ["{KEY2}"]}}"#
        ),
    ];
    let txs = [
        format!(r#"{{"tx_blob": "120000", "meta": "01", "hash": "{id}"}}"#),
        r#"{"tx_blob": "120000", "meta_blob": "01"}"#.to_owned(),
        format!(r#"{{"tx_blob": "120000", "meta": "01", "hash": "{H_A}"}}"#),
        r#"{"tx_blob": "120000", "metaData": {}}"#.to_owned(),
        r#"{"tx_json": {}, "meta": "01"}"#.to_owned(),
        r#"{"tx_blob": "120000", "meta": null, "meta_blob": "01"}"#.to_owned(),
        r#"{"TransactionType": "Payment", "Flags": 0, "metaData": {"TransactionIndex": 0}}"#
            .to_owned(),
        r#"{"tx_json": {"TransactionType": "Payment"}, "meta": {}, "validated": true}"#.to_owned(),
        r#"{"tx_blob": "120000", "meta": {"TransactionIndex": 0}, "metaData": {}}"#.to_owned(),
    ];
    let mut docs = Vec::new();
    for e in &entries {
        for shape in [
            "{\"ledger\": {\"accountState\": [@]}}",
            "{\"result\": {\"ledger\": {\"accountState\": [@]}, \"status\": \"success\"}}",
            "{\"accountState\": [@], \"ledger_index\": 5}",
            "{\"result\": {\"state\": [@], \"ledger_index\": 5, \"marker\": \"AB\"}}",
            "{\"accountState\": [@], \"result\": {\"ledger_index\": 5}}",
        ] {
            docs.push(shape.replace('@', e));
        }
        docs.push(format!(r#"{{"ledger": {{"accountState": [{e}, {e}]}}}}"#));
    }
    for t in &txs {
        docs.push(format!(r#"{{"ledger": {{"transactions": [{t}]}}}}"#));
        docs.push(format!(
            r#"{{"header": {{"ledger_index": 1}}, "transactions": [{t}]}}"#
        ));
    }
    let e = &entries[0];
    docs.extend([
        format!(r#"{{"ledger": {{"accountState": [{e}]}}, "accountState": [{e}]}}"#),
        format!(r#"{{"accountState": [{e}], "state": [{e}]}}"#),
        format!(r#"{{"accountState": [{e}], "accountState": 5}}"#),
        format!(r#"{{"accountState": 5, "accountState": [{e}]}}"#),
        format!(r#"{{"accountState": {{"0": {e}}}}}"#),
        r#"{"accountState": null, "ledger_index": 3}"#.to_owned(),
        r#"{"accountState": [], "ledger_index": 3}"#.to_owned(),
        format!(r#"{{"accountState": [{e}], "error": "lgrNotFound"}}"#),
        format!(r#"{{"result": {{"accountState": [{e}], "status": "error"}}}}"#),
        format!(r#"{{"accountState": [{e}], "x": {}}}"#, deep(100)),
        format!(r#"{{"accountState": [{e}], "x": {}}}"#, deep(127)),
        format!(r#"{{"accountState": [{e}], "x": {}}}"#, deep(130)),
        format!(r#"{{"accountState": [{e}], "x": "[[[[\"\\"}}"#),
        format!(r#"{{"accountState": [{e}]}} trailing"#),
        format!(r#"{{"accountState": [{e}],}}"#),
        format!(r#"{{"ledger": [], "accountState": [{e}]}}"#),
        format!(r#"{{"ledger": {{"ledger": {{"accountState": [{e}]}}}}}}"#),
        format!(r#"{{"result": {{"result": {{"accountState": [{e}]}}}}}}"#),
        format!(r#"{{"result": 5, "accountState": [{e}]}}"#),
        format!(r#"{{"ledger": {{"accountState": [{e}], "ledger_index": "x"}}}}"#),
        format!(r#"{{"ledger_index": 38129, "accountState": [{e}], "seqNum": "38130"}}"#),
        "[1, 2]".to_owned(),
        "{\"accountState\": [".to_owned(),
    ]);
    let mut answered = 0;
    for doc in &docs {
        assert_eq!(parse(doc.as_bytes()), parse_dom(doc.as_bytes()), "{doc}");
        answered += usize::from(super::fast::parse(doc.as_bytes()).is_some());
    }
    // Not a test of declining alone: the common forms are answered.
    assert!(
        answered >= 40,
        "fast path answered {answered} of {}",
        docs.len()
    );
    // Two byte-order marks: only the first is skipped, by either path
    // (found by the fuzz target: the fallback skipped a second one).
    let twice = b"\xEF\xBB\xBF\xEF\xBB\xBF{\"ledger_index\": 1}";
    assert_eq!(parse(twice), parse_dom(twice));
    let mut bad_utf8 = docs[0].clone().into_bytes();
    bad_utf8.insert(bad_utf8.len() - 2, 0xFF);
    assert_eq!(parse(&bad_utf8), parse_dom(&bad_utf8));
}

/// Seeded random damage to a real dump: byte flips, insertions and
/// cuts, each read both ways.
#[test]
fn fast_path_agrees_on_damaged_dumps() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let seed = 0x0064_756d;
    let mut rng = SmallRng::seed_from_u64(seed);
    let pieces: &[&[u8]] = &[
        b"\"", b"\\", b"[", b"]", b"{", b"}", b",", b":", b"null", b"0", b"x",
    ];
    for round in 0..400 {
        let mut doc = LEDGER_38129.to_vec();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..doc.len());
            match rng.gen_range(0..3) {
                0 => doc[at] = rng.gen(),
                1 => {
                    let p = pieces[rng.gen_range(0..pieces.len())];
                    doc.splice(at..at, p.iter().copied());
                }
                _ => doc.truncate(at.max(1)),
            }
        }
        assert_eq!(parse(&doc), parse_dom(&doc), "seed {seed} round {round}");
    }
}
