//! `shamap prove`: build a map from a ledger dump and write the proof path
//! of one key (rippled's `getProofPath`: wire blobs, leaf first, root last).
//!
//! Output, on stdout, is always JSON (`--json` is accepted for symmetry with
//! the other subcommands and changes nothing): the proof file, whose fields
//! [`crate::proof_file`] documents.
//!
//! `shamap check-proof --root ROOT --key KEY FILE` verifies the output.
//!
//! With `--db DIR --root HASH --key KEY` (or `--ledger SEQ` for `--root`) the
//! proof comes from a stored map instead (a node store: a node log or
//! fjall directory, or `cassandra://…`): the map `HASH` names (a ledger
//! hash: its state map, or with `--kind tx` its transaction map; a map root
//! the store knows), each node verified as it is read; the same JSON as
//! from a file. A state verified by `shamap clio verify --state`
//! answers for every ledger it verified by ledger hash, and for the last
//! one by account_hash.
//!
//! Exit status: 0 when the proof was written; 1 when the key is absent and
//! `--absent-ok` was not given (nothing is written); 2 on unreadable input,
//! a map that cannot be built, entries that do not hash to the root the
//! file claims (a proof against an unclaimed root would prove nothing), or
//! a proof that would have to carry a leaf under rippled's minimum of 12
//! bytes of data (`check-proof` rejects every such proof; the dump readers
//! accept such leaves, and hashing them is fine).

use std::path::{Path, PathBuf};

use shamap::verify::{verify_path, ProofError};
use shamap::xrpl::wire::{WireError, MIN_LEAF_DATA};
use shamap::{Key, MapKind, ProofPath};
use shamap_store::StoredMap;

use crate::input::KindArg;
use crate::input::{given_root, map_root, open_to_read, read_ledger};
use crate::maps::{build_map, BuiltMap};
use crate::output::{print_text, Exit, Failure};
use crate::proof_file::render_proof;

/// Arguments of `shamap prove`.
#[derive(Debug, clap::Args)]
pub struct ProveArgs {
    /// A rippled/Clio `ledger` response (binary or decoded JSON) or a
    /// `ledger_data` page without a marker (one with a marker is refused:
    /// the ledger continues past it); `-` reads standard input. Not with
    /// --db (whose key is --key).
    #[arg(
        value_name = "FILE",
        required_unless_present = "db",
        conflicts_with = "db"
    )]
    pub file: Option<PathBuf>,
    /// The key to prove, 64 hex digits (a transaction ID with --kind tx).
    #[arg(value_name = "KEY", required_unless_present = "db")]
    pub key: Option<Key>,
    #[arg(long, value_name = "DB", requires = "db_key", help = crate::input::db_help("Prove from a stored map instead of a file (with --root or --ledger, and --key)"))]
    pub db: Option<PathBuf>,
    /// With --db: the key to prove, 64 hex digits (a transaction ID with
    /// --kind tx).
    #[arg(long = "key", id = "db_key", value_name = "KEY", requires = "db")]
    pub db_key: Option<Key>,
    /// With --db: a ledger hash (its state map; with --kind tx, its
    /// transaction map) or a map root the store knows.
    #[arg(long, value_name = "HEX", requires = "db", conflicts_with = "ledger")]
    pub root: Option<String>,
    /// With --db: the ledger with this sequence number, as the store lists
    /// it (rippled's ledger.db, or the retained ledgers).
    #[arg(long, value_name = "SEQ", requires = "db")]
    pub ledger: Option<u32>,
    /// Write a proof of absence when the key is not in the map (exit 0)
    /// instead of failing with status 1.
    #[arg(long)]
    pub absent_ok: bool,
    /// Accepted for symmetry: the output is always JSON.
    #[arg(long)]
    pub json: bool,
    /// Which map: state (the default) or tx. With --db and a map root, the
    /// root's own kind by default.
    #[arg(long, value_parser = KindArg::header_maps())]
    pub kind: Option<KindArg>,
}

/// The proof from a ledger dump: the input's name, the key and the proof.
fn from_file(args: &ProveArgs, file: &Path, key: Key) -> Result<(String, ProofPath), Failure> {
    let kind = args.kind.unwrap_or(KindArg::State);
    let input = read_ledger(file)?;
    let BuiltMap {
        mut map,
        claimed_root,
    } = build_map(&input, kind)?;
    let root = map.root_hash();
    if let Some(claimed) = claimed_root.filter(|c| *c != root) {
        let field = kind.root_field().unwrap_or_default();
        return Err(Failure::unusable(format!(
            "{}: the entries hash to {root}, not the {field} {claimed} the file claims",
            input.name
        )));
    }
    Ok((input.name, map.proof_path(&key)))
}

/// The proof from a stored map: the store's name and the proof.
fn from_store(args: &ProveArgs, db: &Path, key: Key) -> Result<(String, ProofPath), Failure> {
    let store = open_to_read(db)?;
    let root = given_root(&*store, args.root.as_deref(), args.ledger)?
        .ok_or_else(|| Failure::unusable("with --db, give --root or --ledger"))?;
    let (root, kind) = map_root(&*store, Some(root), args.kind.map(KindArg::kind))?;
    let map = StoredMap::open(&*store, root, kind)?;
    Ok((store.location(), map.proof_path(&key)?))
}

/// Runs `shamap prove`.
pub fn run(args: &ProveArgs) -> Result<Exit, Failure> {
    let (name, proof) = match (&args.db, args.db_key, &args.file, args.key) {
        (Some(db), Some(key), None, None) => {
            from_store(args, db, key).map_err(|f| f.about_store(db))?
        }
        (None, None, Some(file), Some(key)) => from_file(args, file, key)?,
        _ => {
            return Err(Failure::unusable(
                "give FILE and KEY, or --db with --root or --ledger and --key",
            ))
        }
    };
    let key = proof.key;
    let root = proof.root;
    if !proof.included && !args.absent_ok {
        let map_name = match proof.kind {
            MapKind::AccountState => "state map",
            _ => "transaction map",
        };
        return Err(Failure::negative(format!(
            "{name}: key {key} is not in the {map_name} (--absent-ok writes a proof of absence)"
        )));
    }
    // A map holds leaves that no proof can carry (data under rippled's
    // minimum): check the proof as `check-proof` will, through the one
    // verifier, rather than write an unusable one.
    match verify_path(&root, &key, &proof.nodes) {
        Ok(_) => {}
        Err(ProofError::Malformed {
            error: WireError::ShortLeaf(len),
            ..
        }) => {
            let whose = if proof.included {
                format!("key {}", key)
            } else {
                format!("the leaf where the proof of absence of {} ends", key)
            };
            return Err(Failure::unusable(format!(
                "{}: {whose} holds {len} bytes of data, below rippled's minimum of {MIN_LEAF_DATA}: no valid proof can carry that leaf",
                name
            )));
        }
        Err(e) => {
            return Err(Failure::unusable(format!(
                "{}: internal error: the proof of {} does not verify: {e} (please report this bug)",
                name, key
            )))
        }
    }
    print_text(&render_proof(&proof))?;
    Ok(Exit::Done)
}
