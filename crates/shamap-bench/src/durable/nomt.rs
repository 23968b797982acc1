//! nomt in the `durable` workload, with its default caches: every commit
//! returns after nomt's fsyncs (its shadow-paging sync), so it is as
//! durable as ours.

use std::path::Path;
use std::time::Instant;

use nomt::hasher::Blake3Hasher;
use nomt::{KeyReadWrite, Nomt, Options, SessionParams};

use super::ops::{self, Blocks, KeyBytes, Values, Write};
use super::{allocated_bytes, secs, timed_reads, Plan, Row};
use crate::args::Step;

fn err(e: impl std::fmt::Display) -> String {
    format!("nomt: {e}")
}

pub fn run(plan: &Plan, step: Step) -> Result<Row, String> {
    let dir = plan.engine_dir("nomt");
    match step {
        Step::Import => import(plan, &dir),
        Step::Commit => commit(plan, &dir),
        Step::Read => read(plan, &dir),
        Step::ReadWithWriter => Err("read_with_writer is not run on nomt".into()),
    }
}

fn open(plan: &Plan, dir: &Path) -> Result<Nomt<Blake3Hasher>, String> {
    let mut o = Options::new();
    o.path(dir.join("db"));
    o.commit_concurrency(1);
    o.bitbox_seed([7; 16]);
    // Room for the state: about one hash-table bucket (a 4 KiB page of the
    // trie) per two entries, as in the peer comparison; used at creation.
    let buckets = (plan.entries / 2).clamp(64_000, u64::from(u32::MAX) / 2);
    o.hashtable_buckets(buckets as u32);
    o.preallocate_ht(false);
    Nomt::open(o).map_err(err)
}

fn write(
    db: &Nomt<Blake3Hasher>,
    mut actuals: Vec<(KeyBytes, KeyReadWrite)>,
) -> Result<(), String> {
    actuals.sort_unstable_by_key(|a| a.0);
    let session = db.begin_session(SessionParams::default());
    let finished = session.finish(actuals).map_err(err)?;
    finished.commit(db).map_err(err)
}

fn import(plan: &Plan, dir: &Path) -> Result<Row, String> {
    let values = Values::new(plan.seed, plan.data_len);
    let keys = ops::import_keys(plan.seed, plan.entries);
    let t = Instant::now();
    let db = open(plan, dir)?;
    let actuals = keys
        .into_iter()
        .map(|(k, tag)| (k, KeyReadWrite::Write(Some(values.value(tag)))))
        .collect();
    write(&db, actuals)?;
    let seconds = secs(t.elapsed());
    drop(db);
    Ok(Row {
        ops: plan.entries,
        seconds,
        fsync: true,
        disk_bytes: Some(allocated_bytes(dir)),
        ..Row::default()
    })
}

fn commit(plan: &Plan, dir: &Path) -> Result<Row, String> {
    let db = open(plan, dir)?;
    let values = Values::new(plan.seed, plan.data_len);
    let mut blocks = Blocks::new(plan.seed, plan.entries);
    let mut elapsed = std::time::Duration::ZERO;
    for _ in 0..plan.blocks {
        let block = blocks.next_block(plan.block);
        let t = Instant::now();
        let actuals = block
            .iter()
            .map(|w| match *w {
                Write::Insert { index, tag } | Write::Update { index, tag } => (
                    ops::key(plan.seed, index),
                    KeyReadWrite::Write(Some(values.value(tag))),
                ),
                Write::Remove { index } => (ops::key(plan.seed, index), KeyReadWrite::Write(None)),
            })
            .collect();
        write(&db, actuals)?;
        elapsed += t.elapsed();
    }
    drop(db);
    Ok(Row {
        ops: (plan.blocks * plan.block) as u64,
        seconds: secs(elapsed),
        fsync: true,
        disk_bytes: Some(allocated_bytes(dir)),
        ..Row::default()
    })
}

fn read(plan: &Plan, dir: &Path) -> Result<Row, String> {
    let db = open(plan, dir)?;
    let mut blocks = Blocks::new(plan.seed, plan.entries);
    blocks.skip(plan.blocks, plan.block);
    let keys =
        |v: Vec<u64>| -> Vec<KeyBytes> { v.into_iter().map(|i| ops::key(plan.seed, i)).collect() };
    let warm = keys(blocks.present(plan.reads / 10));
    let timed = keys(blocks.present(plan.reads));
    let session = db.begin_session(SessionParams::default());
    let get = |k: &KeyBytes| match session.read(*k).map_err(err)? {
        Some(_) => Ok(()),
        None => Err(format!(
            "a key is missing: {}",
            k.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )),
    };
    timed_reads(&warm, &timed, get, "session reads")
}
