//! Benchmark: `xpop::verify` of an XPOP whose list has 35 validators
//! (mainnet's size; masters ed25519 and secp256k1 alternating, signing keys
//! secp256k1 as validators run them), all 35 voting, over a real ledger
//! (`data/ledger-full-90150378.json`, list and tree forms), against the
//! floor measured in the same run: only the 36 signature checks (35
//! validations, the list blob). Each is timed as the best of R rounds of N
//! runs.
//!
//! ```text
//! cargo run --release -p shamap-auth --example xpop_bench [-- N R]
//! ```

use std::time::Instant;

use shamap::xrpl::transaction_id;
use shamap_auth::validation::{FoundValidation, Validation};
use shamap_auth::xpop::{make, verify, XpopSource};
use shamap_auth::{KeyPair, ProofForm, PublicKey, ValidatorList};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(200);
    let rounds = args.get(1).copied().unwrap_or(5);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/ledger-full-90150378.json"
    );
    let dump = shamap_ledger::parse(&std::fs::read(path).expect("the ledger is in data/"))
        .expect("parses");
    let header = dump.header.complete_header().expect("a whole header");
    let txs: Vec<(Vec<u8>, Vec<u8>)> = dump
        .transactions
        .expect("transactions")
        .into_iter()
        .map(|t| (t.tx, t.meta))
        .collect();
    let seed = |role: u8, i: usize| {
        let mut s = [0x33; 32];
        s[0] = role;
        s[1] = i as u8;
        s
    };
    let publisher = KeyPair::ed25519(seed(1, 0));
    let publisher_signing = KeyPair::secp256k1(seed(2, 0)).expect("key");
    let validators: Vec<(KeyPair, KeyPair)> = (0..35)
        .map(|i| {
            let master = if i % 2 == 0 {
                KeyPair::ed25519(seed(3, i))
            } else {
                KeyPair::secp256k1(seed(3, i)).expect("key")
            };
            (master, KeyPair::secp256k1(seed(4, i)).expect("key"))
        })
        .collect();
    let vl = ValidatorList::make(
        &publisher,
        &publisher_signing,
        &validators,
        1,
        4_000_000_000,
    );
    let found: Vec<FoundValidation> = validators
        .iter()
        .map(|(_, s)| FoundValidation {
            filed_under: Some(s.public().to_base58()),
            raw: Validation::make(s, &header.hash(), header.seq, 1),
            source: "bench".into(),
        })
        .collect();
    let key = publisher.public();
    // The floor's inputs: each validation's signed bytes and signature, and the list blob's.
    let mut checks: Vec<(PublicKey, Vec<u8>, Vec<u8>, bool)> = Vec::new();
    for (f, (_, s)) in found.iter().zip(&validators) {
        let fields = shamap::xrpl::fields::read_fields(&f.raw, "v").expect("fields");
        let sig = fields.iter().find(|x| x.is(7, 6)).expect("signature");
        let mut signed = b"VAL\0".to_vec();
        signed.extend_from_slice(&shamap::xrpl::fields::without(
            &f.raw,
            std::slice::from_ref(sig),
        ));
        checks.push((s.public(), signed, sig.value(&f.raw).to_vec(), true));
    }
    {
        use base64::Engine as _;
        let blob = base64::engine::general_purpose::STANDARD
            .decode(vl["blob"].as_str().expect("blob"))
            .expect("b64");
        let sig = const_hex::decode(vl["signature"].as_str().expect("sig")).expect("hex");
        checks.push((publisher_signing.public(), blob, sig, true));
    }
    assert_eq!(checks.len(), 36);
    let texts: Vec<(ProofForm, String)> = [ProofForm::List, ProofForm::Tree]
        .into_iter()
        .map(|form| {
            let (xpop, _) = make(&XpopSource {
                header,
                transactions: &txs,
                tx_hash: transaction_id(&txs[41].0),
                validations: &found,
                vl: &vl,
                vl_key: key,
                form,
            })
            .expect("makes");
            (form, serde_json::to_string(&xpop).expect("json"))
        })
        .collect();
    let time = |f: &mut dyn FnMut()| -> f64 {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_secs_f64() / n as f64
    };
    // Rounds interleave the floor and both forms, so that a noisy moment
    // falls on all of them; each keeps its best round.
    let mut floor = f64::MAX;
    let mut forms = vec![f64::MAX; texts.len()];
    for _ in 0..rounds {
        floor = floor.min(time(&mut || {
            for (k, m, s, full) in &checks {
                k.verify(m, s, *full).expect("verifies");
            }
        }));
        for (i, (_, text)) in texts.iter().enumerate() {
            forms[i] = forms[i].min(time(&mut || {
                let v: serde_json::Value = serde_json::from_str(text).expect("json");
                let r = verify(&v, &key).expect("verifies");
                assert_eq!(r.votes, 35);
            }));
        }
    }
    println!("floor: 36 signature checks: {:.1} us", floor * 1e6);
    for ((form, text), t) in texts.iter().zip(forms) {
        println!(
            "xpop verify ({} form, {} bytes, JSON parse included): {:.1} us = {:.3}x the floor",
            form.name(),
            text.len(),
            t * 1e6,
            t / floor
        );
    }
}
