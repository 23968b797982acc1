//! `--quick`: the key operations with fixed counts, on one thread, each in a
//! function of its own that is never inlined, so that valgrind's callgrind
//! can attribute instructions to it (`scripts/callgrind.sh` reads the
//! inclusive cost of every `quick::op_*` function).

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::hash::encode_hex_upper;
use shamap::{Hash256, HashFunction, Key, MapKind, MapOptions, ShaMap};

use crate::args::Args;
use crate::workloads::{gen_block, random_data, write_block};

/// Runs the operations and prints one line per operation:
/// `name ops seconds` (the script divides instructions by `ops`).
pub fn run(args: &Args) {
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let keys: Vec<Key> = (0..args.entries).map(|_| Key(rng.gen())).collect();
    let data = random_data(&mut rng, args.data_len);
    let mut map = ShaMap::with_options(
        MapKind::AccountState,
        MapOptions::default().with_parallel_hashing(false),
    );
    let mut keys_now = keys.clone();

    let t = Instant::now();
    let root = op_build(&mut map, &keys, &data);
    line("build", keys.len(), t, root);

    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let t = Instant::now();
    let bulk_root = op_build_sorted(&sorted, &data);
    assert_eq!(bulk_root, root, "bulk build gives the inserted map's root");
    line("build_sorted", keys.len(), t, bulk_root);

    let block_data = random_data(&mut rng, args.data_len);
    let mut block_rng = SmallRng::seed_from_u64(args.seed ^ 0xB10C);
    let t = Instant::now();
    let root = op_update(
        &mut map,
        &mut keys_now,
        &mut block_rng,
        args.block,
        &block_data,
    );
    line("update", args.block, t, root);

    let block = gen_block(&mut block_rng, &mut keys_now, args.block);
    let t = Instant::now();
    let root = op_update_apply(&mut map, &block, &block_data);
    line("update_apply", args.block, t, root);

    let probes: Vec<Key> = (0..args.gets)
        .map(|_| keys_now[rng.gen_range(0..keys_now.len())])
        .collect();
    let t = Instant::now();
    let found = op_get(&map, &probes);
    assert_eq!(found, probes.len(), "every probed key is present");
    line("get", probes.len(), t, map.root_hash_serial());

    let t = Instant::now();
    let found = op_get_many(&map, &probes);
    assert_eq!(found, probes.len(), "every probed key is present");
    line("get_many", probes.len(), t, map.root_hash_serial());

    let probes: Vec<Key> = (0..args.proofs)
        .map(|_| keys_now[rng.gen_range(0..keys_now.len())])
        .collect();
    let t = Instant::now();
    let bytes = op_proof(&mut map, &probes);
    std::hint::black_box(bytes);
    line("proof", probes.len(), t, map.root_hash_serial());

    // The same sorted build and an `apply` block on a map hashed with BLAKE3.
    let blake3 = MapOptions::default()
        .with_parallel_hashing(false)
        .with_hash(HashFunction::Blake3);
    let t = Instant::now();
    let (mut bmap, root) = op_build_sorted_blake3(&sorted, &data, blake3);
    line("build_sorted_blake3", sorted.len(), t, root);
    let mut bkeys = sorted.clone();
    let block = gen_block(&mut block_rng, &mut bkeys, args.block);
    let t = Instant::now();
    let root = op_update_apply_blake3(&mut bmap, &block, &block_data);
    line("update_apply_blake3", args.block, t, root);
}

fn line(name: &str, ops: usize, t: Instant, root: Hash256) {
    println!(
        "{name} {ops} {:.6} {}",
        t.elapsed().as_secs_f64(),
        encode_hex_upper(&root.0)
    );
}

/// Inserts every key, then hashes the root on this thread.
#[inline(never)]
fn op_build(map: &mut ShaMap, keys: &[Key], data: &[u8]) -> Hash256 {
    for k in keys {
        map.insert(*k, data).expect("random keys are distinct");
    }
    map.root_hash_serial()
}

/// Builds a map from the sorted keys with `ShaMap::from_sorted`, then hashes
/// the root on this thread.
#[inline(never)]
fn op_build_sorted(sorted: &[Key], data: &[u8]) -> Hash256 {
    let mut map = ShaMap::from_sorted(MapKind::AccountState, sorted.iter().map(|k| (*k, data)))
        .expect("sorted, distinct keys");
    map.root_hash_serial()
}

/// [`op_build_sorted`] with `options` (the BLAKE3 map: its own function, so
/// callgrind counts it apart); returns the map too.
#[inline(never)]
fn op_build_sorted_blake3(sorted: &[Key], data: &[u8], options: MapOptions) -> (ShaMap, Hash256) {
    let mut map = ShaMap::from_sorted_with_options(
        MapKind::AccountState,
        options,
        sorted.iter().map(|k| (*k, data)),
    )
    .expect("sorted, distinct keys");
    let root = map.root_hash_serial();
    (map, root)
}

/// One block of random writes (as the workload's `update`), then the root.
#[inline(never)]
fn op_update(
    map: &mut ShaMap,
    keys: &mut Vec<Key>,
    rng: &mut SmallRng,
    n: usize,
    data: &[u8],
) -> Hash256 {
    let block = gen_block(rng, keys, n);
    write_block(map, &block, data);
    map.root_hash_serial()
}

/// One block of random writes through `ShaMap::apply` (which hashes).
#[inline(never)]
fn op_update_apply(map: &mut ShaMap, block: &[(Key, bool)], data: &[u8]) -> Hash256 {
    // The map hashes serially (no parallel hashing), so `apply` takes its
    // fused path on this thread, where callgrind attributes its cost.
    map.apply(block.iter().map(|&(k, set)| (k, set.then_some(data))))
        .expect("apply")
        .root_hash
}

/// [`op_update_apply`] on the BLAKE3 map (its own function, so callgrind
/// counts it apart).
#[inline(never)]
fn op_update_apply_blake3(map: &mut ShaMap, block: &[(Key, bool)], data: &[u8]) -> Hash256 {
    map.apply(block.iter().map(|&(k, set)| (k, set.then_some(data))))
        .expect("apply")
        .root_hash
}

/// Looks every probe up; returns how many were found.
#[inline(never)]
fn op_get(map: &ShaMap, probes: &[Key]) -> usize {
    probes.iter().filter(|k| map.get(k).is_some()).count()
}

/// Looks the same probes up with `get_many`, 4096 keys per call; returns how
/// many were found.
#[inline(never)]
fn op_get_many(map: &ShaMap, probes: &[Key]) -> usize {
    let mut found = 0;
    for batch in probes.chunks(4096) {
        map.get_many(batch, |_, d| found += usize::from(d.is_some()));
    }
    found
}

/// A proof path for every probe; returns the total proof bytes.
#[inline(never)]
fn op_proof(map: &mut ShaMap, probes: &[Key]) -> usize {
    probes
        .iter()
        .map(|k| map.proof_path(k).nodes.iter().map(Vec::len).sum::<usize>())
        .sum()
}
