//! XPOPs made over real ledgers (`data/ledger-full-*.json`) with generated
//! validator lists: both key types, both proof forms.

use serde_json::Value;
use shamap::xrpl::{transaction_id, LedgerHeader};
use shamap::Hash256;
use shamap_auth::validation::{FoundValidation, Validation};
use shamap_auth::xpop::{make, verify, XpopSource};
use shamap_auth::{KeyPair, ProofForm, PublicKey, ValidatorList};

use crate::repo_file;

type Txs = Vec<(Vec<u8>, Vec<u8>)>;

fn ledger(name: &str) -> (LedgerHeader, Txs) {
    let bytes = std::fs::read(repo_file(&format!("data/{name}"))).expect("ledger in data/");
    let dump = shamap_ledger::parse(&bytes).expect("parses");
    let header = dump.header.complete_header().expect("a whole header");
    let txs = dump
        .transactions
        .expect("transactions")
        .into_iter()
        .map(|t| (t.tx, t.meta))
        .collect();
    (header, txs)
}

/// A network: a publisher and `n` validators, master and signing keys of
/// both types, seeded by `seed`.
struct Net {
    publisher: KeyPair,
    publisher_signing: KeyPair,
    validators: Vec<(KeyPair, KeyPair)>,
}

impl Net {
    fn new(n: usize, seed: u8) -> Net {
        let k = |i: usize, role: u8| -> [u8; 32] {
            let mut s = [seed; 32];
            s[0] = role;
            s[1] = i as u8;
            s[2] = (i >> 8) as u8;
            s
        };
        let pair = |i: usize, role: u8, ed: bool| {
            if ed {
                KeyPair::ed25519(k(i, role))
            } else {
                KeyPair::secp256k1(k(i, role)).expect("in range")
            }
        };
        Net {
            publisher: pair(0, 1, true),
            publisher_signing: pair(0, 2, seed.is_multiple_of(2)),
            validators: (0..n)
                .map(|i| {
                    (
                        pair(i, 3, i.is_multiple_of(2)),
                        pair(i, 4, i.is_multiple_of(3)),
                    )
                })
                .collect(),
        }
    }

    fn vl(&self) -> Value {
        ValidatorList::make(
            &self.publisher,
            &self.publisher_signing,
            &self.validators,
            7,
            4_000_000_000,
        )
    }

    fn key(&self) -> PublicKey {
        self.publisher.public()
    }

    /// Stream messages of the first `count` validators validating `hash`.
    fn validations(&self, count: usize, hash: &Hash256, seq: u32) -> Vec<FoundValidation> {
        self.validators[..count]
            .iter()
            .map(|(_, signing)| FoundValidation {
                filed_under: Some(signing.public().to_base58()),
                raw: Validation::make(signing, hash, seq, 800_000_000),
                source: "test".into(),
            })
            .collect()
    }
}

fn made(
    net: &Net,
    header: LedgerHeader,
    txs: &Txs,
    tx: Hash256,
    votes: usize,
    form: ProofForm,
) -> Result<Value, String> {
    let vals = net.validations(votes, &header.hash(), header.seq);
    let vl = net.vl();
    make(&XpopSource {
        header,
        transactions: txs,
        tx_hash: tx,
        validations: &vals,
        vl: &vl,
        vl_key: net.key(),
        form,
    })
    .map(|(x, _)| x)
    .map_err(|e| e.to_string())
}

