//! The `build` workload: the base map, inserted one key at a time or built
//! from sorted entries, and its first root.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{Key, MapKind, ShaMap};

use crate::args::Args;
use crate::report::{Report, Row};

use super::*;

/// Builds the base map; optionally reports the build and a from-scratch
/// root on one and two threads.
pub(crate) fn build_map(
    args: &Args,
    rng: &mut SmallRng,
    report: &mut Report,
    record: bool,
) -> (ShaMap, Vec<Key>) {
    let mut map = ShaMap::with_options(MapKind::AccountState, args.map_options());
    let keys: Vec<Key> = (0..args.entries).map(|_| Key(rng.gen())).collect();
    let data = random_data(rng, args.data_len);
    let t = Instant::now();
    for k in &keys {
        map.insert(*k, &data).expect("random keys are distinct");
    }
    let insert = t.elapsed();
    let one_thread = one_thread();
    let t = Instant::now();
    let (_, work) = one_thread.install(|| map.root_hash_with_work());
    let hash_serial = t.elapsed();
    if record {
        let floor = hash_floors(args.hash, &work);
        let mem = map.mem_stats();
        report.push(Row::new("build: insert N", args.entries as u64, insert).note("no hashing"));
        report.push(
            Row::new(
                "build: root from scratch, 1 thread",
                work.leaves + work.inner,
                hash_serial,
            )
            .floor(floor)
            .note(&format!(
                "{} leaves + {} inner hashed",
                work.leaves, work.inner
            )),
        );
        report.push(
            Row::new(
                "build: insert + root, 1 thread",
                args.entries as u64,
                insert + hash_serial,
            )
            .floor(floor)
            .bytes_per_entry(mem.overhead_per_entry()),
        );
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            map.invalidate_hashes();
            let t = Instant::now();
            pool.install(|| map.root_hash());
            report.push(
                Row::new(
                    &format!("build: root from scratch, rayon {threads} thread(s)"),
                    args.entries as u64,
                    t.elapsed(),
                )
                .floor(floor),
            );
        }
        build_sorted(
            args,
            &keys,
            &data,
            &mut map,
            report,
            (insert, hash_serial),
            floor,
        );
        // The inserted map copied in key order (what `repack()` does),
        // then hashed from scratch like the map it came from.
        let t = Instant::now();
        let mut packed = map.clone();
        let copied = t.elapsed();
        report.push(
            Row::new(
                "build: clone, laid out in key order",
                args.entries as u64,
                copied,
            )
            .bytes_per_entry(packed.mem_stats().overhead_per_entry())
            .note("the copy `repack()` makes; hashes copied, none computed"),
        );
        packed.invalidate_hashes();
        let t = Instant::now();
        let root = one_thread.install(|| packed.root_hash());
        report.push(
            Row::new(
                "build: root from scratch of the key-order copy, 1 thread",
                work.leaves + work.inner,
                t.elapsed(),
            )
            .floor(floor)
            .baseline("same, as inserted", hash_serial),
        );
        assert_eq!(root, map.root_hash(), "the copy has the map's root");
    }
    (map, keys)
}

/// The same items built with `ShaMap::from_sorted` from pre-sorted keys,
/// then hashed on one thread; compared with inserting them (`insert` and
/// `hash`: the insert build's times in this run).
pub(crate) fn build_sorted(
    args: &Args,
    keys: &[Key],
    data: &[u8],
    map: &mut ShaMap,
    report: &mut Report,
    (insert, hash): (Duration, Duration),
    floor: (Duration, Duration),
) {
    let one_thread = one_thread();
    let t = Instant::now();
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    let sort = t.elapsed();
    let t = Instant::now();
    let mut bulk = ShaMap::from_sorted_with_options(
        MapKind::AccountState,
        args.map_options(),
        sorted.iter().map(|k| (*k, data)),
    )
    .expect("sorted, distinct keys");
    let build = t.elapsed();
    let t = Instant::now();
    let root = one_thread.install(|| bulk.root_hash());
    let hashed = t.elapsed();
    assert_eq!(
        root,
        map.root_hash(),
        "bulk build gives the inserted map's root"
    );
    report.push(
        Row::new("build sorted: from_sorted N", args.entries as u64, build)
            .baseline("insert N", insert)
            .note(&format!(
                "keys pre-sorted (sorting them took {:.0} ms); no hashing",
                sort.as_secs_f64() * 1e3
            )),
    );
    report.push(
        Row::new(
            "build sorted: from_sorted + root, 1 thread",
            args.entries as u64,
            build + hashed,
        )
        .floor(floor)
        .baseline("insert + root", insert + hash)
        .bytes_per_entry(bulk.mem_stats().overhead_per_entry())
        .note(&format!(
            "root alone {:.0} ms (after inserts: {:.0} ms)",
            hashed.as_secs_f64() * 1e3,
            hash.as_secs_f64() * 1e3
        )),
    );
    let per_entry = bulk.mem_stats().overhead_per_entry();
    drop(bulk);
    // The same keys, unsorted, as one block of writes into an empty map:
    // `apply` sorts them and builds and hashes run by run.
    let t = Instant::now();
    let mut applied = ShaMap::with_options(MapKind::AccountState, args.map_options());
    let done = one_thread
        .install(|| applied.apply(keys.iter().map(|k| (*k, Some(data)))))
        .expect("apply");
    let took = t.elapsed();
    assert_eq!(done.root_hash, root, "apply gives the inserted map's root");
    report.push(
        Row::new(
            "build: apply N unsorted writes, 1 thread",
            args.entries as u64,
            took,
        )
        .floor(floor)
        .baseline("insert + root", insert + hash)
        .bytes_per_entry(per_entry)
        .note("sort included; root computed"),
    );
}
