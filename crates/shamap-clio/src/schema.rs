//! Clio's schema: the tables Clio's `createSchema` (in its
//! `src/data/cassandra/Schema.hpp`) creates, each named
//! `keyspace.<table_prefix><name>` as Clio's `qualifiedTableName` does.
//! The statements are this crate's own, written from the columns, keys and
//! clustering orders Clio declares.
//!
//! Compared, table by table (columns and their types, partition key,
//! clustering columns and order, table options), with `createSchema` in
//! Clio's repository at two points:
//! - release 2.6.3 (tag `2.6.3`, commit `7d170eab70d5`, 2025-10-23):
//!   sixteen tables, the eight core ones and the eight of [`EXTRA`] marked
//!   as in 2.6; every column, key, clustering order and option here was
//!   found equal;
//! - the development branch at commit `e24216c8a998` (2026-06-16, "Add
//!   storage and backend for mpt_issuance_history", Clio pull request
//!   3091, the last change to that file as of `e7b3f9156a80`, 2026-07-01):
//!   the same sixteen and two MPT history tables,
//!   `mptoken_issuance_transactions` and
//!   `account_mptoken_issuance_transactions`, which no release has yet.
//!
//! One difference is kept on purpose: Clio creates a missing keyspace with
//! `SimpleStrategy` (and `durable_writes = true`, Cassandra's default);
//! [`create`] uses `NetworkTopologyStrategy` with the URL's
//! `replication`, as shamap's node store does. Tables do not depend on it.
//!
//! The core tables are the ones `clio verify` reads; the others are
//! Clio's transaction index (`account_tx`), its NFT and MPT index and
//! history tables and the bookkeeping of its migrator (`migrator_status`)
//! and of its cluster (`nodes_chat`), which `clio verify` names as not
//! checked.

use super::{ClioError, Conn};

/// Cassandra's longest table name.
pub(crate) const MAX_TABLE_NAME: usize = 48;

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

/// One of the tables Clio creates beside the core.
pub(crate) struct Extra {
    /// The name, without a prefix.
    pub(crate) name: &'static str,
    /// Columns and options.
    columns: &'static str,
    /// Whether release 2.6 creates it (else only Clio's development branch
    /// does, so far).
    pub(crate) in_2_6: bool,
}

/// The tables Clio creates beside the core, in `createSchema`'s order.
pub(crate) const EXTRA: [Extra; 10] = [
    Extra {
        name: "account_tx",
        columns: "(account blob, seq_idx tuple<bigint, bigint>, hash blob, \
                  PRIMARY KEY (account, seq_idx)) WITH CLUSTERING ORDER BY (seq_idx DESC)",
        in_2_6: true,
    },
    Extra {
        name: "nf_tokens",
        columns: "(token_id blob, sequence bigint, owner blob, is_burned boolean, \
                  PRIMARY KEY (token_id, sequence)) WITH CLUSTERING ORDER BY (sequence DESC)",
        in_2_6: true,
    },
    Extra {
        name: "issuer_nf_tokens_v2",
        columns: "(issuer blob, taxon bigint, token_id blob, \
                  PRIMARY KEY (issuer, taxon, token_id)) \
                  WITH CLUSTERING ORDER BY (taxon ASC, token_id ASC)",
        in_2_6: true,
    },
    Extra {
        name: "nf_token_uris",
        columns: "(token_id blob, sequence bigint, uri blob, PRIMARY KEY (token_id, sequence)) \
                  WITH CLUSTERING ORDER BY (sequence DESC)",
        in_2_6: true,
    },
    Extra {
        name: "nf_token_transactions",
        columns: "(token_id blob, seq_idx tuple<bigint, bigint>, hash blob, \
                  PRIMARY KEY (token_id, seq_idx)) WITH CLUSTERING ORDER BY (seq_idx DESC)",
        in_2_6: true,
    },
    Extra {
        name: "mptoken_issuance_transactions",
        columns: "(mptoken_issuance_id blob, seq_idx tuple<bigint, bigint>, hash blob, \
                  PRIMARY KEY (mptoken_issuance_id, seq_idx)) \
                  WITH CLUSTERING ORDER BY (seq_idx DESC)",
        in_2_6: false,
    },
    Extra {
        name: "account_mptoken_issuance_transactions",
        columns: "(mptoken_issuance_id blob, account blob, seq_idx tuple<bigint, bigint>, \
                  hash blob, PRIMARY KEY ((mptoken_issuance_id, account), seq_idx)) \
                  WITH CLUSTERING ORDER BY (seq_idx DESC)",
        in_2_6: false,
    },
    Extra {
        name: "mp_token_holders",
        columns: "(mpt_id blob, holder blob, PRIMARY KEY (mpt_id, holder)) \
                  WITH CLUSTERING ORDER BY (holder ASC)",
        in_2_6: true,
    },
    Extra {
        name: "migrator_status",
        columns: "(migrator_name text, status text, PRIMARY KEY (migrator_name))",
        in_2_6: true,
    },
    Extra {
        name: "nodes_chat",
        columns: "(node_id uuid, message text, PRIMARY KEY (node_id)) \
                  WITH default_time_to_live = 2",
        in_2_6: true,
    },
];

/// The longest name among the tables release 2.6 creates: a prefix must
/// leave room for it.
pub(crate) fn longest_2_6_name() -> usize {
    CORE.iter()
        .map(|(n, _)| n.len())
        .chain(EXTRA.iter().filter(|e| e.in_2_6).map(|e| e.name.len()))
        .max()
        .unwrap_or(0)
}

/// Which of Clio's tables to create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// The tables `clio verify` reads.
    Core,
    /// Clio's whole schema: the core, `account_tx`, the NFT and MPT index
    /// tables, `migrator_status` and `nodes_chat` (release 2.6), and the
    /// MPT history tables of Clio's development branch. A history table
    /// whose name the prefix would make longer than Cassandra's 48
    /// characters is left out (Clio could not create it either).
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
    let fits = |name: &str| conn.prefix.len() + name.len() <= MAX_TABLE_NAME;
    let extra: Vec<(&str, &str)> = match which {
        Tables::Core => Vec::new(),
        Tables::Full => EXTRA
            .iter()
            .filter(|e| fits(e.name))
            .map(|e| (e.name, e.columns))
            .collect(),
    };
    for (name, columns) in CORE.iter().copied().chain(extra) {
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
        let mut names: Vec<&str> = CORE
            .iter()
            .map(|(n, _)| *n)
            .chain(EXTRA.iter().map(|e| e.name))
            .collect();
        let mut core: Vec<&str> = CORE.iter().map(|(n, _)| *n).collect();
        let mut read = crate::CORE_TABLES.to_vec();
        core.sort_unstable();
        read.sort_unstable();
        assert_eq!(core, read);
        let mut all = crate::CLIO_TABLES.to_vec();
        all.sort_unstable();
        names.sort_unstable();
        assert_eq!(names, all);
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn a_prefix_leaves_room_for_release_2_6s_longest_table() {
        assert_eq!(longest_2_6_name(), "nf_token_transactions".len());
        let longest = EXTRA.iter().map(|e| e.name.len()).max();
        assert_eq!(longest, Some("account_mptoken_issuance_transactions".len()));
    }
}
