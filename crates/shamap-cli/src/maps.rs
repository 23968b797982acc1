//! A ledger's maps built from its dump (`--kind`, the argument that picks
//! one, is [`KindArg`] of the input module).
//!
//! [`state_map`] and [`tx_map`] (from [`shamap_ledger::verify`]) build the
//! two maps a ledger header names and return the position of the first
//! entry that cannot go in; each subcommand words that error its own way. [`build_map`] is the map of
//! one file that `prove` and `diff` read, with the root the file claims.

use shamap::{Hash256, MapError, ShaMap};
pub use shamap_ledger::verify::{state_map, tx_map, TxItemError};

use crate::input::{Input, KindArg};
use crate::output::Failure;

/// A ledger's map built from a dump.
pub struct BuiltMap {
    /// The map.
    pub map: ShaMap,
    /// The root the file claims for it (`account_hash` or
    /// `transaction_hash`), if any.
    pub claimed_root: Option<Hash256>,
}

/// Builds the chosen map (`state` or `tx`) from one parsed file. The error
/// is one line that starts with the file's name.
pub fn build_map(input: &Input, kind: KindArg) -> Result<BuiltMap, Failure> {
    let name = &input.name;
    let d = &input.dump;
    let duplicate = |what: &str, err: MapError, i: usize| {
        Failure::unusable(match err {
            MapError::KeyExists(k) => format!("{name}: duplicate {what} {k} at entry {i}"),
            other => format!("{name}: {what} entry {i}: {other}"),
        })
    };
    let (map, claimed_root) = match kind {
        KindArg::State => {
            let entries = d.state.as_deref().ok_or_else(|| {
                Failure::unusable(format!("{name}: no state list to build the state map from"))
            })?;
            let map = state_map(entries).map_err(|(i, err)| duplicate("state key", err, i))?;
            (map, d.header.account_hash)
        }
        KindArg::Tx => {
            let txs = d.transactions.as_deref().ok_or_else(|| {
                Failure::unusable(format!(
                    "{name}: no transaction list to build the transaction map from"
                ))
            })?;
            let map = tx_map(txs).map_err(|(i, err)| match err {
                TxItemError::Vl(err) => {
                    Failure::unusable(format!("{name}: transactions entry {i}: {err}"))
                }
                TxItemError::Map(err) => duplicate("transaction", err, i),
            })?;
            (map, d.header.transaction_hash)
        }
        KindArg::Txset => {
            return Err(Failure::unusable(format!(
                "{name}: only the state and tx maps are built from a ledger file"
            )))
        }
    };
    Ok(BuiltMap { map, claimed_root })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::fixtures::ledger_38129;

    #[test]
    fn both_maps_of_38129_match_their_claimed_roots() {
        for kind in [KindArg::State, KindArg::Tx] {
            let mut b = build_map(&ledger_38129("l.json"), kind).expect("builds");
            assert_eq!(Some(b.map.root_hash()), b.claimed_root);
        }
    }

    #[test]
    fn missing_lists_and_duplicates_are_one_line_errors() {
        let mut i = ledger_38129("l.json");
        i.dump.transactions = None;
        let e = build_map(&i, KindArg::Tx).err().expect("no list");
        assert_eq!(
            e.line,
            "l.json: no transaction list to build the transaction map from"
        );
        let mut i = ledger_38129("l.json");
        let state = i.dump.state.as_mut().expect("state");
        let first = state[0].clone();
        state.push(first.clone());
        let e = build_map(&i, KindArg::State).err().expect("duplicate");
        assert_eq!(
            e.line,
            format!("l.json: duplicate state key {} at entry 261", first.key)
        );
    }

    #[test]
    fn header_maps_refuse_txset() {
        let cmd = clap::Command::new("t").arg(
            clap::Arg::new("kind")
                .long("kind")
                .value_parser(KindArg::header_maps()),
        );
        let kind = |v: &str| {
            cmd.clone()
                .try_get_matches_from(["t", "--kind", v])
                .map(|m| m.get_one::<KindArg>("kind").copied())
        };
        assert_eq!(kind("tx").ok().flatten(), Some(KindArg::Tx));
        assert_eq!(kind("state").ok().flatten(), Some(KindArg::State));
        assert!(kind("txset").is_err());
    }
}
