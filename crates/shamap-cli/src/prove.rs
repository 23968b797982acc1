//! `shamap prove`: build a map from a ledger dump and write the proof path
//! of one key (rippled's `getProofPath`: wire blobs, leaf first, root last).
//!
//! Output, on stdout, is always JSON (`--json` is accepted for symmetry with
//! the other subcommands and changes nothing):
//!
//! ```json
//! {"kind": "state", "key": "02CE…", "root": "2C23…", "included": true,
//!  "nodes": ["…leaf…", "…", "…root…"]}
//! ```
//!
//! | field | meaning |
//! |---|---|
//! | `kind` | `state` (account-state map) or `tx` (transaction+metadata map) |
//! | `key` | the key proven, upper-case hex (a transaction ID for `tx`) |
//! | `root` | the map's root hash the proof leads to (`account_hash` / `transaction_hash`) |
//! | `included` | whether the map holds the key |
//! | `nodes` | wire blobs in hex, leaf (or last node) first, root last |
//!
//! `shamap check-proof --root ROOT --key KEY FILE` verifies the output.
//!
//! Exit status: 0 when the proof was written; 1 when the key is absent and
//! `--absent-ok` was not given (nothing is written); 2 on unreadable input,
//! a map that cannot be built, or entries that do not hash to the root the
//! file claims (a proof against an unclaimed root would prove nothing).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use shamap::hash::encode_hex_upper;
use shamap::xrpl::tx_with_meta_item;
use shamap::{Hash256, Key, MapError, MapKind, ProofPath, ShaMap};

use crate::verify::{read_input, Input};

/// Which of a ledger's maps to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MapChoice {
    /// The account-state map (keys are ledger-entry indexes).
    State,
    /// The transaction+metadata map (keys are transaction IDs).
    Tx,
}

impl MapChoice {
    /// The engine's map kind.
    pub fn kind(self) -> MapKind {
        match self {
            MapChoice::State => MapKind::AccountState,
            MapChoice::Tx => MapKind::TransactionWithMeta,
        }
    }
}

/// Arguments of `shamap prove`.
#[derive(Debug, clap::Args)]
pub struct ProveArgs {
    /// A rippled/Clio `ledger` response (binary, expanded) or a
    /// `ledger_data` page; `-` reads standard input.
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
    #[arg(long, value_enum, default_value = "state")]
    pub kind: MapChoice,
}

/// A ledger's map built from a dump.
pub struct BuiltMap {
    /// The map.
    pub map: ShaMap,
    /// The root the file claims for it (`account_hash` or
    /// `transaction_hash`), if any.
    pub claimed_root: Option<Hash256>,
}

/// Builds the chosen map from one parsed file. The error is one line that
/// starts with the file's name.
pub fn build_map(input: &Input, choice: MapChoice) -> Result<BuiltMap, String> {
    let name = &input.name;
    let d = &input.dump;
    let mut map = ShaMap::new(choice.kind());
    let duplicate = |what: &str, err: MapError, i: usize| match err {
        MapError::KeyExists(k) => format!("{name}: duplicate {what} {k} at entry {i}"),
        other => format!("{name}: {what} entry {i}: {other}"),
    };
    let claimed_root = match choice {
        MapChoice::State => {
            let entries = d
                .state
                .as_deref()
                .ok_or_else(|| format!("{name}: no state list to build the state map from"))?;
            for (i, e) in entries.iter().enumerate() {
                map.insert(e.key, &e.data)
                    .map_err(|err| duplicate("state key", err, i))?;
            }
            d.header.account_hash
        }
        MapChoice::Tx => {
            let txs = d.transactions.as_deref().ok_or_else(|| {
                format!("{name}: no transaction list to build the transaction map from")
            })?;
            for (i, t) in txs.iter().enumerate() {
                let (key, data) = tx_with_meta_item(&t.tx, &t.meta)
                    .map_err(|err| format!("{name}: transactions entry {i}: {err}"))?;
                map.insert(key, &data)
                    .map_err(|err| duplicate("transaction", err, i))?;
            }
            d.header.transaction_hash
        }
    };
    Ok(BuiltMap { map, claimed_root })
}

/// The proof JSON (fields in the module docs, in that order; serde_json's
/// map would sort them).
pub fn render_proof(proof: &ProofPath) -> String {
    let nodes: Vec<String> = proof
        .nodes
        .iter()
        .map(|n| format!("    \"{}\"", encode_hex_upper(n)))
        .collect();
    let nodes = if nodes.is_empty() {
        "[]".to_owned()
    } else {
        format!("[\n{}\n  ]", nodes.join(",\n"))
    };
    format!(
        "{{\n  \"kind\": \"{}\",\n  \"key\": \"{}\",\n  \"root\": \"{}\",\n  \"included\": {},\n  \"nodes\": {nodes}\n}}\n",
        proof.kind.name(),
        proof.key,
        proof.root,
        proof.included,
    )
}

