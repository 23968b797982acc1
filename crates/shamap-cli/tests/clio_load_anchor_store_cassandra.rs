//! `shamap clio load --anchor` against a real Cassandra named by
//! `SHAMAP_CASSANDRA`: only ledgers authenticated from the trusted hash are
//! written. An anchor at the last ledger vouches for the whole range
//! (parent links); one in the middle leaves the later ledgers
//! unauthenticated, and a store of another chain (a store fabricated end
//! to end, every hash consistent) has none: both are refused in one line,
//! exit 1, before anything is written. Without a cluster each test skips.

use shamap_clio::{random_chain, table_rows};

use crate::cassandra_cluster::cluster_or_skip;
use crate::clio_ledgers::{nudb_ledgers, nudb_store};
use crate::clio_load_store_cassandra::{
    clio_from, clio_load, clio_verify_passes, drop_keyspace, url, SHAPE,
};
use crate::support::{assert_contains, one_error_line};

#[test]
fn only_ledgers_authenticated_from_the_anchor_are_loaded() {
    let host = cluster_or_skip!();
    let ledgers = nudb_ledgers(&random_chain(29, SHAPE));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = nudb_store(dir.path(), &ledgers);
    let hash_of = |i: usize| ledgers[i].header.hash().to_string();
    let last = SHAPE.first_seq + SHAPE.ledgers as u32 - 1;
    let range = format!("{}..{last}", SHAPE.first_seq);
    let refused_untouched = |u: &str, r: &crate::support::Run, want: &[&str]| {
        let e = one_error_line(r, 1);
        for w in want {
            assert_contains(&e, w);
        }
        assert!(
            table_rows(u, None, "ledger_range").is_err(),
            "nothing is written, not even the schema"
        );
    };

    // The anchor in the middle: the ledgers after it are not vouched for.
    let u = url(&host, "anchor_mid");
    let r = clio_load(&db, &u, &["--ledgers", &range, "--anchor", &hash_of(20)]);
    let next = SHAPE.first_seq + 21;
    refused_untouched(
        &u,
        &r,
        &[
            &format!("error: ledger {next} {}: not authenticated", hash_of(21)),
            &format!("from the anchor {} (--anchor)", hash_of(20)),
            "nothing written",
        ],
    );

    // A store of another chain, as consistent as the real one: refused.
    let other = nudb_ledgers(&random_chain(31, SHAPE));
    let odir = tempfile::tempdir().expect("tempdir");
    let odb = nudb_store(odir.path(), &other);
    let u = url(&host, "anchor_forged");
    let r = clio_load(&odb, &u, &["--ledgers", &range, "--anchor", &hash_of(39)]);
    refused_untouched(
        &u,
        &r,
        &[
            &format!("error: ledger {} ", SHAPE.first_seq),
            "is not a ledger held here",
            "nothing written",
        ],
    );

    // The anchor at the last ledger: the whole range, then verified.
    let u = url(&host, "anchor_last");
    let r = clio_load(&db, &u, &["--ledgers", &range, "--anchor", &hash_of(39)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_contains(&r.stdout, &format!("ledger_range {range}"));
    clio_verify_passes(&u, &[]);
    drop_keyspace(&u);

    // insert-floor takes no anchor.
    let r = clio_from(
        "insert-floor",
        &db,
        &url(&host, "anchor_floor"),
        &["--ledgers", &range, "--anchor", &hash_of(39)],
    );
    assert_contains(&one_error_line(&r, 2), "authenticates nothing");
}
