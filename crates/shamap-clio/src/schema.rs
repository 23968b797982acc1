//! Clio's schema: the tables its `Schema.hpp` (`createSchema`) creates, each
//! named `keyspace.<table_prefix><name>` as Clio's `qualifiedTableName`
//! does. Written here from the columns, keys and clustering orders Clio
//! declares; the statements are this crate's own.
//!
//! The core tables are the ones `clio verify` reads; the others are
//! Clio's transaction index (`account_tx`), its NFT and MPT index tables
//! and the bookkeeping of its migrator (`migrator_status`) and of its
//! cluster (`nodes_chat`), which `clio verify` names as not checked.

use super::{ClioError, Conn};

/// `(name, columns and options)` of the core tables.
const CORE: [(&str, &str); 8] = [
    (
        "objects",
        "(key blob, sequence bigint, object blob, PRIMARY KEY (key, sequence)) \
         WITH CLUSTERING ORDER BY (sequence DESC)",
    ),
    (
        "transactions",
        "(hash blob PRIMARY KEY, ledger_sequence bigint, date bigint, \
         transaction blob, metadata blob)",
    ),
    (
        "ledger_transactions",
        "(ledger_sequence bigint, hash blob, PRIMARY KEY (ledger_sequence, hash))",
    ),
    (
        "successor",
        "(key blob, seq bigint, next blob, PRIMARY KEY (key, seq))",
    ),
    ("diff", "(seq bigint, key blob, PRIMARY KEY (seq, key))"),
    ("ledgers", "(sequence bigint PRIMARY KEY, header blob)"),
    ("ledger_hashes", "(hash blob PRIMARY KEY, sequence bigint)"),
    (
        "ledger_range",
        "(is_latest boolean PRIMARY KEY, sequence bigint)",
    ),
];

/// `(name, columns and options)` of the tables Clio 2.6 adds to the core.
const EXTRA: [(&str, &str); 8] = [
    (
        "account_tx",
        "(account blob, seq_idx tuple<bigint, bigint>, hash blob, \
         PRIMARY KEY (account, seq_idx)) WITH CLUSTERING ORDER BY (seq_idx DESC)",
    ),
    (
        "nf_tokens",
        "(token_id blob, sequence bigint, owner blob, is_burned boolean, \
         PRIMARY KEY (token_id, sequence)) WITH CLUSTERING ORDER BY (sequence DESC)",
    ),
    (
        "issuer_nf_tokens_v2",
        "(issuer blob, taxon bigint, token_id blob, PRIMARY KEY (issuer, taxon, token_id)) \
         WITH CLUSTERING ORDER BY (taxon ASC, token_id ASC)",
    ),
    (
        "nf_token_uris",
        "(token_id blob, sequence bigint, uri blob, PRIMARY KEY (token_id, sequence)) \
         WITH CLUSTERING ORDER BY (sequence DESC)",
    ),
    (
        "nf_token_transactions",
        "(token_id blob, seq_idx tuple<bigint, bigint>, hash blob, \
         PRIMARY KEY (token_id, seq_idx)) WITH CLUSTERING ORDER BY (seq_idx DESC)",
    ),
    (
        "mp_token_holders",
        "(mpt_id blob, holder blob, PRIMARY KEY (mpt_id, holder)) \
         WITH CLUSTERING ORDER BY (holder ASC)",
    ),
    (
        "migrator_status",
        "(migrator_name text, status text, PRIMARY KEY (migrator_name))",
    ),
    (
        "nodes_chat",
        "(node_id uuid, message text, PRIMARY KEY (node_id)) WITH default_time_to_live = 2",
    ),
];

/// Which of Clio's tables to create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// The tables `clio verify` reads.
    Core,
    /// Clio 2.6's whole schema: the core, `account_tx`, the NFT and MPT
    /// index tables, `migrator_status` and `nodes_chat`.
    Full,
}

/// Creates the keyspace (when missing: replication from the URL's
/// `replication`) and the tables `which` names that are missing.
pub(crate) fn create(conn: &Conn, which: Tables) -> Result<(), ClioError> {
    let ks = conn.keyspace().to_owned();
    conn.execute(&format!(
        "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
         {{'class': 'NetworkTopologyStrategy', 'replication_factor': {}}}",
        conn.opts.replication
    ))?;
    let extra: &[(&str, &str)] = match which {
        Tables::Core => &[],
        Tables::Full => &EXTRA,
    };
    for (name, columns) in CORE.iter().chain(extra) {
        conn.execute(&format!(
            "CREATE TABLE IF NOT EXISTS {} {columns}",
            conn.table(name)
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_clio_table_once() {
        let mut names: Vec<&str> = CORE.iter().chain(&EXTRA).map(|(n, _)| *n).collect();
        let core: Vec<&str> = CORE.iter().map(|(n, _)| *n).collect();
        for t in crate::CORE_TABLES {
            assert!(core.contains(&t), "{t}");
        }
        for t in crate::CLIO_TABLES {
            assert!(names.contains(&t), "{t}");
        }
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
