//! Repairing the rows of named ledgers of a Clio keyspace from a verified
//! node store (`shamap clio repair`): each ledger is read and verified as
//! [`super::load`] reads it, the rows Clio's ETL would have written for it
//! are computed, and the keyspace's rows of that ledger in every core table
//! (and its `account_tx` rows, by account) are compared with them: a wrong
//! row is rewritten, a missing one written, an extra one deleted.
//!
//! A ledger's rows are found by key where the tables are keyed by ledger
//! (`ledgers`, `diff`, `ledger_transactions`) or by what the ledger names
//! (`ledger_hashes` by its hash, `transactions` by its transactions' and
//! the listed ones' hashes, `account_tx` by the affected accounts); the
//! `objects` and `successor` rows of the ledgers repaired are found by a
//! scan of each table (every row read, kept when its sequence is one of
//! them: no filtering on the server), which also finds an object row
//! written without its `diff` row.

use std::collections::{BTreeMap, BTreeSet};

use scylla::value::CqlValue;
use shamap::{Hash256, Key};
use shamap_store::NodeStore;

use super::source::{Source, SourceLedger};
use super::writer::ClioWriter;
use super::LoadOptions;
use crate::rows::{big, blob};
use crate::{key_of, ClioError, ClioHeader, Conn};

/// One row changed (or, with `dry_run`, to change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowChange {
    /// The ledger.
    pub seq: u32,
    /// The table, without prefix.
    pub table: &'static str,
    /// The row's key, as text.
    pub key: String,
    /// What was wrong: `missing`, `wrong`, `extra`.
    pub what: &'static str,
}

/// What a repair did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// `cassandra://HOST:PORT/KEYSPACE`.
    pub location: String,
    /// The ledgers checked.
    pub ledgers: (u32, u32),
    /// Every row changed (or to change), in ledger order.
    pub changes: Vec<RowChange>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

type Object = (Key, Vec<u8>);

/// Repairs ledgers `from..=to` (all within `ledger_range`) of the keyspace
/// `url` names from `store`; with `dry_run`, only says what it would
/// change.
pub fn repair(
    store: &dyn NodeStore,
    url: &str,
    opts: &LoadOptions,
    from: u32,
    to: Option<u32>,
    dry_run: bool,
) -> Result<RepairReport, ClioError> {
    let conn = Conn::connect(url, opts.table_prefix.as_deref())?;
    if !conn.keyspace_exists()? {
        return Err(ClioError::Database {
            location: conn.location.clone(),
            what: format!("keyspace '{}' does not exist", conn.keyspace()),
        });
    }
    conn.check_tables()?;
    let w = ClioWriter::new(conn)?;
    let Some((first, last)) = w.range()? else {
        return Err(ClioError::Database {
            location: w.location().to_owned(),
            what: "table ledger_range is empty: no ledgers to repair".to_owned(),
        });
    };
    let to = to.unwrap_or(last);
    if from < first || to > last || from > to {
        return Err(ClioError::Database {
            location: w.location().to_owned(),
            what: format!("ledgers {from}..{to} are not all within ledger_range {first}..{last}"),
        });
    }
    let mut report = RepairReport {
        location: w.location().to_owned(),
        ledgers: (from, to),
        changes: Vec::new(),
    };
    let mut source = Source::new(store)?;
    if from > first {
        source.start_after(from - 1)?;
    }
    let c = &w.conn;
    let t = |n: &str| c.table(n);
    // The objects and successor rows of the ledgers repaired, by ledger.
    let by_ledger = |cql: String| -> Result<BTreeMap<u32, BTreeMap<Key, Vec<u8>>>, ClioError> {
        let mut out: BTreeMap<u32, BTreeMap<Key, Vec<u8>>> = BTreeMap::new();
        for (k, s, v) in c.select::<_, (Vec<u8>, i64, Option<Vec<u8>>)>(&cql, ())? {
            if let (true, Some(k)) = (s >= i64::from(from) && s <= i64::from(to), key_of(&k)) {
                out.entry(s as u32)
                    .or_default()
                    .insert(k, v.unwrap_or_default());
            }
        }
        Ok(out)
    };
    let mut objects = by_ledger(format!(
        "SELECT key, sequence, object FROM {}",
        t("objects")
    ))?;
    let mut successors = by_ledger(format!("SELECT key, seq, next FROM {}", t("successor")))?;
    for seq in from..=to {
        let l = source.read(seq)?;
        let full = seq == first;
        let mut want_objects: Vec<Object> = Vec::new();
        if full {
            source.each_object(&l.header, &mut |k, d| {
                want_objects.push((*k, d.to_vec()));
                Ok(())
            })?;
        } else {
            want_objects = l.changes.clone();
        }
        let mut changes = Vec::new();
        let mut fix: Vec<(String, Vec<CqlValue>)> = Vec::new();
        compare_ledger(
            &w,
            &source,
            &l,
            full,
            &want_objects,
            objects.remove(&seq).unwrap_or_default(),
            successors.remove(&seq).unwrap_or_default(),
            &mut changes,
            &mut fix,
        )?;
        if !dry_run {
            for (cql, values) in fix {
                c.runtime
                    .block_on(c.session.query_unpaged(cql.clone(), values))
                    .map_err(|e| c.fail(&format!("cannot run '{cql}'"), e))?;
            }
        }
        report.changes.extend(changes);
    }
    Ok(report)
}

