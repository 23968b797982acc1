//! What a verification run reports, in words and in JSON: one ledger's
//! text ([`render_text`]), the one line saying why it did not match
//! ([`summary`]), the final audit's text ([`render_audit`]), and the
//! `--json` document ([`JsonReport`]), serialized through `serde_json`
//! while the run goes: its `ledgers` array is pulled from the run a
//! ledger at a time, so a long run holds no report of its ledgers in
//! memory.

use std::cell::RefCell;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};
use shamap_ledger::verify::Checked;
use shamap_store::map::audit::plural;

use crate::verify::{AuditFinding, LedgerCheck, Pair};

fn status_word(p: &Pair) -> String {
    if p.0 == p.1 {
        format!("{} match", p.0)
    } else {
        format!("{} MISMATCH expected {}", p.0, p.1)
    }
}

/// Keys listed on one line, at most `max`.
fn key_list(keys: &[impl std::fmt::Display], max: usize) -> String {
    let mut s: Vec<String> = keys.iter().take(max).map(|k| k.to_string()).collect();
    if keys.len() > max {
        s.push(format!("… and {} more", keys.len() - max));
    }
    s.join(" ")
}

/// One ledger's text report.
pub fn render_text(c: &LedgerCheck) -> String {
    let what = if c.full_build {
        format!(
            "full build: {}, {}",
            plural(c.state_entries, "state entry", "state entries"),
            plural(c.transactions as u64, "transaction", "transactions")
        )
    } else {
        format!(
            "{}, {}, {}",
            plural(c.diff_keys.len() as u64, "diff key", "diff keys"),
            plural(c.state_entries, "state entry", "state entries"),
            plural(c.transactions as u64, "transaction", "transactions")
        )
    };
    let mut out = format!("ledger {} ({what})\n", c.seq);
    out.push_str(&format!("account_hash {}\n", status_word(&c.account_hash)));
    out.push_str(&format!(
        "transaction_hash {}\n",
        status_word(&c.transaction_hash)
    ));
    out.push_str(&format!("ledger_hash {}\n", status_word(&c.ledger_hash)));
    if let Some(p) = c.parent_hash.filter(|p| p.0 != p.1) {
        out.push_str(&format!("parent_hash {}\n", status_word(&p)));
    }
    for p in &c.problems {
        out.push_str(&format!("key {}: {}\n", p.key, p.what));
    }
    if c.account_hash.0 != c.account_hash.1 && !c.full_build {
        out.push_str(&format!(
            "diff keys at ledger {}: {}\n",
            c.seq,
            if c.diff_keys.is_empty() {
                "none".to_owned()
            } else {
                key_list(&c.diff_keys, 64)
            }
        ));
    }
    out
}

/// The one line saying why a ledger did not match: its first problem by
/// key, else the first value that differs.
pub fn summary(c: &LedgerCheck) -> String {
    let n = c.seq;
    if let Some(p) = c.problems.first() {
        let more = match c.problems.len() {
            1 => String::new(),
            k => format!(" (and {} more)", k - 1),
        };
        return format!("ledger {n}: key {}: {}{more}", p.key, p.what);
    }
    if c.account_hash.0 != c.account_hash.1 {
        if c.full_build {
            return format!(
                "ledger {n}: account_hash {} MISMATCH expected {} (state built whole from the successor list: {})",
                c.account_hash.0,
                c.account_hash.1,
                plural(c.state_entries, "entry", "entries")
            );
        }
        return format!(
            "ledger {n}: account_hash {} MISMATCH expected {}; the ledger's diff keys: {}",
            c.account_hash.0,
            c.account_hash.1,
            if c.diff_keys.is_empty() {
                "none".to_owned()
            } else {
                key_list(&c.diff_keys, 8)
            }
        );
    }
    if c.transaction_hash.0 != c.transaction_hash.1 {
        return format!(
            "ledger {n}: transaction_hash {} MISMATCH expected {}",
            c.transaction_hash.0, c.transaction_hash.1
        );
    }
    if c.ledger_hash.0 != c.ledger_hash.1 {
        return format!(
            "ledger {n}: the stored ledger hash {} is not the hash of the header's fields {}",
            c.ledger_hash.1, c.ledger_hash.0
        );
    }
    if let Some(p) = c.parent_hash.filter(|p| p.0 != p.1) {
        return format!(
            "ledger {n}: parent_hash {} is not ledger {}'s hash {}",
            p.0,
            n.saturating_sub(1),
            p.1
        );
    }
    format!("ledger {n}: does not match")
}

/// A computed value and the expected one, as `verify --json` writes them
/// (the one home of that shape: [`Checked::to_json`]).
fn checked(p: &Pair) -> Value {
    Checked::computed(p.0, Some(p.1)).to_json()
}

/// One ledger as JSON.
pub fn ledger_json(c: &LedgerCheck) -> Value {
    json!({
        "ledger_index": c.seq,
        "full_build": c.full_build,
        "state_entries": c.state_entries,
        "diff_keys": c.diff_keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
        "transactions": c.transactions,
        "account_hash": checked(&c.account_hash),
        "transaction_hash": checked(&c.transaction_hash),
        "ledger_hash": checked(&c.ledger_hash),
        "parent_hash": c.parent_hash.as_ref().map(checked),
        "problems": c.problems.iter().map(|p| json!({"key": p.key.to_string(), "what": p.what})).collect::<Vec<_>>(),
    })
}

