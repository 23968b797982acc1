//! `shamap verify`: rebuild a real ledger's maps from rippled/Clio JSON and
//! check the hashes the JSON claims.
//!
//! Steps, each a pure function tested: [`input::read_ledgers_each`] parses
//! each file with [`shamap_ledger::dump::parse`] and makes one [`Group`] per
//! ledger (each `ledger` response alone; `ledger_data` pages of the same
//! ledger merged; a ledger whose pages all end with a marker is refused,
//! as its state is incomplete); [`check`] builds the AccountState map from
//! the state entries and the TransactionWithMeta map from the transactions,
//! and
//! hashes the header with the computed roots where there are some and the
//! header's own values otherwise; [`render_text`] / [`render_json`] print.
//!
//! Text output, per ledger: a heading naming the ledger and its files, then
//! one line per value:
//!
//! ```text
//! ledger 38129 from data/ledger-38129.json (261 state entries, 1 transaction)
//! account_hash 2C23…B452 match
//! transaction_hash DB83…951A MISMATCH expected 0000…0000
//! ledger_hash E6DB…758E (no expected value)
//! ```
//!
//! or `account_hash not computed (no state entries)`,
//! `transaction_hash not computed (no transaction list)`,
//! `ledger_hash not computed (missing header fields: close_time, …)`.
//!
//! A file that cannot be used (unreadable, malformed, a page of a ledger
//! whose last page is missing, a duplicate key) is one `error: <file>: …`
//! line on stderr; the other files' ledgers are still checked and printed.
//!
//! Exit status, the worst over all files (2 over 1 over 0): 2 when some
//! file could not be used; 1 when some value differs from its expected
//! value, or when nothing could be checked (no computed value had an
//! expected value in the input: then one `error:` line says so); 0 when at
//! least one value was checked and all matched.
//!
//! `--json` prints one object instead, always (also when no file could be
//! used: then `ledgers` is empty and every error is under `errors`):
//!
//! ```json
//! {"ok": true, "checked": 3, "mismatches": 0, "errors": [],
//!  "ledgers": [{"sources": ["data/ledger-38129.json"], "ledger_index": 38129,
//!               "state_entries": 261, "transactions": 1, "incomplete": false,
//!               "account_hash": {"computed": "2C23…", "expected": "2C23…", "status": "match"},
//!               "transaction_hash": {…}, "ledger_hash": {…}}]}
//! ```
//!
//! | field | meaning |
//! |---|---|
//! | `ok` | the exit status is 0: something was checked, everything checked matched, and every file could be used |
//! | `checked` | values that had both a computed and an expected hash |
//! | `mismatches` | of those, how many differ |
//! | `errors` | the `error:` lines (without the prefix) of the files that could not be used, also printed on stderr |
//! | `sources` | the files merged into this ledger (`<stdin>` for `-`) |
//! | `ledger_index` | the ledger's sequence number, or `null` when the input has none |
//! | `state_entries`, `transactions` | entries read, or `null` when the input has no such list |
//! | `incomplete` | always `false`, kept for compatibility: a ledger whose last page is missing is now refused (an error) |
//! | `computed`, `expected` | upper-case hex, or `null` |
//! | `status` | `match`, `mismatch`, `no_expected` or `not_computed` |
//! | `reason` | only with `not_computed`: why |

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{json, Value};
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key};
use shamap_ledger::verify::{LedgerReport, Outcome, Status, Summary};
use shamap_store::map::audit::plural;
use shamap_store::map::authenticate::{authenticate, LedgerSource, Verdict};

use crate::input::{self, Group};
use crate::output::{print_json, print_text, report, Exit, Failure};

