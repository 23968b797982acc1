//! Clio's schema as a real Cassandra holds it (feature `cassandra`): the
//! tables `Tables::Full` creates, read back from `system_schema`, against
//! the columns, keys, clustering orders and options of Clio's
//! `createSchema` (release 2.6.3 and the MPT history tables of its
//! development branch, as `schema.rs` records); and the tables a prefix too
//! long for those history tables leaves out.

use shamap_clio::{table_columns, ClioLoader, ClioReader, Tables, CLIO_TABLES};

use crate::cassandra_cluster::cluster_or_skip;

fn url(host: &str, name: &str) -> String {
    format!("cassandra://{host}/clio_{name}_{}", std::process::id())
}

const TUPLE: &str = "frozen<tuple<bigint, bigint>>";

/// A table's definition as `table_columns` gives it: partition key
/// columns, clustering columns with their order, other columns, default
/// time to live.
fn definition(
    partition: &[(&str, &str)],
    clustering: &[(&str, &str, &str)],
    regular: &[(&str, &str)],
    ttl: i32,
) -> Vec<String> {
    let mut lines: Vec<String> = partition
        .iter()
        .enumerate()
        .map(|(i, (c, t))| format!("partition_key {i} {c} {t} none"))
        .chain(
            clustering
                .iter()
                .enumerate()
                .map(|(i, (c, t, o))| format!("clustering {i} {c} {t} {o}")),
        )
        .chain(
            regular
                .iter()
                .map(|(c, t)| format!("regular -1 {c} {t} none")),
        )
        .collect();
    lines.sort();
    lines.push(format!("ttl {ttl}"));
    lines
}

/// Every table of Clio's schema, as Clio declares it.
fn clio_schema() -> Vec<(&'static str, Vec<String>)> {
    let seq_desc = [("sequence", "bigint", "desc")];
    vec![
        (
            "objects",
            definition(&[("key", "blob")], &seq_desc, &[("object", "blob")], 0),
        ),
        (
            "transactions",
            definition(
                &[("hash", "blob")],
                &[],
                &[
                    ("ledger_sequence", "bigint"),
                    ("date", "bigint"),
                    ("transaction", "blob"),
                    ("metadata", "blob"),
                ],
                0,
            ),
        ),
        (
            "ledger_transactions",
            definition(
                &[("ledger_sequence", "bigint")],
                &[("hash", "blob", "asc")],
                &[],
                0,
            ),
        ),
        (
            "successor",
            definition(
                &[("key", "blob")],
                &[("seq", "bigint", "asc")],
                &[("next", "blob")],
                0,
            ),
        ),
        (
            "diff",
            definition(&[("seq", "bigint")], &[("key", "blob", "asc")], &[], 0),
        ),
        (
            "ledgers",
            definition(&[("sequence", "bigint")], &[], &[("header", "blob")], 0),
        ),
        (
            "ledger_hashes",
            definition(&[("hash", "blob")], &[], &[("sequence", "bigint")], 0),
        ),
        (
            "ledger_range",
            definition(
                &[("is_latest", "boolean")],
                &[],
                &[("sequence", "bigint")],
                0,
            ),
        ),
        (
            "account_tx",
            definition(
                &[("account", "blob")],
                &[("seq_idx", TUPLE, "desc")],
                &[("hash", "blob")],
                0,
            ),
        ),
        (
            "nf_tokens",
            definition(
                &[("token_id", "blob")],
                &seq_desc,
                &[("owner", "blob"), ("is_burned", "boolean")],
                0,
            ),
        ),
        (
            "issuer_nf_tokens_v2",
            definition(
                &[("issuer", "blob")],
                &[("taxon", "bigint", "asc"), ("token_id", "blob", "asc")],
                &[],
                0,
            ),
        ),
        (
            "nf_token_uris",
            definition(&[("token_id", "blob")], &seq_desc, &[("uri", "blob")], 0),
        ),
        (
            "nf_token_transactions",
            definition(
                &[("token_id", "blob")],
                &[("seq_idx", TUPLE, "desc")],
                &[("hash", "blob")],
                0,
            ),
        ),
        (
            "mptoken_issuance_transactions",
            definition(
                &[("mptoken_issuance_id", "blob")],
                &[("seq_idx", TUPLE, "desc")],
                &[("hash", "blob")],
                0,
            ),
        ),
        (
            "account_mptoken_issuance_transactions",
            definition(
                &[("mptoken_issuance_id", "blob"), ("account", "blob")],
                &[("seq_idx", TUPLE, "desc")],
                &[("hash", "blob")],
                0,
            ),
        ),
        (
            "mp_token_holders",
            definition(&[("mpt_id", "blob")], &[("holder", "blob", "asc")], &[], 0),
        ),
        (
            "migrator_status",
            definition(&[("migrator_name", "text")], &[], &[("status", "text")], 0),
        ),
        (
            "nodes_chat",
            definition(&[("node_id", "uuid")], &[], &[("message", "text")], 2),
        ),
    ]
}

/// Every table `Tables::Full` creates is Clio's: the same columns and
/// types, partition key, clustering columns and order, time to live.
#[test]
fn the_full_schema_is_clios_column_for_column() {
    let host = cluster_or_skip!();
    let u = url(&host, "schema");
    let loader = ClioLoader::create_fresh_with(&u, Some("s_"), Tables::Full).expect("create");
    let clio = clio_schema();
    assert_eq!(clio.len(), CLIO_TABLES.len());
    for (table, want) in &clio {
        let got = table_columns(&u, Some("s_"), table).expect("definition");
        assert_eq!(&got, want, "table {table}");
    }
    loader.drop_keyspace().expect("drop");
}

/// Under a prefix longer than the MPT history tables leave room for (11
/// characters) but within release 2.6's (27), the full schema is release
/// 2.6's sixteen tables, and the keyspace reads.
#[test]
fn a_long_prefix_gets_release_2_6s_tables() {
    let host = cluster_or_skip!();
    let u = url(&host, "longprefix");
    let prefix = "a_prefix_of_20_chars";
    let loader = ClioLoader::create_fresh_with(&u, Some(prefix), Tables::Full).expect("create");
    let reader = ClioReader::open(&format!("{u}?table_prefix={prefix}")).expect("open");
    let mut want: Vec<String> = CLIO_TABLES
        .iter()
        .filter(|t| !t.contains("mptoken_issuance"))
        .filter(|t| !shamap_clio::CORE_TABLES.contains(t))
        .map(|t| format!("{prefix}{t}"))
        .collect();
    want.sort();
    assert_eq!(reader.not_checked(), want.as_slice());
    assert_eq!(want.len(), 8);
    loader.drop_keyspace().expect("drop");
}
