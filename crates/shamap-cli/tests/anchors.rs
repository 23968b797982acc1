//! Anchors: a chain of 601 ledgers after mainnet ledger 40000, skip lists
//! kept as rippled keeps them, written as rippled's NuDB store with ten
//! headers missing in the middle and a forged ledger beside a real one;
//! authenticated from its last hash (given, or from an XPOP), through skip
//! lists across the gap; the forged one reported forged; nothing claimed
//! without an anchor; the store's files unchanged.

use std::path::PathBuf;

use serde_json::Value;
use shamap::xrpl::skip_list::{short_key, SkipList};
use shamap_nudb_writer::{skip_list_history, write_ledger_db, write_ledgers, Ledger, NudbOptions};

use crate::support::{data, files_in, shamap};

/// `shamap verify --db DB --json --anchor LAST`, which must find one
/// forged ledger of `ledgers` and none not authenticated: its JSON.
fn verify_one_forged(db: &str, last: &str, ledgers: u32) -> Value {
    let r = shamap(["verify", "--db", db, "--json", "--anchor", last], None);
    assert_eq!(
        r.code,
        Some(1),
        "a forged ledger is not authenticated: {}",
        r.stderr
    );
    let line = format!("1 forged and 0 not authenticated of {ledgers} ledgers");
    assert!(r.stderr.contains(&line), "{}", r.stderr);
    serde_json::from_str(&r.stdout).expect("json")
}

#[test]
fn the_real_skip_list_of_ledger_40000_names_its_parent() {
    let l = Ledger::from_dump(&data("ledger-full-40000.json")).expect("ledger");
    let list = SkipList::decode(
        l.state
            .get(&short_key())
            .expect("ledger 40000 has a skip list"),
    )
    .expect("decodes");
    assert_eq!(list.last_seq, 39_999);
    assert_eq!(list.hashes.len(), 256);
    assert_eq!(*list.hashes.last().expect("one"), l.header.parent_hash);
}

struct Chain {
    _dir: tempfile::TempDir,
    db: PathBuf,
    ledgers: Vec<Ledger>,
    forged: Ledger,
}

fn chain() -> Chain {
    let base = Ledger::from_dump(&data("ledger-full-40000.json")).expect("ledger");
    let ledgers = skip_list_history(base, 600, 5);
    assert_eq!(ledgers.last().expect("one").header.seq, 40_600);
    // A ledger 40300 that is not the one 40301 names as its parent.
    let forged = ledgers[299].successor_with_skip_lists(8, 3, 999);
    assert_eq!(forged.header.seq, 40_300);
    assert_ne!(forged.hash(), ledgers[300].hash());
    let held: Vec<Ledger> = ledgers
        .iter()
        .filter(|l| !(40_200..40_210).contains(&l.header.seq))
        .cloned()
        .chain(std::iter::once(forged.clone()))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("nudb");
    write_ledgers(&db, NudbOptions::default(), &held).expect("write");
    Chain {
        _dir: dir,
        db,
        ledgers,
        forged,
    }
}

#[test]
fn a_chain_is_authenticated_from_its_last_hash_across_a_gap_and_a_forgery_is_named() {
    let c = chain();
    let before = files_in(&c.db);
    let db = c.db.to_str().expect("utf-8");
    let last = c.ledgers.last().expect("one").hash().to_hex();
    // No anchor: damage-free, nothing called authenticated.
    let r = shamap(["verify", "--db", db, "--json"], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !r.stdout.contains("authenticated"),
        "claims without an anchor"
    );
    // From the last hash.
    let v = verify_one_forged(db, &last, 592);
    assert_eq!(v["authenticated"], false);
    let roots = v["roots"].as_array().expect("roots");
    assert_eq!(roots.len(), 592);
    for root in roots {
        let hash = root["root"].as_str().expect("hash");
        if hash == c.forged.hash().to_hex() {
            assert_eq!(root["authenticated"], false);
            let why = root["authentication"].as_str().expect("why");
            assert!(why.starts_with("FORGED: "), "{why}");
            assert!(why.contains(&c.ledgers[300].hash().to_hex()), "{why}");
        } else {
            assert_eq!(root["authenticated"], true, "{root}");
        }
    }
    // The ledgers below the gap were reached through a skip list.
    let below = roots
        .iter()
        .find(|r| r["seq"] == 40_199)
        .expect("ledger 40199 held");
    assert!(
        below["authentication"]
            .as_str()
            .expect("why")
            .contains("skip list"),
        "{below}"
    );
    // Text: one line per ledger with its verdict.
    let r = shamap(["verify", "--db", db, "--anchor", &last], None);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stdout.contains(&format!("{} ", c.forged.hash())) && r.stdout.contains("FORGED"),
        "{}",
        r.stdout
    );
    // An anchor the store does not hold: nothing authenticated, said so.
    let r = shamap(
        ["verify", "--db", db, "--json", "--anchor", &"AB".repeat(32)],
        None,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stdout.contains("is not a ledger held here"),
        "{}",
        r.stdout
    );
    assert_eq!(files_in(&c.db), before, "the store's files changed");
}