/// Arguments of `shamap verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// JSON files: rippled or Clio `ledger` responses (with "accounts"
    /// and/or "transactions"; binary (`binary: true`) or decoded JSON
    /// (`expand: true` without `binary`), or both mixed) or `ledger_data`
    /// pages (binary or decoded). `-` reads standard input.
    #[arg(
        value_name = "FILE",
        required_unless_present = "db",
        conflicts_with = "db"
    )]
    pub files: Vec<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "DB", help = crate::input::db_help(
        "Audit a node store instead of files: a node log is first read whole, past any damage, \
         which is listed by byte offset (a rippled NuDB store: every record decoded and hashed); \
         then everything reachable from --root or --ledger (default: every retained root or \
         ledger) is rehashed and each reported whole or damaged, with its first bad node. Exit 0 \
         when all is whole, 2 (after the report) on any damage. The store"))]
    pub db: Option<PathBuf>,
    /// With --db: the ledger hash or map root to verify.
    #[arg(long, value_name = "HEX", requires = "db", conflicts_with = "ledger")]
    pub root: Option<String>,
    /// With --db: the ledger with this sequence number, as the store lists
    /// it (rippled's ledger.db, or the retained ledgers).
    #[arg(long, value_name = "SEQ", requires = "db")]
    pub ledger: Option<u32>,
    /// With --db on rippled's NuDB store: rippled's ledger.db (SQLite),
    /// which lists the ledgers by sequence (default: a ledger.db in the
    /// store's directory or the one above it).
    #[arg(long, value_name = "FILE", requires = "db")]
    pub ledger_db: Option<PathBuf>,
    /// With --db on rippled's NuDB store: the memory the audit's record index and caches may
    /// hold, in MiB (default 200; at least 16). Less memory, more reads:
    /// never a different verdict.
    #[arg(long, value_name = "MIB", requires = "db", value_parser = clap::value_parser!(u64).range(16..=1 << 20))]
    pub memory_mb: Option<u64>,
    #[command(flatten)]
    pub anchor: crate::anchor::AnchorArgs,
}

/// Builds the maps of one ledger and compares their roots, and the ledger
/// hash, with the values the input claims
/// ([`LedgerReport::check`]), naming the file of an entry that cannot go
/// into its map.
pub fn check(group: &Group) -> Result<LedgerReport, Failure> {
    LedgerReport::check(group).map_err(input::unusable)
}

