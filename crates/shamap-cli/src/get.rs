//! `shamap get --db DB [--root HEX | --ledger SEQ] [--kind state|tx]
//! [--cache-mb N] KEY...`: items' data, in hex (one line per key), read
//! through a backed map: a walk from the root with each node loaded once,
//! verified, and kept in the node cache. A ledger hash (or `--ledger`)
//! reads its state map, or with `--kind tx` its transaction map (a
//! transaction's data is `VL(tx_blob) ‖ VL(meta)`, under its ID).

use shamap::Key;

use crate::input::{open_backed, open_to_read, parse_hash, MapArgs};
use crate::output::{print_text_status_kept, Exit, Failure};

/// Arguments of `shamap get`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// The store, the map and the memory budget.
    #[command(flatten)]
    pub map: MapArgs,
    /// The keys (64 hex digits each).
    #[arg(value_name = "KEY", required = true)]
    pub keys: Vec<String>,
}

/// Runs `shamap get`: exit 0 with the data's hex, 1 when a key is absent
/// (after printing the data of those before it).
pub fn run(args: &GetArgs) -> Result<Exit, Failure> {
    let keys = args
        .keys
        .iter()
        .map(|k| parse_hash("key", k).map(Key::from))
        .collect::<Result<Vec<Key>, Failure>>()?;
    let store = open_to_read(&args.map.db)?;
    let map = open_backed(&store, &args.map.at, args.map.cache_mb)?;
    let root = map.committed_root();
    let mut out = String::new();
    for key in &keys {
        match map.get(key)? {
            Some(data) => {
                out.push_str(&shamap::hash::encode_hex_upper(&data));
                out.push('\n');
            }
            None => {
                print_text_status_kept(&out);
                return Err(Failure::negative(format!("key {key} is not in map {root}")));
            }
        }
    }
    print_text_status_kept(&out);
    Ok(Exit::Done)
}
