//! `shamap xpop verify FILE... --vl-key KEY [--json]` and `shamap xpop make`:
//! XLS-41 proofs that a transaction was in a ledger the network validated
//! ([`shamap_auth::xpop`] decides; this module reads files and prints).
//!
//! `verify` prints one line per file: `FILE: valid: ledger N HASH,
//! transaction ID RESULT (V of L validators, quorum Q)` or `FILE: invalid:
//! REASON`; with `--json`, one JSON object per line instead. A file that
//! cannot be read or is not JSON is an error line on stderr. Exit status,
//! the worst over all files: 0 every file valid, 1 any invalid, 2 any
//! unreadable.
//!
//! `make` builds an XPOP for `--tx TXID` of a ledger read from a dump FILE
//! (binary or decoded) or from a store (`--db`, with `--ledger SEQ` or
//! `--root LEDGERHASH`; every node read is verified), with validations from
//! `--validations DIR|FILE...` and the list `--vl FILE` (or a `vl.json`
//! among the validations). Every part is checked before anything is
//! written: the ledger's transactions against its header, the list against
//! `--vl-key` (else against the key it names itself, said on stderr), the
//! validations' quorum on the ledger's hash; then the XPOP is verified
//! whole. `--out FILE` is written whole or not at all. Exit status: 0
//! written; 1 when the transaction is not in the ledger or the validations
//! reach no quorum on it (no file); 2 on unusable input.

use std::path::{Path, PathBuf};

use serde_json::Value;
use shamap::xrpl::tx::split_tx_with_meta;
use shamap::xrpl::LedgerHeader;
use shamap::MapKind;
use shamap_auth::validation::read_validations;
use shamap_auth::xpop::{make, verify, XpopSource};
use shamap_auth::{AuthError, ProofForm, PublicKey};
use shamap_store::map::ledger;
use shamap_store::StoredMap;

use crate::input::{given_root, open_to_read, parse_hash, read_file, read_ledger};
use crate::output::{print_text, report, write_file_streamed, Exit, Failure};

/// Arguments of `shamap xpop`.
#[derive(Debug, clap::Args)]
pub struct XpopArgs {
    #[command(subcommand)]
    pub command: XpopCommand,
}

/// The `xpop` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum XpopCommand {
    /// Verify XPOPs against a trusted validator-list publisher key.
    /// Exit status: 0 every file valid, 1 any invalid, 2 any unreadable.
    Verify(VerifyArgs),
    /// Make an XPOP of one transaction from a ledger dump or a store.
    /// Exit status: 0 written, 1 no quorum or no such transaction, 2 bad input.
    Make(MakeArgs),
}

/// Arguments of `shamap xpop verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// XPOP files (JSON); `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The list publisher's master key (66 hex digits, or `n…`).
    #[arg(long, value_name = "KEY")]
    pub vl_key: String,
    /// One JSON object per file instead of a text line.
    #[arg(long)]
    pub json: bool,
}

/// The proof form to write.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormArg {
    /// The path only (nested lists of 16 entries).
    List,
    /// The whole transaction map (nested objects).
    Tree,
}

/// Arguments of `shamap xpop make`.
#[derive(Debug, clap::Args)]
pub struct MakeArgs {
    /// A ledger dump (rippled's or Clio's `ledger` response with its
    /// transactions, binary or decoded). Or give --db.
    #[arg(
        value_name = "FILE",
        required_unless_present = "db",
        conflicts_with = "db"
    )]
    pub file: Option<PathBuf>,
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store to read the ledger from"))]
    pub db: Option<PathBuf>,
    /// With --db: the ledger with this sequence.
    #[arg(long, value_name = "SEQ", conflicts_with = "root")]
    pub ledger: Option<u32>,
    /// With --db: the ledger with this hash.
    #[arg(long, value_name = "LEDGERHASH")]
    pub root: Option<String>,
    /// The transaction to prove.
    #[arg(long, value_name = "TXID")]
    pub tx: String,
    /// Validations: files (stream messages, JSON arrays, one per line, raw
    /// hex) or directories of them (the collector's layout, with vl.json).
    #[arg(long, value_name = "DIR|FILE", num_args = 1.., required = true)]
    pub validations: Vec<PathBuf>,
    /// The validator list as the list site publishes it (else vl.json among the validations).
    #[arg(long, value_name = "FILE")]
    pub vl: Option<PathBuf>,
    /// The trusted publisher key to check the list against (else the key the list names, said on stderr).
    #[arg(long, value_name = "KEY")]
    pub vl_key: Option<String>,
    /// The proof form: `tree` (the whole transaction map, what xahaud's
    /// Import and most verifiers read) or `list` (the path only).
    #[arg(long, value_enum, default_value = "tree")]
    pub form: FormArg,
    /// Write to FILE (whole or not at all) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs `shamap xpop`.
