//! `shamap get --db DIR [--root HEX] KEY`: one item's data, in hex, read
//! from the store by walking from the root (each node verified).

use std::path::PathBuf;
use std::process::ExitCode;

use shamap::Key;
use shamap_store::StoredMap;

use crate::store_common::{finish, map_root, open_existing, parse_hash, Failure};

/// Arguments of `shamap get`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// The store directory.
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// A ledger hash (reads its state map) or a map root; default: the
    /// newest imported root.
    #[arg(long, value_name = "HEX")]
    pub root: Option<String>,
    /// The key (64 hex digits).
    #[arg(value_name = "KEY")]
    pub key: String,
}

/// Runs `shamap get`: exit 0 with the data's hex, 1 when the key is absent.
pub fn run(args: &GetArgs) -> ExitCode {
    finish(get(args))
}

fn get(args: &GetArgs) -> Result<(), Failure> {
    let key = Key::from(parse_hash("key", &args.key)?);
    let root = args
        .root
        .as_deref()
        .map(|r| parse_hash("root", r))
        .transpose()?;
    let store = open_existing(&args.db)?;
    let (root, kind) = map_root(&store, root)?;
    let map = StoredMap::open(&store, root, kind)?;
    match map.get(&key)? {
        Some(data) => {
            crate::prove::print_text(&format!("{}\n", shamap::hash::encode_hex_upper(&data)));
            Ok(())
        }
        None => Err(Failure::negative(format!("key {key} is not in map {root}"))),
    }
}
