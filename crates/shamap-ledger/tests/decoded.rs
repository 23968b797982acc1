//! Decoded-JSON ledgers: the xrpl.js fixture `ledger-full-38129.json`
//! encodes to exactly the bytes of the binary dump of the same ledger, and
//! the codec's decoding of every shipped binary entry encodes back to the
//! same bytes through the decoded-JSON reader (guard included).

use serde_json::{json, Map, Value};
use shamap::xrpl::transaction_id;
use shamap::Key;
use shamap_ledger::decoded::decode_blob;
use shamap_ledger::dump::{parse, LedgerDump};

fn read(name: &str) -> Vec<u8> {
    let path = format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).expect("ledger file shipped in data/")
}

fn load(name: &str) -> LedgerDump {
    parse(&read(name)).expect("real ledger parses")
}

/// State entries by key.
fn state_by_key(dump: &LedgerDump) -> Vec<(Key, Vec<u8>)> {
    let mut v: Vec<(Key, Vec<u8>)> = dump
        .state
        .as_ref()
        .expect("state")
        .iter()
        .map(|e| (e.key, e.data.clone()))
        .collect();
    v.sort();
    v
}

#[test]
fn decoded_fixture_38129_encodes_to_the_binary_dump_bytes() {
    let decoded = load("ledger-full-38129.json");
    let binary = load("ledger-38129.json");
    assert_eq!(decoded.state.as_ref().map(Vec::len), Some(261));
    assert_eq!(state_by_key(&decoded), state_by_key(&binary));
    assert_eq!(decoded.transactions, binary.transactions);
    assert_eq!(decoded.header.account_hash, binary.header.account_hash);
    assert_eq!(decoded.header.ledger_hash, binary.header.ledger_hash);
}

/// The codec's JSON for a serialized object.
fn decoded(blob: &[u8]) -> Map<String, Value> {
    match decode_blob(blob) {
        Some(Value::Object(o)) => o,
        other => panic!("the codec decodes a shipped blob to an object, got {other:?}"),
    }
}

/// Round trip of every shipped binary entry: codec-decoded JSON, read back
/// as a decoded dump, gives the same bytes. Covers 261 state entries and 11
/// transactions with their metadata (ledger 38129, testnet 42089779).
#[test]
fn codec_round_trip_of_every_shipped_binary_entry() {
    let mut checked = 0;
    for name in ["ledger-38129.json", "ledger-testnet-42089779.json"] {
        let binary = load(name);
        let state: Vec<Value> = binary
            .state
            .iter()
            .flatten()
            .map(|e| {
                let mut o = decoded(&e.data);
                o.insert("index".into(), json!(shamap::Hash256::from(e.key).to_hex()));
                Value::Object(o)
            })
            .collect();
        let txs: Vec<Value> = binary
            .transactions
            .iter()
            .flatten()
            .map(|t| {
                let mut o = decoded(&t.tx);
                o.insert("hash".into(), json!(transaction_id(&t.tx).to_hex()));
                o.insert("metaData".into(), Value::Object(decoded(&t.meta)));
                Value::Object(o)
            })
            .collect();
        checked += state.len() + txs.len();
        let mut ledger = json!({"transactions": txs});
        if binary.state.is_some() {
            ledger["accountState"] = Value::Array(state);
        }
        let doc = json!({ "ledger": ledger });
        let again = parse(doc.to_string().as_bytes())
            .unwrap_or_else(|e| panic!("{name}: codec-decoded JSON reads back: {e}"));
        assert_eq!(again.state, binary.state, "{name}");
        assert_eq!(again.transactions, binary.transactions, "{name}");
    }
    assert_eq!(checked, 261 + 1 + 10);
}

/// The shipped ledgers' transactions as an API v2 `ledger` response would
/// give them (`tx_json`, `meta`, `hash` side by side, a Payment with
/// `DeliverMax` instead of `Amount`), read back to the same blobs.
#[test]
fn api_v2_shape_with_deliver_max_reads_back() {
    let mut payments = 0;
    for name in ["ledger-38129.json", "ledger-testnet-42089779.json"] {
        let binary = load(name);
        let txs: Vec<Value> = binary
            .transactions
            .iter()
            .flatten()
            .map(|t| {
                let mut tx = decoded(&t.tx);
                if tx.get("TransactionType") == Some(&json!("Payment")) {
                    if let Some(amount) = tx.remove("Amount") {
                        tx.insert("DeliverMax".into(), amount);
                        payments += 1;
                    }
                }
                json!({
                    "tx_json": tx,
                    "meta": decoded(&t.meta),
                    "hash": transaction_id(&t.tx).to_hex(),
                    "validated": true,
                    "ledger_index": 1,
                    "close_time_iso": "2013-01-02T06:43:20Z",
                })
            })
            .collect();
        let doc = json!({"result": {"ledger": {"transactions": txs}}});
        let again = parse(doc.to_string().as_bytes()).expect("v2 shape reads back");
        assert_eq!(again.transactions, binary.transactions, "{name}");
    }
    assert_eq!(payments, 1, "ledger 38129's payment is aliased");
}