#[test]
fn an_anchor_from_an_xpop_and_from_validations() {
    let c = chain();
    let db = c.db.to_str().expect("utf-8");
    let dir = tempfile::tempdir().expect("tempdir");
    let last = c.ledgers.last().expect("one");
    // A generated network validates the last ledger.
    let net = dir.path().join("net");
    let key = crate::xpop_cli::collector(dir.path(), &net, 5, 4, &last.hash(), last.header.seq);
    let (_, leaf) = last.tx.iter().next().expect("a transaction");
    let (blob, _) = shamap::xrpl::tx::split_tx_with_meta(leaf).expect("leaf");
    let tx = shamap::xrpl::transaction_id(blob).to_hex();
    let xpop = dir.path().join("anchor.json");
    crate::xpop_cli::make_ok(&["--db", db, "--ledger", "40600"], &tx, &net, &key, &xpop);
    for args in [
        vec![
            "--anchor-xpop",
            xpop.to_str().expect("utf-8"),
            "--vl-key",
            &key,
        ],
        vec![
            "--anchor-validations",
            net.to_str().expect("utf-8"),
            "--vl-key",
            &key,
        ],
    ] {
        let mut all = vec!["verify", "--db", db, "--json"];
        all.extend(args.iter().copied());
        let r = shamap(&all, None);
        assert_eq!(r.code, Some(1), "{}", r.stderr);
        assert!(
            r.stderr.contains("1 forged and 0 not authenticated"),
            "{}",
            r.stderr
        );
    }
    // The wrong publisher key: refused before any walk.
    let other = "ED264807102805220DA0F312E71FC2C69E1552C9C5790F6C25E3729DEB573D5860";
    let r = shamap(
        [
            "verify",
            "--db",
            db,
            "--anchor-xpop",
            xpop.to_str().expect("utf-8"),
            "--vl-key",
            other,
        ],
        None,
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--anchor-xpop"), "{}", r.stderr);
}

#[test]
fn dumps_are_authenticated_from_an_anchor_too() {
    let c = chain();
    let db = c.db.to_str().expect("utf-8");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    for l in [&c.ledgers[600], &c.ledgers[599], &c.ledgers[350], &c.forged] {
        let out = dir
            .path()
            .join(format!("{}-{}.json", l.header.seq, &l.hash().to_hex()[..8]));
        let r = shamap(
            [
                "export",
                "--db",
                db,
                "--root",
                &l.hash().to_hex(),
                "--out",
                out.to_str().expect("utf-8"),
            ],
            None,
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        files.push(out.to_str().expect("utf-8").to_owned());
    }
    let last = c.ledgers[600].hash().to_hex();
    let mut args = vec![
        "verify".to_owned(),
        "--json".to_owned(),
        "--anchor".to_owned(),
        last.clone(),
    ];
    args.extend(files.iter().cloned());
    let r = shamap(&args, None);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let verdicts: Vec<(bool, String)> = v["ledgers"]
        .as_array()
        .expect("ledgers")
        .iter()
        .map(|l| {
            (
                l["authenticated"] == true,
                l["authentication"].as_str().expect("why").to_owned(),
            )
        })
        .collect();
    assert!(
        verdicts[0].0 && verdicts[1].0 && verdicts[2].0,
        "{verdicts:?}"
    );
    assert!(verdicts[3].1.starts_with("FORGED"), "{verdicts:?}");
    // Without the forged file: all authenticated, status 0.
    args.pop();
    let r = shamap(&args, None);
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
}

#[test]
fn a_ledger_db_naming_the_forged_ledger_blames_it_not_its_child() {
    let c = chain();
    let db = c.db.to_str().expect("utf-8");
    // ledger.db as a forger would leave it: sequence 40300 is the forged ledger.
    let headers: Vec<_> = c
        .ledgers
        .iter()
        .filter(|l| !(40_200..40_210).contains(&l.header.seq))
        .map(|l| {
            if l.header.seq == 40_300 {
                c.forged.header
            } else {
                l.header
            }
        })
        .collect();
    write_ledger_db(&c.db.join("ledger.db"), &headers).expect("ledger.db");
    let before = files_in(&c.db);
    // Without an anchor the broken link is damage to 40301 (nothing says which side lies).
    let r = shamap(["verify", "--db", db], None);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    // From the last hash: 40300 is forged, 40301 whole and authenticated.
    let last = c.ledgers.last().expect("one").hash().to_hex();
    let v = verify_one_forged(db, &last, 591);
    let roots = v["roots"].as_array().expect("roots");
    let at = |seq: u32| roots.iter().find(|r| r["seq"] == seq).expect("held");
    assert!(at(40_300)["authentication"]
        .as_str()
        .expect("why")
        .starts_with("FORGED"));
    assert_eq!(at(40_301)["ok"], true, "{}", at(40_301));
    assert_eq!(at(40_301)["authenticated"], true);
    assert_eq!(
        v["nodes"].as_array().expect("nodes").len(),
        0,
        "{}",
        v["nodes"]
    );
    assert_eq!(files_in(&c.db), before, "the store's files changed");
}
