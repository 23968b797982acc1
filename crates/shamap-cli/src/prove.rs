//! `shamap prove`: build a map from a ledger dump and write the proof path
//! of one key (rippled's `getProofPath`: wire blobs, leaf first, root last).
//!
//! Output, on stdout, is always JSON (`--json` is accepted for symmetry with
//! the other subcommands and changes nothing): the proof file, whose fields
//! [`crate::proof_file`] documents.
//!
//! `shamap check-proof --root ROOT --key KEY FILE` verifies the output.
//!
//! Exit status: 0 when the proof was written; 1 when the key is absent and
//! `--absent-ok` was not given (nothing is written); 2 on unreadable input,
//! a map that cannot be built, entries that do not hash to the root the
//! file claims (a proof against an unclaimed root would prove nothing), or
//! a proof that would have to carry a leaf under rippled's minimum of 12
//! bytes of data (`check-proof` rejects every such proof; the dump readers
//! accept such leaves, and hashing them is fine).

use std::path::PathBuf;

use shamap::verify::{verify_path, ProofError};
use shamap::xrpl::wire::{WireError, MIN_LEAF_DATA};
use shamap::Key;

use crate::input::read_ledger;
use crate::maps::{build_map, BuiltMap, KindArg};
use crate::output::{print_text, Exit, Failure};
use crate::proof_file::render_proof;

/// Arguments of `shamap prove`.
#[derive(Debug, clap::Args)]
pub struct ProveArgs {
    /// A rippled/Clio `ledger` response (binary, expanded) or a
    /// `ledger_data` page without a marker (one with a marker is refused:
    /// the ledger continues past it); `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The key to prove, 64 hex digits (a transaction ID with --kind tx).
    #[arg(value_name = "KEY")]
    pub key: Key,
    /// Write a proof of absence when the key is not in the map (exit 0)
    /// instead of failing with status 1.
    #[arg(long)]
    pub absent_ok: bool,
    /// Accepted for symmetry: the output is always JSON.
    #[arg(long)]
    pub json: bool,
    /// Which map to build.
    #[arg(long, default_value = "state", value_parser = KindArg::header_maps())]
    pub kind: KindArg,
}

/// Runs `shamap prove`.
pub fn run(args: &ProveArgs) -> Result<Exit, Failure> {
    let input = read_ledger(&args.file)?;
    let BuiltMap {
        mut map,
        claimed_root,
    } = build_map(&input, args.kind)?;
    let root = map.root_hash();
    if let Some(claimed) = claimed_root.filter(|c| *c != root) {
        let field = args.kind.root_field().unwrap_or_default();
        return Err(Failure::unusable(format!(
            "{}: the entries hash to {root}, not the {field} {claimed} the file claims",
            input.name
        )));
    }
    let proof = map.proof_path(&args.key);
    if !proof.included && !args.absent_ok {
        let map_name = match args.kind {
            KindArg::State => "state map",
            KindArg::Tx | KindArg::Txset => "transaction map",
        };
        return Err(Failure::negative(format!(
            "{}: key {} is not in the {map_name} (--absent-ok writes a proof of absence)",
            input.name, args.key
        )));
    }
    // A map holds leaves that no proof can carry (data under rippled's
    // minimum): check the proof as `check-proof` will, through the one
    // verifier, rather than write an unusable one.
    match verify_path(&root, &args.key, &proof.nodes) {
        Ok(_) => {}
        Err(ProofError::Malformed {
            error: WireError::ShortLeaf(len),
            ..
        }) => {
            let whose = if proof.included {
                format!("key {}", args.key)
            } else {
                format!("the leaf where the proof of absence of {} ends", args.key)
            };
            return Err(Failure::unusable(format!(
                "{}: {whose} holds {len} bytes of data, below rippled's minimum of {MIN_LEAF_DATA}: no valid proof can carry that leaf",
                input.name
            )));
        }
        Err(e) => {
            return Err(Failure::unusable(format!(
                "{}: internal error: the proof of {} does not verify: {e} (please report this bug)",
                input.name, args.key
            )))
        }
    }
    print_text(&render_proof(&proof))?;
    Ok(Exit::Done)
}