#[test]
fn made_xpops_verify_in_both_forms_over_real_ledgers() {
    for (file, n) in [
        ("ledger-full-90150378.json", 35),
        ("ledger-full-38129.json", 5),
        ("ledger-full-94084608.json", 8),
    ] {
        let (header, txs) = ledger(file);
        let net = Net::new(n, n as u8);
        for (i, (blob, meta)) in txs.iter().enumerate().step_by(17) {
            let id = transaction_id(blob);
            for form in [ProofForm::List, ProofForm::Tree] {
                let q = (n * 4).div_ceil(5);
                let x = made(&net, header, &txs, id, q, form)
                    .unwrap_or_else(|e| panic!("{file} tx {i}: {e}"));
                let r = verify(&x, &net.key())
                    .unwrap_or_else(|e| panic!("{file} tx {i} {form:?}: {e}"));
                assert_eq!(r.ledger_hash, header.hash());
                assert_eq!(r.tx_hash, id);
                assert_eq!(r.votes, q);
                assert_eq!(r.form, form);
                assert_eq!(
                    x["transaction"]["meta"].as_str().expect("hex"),
                    const_hex::encode_upper(meta)
                );
            }
        }
    }
}

#[test]
fn make_refuses_a_short_quorum_and_a_missing_transaction() {
    let (header, txs) = ledger("ledger-full-90150378.json");
    let net = Net::new(10, 3);
    let id = transaction_id(&txs[0].0);
    let e = made(&net, header, &txs, id, 7, ProofForm::Tree).expect_err("7 of 10 is short of 8");
    assert!(e.contains("no quorum"), "{e}");
    let e = made(&net, header, &txs, Hash256([0x42; 32]), 10, ProofForm::Tree)
        .expect_err("not in the ledger");
    assert!(e.contains("is not in ledger"), "{e}");
    // A header whose transaction root the transactions do not give.
    let mut wrong = header;
    wrong.transaction_hash = Hash256([1; 32]);
    let e = made(&net, wrong, &txs, id, 10, ProofForm::List).expect_err("wrong root");
    assert!(e.contains("hash to"), "{e}");
}

fn base(form: ProofForm) -> (Net, LedgerHeader, Value) {
    let (header, txs) = ledger("ledger-full-90150378.json");
    let net = Net::new(10, 9);
    let id = transaction_id(&txs[5].0);
    let x = made(&net, header, &txs, id, 8, form).expect("makes");
    (net, header, x)
}

#[test]
fn a_validator_counted_twice_or_outside_the_list_does_not_make_quorum() {
    let (net, header, x) = base(ProofForm::List);
    let key = net.key();
    verify(&x, &key).expect("8 of 10 verifies");
    // Drop one vote, then add the same validator again under its master key.
    let mut t = x.clone();
    let data = t["validation"]["data"].as_object_mut().expect("data");
    let first = data.keys().next().expect("one").clone();
    let raw = data.remove(&first).expect("removed");
    let again = data.keys().next().expect("one").clone();
    let (master, _) = net
        .validators
        .iter()
        .find(|(_, s)| s.public().to_base58() == again)
        .expect("a listed signing key");
    data.insert(master.public().to_base58(), data[&again].clone());
    let e = verify(&t, &key).expect_err("a validator counted twice");
    assert!(e.to_string().contains("7 of 10"), "{e}");
    // A validator outside the list signing the same ledger.
    let outsider = KeyPair::secp256k1([0x77; 32]).expect("key");
    let data = t["validation"]["data"].as_object_mut().expect("data");
    data.insert(
        outsider.public().to_base58(),
        Value::String(const_hex::encode_upper(Validation::make(
            &outsider,
            &header.hash(),
            header.seq,
            1,
        ))),
    );
    let e = verify(&t, &key).expect_err("an unlisted validator does not count");
    assert!(e.to_string().contains("not on the list"), "{e}");
    // The dropped vote back: valid again.
    t["validation"]["data"]
        .as_object_mut()
        .expect("data")
        .insert(first, raw);
    verify(&t, &key).expect("8 distinct listed validators");
}

#[test]
fn a_validation_filed_under_another_validator_is_refused() {
    let (net, _, x) = base(ProofForm::Tree);
    let mut t = x.clone();
    let data = t["validation"]["data"].as_object_mut().expect("data");
    let keys: Vec<String> = data.keys().cloned().collect();
    let v0 = data[&keys[0]].clone();
    data.insert(keys[1].clone(), v0);
    let e = verify(&t, &net.key()).expect_err("filed under the wrong validator");
    assert!(e.to_string().contains("not by the key"), "{e}");
}

