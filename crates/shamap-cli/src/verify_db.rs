//! `shamap verify --db DB [--root HEX | --ledger SEQ] [--ledger-db FILE]
//! [--json]`: audit a store, whatever its backend, through the store's one
//! audit ([`shamap_store::map::audit`]), which decides the backend and
//! builds the report; this module only prints it (text, or the JSON
//! written as it goes) and sets the exit status: 0 whole, 2 on any damage
//! (after the report, with a last line on stderr).
//!
//! - A node log is read whole (every batch's checksums and sequence
//!   number, every record), past any damage, which is listed by byte
//!   offset; then every retained root (or the one given) is rehashed.
//! - rippled's NuDB store: every record decoded and hashed, the key file
//!   matched to the data file, every ledger (from `ledger.db`, else the
//!   headers found) walked with the verified fetch's node checks.
//! - Any other store: every retained root (or the one given) rehashed.
//!
//! Reached through `verify` (files) when `--db` is given, so that the
//! command keeps one name for both kinds of verification.

use std::path::Path;

use shamap_store::map::audit::{audit, AuditOptions, Only};
use shamap_store::map::authenticate::Verdict;

use crate::anchor::AnchorArgs;

use crate::input::parse_root;
use crate::output::{print_text_status_kept, report, Exit, Failure};

/// Runs `verify --db`.
pub fn run(
    db: &Path,
    root: Option<&str>,
    seq: Option<u32>,
    ledger_db: Option<&Path>,
    memory_mb: Option<u64>,
    anchor: &AnchorArgs,
    as_json: bool,
) -> Result<Exit, Failure> {
    let anchor = anchor.resolve()?;
    let only = match (parse_root(root)?, seq) {
        (Some(h), _) => Some(Only::Hash(h)),
        (None, Some(s)) => Some(Only::Seq(s)),
        (None, None) => None,
    };
    let opts = AuditOptions {
        only,
        threads: 0,
        memory: memory_mb.map(|m| m << 20),
        ledger_db: ledger_db.map(Path::to_owned),
        anchor: anchor.as_ref().map(|a| a.hash),
    };
    let bar = byte_progress("reading");
    let progress = |n: u64| bar.set_position(n);
    let result = audit(db, &opts, &progress)?;
    bar.finish_and_clear();
    if as_json {
        let mut out = std::io::LineWriter::new(std::io::stdout().lock());
        match result.write_json(&mut out) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => report(&Failure::unusable(format!("cannot write output: {e}"))),
        }
    } else {
        print_text_status_kept(&result.to_text());
    }
    if !result.is_whole() {
        return Err(Failure::unusable(result.summary()));
    }
    if let Some(a) = &anchor {
        if !result.all_authenticated() {
            let (forged, not) =
                result
                    .roots
                    .iter()
                    .fold((0, 0), |(f, n), r| match result.verdict(&r.root) {
                        Some(Verdict::Forged { .. }) => (f + 1, n),
                        Some(Verdict::Authenticated { .. }) => (f, n),
                        _ => (f, n + 1),
                    });
            return Err(Failure::negative(format!(
                "{}: {forged} forged and {not} not authenticated of {} ledgers, from the anchor {} ({})",
                result.db,
                result.roots.len(),
                a.hash,
                a.source
            )));
        }
    }
    Ok(Exit::Done)
}

/// A progress line in bytes (hidden when stderr is not a terminal).
fn byte_progress(what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{spinner}} {what} {{bytes}} ({{bytes_per_sec}})"
    )) {
        bar.set_style(style);
    }
    bar
}
