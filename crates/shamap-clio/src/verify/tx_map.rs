//! A ledger's transaction map from Clio's transaction rows.

use shamap::xrpl::tx::tx_with_meta_item;
use shamap::{Hash256, Key, MapKind, ShaMap};

use crate::ClioError;

use super::*;

/// Builds ledger `seq`'s transaction map from the rows of `hashes`; its
/// root and size.
pub(super) fn tx_map(
    seq: u32,
    hashes: &[Hash256],
    rows: Vec<Option<crate::TxRow>>,
    problems: &mut Vec<Problem>,
) -> Result<(Hash256, usize), ClioError> {
    let mut map = ShaMap::new(MapKind::TransactionWithMeta);
    for (hash, row) in hashes.iter().zip(rows) {
        let row = row.ok_or_else(|| {
            ClioError::unusable(
                seq,
                format!(
                    "transaction {hash}: in ledger_transactions but no row in table transactions"
                ),
            )
        })?;
        if row.ledger_sequence != i64::from(seq) {
            problems.push(Problem {
                key: Key(hash.0),
                what: format!(
                    "transaction listed in ledger {seq} but its row says ledger {}",
                    row.ledger_sequence
                ),
            });
        }
        let (key, data) = tx_with_meta_item(&row.transaction, &row.metadata)
            .map_err(|e| ClioError::unusable(seq, format!("transaction {hash}: {e}")))?;
        if key.0 != hash.0 {
            problems.push(Problem {
                key: Key(hash.0),
                what: format!("transaction stored under this hash hashes to {key}"),
            });
        }
        if let Err(e) = map.insert(key, &data) {
            problems.push(Problem {
                key,
                what: format!("transaction cannot go into the map: {e}"),
            });
        }
    }
    Ok((map.root_hash(), hashes.len()))
}