/// The text report (see the module docs).
pub fn render_text(reports: &[LedgerReport]) -> String {
    let mut out = String::new();
    for (i, r) in reports.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let state = match r.state_entries {
            Some(n) => plural(n, "state entry", "state entries"),
            None => "no state list".to_owned(),
        };
        let txs = match r.transactions {
            Some(n) => plural(n, "transaction", "transactions"),
            None => "no transaction list".to_owned(),
        };
        out.push_str(&format!(
            "{} from {} ({state}, {txs})\n",
            r.header.ledger_name(),
            r.sources.join(", ")
        ));
        for (name, c) in r.values() {
            let line = match (c.status(), c.computed, c.expected) {
                (Status::Match, Some(v), _) => format!("{name} {v} match"),
                (Status::Mismatch, Some(v), Some(e)) => format!("{name} {v} MISMATCH expected {e}"),
                (Status::NoExpected, Some(v), _) => format!("{name} {v} (no expected value)"),
                _ => format!(
                    "{name} not computed ({})",
                    c.reason.as_deref().unwrap_or("no input")
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The JSON report (field names in the module docs), with the files that
/// could not be used.
pub fn render_json(reports: &[LedgerReport], errors: &[Failure]) -> Value {
    let summary = Summary::of(reports);
    let ledgers: Vec<Value> = reports.iter().map(LedgerReport::to_json).collect();
    let error_lines: Vec<&str> = errors.iter().map(|f| f.line.as_str()).collect();
    json!({
        "ok": errors.is_empty() && summary.outcome == Outcome::Verified,
        "checked": summary.checked,
        "mismatches": summary.mismatches,
        "errors": error_lines,
        "ledgers": ledgers,
    })
}

/// Runs `shamap verify` of files (`--db` is [`crate::verify_db`]'s): the
/// reports of the ledgers that could be checked on stdout, one `error:`
/// line per file that could not be used on stderr, and the worst status.
pub fn run(args: &VerifyArgs) -> Result<Exit, Failure> {
    let anchor = args.anchor.resolve()?;
    let (mut reports, mut errors) = (Vec::new(), Vec::new());
    let mut held = DumpLedgers::default();
    for g in input::read_ledgers_each(&args.files) {
        match g.and_then(|g| check(&g).map(|r| (g, r))) {
            Ok((g, report)) => {
                if anchor.is_some() {
                    held.keep(&g, &report);
                }
                reports.push(report)
            }
            Err(f) => errors.push(f),
        }
    }
    let verdicts = anchor.as_ref().map(|a| {
        let found: Vec<(Option<u32>, Hash256)> = reports
            .iter()
            .filter_map(|r| r.ledger_hash.computed.map(|h| (r.header.ledger_index, h)))
            .collect();
        authenticate(&held, &a.hash, &found)
    });
    // `--json` always prints its object, with the unusable files under
    // `errors` even when no ledger could be checked.
    if args.json {
        let mut v = render_json(&reports, &errors);
        if let (Some(a), Some(list)) = (&verdicts, v["ledgers"].as_array_mut()) {
            for (entry, r) in list.iter_mut().zip(&reports) {
                let verdict = r.ledger_hash.computed.and_then(|h| a.verdicts.get(&h));
                entry["authenticated"] =
                    Value::Bool(verdict.is_some_and(Verdict::is_authenticated));
                entry["authentication"] = Value::String(verdict.map_or_else(
                    || "not authenticated: the ledger hash could not be computed".to_owned(),
                    Verdict::describe,
                ));
            }
            v["notes"] = json!(a.notes);
        }
        print_json(&v)?;
    } else if !reports.is_empty() {
        let mut text = render_text(&reports);
        if let (Some(a), Some(anchor)) = (&verdicts, &anchor) {
            text.push_str(&format!("\nanchor {} ({})\n", anchor.hash, anchor.source));
            for n in &a.notes {
                text.push_str(&format!("note: {n}\n"));
            }
            for r in &reports {
                let name = r
                    .header
                    .ledger_index
                    .map_or_else(|| "?".to_owned(), |s| s.to_string());
                let line = match r
                    .ledger_hash
                    .computed
                    .and_then(|h| a.verdicts.get(&h).map(|v| (h, v)))
                {
                    Some((h, v)) => format!("ledger {name} {h} {}\n", v.describe()),
                    None => format!(
                        "ledger {name}: not authenticated: its hash could not be computed\n"
                    ),
                };
                text.push_str(&line);
            }
        }
        print_text(&text)?;
    }
    if let Some((last, others)) = errors.split_last() {
        others.iter().for_each(report);
        return Err(last.clone());
    }
    if let Some(a) = &verdicts {
        let not = reports
            .iter()
            .filter(|r| {
                !r.ledger_hash
                    .computed
                    .and_then(|h| a.verdicts.get(&h))
                    .is_some_and(Verdict::is_authenticated)
            })
            .count();
        if not > 0 && Summary::of(&reports).outcome == Outcome::Verified {
            return Err(Failure::negative(format!(
                "{not} of {} ledgers not authenticated from the anchor",
                reports.len()
            )));
        }
    }
    match Summary::of(&reports).outcome {
        Outcome::Verified => Ok(Exit::Done),
        Outcome::Mismatch => Ok(Exit::Negative),
        Outcome::NothingChecked => Err(Failure::negative(
            "nothing checked: no computed hash has an expected value in the input",
        )),
    }
}

/// The ledgers of dumps as a source for the anchor walk: each ledger whose
/// hash could be computed, and the skip lists (`LedgerHashes` entries) of
/// those whose state map matched their header.
#[derive(Default)]
struct DumpLedgers {
    headers: HashMap<Hash256, LedgerHeader>,
    skip_lists: HashMap<Hash256, HashMap<Key, Vec<u8>>>,
}

impl DumpLedgers {
    fn keep(&mut self, g: &Group, report: &LedgerReport) {
        let Some(header) = g.dump.header.complete_header() else {
            return;
        };
        let hash = header.hash();
        if report.ledger_hash.computed != Some(hash) {
            return;
        }
        self.headers.insert(hash, header);
        if report.account_hash.computed == Some(header.account_hash) {
            let lists: HashMap<Key, Vec<u8>> = g
                .dump
                .state
                .iter()
                .flatten()
                .filter(|e| e.data.len() >= 3 && e.data[0] == 0x11 && e.data[1..3] == [0x00, 0x68])
                .map(|e| (e.key, e.data.clone()))
                .collect();
            self.skip_lists.insert(hash, lists);
        }
    }
}

impl LedgerSource for DumpLedgers {
    fn header(&self, hash: &Hash256) -> Result<Option<LedgerHeader>, String> {
        Ok(self.headers.get(hash).copied())
    }

    fn state_item(&self, header: &LedgerHeader, key: &Key) -> Result<Option<Vec<u8>>, String> {
        match self.skip_lists.get(&header.hash()) {
            Some(lists) => Ok(lists.get(key).cloned()),
            None => Err("its dump has no state map that matches its header".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::fixtures::{ledger_38129, page, KEY1, KEY2};
    use crate::input::group;
    use shamap::Hash256;
    use shamap_ledger::verify::Checked;

    const ACCOUNT_38129: &str = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
    const TX_38129: &str = "DB83BF807416C5B3499A73130F843CF615AB8E797D79FE7D330ADF1BFA93951A";
    const LEDGER_HASH_38129: &str =
        "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E";

    fn hash(hex: &str) -> Hash256 {
        Hash256::from_hex(hex).expect("test hex")
    }

    fn report_38129() -> LedgerReport {
        let groups = group(vec![ledger_38129("l.json")]).expect("one ledger");
        check(&groups[0]).expect("checks")
    }

    #[test]
    fn duplicate_keys_are_located_in_their_file() {
        let groups =
            group(vec![page("a", 9, &[KEY1, KEY2]), page("b", 9, &[KEY2])]).expect("groups");
        let e = check(&groups[0]).expect_err("duplicate");
        assert_eq!(
            e.to_string(),
            format!("b: duplicate state key {KEY2} at entry 0")
        );
    }

    #[test]
    fn ledger_38129_matches_all_three_values() {
        let r = report_38129();
        assert_eq!(
            r.account_hash,
            Checked::computed(hash(ACCOUNT_38129), Some(hash(ACCOUNT_38129)))
        );
        assert_eq!(r.transaction_hash.computed, Some(hash(TX_38129)));
        assert_eq!(r.ledger_hash.computed, Some(hash(LEDGER_HASH_38129)));
        assert_eq!(
            Summary::of(std::slice::from_ref(&r)).outcome,
            Outcome::Verified
        );
        let text = render_text(&[r]);
        assert_eq!(
            text,
            format!(
                "ledger 38129 from l.json (261 state entries, 1 transaction)\n\
                 account_hash {ACCOUNT_38129} match\n\
                 transaction_hash {TX_38129} match\n\
                 ledger_hash {LEDGER_HASH_38129} match\n"
            )
        );
    }

    #[test]
    fn ledger_hash_uses_computed_roots() {
        let mut r = report_38129();
        // A wrong claimed account_hash does not change the computed ledger hash.
        let mut g = group(vec![ledger_38129("l")]).expect("groups");
        g[0].dump.header.account_hash = Some(Hash256([7; 32]));
        let changed = check(&g[0]).expect("checks");
        assert_eq!(changed.account_hash.status(), Status::Mismatch);
        assert_eq!(changed.ledger_hash.status(), Status::Match);
        r.account_hash = changed.account_hash;
        assert_eq!(Summary::of(&[r]).outcome, Outcome::Mismatch);
    }

    #[test]
    fn missing_lists_and_fields_are_not_computed() {
        let g = group(vec![crate::input::fixtures::input(
            "a",
            r#"{"ledger_index": 9, "transactions": []}"#,
        )])
        .expect("groups");
        let r = check(&g[0]).expect("checks");
        assert_eq!(r.account_hash.reason.as_deref(), Some("no state entries"));
        assert_eq!(r.transaction_hash.computed, Some(Hash256::ZERO));
        assert_eq!(r.transaction_hash.status(), Status::NoExpected);
        assert_eq!(
            r.ledger_hash.reason.as_deref(),
            Some(
                "missing header fields: total_coins, parent_hash, account_hash, parent_close_time, \
                 close_time, close_time_resolution, close_flags"
            )
        );
        assert_eq!(
            Summary::of(std::slice::from_ref(&r)).outcome,
            Outcome::NothingChecked
        );
        let text = render_text(&[r]);
        assert!(
            text.contains("\naccount_hash not computed (no state entries)\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "\ntransaction_hash {} (no expected value)\n",
                Hash256::ZERO
            )),
            "{text}"
        );
    }

    #[test]
    fn json_report_has_documented_fields() {
        let mut r = report_38129();
        r.transaction_hash.expected = Some(Hash256::ZERO);
        let v = render_json(&[r], &[]);
        assert_eq!(v["ok"], false);
        assert_eq!(v["checked"], 3);
        assert_eq!(v["mismatches"], 1);
        let l = &v["ledgers"][0];
        assert_eq!(l["sources"][0], "l.json");
        assert_eq!(l["ledger_index"], 38129);
        assert_eq!(l["state_entries"], 261);
        assert_eq!(l["account_hash"]["status"], "match");
        assert_eq!(l["account_hash"]["computed"], ACCOUNT_38129);
        assert_eq!(l["transaction_hash"]["status"], "mismatch");
        assert!(l["transaction_hash"].get("reason").is_none());
    }

    #[test]
    fn mismatch_line_shows_both_values() {
        let mut r = report_38129();
        r.account_hash.expected = Some(Hash256::ZERO);
        let text = render_text(&[r]);
        assert!(text.contains(&format!(
            "\naccount_hash {ACCOUNT_38129} MISMATCH expected {}\n",
            Hash256::ZERO
        )));
    }
}
