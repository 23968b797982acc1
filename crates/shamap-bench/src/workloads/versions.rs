//! The `snapshot`, `session` and `diff` workloads: versions of one map.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{Key, MapKind, ShaMap};

use crate::args::Args;
use crate::report::{Report, Row};

use super::*;

pub(crate) fn snapshots(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &[Key],
    report: &mut Report,
) {
    map.root_hash();
    let before = map.mem_stats();
    let t = Instant::now();
    let snap = map.snapshot();
    let took = t.elapsed();
    let after = map.mem_stats();
    report.push(Row::new("snapshot: take one", 1, took).note(&format!(
        "{} bytes added",
        after.bytes.total as i64 - before.bytes.total as i64
    )));
    let data = random_data(rng, args.data_len);
    let k = 10_000usize.min(keys.len());
    let t = Instant::now();
    for i in 0..k {
        map.update(
            keys[rng.gen_range(0..keys.len())],
            &data[..(i % 2) + data.len() / 2],
        )
        .expect("present");
    }
    map.root_hash();
    let took = t.elapsed();
    let grown = map.mem_stats();
    let depth = map.shape_stats().mean_leaf_depth();
    let nodes = (grown.inner_nodes + grown.leaf_nodes) - (after.inner_nodes + after.leaf_nodes);
    report.push(
        Row::new(
            &format!("snapshot: {k} updates after it, + root"),
            k as u64,
            took,
        )
        .note(&format!(
            "{:.2} nodes copied per update (mean leaf depth {depth:.2}); {:.0} bytes per update",
            nodes as f64 / k as f64,
            (grown.bytes.total - after.bytes.total) as f64 / k as f64
        )),
    );
    drop(snap);
}

pub(crate) fn sessions(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &mut Vec<Key>,
    report: &mut Report,
) {
    let data = random_data(rng, args.data_len);
    let mut plain = Duration::ZERO;
    let mut with = Duration::ZERO;
    let mut plain_nohash = Duration::ZERO;
    let mut with_nohash = Duration::ZERO;
    let pool = one_thread();
    let rounds = 6;
    for round in 0..rounds {
        // Alternate the order so drift favours neither side.
        for session in [round % 2 == 0, round % 2 == 1] {
            let t = Instant::now();
            if session {
                map.begin_session();
            }
            let block = gen_block(rng, keys, args.block);
            write_block(map, &block, &data);
            let write = t.elapsed();
            pool.install(|| map.root_hash());
            if session {
                map.commit();
            }
            let all = t.elapsed();
            if session {
                with += all;
                with_nohash += write;
            } else {
                plain += all;
                plain_nohash += write;
            }
        }
    }
    let ops = (rounds * args.block) as u64;
    report.push(
        Row::new(
            &format!("session: blocks of {} + root + commit", args.block),
            ops,
            with,
        )
        .baseline("no session", plain),
    );
    report.push(
        Row::new("session: writes only (no root)", ops, with_nohash)
            .baseline("no session", plain_nohash),
    );
}

pub(crate) fn diffs(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &[Key],
    report: &mut Report,
) {
    let data = random_data(rng, args.data_len);
    for n in [keys.len() / 10, keys.len()] {
        if n == 0 {
            continue;
        }
        let mut small = ShaMap::with_options(MapKind::AccountState, args.map_options());
        let base = if n == keys.len() {
            map.snapshot()
        } else {
            for k in &keys[..n] {
                small.insert(*k, &data).expect("distinct");
            }
            small.snapshot()
        };
        let mut other = base.to_map();
        for k in keys[..n].iter().step_by(n / 100) {
            other
                .update(*k, b"changed data of this entry")
                .expect("present");
        }
        let other = other.snapshot();
        let t = Instant::now();
        let mut runs = 0u64;
        let mut found = 0;
        while runs == 0 || t.elapsed().as_secs_f64() < args.time_limit.min(1.0) {
            found = base.diff(&other, 10_000).expect("few differences").len();
            runs += 1;
        }
        report.push(
            Row::new(
                &format!("diff: two {n}-entry versions, {found} differences"),
                runs,
                t.elapsed(),
            )
            .note("time per diff; grows with differences × depth, not map size"),
        );
    }
    let _ = rng;
}