#[test]
fn every_byte_of_a_made_list_and_of_the_validations_matters() {
    let (net, _, x) = base(ProofForm::List);
    let key = net.key();
    // Every character of the list's blob, signature and manifest, every 7th of each validation.
    let mut checked = 0;
    for field in ["blob", "signature", "manifest"] {
        let s = x["validation"]["unl"][field]
            .as_str()
            .expect("text")
            .to_string();
        for i in (0..s.len()).step_by(if field == "blob" { 13 } else { 1 }) {
            let mut b = s.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            if b == s.as_bytes() {
                continue;
            }
            let mut t = x.clone();
            t["validation"]["unl"][field] = Value::String(String::from_utf8(b).expect("ascii"));
            if field != "signature" && base64_same(&s, &t["validation"]["unl"][field]) {
                continue;
            }
            assert!(
                verify(&t, &key).is_err(),
                "unl.{field}[{i}] changed still verifies"
            );
            checked += 1;
        }
    }
    let data = x["validation"]["data"].as_object().expect("data");
    for (k, v) in data {
        let s = v.as_str().expect("hex");
        for i in (0..s.len()).step_by(7) {
            let mut b = s.as_bytes().to_vec();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let mut t = x.clone();
            t["validation"]["data"][k] = Value::String(String::from_utf8(b).expect("ascii"));
            assert!(
                verify(&t, &key).is_err(),
                "validation {k}[{i}] changed still verifies"
            );
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked}");
}

/// Whether two base64 texts decode to the same bytes (a change in the
/// padding bits of the last character).
fn base64_same(a: &str, b: &Value) -> bool {
    use base64::Engine as _;
    let e = base64::engine::general_purpose::STANDARD;
    matches!((e.decode(a), e.decode(b.as_str().unwrap_or(""))), (Ok(x), Ok(y)) if x == y)
}

#[test]
fn every_proof_entry_matters() {
    for form in [ProofForm::List, ProofForm::Tree] {
        let (net, _, x) = base(form);
        let key = net.key();
        let mut paths = Vec::new();
        collect_hashes(&x["transaction"]["proof"], &mut Vec::new(), &mut paths);
        assert!(paths.len() > 10, "{form:?}: {}", paths.len());
        for p in paths {
            let mut t = x.clone();
            let mut v = &mut t["transaction"]["proof"];
            for step in &p {
                v = match step {
                    Step::Index(i) => &mut v[*i],
                    Step::Name(n) => &mut v[n.as_str()],
                };
            }
            let s = v.as_str().expect("hex").to_string();
            let first = if s.starts_with('0') { '1' } else { '0' };
            let flipped = format!("{first}{}", &s[1..]);
            *v = Value::String(flipped);
            assert!(
                verify(&t, &key).is_err(),
                "{form:?}: {p:?} changed still verifies"
            );
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Index(usize),
    Name(String),
}

fn collect_hashes(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::String(_) => out.push(at.clone()),
        Value::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                at.push(Step::Index(i));
                collect_hashes(e, at, out);
                at.pop();
            }
        }
        Value::Object(o) => {
            for (k, e) in o {
                at.push(Step::Name(k.clone()));
                collect_hashes(e, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[test]
fn a_leaf_moved_off_its_path_is_refused() {
    // List form: the leaf's hash swapped with a sibling's string entry on the
    // root list gives a different root, and moving the transaction's nested
    // list under another nibble breaks the path.
    let (net, _, x) = base(ProofForm::List);
    let root = x["transaction"]["proof"].as_array().expect("list").clone();
    for (i, a) in root.iter().enumerate() {
        for (j, b) in root.iter().enumerate() {
            if i < j && a != b {
                let mut t = x.clone();
                t["transaction"]["proof"][i] = b.clone();
                t["transaction"]["proof"][j] = a.clone();
                assert!(
                    verify(&t, &net.key()).is_err(),
                    "entries {i} and {j} swapped still verify"
                );
            }
        }
    }
}