/// Compares ledger `l`'s rows in the keyspace with the ones it should
/// have; each difference to `changes`, each statement that mends it to
/// `fix`.
#[allow(clippy::too_many_arguments)]
fn compare_ledger(
    w: &ClioWriter,
    source: &Source<'_>,
    l: &SourceLedger,
    full: bool,
    want_objects: &[Object],
    have_objects: BTreeMap<Key, Vec<u8>>,
    have_successors: BTreeMap<Key, Vec<u8>>,
    changes: &mut Vec<RowChange>,
    fix: &mut Vec<(String, Vec<CqlValue>)>,
) -> Result<(), ClioError> {
    let c = &w.conn;
    let t = |n: &str| c.table(n);
    let seq = l.header.seq;
    let mut change = |table: &'static str, key: String, what: &'static str| {
        changes.push(RowChange {
            seq,
            table,
            key,
            what,
        })
    };
    // ledgers and ledger_hashes.
    let blob_want = ClioHeader::blob(&l.header, &l.hash);
    let have: Vec<(Option<Vec<u8>>,)> = c.select(
        &format!("SELECT header FROM {} WHERE sequence = ?", t("ledgers")),
        (i64::from(seq),),
    )?;
    match have.first().and_then(|(h,)| h.as_ref()) {
        Some(h) if *h == blob_want => {}
        h => {
            change(
                "ledgers",
                seq.to_string(),
                if h.is_some() { "wrong" } else { "missing" },
            );
            fix.push((
                format!(
                    "INSERT INTO {} (sequence, header) VALUES (?, ?)",
                    t("ledgers")
                ),
                vec![big(seq), blob(&blob_want)],
            ));
        }
    }
    let have: Vec<(Option<i64>,)> = c.select(
        &format!("SELECT sequence FROM {} WHERE hash = ?", t("ledger_hashes")),
        (&l.hash.0[..],),
    )?;
    match have.first().map(|(s,)| *s) {
        Some(Some(s)) if s == i64::from(seq) => {}
        h => {
            change(
                "ledger_hashes",
                l.hash.to_string(),
                if h.is_some() { "wrong" } else { "missing" },
            );
            fix.push((
                format!(
                    "INSERT INTO {} (hash, sequence) VALUES (?, ?)",
                    t("ledger_hashes")
                ),
                vec![blob(&l.hash.0), big(seq)],
            ));
        }
    }
    // ledger_transactions and transactions.
    let want_txs: BTreeMap<Hash256, &super::SourceTx> =
        l.transactions.iter().map(|x| (x.id, x)).collect();
    let listed: BTreeSet<Vec<u8>> = c
        .select::<_, (Vec<u8>,)>(
            &format!(
                "SELECT hash FROM {} WHERE ledger_sequence = ?",
                t("ledger_transactions")
            ),
            (i64::from(seq),),
        )?
        .into_iter()
        .map(|(h,)| h)
        .collect();
    for h in &listed {
        if Hash256::from_slice(h).is_none_or(|h| !want_txs.contains_key(&h)) {
            change("ledger_transactions", hex(h), "extra");
            fix.push((
                format!(
                    "DELETE FROM {} WHERE ledger_sequence = ? AND hash = ?",
                    t("ledger_transactions")
                ),
                vec![big(seq), blob(h)],
            ));
            // Its transactions row, when it says this ledger.
            let rows: Vec<(Option<i64>,)> = c.select(
                &format!(
                    "SELECT ledger_sequence FROM {} WHERE hash = ?",
                    t("transactions")
                ),
                (&h[..],),
            )?;
            if rows.first().is_some_and(|(s,)| *s == Some(i64::from(seq))) {
                change("transactions", hex(h), "extra");
                fix.push((
                    format!("DELETE FROM {} WHERE hash = ?", t("transactions")),
                    vec![blob(h)],
                ));
            }
        }
    }
    for (id, x) in &want_txs {
        if !listed.contains(id.0.as_slice()) {
            change("ledger_transactions", id.to_string(), "missing");
            fix.push((
                format!(
                    "INSERT INTO {} (ledger_sequence, hash) VALUES (?, ?)",
                    t("ledger_transactions")
                ),
                vec![big(seq), blob(&id.0)],
            ));
        }
        type TxCols = (Option<i64>, Option<i64>, Option<Vec<u8>>, Option<Vec<u8>>);
        let rows: Vec<TxCols> = c.select(
            &format!(
                "SELECT ledger_sequence, date, transaction, metadata FROM {} WHERE hash = ?",
                t("transactions")
            ),
            (&id.0[..],),
        )?;
        let want = (
            Some(i64::from(seq)),
            Some(i64::from(l.header.close_time)),
            Some(x.tx.clone()),
            Some(x.meta.clone()),
        );
        if rows.first() != Some(&want) {
            change(
                "transactions",
                id.to_string(),
                if rows.is_empty() { "missing" } else { "wrong" },
            );
            fix.push((
                format!(
                    "INSERT INTO {} (hash, ledger_sequence, date, transaction, metadata) VALUES (?, ?, ?, ?, ?)",
                    t("transactions")
                ),
                vec![
                    blob(&id.0),
                    big(seq),
                    CqlValue::BigInt(i64::from(l.header.close_time)),
                    blob(&x.tx),
                    blob(&x.meta),
                ],
            ));
        }
        let accounts = if w.has_account_tx() {
            &x.accounts
        } else {
            &BTreeSet::new()
        };
        for a in accounts {
            let seq_idx = CqlValue::Tuple(vec![
                Some(big(seq)),
                Some(CqlValue::BigInt(i64::from(x.index))),
            ]);
            let rows: Vec<(Option<Vec<u8>>,)> = c.select(
                &format!(
                    "SELECT hash FROM {} WHERE account = ? AND seq_idx = ?",
                    t("account_tx")
                ),
                (&a[..], (i64::from(seq), i64::from(x.index))),
            )?;
            match rows.first() {
                Some((Some(h),)) if *h == id.0 => {}
                r => {
                    change(
                        "account_tx",
                        format!("{} {seq}/{}", hex(a), x.index),
                        if r.is_some() { "wrong" } else { "missing" },
                    );
                    fix.push((
                        format!(
                            "INSERT INTO {} (account, seq_idx, hash) VALUES (?, ?, ?)",
                            t("account_tx")
                        ),
                        vec![blob(a), seq_idx, blob(&id.0)],
                    ));
                }
            }
        }
    }
    // objects and diff.
    let want: BTreeMap<Key, &Vec<u8>> = want_objects.iter().map(|(k, v)| (*k, v)).collect();
    let diff: BTreeSet<Vec<u8>> = c
        .select::<_, (Vec<u8>,)>(
            &format!("SELECT key FROM {} WHERE seq = ?", t("diff")),
            (i64::from(seq),),
        )?
        .into_iter()
        .map(|(k,)| k)
        .collect();
    for (k, v) in &want {
        match have_objects.get(k) {
            Some(h) if h == *v => {}
            h => {
                change(
                    "objects",
                    k.to_string(),
                    if h.is_some() { "wrong" } else { "missing" },
                );
                fix.push((
                    format!(
                        "INSERT INTO {} (key, sequence, object) VALUES (?, ?, ?)",
                        t("objects")
                    ),
                    vec![blob(&k.0), big(seq), blob(v)],
                ));
            }
        }
        if !full && !diff.contains(k.0.as_slice()) {
            change("diff", k.to_string(), "missing");
            fix.push((
                format!("INSERT INTO {} (seq, key) VALUES (?, ?)", t("diff")),
                vec![big(seq), blob(&k.0)],
            ));
        }
    }
    for k in have_objects.keys().filter(|k| !want.contains_key(k)) {
        change("objects", k.to_string(), "extra");
        fix.push((
            format!(
                "DELETE FROM {} WHERE key = ? AND sequence = ?",
                t("objects")
            ),
            vec![blob(&k.0), big(seq)],
        ));
    }
    for k in &diff {
        if key_of(k).is_none_or(|k| full || !want.contains_key(&k)) {
            change("diff", hex(k), "extra");
            fix.push((
                format!("DELETE FROM {} WHERE seq = ? AND key = ?", t("diff")),
                vec![big(seq), blob(k)],
            ));
        }
    }
    // successor.
    let want: BTreeMap<Key, Key> = l.successors.iter().copied().collect();
    for (k, n) in &want {
        match have_successors.get(k) {
            Some(h) if *h == n.0 => {}
            h => {
                change(
                    "successor",
                    k.to_string(),
                    if h.is_some() { "wrong" } else { "missing" },
                );
                fix.push((
                    format!(
                        "INSERT INTO {} (key, seq, next) VALUES (?, ?, ?)",
                        t("successor")
                    ),
                    vec![blob(&k.0), big(seq), blob(&n.0)],
                ));
            }
        }
    }
    // A row the ledger did not need: harmless when it names the key's true
    // successor (or its key is not in the list: a book base Clio keeps, a
    // deleted key); otherwise it breaks the list, and is rewritten.
    for (k, n) in have_successors
        .iter()
        .filter(|(k, _)| !want.contains_key(k))
    {
        let next = if *k == crate::FIRST_KEY || source.is_live(k) {
            source.next_live(k)
        } else {
            continue;
        };
        if *n != next.0 {
            change("successor", k.to_string(), "wrong");
            fix.push((
                format!(
                    "INSERT INTO {} (key, seq, next) VALUES (?, ?, ?)",
                    t("successor")
                ),
                vec![blob(&k.0), big(seq), blob(&next.0)],
            ));
        }
    }
    Ok(())
}
