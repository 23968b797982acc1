//! Writes a generated validator network for a ledger: a validator list
//! (`vl.json`) signed by a publisher key derived from a seed, and the full
//! validations of the ledger by the first K of its N validators as stream
//! messages (`validation_n….json`), the xPOP collector's layout. Prints the
//! publisher key. For trying `shamap xpop make` and verifiers on real
//! ledgers without a network's keys.
//!
//! ```text
//! cargo run -p shamap-auth --example test_network -- LEDGER_HASH SEQ OUT_DIR N [K] [SEED]
//! ```

use std::path::PathBuf;

use shamap::Hash256;
use shamap_auth::validation::Validation;
use shamap_auth::{KeyPair, ValidatorList};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: test_network LEDGER_HASH SEQ OUT_DIR N [K] [SEED]");
        std::process::exit(2);
    }
    let fail = |what: &str| -> ! {
        eprintln!("error: {what}");
        std::process::exit(2)
    };
    let hash =
        Hash256::from_hex(&args[0]).unwrap_or_else(|_| fail("LEDGER_HASH is not 64 hex digits"));
    let seq: u32 = args[1]
        .parse()
        .unwrap_or_else(|_| fail("SEQ is not a number"));
    let out = PathBuf::from(&args[2]);
    let n: usize = args[3]
        .parse()
        .unwrap_or_else(|_| fail("N is not a number"));
    let k: usize = args
        .get(4)
        .map_or(Ok(n), |s| s.parse())
        .unwrap_or_else(|_| fail("K is not a number"));
    let seed: u8 = args
        .get(5)
        .map_or(Ok(1), |s| s.parse())
        .unwrap_or_else(|_| fail("SEED is not 0-255"));
    let key = |role: u8, i: usize| {
        let mut s = [seed; 32];
        s[0] = role;
        s[1] = i as u8;
        s[2] = (i >> 8) as u8;
        s
    };
    let publisher = KeyPair::ed25519(key(1, 0));
    let signing = KeyPair::secp256k1(key(2, 0)).unwrap_or_else(|| fail("seed out of range"));
    let validators: Vec<(KeyPair, KeyPair)> = (0..n)
        .map(|i| {
            let master = if i % 2 == 0 {
                KeyPair::ed25519(key(3, i))
            } else {
                KeyPair::secp256k1(key(3, i)).unwrap_or_else(|| fail("seed out of range"))
            };
            (
                master,
                KeyPair::secp256k1(key(4, i)).unwrap_or_else(|| fail("seed out of range")),
            )
        })
        .collect();
    std::fs::create_dir_all(&out).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    let vl = ValidatorList::make(&publisher, &signing, &validators, 1, 4_000_000_000);
    let write = |name: String, v: serde_json::Value| {
        std::fs::write(out.join(&name), v.to_string())
            .unwrap_or_else(|e| fail(&format!("{name}: {e}")));
    };
    write("vl.json".into(), vl);
    for (_, s) in validators.iter().take(k) {
        let raw = Validation::make(s, &hash, seq, 0);
        write(
            format!("validation_{}.json", s.public().to_base58()),
            serde_json::json!({
                "type": "validationReceived",
                "validation_public_key": s.public().to_base58(),
                "ledger_hash": hash.to_hex(),
                "ledger_index": seq.to_string(),
                "data": const_hex::encode_upper(raw),
            }),
        );
    }
    println!("{}", publisher.public().to_hex());
}