pub fn run(args: &XpopArgs) -> Result<Exit, Failure> {
    match &args.command {
        XpopCommand::Verify(a) => run_verify(a),
        XpopCommand::Make(a) => run_make(a),
    }
}

fn parse_key(text: &str, what: &str) -> Result<PublicKey, Failure> {
    PublicKey::parse(text).map_err(|e| Failure::unusable(format!("{what}: {e}")))
}

fn run_verify(args: &VerifyArgs) -> Result<Exit, Failure> {
    let key = parse_key(&args.vl_key, "--vl-key")?;
    let mut worst = Exit::Done;
    for file in &args.files {
        let read = read_file(file).and_then(|(name, bytes)| {
            serde_json::from_slice::<Value>(&bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| Failure::unusable(format!("{name}: not JSON: {e}")))
        });
        let (name, xpop) = match read {
            Ok(x) => x,
            Err(f) => {
                report(&f);
                worst = Exit::Unusable;
                continue;
            }
        };
        let line = match verify(&xpop, &key) {
            Ok(r) => {
                if args.json {
                    let mut j = r.to_json();
                    j["file"] = Value::String(name);
                    j.to_string()
                } else {
                    format!(
                        "{name}: valid: ledger {} {}, transaction {} {} ({} of {} validators, quorum {})",
                        r.ledger_index,
                        r.ledger_hash,
                        r.tx_hash,
                        r.result,
                        r.votes,
                        r.validators,
                        r.quorum
                    )
                }
            }
            Err(e) => {
                if worst == Exit::Done {
                    worst = Exit::Negative;
                }
                if args.json {
                    serde_json::json!({"file": name, "valid": false, "reason": e.to_string()})
                        .to_string()
                } else {
                    format!("{name}: invalid: {e}")
                }
            }
        };
        print_text(&format!("{line}\n"))?;
    }
    Ok(worst)
}

/// The ledger an XPOP is made from: its header and every transaction.
struct SourceLedger {
    name: String,
    header: LedgerHeader,
    transactions: Vec<(Vec<u8>, Vec<u8>)>,
}

fn ledger_from_dump(file: &Path) -> Result<SourceLedger, Failure> {
    let input = read_ledger(file)?;
    let header = input.dump.header.complete_header().ok_or_else(|| {
        Failure::unusable(format!(
            "{}: the ledger header is incomplete (an XPOP needs every header field)",
            input.name
        ))
    })?;
    if let Some(claimed) = input.dump.header.ledger_hash {
        if claimed != header.hash() {
            return Err(Failure::unusable(format!(
                "{}: the header fields hash to {}, not to the ledger_hash {claimed} the file claims",
                input.name,
                header.hash()
            )));
        }
    }
    let transactions = input
        .dump
        .transactions
        .ok_or_else(|| Failure::unusable(format!("{}: the dump has no transactions", input.name)))?
        .into_iter()
        .map(|t| (t.tx, t.meta))
        .collect();
    Ok(SourceLedger {
        name: input.name,
        header,
        transactions,
    })
}

