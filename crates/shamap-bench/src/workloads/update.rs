//! The `update` workload: blocks of random writes with the root after each.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use shamap::{HashWork, Key, ShaMap};

use crate::args::Args;
use crate::report::{Report, Row};

use super::*;

/// Blocks of random writes with the root after each, alternating two ways
/// on the same map and machine: one write at a time then `root_hash`, and
/// `apply` (sorted, one pass, hashing fused in); and each block also goes
/// to a copy of the map laid out in key order (as `repack()` leaves a
/// map), which must end with the same root.
pub(crate) fn update_blocks(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &mut Vec<Key>,
    report: &mut Report,
) {
    let data = random_data(rng, args.data_len);
    let pool = one_thread();
    let mut packed = map.clone();
    // Warm-up blocks.
    let block = gen_block(rng, keys, args.block);
    for m in [&mut *map, &mut packed] {
        write_block(m, &block, &data);
        m.root_hash_serial();
    }
    let block = gen_block(rng, keys, args.block);
    apply_block(&pool, map, &block, &data);
    apply_block(&pool, &mut packed, &block, &data);
    let mut blocks = 0u64;
    // [single, apply] on the map as built, then on the key-order copy.
    let mut times = [[Duration::ZERO; 2]; 2];
    let mut work = HashWork::default();
    while times.iter().flatten().sum::<Duration>().as_secs_f64() < 4.0 * args.time_limit {
        let singles = gen_block(rng, keys, args.block);
        let batch = gen_block(rng, keys, args.block);
        let mut roots = [[shamap::Hash256::ZERO; 2]; 2];
        // Alternate which layout goes first.
        let order = if blocks.is_multiple_of(2) {
            [0, 1]
        } else {
            [1, 0]
        };
        for which in order {
            let m = if which == 0 { &mut *map } else { &mut packed };
            let t = Instant::now();
            write_block(m, &singles, &data);
            let (root, w) = pool.install(|| m.root_hash_with_work());
            times[which][0] += t.elapsed();
            roots[which][0] = root;
            if which == 0 {
                work.leaves += w.leaves;
                work.leaf_bytes += w.leaf_bytes;
                work.inner += w.inner;
            }
        }
        for which in order {
            let m = if which == 0 { &mut *map } else { &mut packed };
            let t = Instant::now();
            roots[which][1] = std::hint::black_box(apply_block(&pool, m, &batch, &data));
            times[which][1] += t.elapsed();
        }
        assert_eq!(roots[0], roots[1], "both layouts give the same roots");
        blocks += 1;
    }
    // Every way hashes the same kind of blocks on the same contents: the
    // floor measured from the single-write blocks serves for all.
    let floor = hash_floors(args.hash, &work);
    let ops = blocks * args.block as u64;
    let per_entry = map.mem_stats().overhead_per_entry();
    let [[single, batched], [single_packed, batched_packed]] = times;
    report.push(
        Row::new(
            &format!("update: blocks of {} + root, 1 thread", args.block),
            ops,
            single,
        )
        .floor(floor)
        .bytes_per_entry(per_entry),
    );
    report.push(
        Row::new("update: same blocks with `apply`, 1 thread", ops, batched)
            .floor(floor)
            .baseline("one write at a time + root", single)
            .bytes_per_entry(per_entry)
            .note(&format!(
                "blocks alternate with the row above; runs of {}",
                shamap::tree::APPLY_RUN
            )),
    );
    let packed_per_entry = packed.mem_stats().overhead_per_entry();
    report.push(
        Row::new(
            "update: same blocks + root, key-order copy, 1 thread",
            ops,
            single_packed,
        )
        .floor(floor)
        .baseline("as inserted", single)
        .bytes_per_entry(packed_per_entry)
        .note("the map after `clone()`/`repack()`: nodes in key order"),
    );
    report.push(
        Row::new(
            "update: same blocks with `apply`, key-order copy, 1 thread",
            ops,
            batched_packed,
        )
        .floor(floor)
        .baseline("as inserted", batched)
        .bytes_per_entry(packed_per_entry),
    );
}
