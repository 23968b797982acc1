//! The 24 real XPOPs of xahaud's tests (`data/xpop-xahaud`).

use serde_json::Value;
use shamap_auth::xpop::verify;
use shamap_auth::PublicKey;

use crate::repo_file;

const VL_KEY: &str = "ED74D4036C6591A4BDF9C54CEFA39B996A5DCE5F86D11FDA1874481CE9D5A1CDC1";

fn real_xpops() -> Vec<(String, Value)> {
    let dir = repo_file("data/xpop-xahaud");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("data/xpop-xahaud is in the repo") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "json") {
            let v: Value =
                serde_json::from_slice(&std::fs::read(&p).expect("reads")).expect("JSON");
            out.push((
                p.file_name().expect("name").to_string_lossy().into_owned(),
                v,
            ));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn key() -> PublicKey {
    PublicKey::parse(VL_KEY).expect("key")
}

#[test]
fn every_real_xpop_verifies() {
    let xpops = real_xpops();
    assert_eq!(xpops.len(), 24);
    for (name, x) in &xpops {
        let r = verify(x, &key()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            r.ledger_index as u64,
            x["ledger"]["index"].as_u64().expect("index"),
            "{name}"
        );
        assert!(r.votes >= r.quorum, "{name}");
        assert_eq!(r.form, shamap_auth::ProofForm::Tree);
        assert!(
            r.result.starts_with("tes") || r.result.starts_with("tec"),
            "{name}: {}",
            r.result
        );
    }
}

#[test]
fn another_publisher_key_is_refused() {
    let (name, x) = &real_xpops()[0];
    let other =
        PublicKey::parse("ED264807102805220DA0F312E71FC2C69E1552C9C5790F6C25E3729DEB573D5860")
            .expect("key");
    let e = verify(x, &other).expect_err(name);
    assert!(e.to_string().contains("not by the trusted key"), "{e}");
}

/// Flips one hex digit of a string field reached by `path`.
fn flip_hex(x: &mut Value, path: &[&str], at: usize) {
    let mut v = x;
    for p in path {
        v = v.get_mut(*p).expect("path exists");
    }
    let s = v.as_str().expect("string").to_string();
    let mut b: Vec<u8> = s.into_bytes();
    let i = at % b.len();
    b[i] = match b[i] {
        b'0' => b'1',
        b'F' | b'f' => b'E',
        b'9' => b'A',
        c if c.is_ascii_digit() => c + 1,
        c if c.is_ascii_alphabetic() => c + 1,
        _ => b'A',
    };
    *v = Value::String(String::from_utf8(b).expect("ascii"));
}

#[test]
fn each_tampered_part_is_refused() {
    for (name, x) in real_xpops() {
        let key = key();
        let mut cases: Vec<(String, Value)> = Vec::new();
        for field in ["blob", "meta"] {
            let len = x["transaction"][field].as_str().expect("hex").len();
            for at in [0, 7, len / 2, len - 1] {
                let mut t = x.clone();
                flip_hex(&mut t, &["transaction", field], at);
                cases.push((format!("transaction.{field}[{at}]"), t));
            }
        }
        for field in ["acroot", "phash", "txroot"] {
            let mut t = x.clone();
            flip_hex(&mut t, &["ledger", field], 11);
            cases.push((format!("ledger.{field}"), t));
        }
        for field in ["close", "pclose", "index", "cres", "flags"] {
            let mut t = x.clone();
            let n = t["ledger"][field].as_u64().expect("number");
            t["ledger"][field] = Value::from(n ^ 1);
            cases.push((format!("ledger.{field}"), t));
        }
        {
            let mut t = x.clone();
            let c: u64 = t["ledger"]["coins"]
                .as_str()
                .expect("coins")
                .parse()
                .expect("number");
            t["ledger"]["coins"] = Value::String((c - 1).to_string());
            cases.push(("ledger.coins".into(), t));
        }
        // Proof: the leaf's hash and key, and the root's stated hash.
        let leaf_nibble = {
            let blob =
                const_hex::decode(x["transaction"]["blob"].as_str().expect("hex")).expect("hex");
            shamap::xrpl::transaction_id(&blob).to_hex()[..1].to_string()
        };
        let mut t = x.clone();
        flip_hex(
            &mut t,
            &["transaction", "proof", "children", &leaf_nibble, "hash"],
            5,
        );
        cases.push(("proof leaf hash".into(), t));
        let mut t = x.clone();
        flip_hex(
            &mut t,
            &["transaction", "proof", "children", &leaf_nibble, "key"],
            40,
        );
        cases.push(("proof leaf key".into(), t));
        let mut t = x.clone();
        flip_hex(&mut t, &["transaction", "proof", "hash"], 3);
        cases.push(("proof root hash".into(), t));
        let mut t = x.clone();
        flip_hex(&mut t, &["transaction", "proof", "key"], 3);
        cases.push(("proof root key".into(), t));
        // The list: blob, signature, publisher manifest (base64: flip a middle character).
        for field in ["blob", "signature", "manifest"] {
            let mut t = x.clone();
            let len = t["validation"]["unl"][field].as_str().expect("text").len();
            flip_hex(&mut t, &["validation", "unl", field], len / 3);
            cases.push((format!("unl.{field}"), t));
        }
        // Each validation's signature (its last bytes) and its ledger hash.
        let keys: Vec<String> = x["validation"]["data"]
            .as_object()
            .expect("data")
            .keys()
            .cloned()
            .collect();
        for k in &keys {
            let len = x["validation"]["data"][k].as_str().expect("hex").len();
            let mut t = x.clone();
            flip_hex(&mut t, &["validation", "data", k], len - 3);
            cases.push((format!("validation {k} signature"), t));
            let mut t = x.clone();
            flip_hex(&mut t, &["validation", "data", k], 40);
            cases.push((format!("validation {k} body"), t));
        }
        // A quorum short by one: drop one validation (every list here needs all or all but few).
        let mut t = x.clone();
        let data = t["validation"]["data"].as_object_mut().expect("data");
        let quorum = verify(&x, &key).expect("valid").quorum;
        while data.len() >= quorum {
            let k = data.keys().next().expect("one").clone();
            data.remove(&k);
        }
        cases.push(("quorum short by one".into(), t));
        for (what, t) in cases {
            assert!(
                verify(&t, &key).is_err(),
                "{name}: tampered {what} still verifies"
            );
        }
    }
}

#[test]
fn hostile_shapes_give_errors_not_panics() {
    let key = key();
    for bad in [
        "null",
        "[]",
        "{}",
        r#"{"ledger":{},"transaction":{},"validation":{}}"#,
        r#"{"ledger":{"index":-1},"transaction":{"blob":"zz"},"validation":{"data":[]}}"#,
    ] {
        let v: Value = serde_json::from_str(bad).expect("json");
        assert!(verify(&v, &key).is_err(), "{bad}");
    }
    // A proof nested far deeper than 64 nibbles.
    let (_, mut x) = real_xpops().remove(0);
    let mut deep = Value::Array(vec![]);
    for _ in 0..200 {
        deep = Value::Array(vec![deep]);
    }
    x["transaction"]["proof"] = deep;
    assert!(verify(&x, &key).is_err());
}