fn ledger_from_store(db: &Path, args: &MakeArgs) -> Result<SourceLedger, Failure> {
    let store = open_to_read(db)?;
    let hash = given_root(&*store, args.root.as_deref(), args.ledger)?
        .ok_or_else(|| Failure::unusable("with --db, give --ledger SEQ or --root LEDGERHASH"))?;
    let header = ledger::header(&*store, &hash)?.ok_or_else(|| {
        Failure::unusable(format!(
            "{}: {hash} is not a stored ledger header",
            store.location()
        ))
    })?;
    let map = StoredMap::open(
        &*store,
        header.transaction_hash,
        MapKind::TransactionWithMeta,
    )?;
    let mut transactions = Vec::new();
    for item in map.iter() {
        let (key, data) = item?;
        let (tx, meta) = split_tx_with_meta(&data).map_err(|e| {
            Failure::unusable(format!(
                "ledger {hash}: transaction {key}: its leaf is not VL(tx) ‖ VL(meta): {e}"
            ))
        })?;
        transactions.push((tx.to_vec(), meta.to_vec()));
    }
    Ok(SourceLedger {
        name: format!("ledger {} in {}", header.seq, store.location()),
        header,
        transactions,
    })
}

fn run_make(args: &MakeArgs) -> Result<Exit, Failure> {
    let tx_hash = parse_hash("--tx", &args.tx)?;
    let source = match (&args.file, &args.db) {
        (Some(f), None) => {
            if args.ledger.is_some() || args.root.is_some() {
                return Err(Failure::unusable(
                    "--ledger and --root choose a ledger of --db; a FILE is one ledger",
                ));
            }
            ledger_from_dump(f)?
        }
        (None, Some(db)) => ledger_from_store(db, args).map_err(|f| f.about_store(db))?,
        _ => return Err(Failure::unusable("give a ledger dump FILE or --db")),
    };
    let set = read_validations(&args.validations).map_err(|e| Failure::unusable(e.to_string()))?;
    let vl: Value = match &args.vl {
        Some(path) => {
            let (name, bytes) = read_file(path)?;
            serde_json::from_slice(&bytes)
                .map_err(|e| Failure::unusable(format!("{name}: not JSON: {e}")))?
        }
        None => set.vl.clone().ok_or_else(|| {
            Failure::unusable(
                "no validator list: give --vl FILE or put vl.json among the validations",
            )
        })?,
    };
    let vl_key = match &args.vl_key {
        Some(k) => parse_key(k, "--vl-key")?,
        None => {
            let named = vl
                .get("public_key")
                .and_then(Value::as_str)
                .ok_or_else(|| Failure::unusable("the validator list names no public_key"))?;
            let key = parse_key(named, "the list's public_key")?;
            eprintln!(
                "note: no --vl-key: the list is checked against the key it names itself, {}",
                key.to_hex()
            );
            key
        }
    };
    let form = match args.form {
        FormArg::List => ProofForm::List,
        FormArg::Tree => ProofForm::Tree,
    };
    let made = make(&XpopSource {
        header: source.header,
        transactions: &source.transactions,
        tx_hash,
        validations: &set.validations,
        vl: &vl,
        vl_key,
        form,
    });
    let (xpop, report) = match made {
        Ok(x) => x,
        Err(e @ AuthError::Invalid(_)) => {
            return Err(Failure::negative(format!("{}: {e}", source.name)))
        }
        Err(e) => return Err(Failure::unusable(format!("{}: {e}", source.name))),
    };
    let mut text =
        serde_json::to_string_pretty(&xpop).map_err(|e| Failure::unusable(e.to_string()))?;
    text.push('\n');
    match &args.out {
        Some(out) if out.as_os_str() != "-" => {
            write_file_streamed(out, args.db.as_deref(), &mut |w| {
                w.write_all(text.as_bytes())
                    .map_err(|e| Failure::unusable(format!("{}: cannot write: {e}", out.display())))
            })?;
            eprintln!(
                "{}: XPOP of transaction {} in ledger {} {} ({} of {} validators, {} form)",
                out.display(),
                report.tx_hash,
                report.ledger_index,
                report.ledger_hash,
                report.votes,
                report.validators,
                form.name()
            );
        }
        _ => print_text(&text)?,
    }
    Ok(Exit::Done)
}