/// Runs `shamap prove` and returns its exit status.
pub fn run(args: &ProveArgs) -> ExitCode {
    let input = match read_input(&args.file) {
        Ok(i) => i,
        Err(e) => return fail(2, &e.to_string()),
    };
    let BuiltMap {
        mut map,
        claimed_root,
    } = match build_map(&input, args.kind) {
        Ok(b) => b,
        Err(e) => return fail(2, &e),
    };
    let root = map.root_hash();
    if let Some(claimed) = claimed_root.filter(|c| *c != root) {
        let field = match args.kind {
            MapChoice::State => "account_hash",
            MapChoice::Tx => "transaction_hash",
        };
        return fail(
            2,
            &format!(
                "{}: the entries hash to {root}, not the {field} {claimed} the file claims",
                input.name
            ),
        );
    }
    let proof = map.proof_path(&args.key);
    if !proof.included && !args.absent_ok {
        let map_name = match args.kind {
            MapChoice::State => "state map",
            MapChoice::Tx => "transaction map",
        };
        return fail(
            1,
            &format!(
                "{}: key {} is not in the {map_name} (--absent-ok writes a proof of absence)",
                input.name, args.key
            ),
        );
    }
    print_text(&render_proof(&proof))
}

/// Writes `value` as pretty JSON on stdout: status 0, or 2 when stdout
/// fails (a reader that stopped early is not reported).
pub fn print_json(value: &serde_json::Value) -> ExitCode {
    let mut s = serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot render JSON: {e}\"}}"));
    s.push('\n');
    print_text(&s)
}

/// Writes `text` on stdout: status 0, or 2 when stdout fails (a reader that
/// stopped early is not reported).
pub fn print_text(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(2, &format!("cannot write output: {e}")),
    }
}

/// Prints `error: <what>` (one line) on stderr and returns `status`.
pub fn fail(status: u8, what: &str) -> ExitCode {
    // A closed stderr leaves nowhere to report to.
    let _ = writeln!(io::stderr(), "error: {}", what.replace('\n', " "));
    ExitCode::from(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shamap_ledger::dump;

    const LEDGER_38129: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/ledger-38129.json"
    ));

    fn input() -> Input {
        Input {
            name: "l.json".to_owned(),
            dump: dump::parse(LEDGER_38129).expect("shipped data parses"),
        }
    }

    #[test]
    fn both_maps_of_38129_match_their_claimed_roots() {
        for choice in [MapChoice::State, MapChoice::Tx] {
            let mut b = build_map(&input(), choice).expect("builds");
            assert_eq!(Some(b.map.root_hash()), b.claimed_root);
        }
    }

    #[test]
    fn missing_lists_and_duplicates_are_one_line_errors() {
        let mut i = input();
        i.dump.transactions = None;
        let e = build_map(&i, MapChoice::Tx).err().expect("no list");
        assert_eq!(
            e,
            "l.json: no transaction list to build the transaction map from"
        );
        let mut i = input();
        let state = i.dump.state.as_mut().expect("state");
        let first = state[0].clone();
        state.push(first.clone());
        let e = build_map(&i, MapChoice::State).err().expect("duplicate");
        assert_eq!(
            e,
            format!("l.json: duplicate state key {} at entry 261", first.key)
        );
    }

    #[test]
    fn proof_json_has_the_documented_fields_in_order() {
        let mut b = build_map(&input(), MapChoice::State).expect("builds");
        let key = *b.map.first().expect("non-empty").0;
        let text = render_proof(&b.map.proof_path(&key));
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["kind"], "state");
        assert_eq!(v["key"], key.to_hex());
        assert_eq!(v["root"], b.map.root_hash().to_hex());
        assert_eq!(v["included"], true);
        assert!(v["nodes"].as_array().expect("array").len() >= 2);
        let at = |f: &str| text.find(f).expect("field present");
        assert!(at("\"kind\"") < at("\"key\"") && at("\"key\"") < at("\"root\""));
        assert!(at("\"root\"") < at("\"included\"") && at("\"included\"") < at("\"nodes\""));
        // An empty map's proof has no nodes.
        let mut empty = ShaMap::new(MapKind::AccountState);
        let v: serde_json::Value =
            serde_json::from_str(&render_proof(&empty.proof_path(&key))).expect("valid JSON");
        assert_eq!(v["nodes"], serde_json::json!([]));
        assert_eq!(v["included"], false);
    }
}