/// The final audit's text: one line, and one per finding.
pub fn render_audit(seq: u32, entries: u64, found: &[AuditFinding]) -> String {
    let mut out = format!(
        "audit of the state at ledger {seq}: {} re-read, {}\n",
        plural(entries, "live key", "live keys"),
        if found.is_empty() {
            "all match".to_owned()
        } else {
            plural(found.len() as u64, "finding", "findings")
        }
    );
    for f in found {
        out.push_str(&format!("ledger {} key {}: {}\n", f.seq, f.key, f.what));
    }
    out
}

/// The final audit as JSON.
pub fn audit_json(seq: u32, found: &[AuditFinding]) -> Value {
    json!({
        "ledger_index": seq,
        "findings": found.iter().map(|f| json!({
            "ledger_index": f.seq,
            "key": f.key.to_string(),
            "what": f.what,
        })).collect::<Vec<_>>(),
    })
}

/// The `--json` document of a run: `ledgers`, pulled from `next` (one
/// checked ledger a call, `None` at the end) while `serde_json` writes
/// them, then `checked` and `mismatches` (counted on the way) and the
/// fields `rest` returns once the ledgers are done (in its order).
pub struct JsonReport<N, R> {
    next: RefCell<N>,
    rest: RefCell<Option<R>>,
    counts: RefCell<(usize, usize)>,
}

impl<N, R> JsonReport<N, R>
where
    N: FnMut() -> Option<LedgerCheck>,
    R: FnOnce() -> Vec<(&'static str, Value)>,
{
    /// A document whose ledgers come from `next` and whose other fields
    /// come from `rest`.
    pub fn new(next: N, rest: R) -> JsonReport<N, R> {
        JsonReport {
            next: RefCell::new(next),
            rest: RefCell::new(Some(rest)),
            counts: RefCell::new((0, 0)),
        }
    }
}

/// The `ledgers` array of a [`JsonReport`], pulled as it is written.
struct Ledgers<'a, N, R>(&'a JsonReport<N, R>);

impl<N, R> Serialize for Ledgers<'_, N, R>
where
    N: FnMut() -> Option<LedgerCheck>,
    R: FnOnce() -> Vec<(&'static str, Value)>,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        loop {
            let next = (self.0.next.borrow_mut())();
            let Some(c) = next else { break };
            let mut counts = self.0.counts.borrow_mut();
            for p in [&c.account_hash, &c.transaction_hash, &c.ledger_hash]
                .into_iter()
                .chain(c.parent_hash.as_ref())
            {
                counts.0 += 1;
                counts.1 += usize::from(p.0 != p.1);
            }
            drop(counts);
            seq.serialize_element(&ledger_json(&c))?;
        }
        seq.end()
    }
}

impl<N, R> Serialize for JsonReport<N, R>
where
    N: FnMut() -> Option<LedgerCheck>,
    R: FnOnce() -> Vec<(&'static str, Value)>,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("ledgers", &Ledgers(self))?;
        let (checked, mismatches) = *self.counts.borrow();
        map.serialize_entry("checked", &checked)?;
        map.serialize_entry("mismatches", &mismatches)?;
        if let Some(rest) = self.rest.borrow_mut().take() {
            for (k, v) in rest() {
                map.serialize_entry(k, &v)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shamap::{Hash256, Key};

    use crate::verify::Problem;

    fn check(seq: u32, good: bool) -> LedgerCheck {
        let h = Hash256([seq as u8; 32]);
        let other = Hash256([0xEE; 32]);
        LedgerCheck {
            seq,
            full_build: seq == 1,
            state_entries: 3,
            diff_keys: vec![Key([1; 32])],
            transactions: 1,
            account_hash: (h, if good { h } else { other }),
            transaction_hash: (h, h),
            ledger_hash: (h, h),
            parent_hash: None,
            problems: if good {
                vec![]
            } else {
                vec![Problem {
                    key: Key([2; 32]),
                    what: "x".into(),
                }]
            },
        }
    }

    /// The document is one JSON object: the ledgers in order, the counts
    /// of the values they compared, and the fields given after them.
    #[test]
    fn the_json_report_streams_the_ledgers_and_counts_them() {
        let mut left = vec![check(1, true), check(2, false)].into_iter();
        let report = JsonReport::new(move || left.next(), || vec![("ok", json!(false))]);
        let text = serde_json::to_string_pretty(&report).expect("serializes");
        let v: Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(v["ledgers"].as_array().map(Vec::len), Some(2));
        assert_eq!(v["ledgers"][1]["ledger_index"], 2);
        assert_eq!(v["checked"], 6);
        assert_eq!(v["mismatches"], 1);
        assert_eq!(v["ok"], false);
        assert!(summary(&check(2, false)).starts_with("ledger 2: key "));
        assert!(render_text(&check(1, true)).contains("account_hash"));
    }
}