/// Real decoded (`expand: true`) mainnet ledgers, each checked against its
/// own header: from the xrpl.js fixtures, 38129 (January 2013: state,
/// transaction and ledger hash), 40000 (2013: state and ledger hash) and
/// 7501326 (July 2014: 17 transactions with their metadata, offers, paths
/// and nine currencies; its header lacks fields of the ledger hash); from
/// the xrpl4j fixtures, 90150378 and 90156059 (2024: 90 and 66
/// transactions) and 94084608 (2025, a flag ledger: 83 transactions), whose
/// transactions the XRPL codec refused 19, 25 and 10 of.
#[test]
fn real_decoded_ledgers_verify_against_their_headers() {
    use shamap_ledger::verify::{check, Status};
    for (name, expected) in [
        (
            "ledger-full-38129.json",
            [Status::Match, Status::Match, Status::Match],
        ),
        (
            "ledger-full-40000.json",
            [Status::Match, Status::Match, Status::Match],
        ),
        (
            "ledger-full-7501326.json",
            [Status::NotComputed, Status::Match, Status::NotComputed],
        ),
        (
            "ledger-full-90150378.json",
            [Status::NotComputed, Status::Match, Status::Match],
        ),
        (
            "ledger-full-90156059.json",
            [Status::NotComputed, Status::Match, Status::Match],
        ),
        (
            "ledger-full-94084608.json",
            [Status::NotComputed, Status::Match, Status::Match],
        ),
    ] {
        let dump = load(name);
        let checks = check(&dump).unwrap_or_else(|e| panic!("{name}: {}", e.message(0)));
        let got: Vec<Status> = checks.values().iter().map(|(_, c)| c.status()).collect();
        assert_eq!(got, expected, "{name}: {checks:?}");
    }
}

/// The 2024–2025 ledgers carry each of the values the XRPL codec refused
/// (so the test above covers them): issued amounts far outside the codec's
/// exponents (`9999999999999999e80`, `…e-29`), the currency `*G*`, a
/// negative `DeliveredAmount`, and a UNLModify with `"Account": ""`.
#[test]
fn the_2024_2025_ledgers_exercise_rippleds_whole_range() {
    let text = |name: &str| String::from_utf8(read(name)).expect("UTF-8");
    let a = text("ledger-full-90150378.json");
    let b = text("ledger-full-90156059.json");
    let c = text("ledger-full-94084608.json");
    assert!(c.contains(r#""value":"9999999999999999e80""#));
    assert!(a.contains(r#""value":"8694261946292211e-29""#));
    assert!(a.contains(r#""currency":"*G*""#));
    assert!(a.contains(r#""DeliveredAmount":"-1""#));
    assert!(b.contains(r#""DeliveredAmount":"-1""#));
    assert!(c.contains(r#""Account":"","Fee":"0","LedgerSequence":94084608"#));
    assert!(c.contains(r#""TransactionType":"UNLModify""#));
}

/// Ten 2013 mainnet ledgers of xrpl4j's "negative balance" fixtures (one
/// transaction each, negative XRP `Balance` and `TakerPays` in their
/// metadata), each verified against its header: transaction and ledger
/// hash.
#[test]
fn xrpl4j_2013_ledgers_with_negative_xrp_verify() {
    use shamap_ledger::verify::{check, Status};
    let dir = format!(
        "{}/../../data/vectors/xrpl4j-ledgers",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("vector directory shipped")
        .map(|e| e.expect("directory entry").path())
        .collect();
    names.sort();
    assert_eq!(names.len(), 10);
    let mut negative = 0;
    for path in names {
        let bytes = std::fs::read(&path).expect("readable");
        let text = String::from_utf8_lossy(&bytes);
        // A negative XRP amount: a field of drops (a string) that starts with '-'.
        negative += usize::from(
            ["Balance", "TakerPays", "TakerGets", "Amount"]
                .iter()
                .any(|f| text.contains(&format!("\"{f}\": \"-"))),
        );
        let dump = parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let checks =
            check(&dump).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message(0)));
        let got: Vec<Status> = checks.values().iter().map(|(_, c)| c.status()).collect();
        assert_eq!(
            got,
            [Status::NotComputed, Status::Match, Status::Match],
            "{}",
            path.display()
        );
    }
    assert_eq!(negative, 10, "every one has a negative XRP amount");
}
