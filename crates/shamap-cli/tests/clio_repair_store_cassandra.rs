//! `shamap clio repair` against a real Cassandra named by `SHAMAP_CASSANDRA`:
//! each fault class `clio verify`'s tests plant, mended from the verified
//! store, after which `clio verify` passes (the loads it starts from are
//! `clio_load_store_cassandra`'s).

use crate::cassandra_cluster::cluster_or_skip;
use crate::clio_ledgers::{load, nudb_ledgers, nudb_store, shape};
use crate::support::{assert_contains, one_error_line, shamap};
use shamap_clio::random_chain;

use crate::clio_load_store_cassandra::{clio_from, same_rows, url};
use crate::clio_store_cassandra::changes_at;
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every fault class `clio verify`'s fault tests plant, planted at one
/// ledger k of a keyspace the tests' loader wrote (and a missing diff row
/// at k + 2, a `ledger_hashes` row naming another ledger at k + 1): `clio verify` fails, `clio repair --dry-run` lists each row
/// and changes nothing, `clio repair --from-ledger k` mends them, printing
/// each, after which `clio verify` passes and every row equals an undamaged
/// copy's.
#[test]
fn repair_mends_each_fault_class() {
    use std::collections::BTreeSet;
    use std::ops::Bound::{Excluded, Unbounded};
    let host = cluster_or_skip!();
    let shape = shape(100, 12, 40, 6, 3);
    let chain = random_chain(5, shape);
    let dir = tempfile::tempdir().expect("tempdir");
    let nudb = nudb_store(dir.path(), &nudb_ledgers(&chain));
    // Ledger k: one with a created key, a modified key and a transaction.
    let (k, c) = (103..=108)
        .map(|seq| (seq, changes_at(&chain, seq)))
        .find(|(seq, c)| {
            !c.created.is_empty()
                && !c.modified.is_empty()
                && !chain[(seq - 100) as usize].transactions.is_empty()
        })
        .expect("a ledger to damage");
    let (created, modified) = (c.created[0], c.modified[0]);
    let (before, after) = (c.live_before, c.live_after);
    let lk = &chain[(k - 100) as usize];
    let touched: BTreeSet<shamap::Key> = chain[(k - 100) as usize..]
        .iter()
        .flat_map(|l| l.objects.iter().map(|(x, _)| *x))
        .collect();
    let stray = *before
        .iter()
        .find(|x| !touched.contains(x))
        .expect("an unchanged key");
    let pred = after
        .range(..created)
        .next_back()
        .copied()
        .unwrap_or(shamap::Key([0; 32]));
    let past = after
        .range((Excluded(created), Unbounded))
        .next()
        .copied()
        .unwrap_or(shamap::Key([0xFF; 32]));
    let mut flipped = lk
        .objects
        .iter()
        .find(|(x, _)| *x == modified)
        .expect("o")
        .1
        .clone();
    flipped[3] ^= 0x20;
    let tx_id = shamap::xrpl::tx::transaction_id(&lk.transactions[0].0);
    let h = lk.header.expect("h");
    let mut wrong_header = h.serialize().to_vec();
    let mut wrong_hash = h.hash().0;
    wrong_hash[0] ^= 1;
    wrong_header.extend_from_slice(&wrong_hash);
    let later = chain[(k + 2 - 100) as usize].objects[0].0;
    let next_hash = chain[(k + 1 - 100) as usize].header.expect("h").hash();

    let u = url(&host, "repair");
    let reference = url(&host, "repairref");
    let damaged = load(&u, &chain);
    let clean = load(&reference, &chain);
    let ks = u.rsplit('/').next().expect("ks");
    for cql in [
        format!(
            "UPDATE {ks}.objects SET object = 0x{} WHERE key = 0x{} AND sequence = {k}",
            hex(&flipped),
            hex(&modified.0)
        ),
        format!(
            "DELETE FROM {ks}.diff WHERE seq = {k} AND key = 0x{}",
            hex(&modified.0)
        ),
        format!(
            "INSERT INTO {ks}.objects (key, sequence, object) VALUES (0x{}, {k}, 0x0707)",
            hex(&stray.0)
        ),
        format!(
            "DELETE FROM {ks}.successor WHERE key = 0x{} AND seq = {k}",
            hex(&created.0)
        ),
        format!(
            "UPDATE {ks}.successor SET next = 0x{} WHERE key = 0x{} AND seq = {k}",
            hex(&past.0),
            hex(&pred.0)
        ),
        format!(
            "UPDATE {ks}.ledgers SET header = 0x{} WHERE sequence = {k}",
            hex(&wrong_header)
        ),
        format!(
            "DELETE FROM {ks}.transactions WHERE hash = 0x{}",
            hex(&tx_id.0)
        ),
        format!(
            "INSERT INTO {ks}.diff (seq, key) VALUES ({k}, 0x{})",
            hex(&stray.0)
        ),
        format!(
            "DELETE FROM {ks}.diff WHERE seq = {} AND key = 0x{}",
            k + 2,
            hex(&later.0)
        ),
        format!(
            "UPDATE {ks}.ledger_hashes SET sequence = {} WHERE hash = 0x{}",
            k + 7,
            hex(&next_hash.0)
        ),
    ] {
        damaged.execute(&cql).expect("damage");
    }
    let verify = || shamap(["clio", "verify", "--db", &u], None);
    let r = verify();
    assert_ne!(r.code, Some(0), "{}", r.stdout);
    let repair = |extra: &[&str]| clio_from("repair", &nudb, &u, extra);
    let kk = k.to_string();
    let dry = repair(&["--from-ledger", &kk, "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let expected = [
        format!("ledger {k}: ledgers {k}: wrong, to rewrite\n"),
        format!("ledger {k}: transactions {tx_id}: missing, to write\n"),
        format!("ledger {k}: objects {modified}: wrong, to rewrite\n"),
        format!("ledger {k}: diff {modified}: missing, to write\n"),
        format!("ledger {k}: objects {stray}: extra, to delete\n"),
        format!(
            "ledger {k}: diff {}: extra, to delete\n",
            hex(&stray.0).to_uppercase()
        ),
        format!("ledger {k}: successor {created}: missing, to write\n"),
        format!("ledger {k}: successor {pred}: wrong, to rewrite\n"),
        format!(
            "ledger {}: ledger_hashes {next_hash}: wrong, to rewrite\n",
            k + 1
        ),
        format!("ledger {}: diff {later}: missing, to write\n", k + 2),
    ];
    for line in &expected {
        assert!(
            dry.stdout.contains(line.as_str()),
            "{line}in\n{}",
            dry.stdout
        );
    }
    assert_eq!(
        dry.stdout.lines().count(),
        expected.len() + 1,
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout.ends_with(&format!(
            "dry run: {} rows of ledgers {k}..111 of cassandra://{host}/{ks} would change\n",
            expected.len()
        )),
        "{}",
        dry.stdout
    );
    assert_ne!(verify().code, Some(0), "a dry run changed nothing");
    let r = repair(&["--from-ledger", &kk]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout
            .replace("to rewrite", "rewritten")
            .replace("to write", "written")
            .replace("to delete", "deleted")
            .lines()
            .count(),
        dry.stdout.lines().count()
    );
    assert!(
        r.stdout
            .ends_with(&format!("{} rows changed\n", expected.len())),
        "{}",
        r.stdout
    );
    let r = verify();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    same_rows(&u, "", &reference, "");
    // Nothing left to repair.
    let r = repair(&["--ledger", &kk]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("nothing to repair"), "{}", r.stdout);
    // Outside the range: one line.
    let e = one_error_line(&repair(&["--ledger", "99"]), 2);
    assert_contains(&e, "not all within ledger_range 100..111");
    damaged.drop_keyspace().expect("drop");
    clean.drop_keyspace().expect("drop");
}
