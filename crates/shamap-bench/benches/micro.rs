//! criterion micro benchmarks: the hash function, multi-lane batches, and
//! single operations on a 100k-entry map.
//!
//! ```text
//! cargo bench -p shamap-bench --bench micro            # about a minute
//! cargo bench -p shamap-bench --bench micro -- get     # a filter
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::xrpl::sha512_half;
use shamap::{Key, MapKind, ShaMap};

const ENTRIES: usize = 100_000;
const DATA_LEN: usize = 64;

/// A hashed map of `ENTRIES` random keys and its keys (seeded).
fn map_100k() -> (ShaMap, Vec<Key>, SmallRng) {
    let mut rng = SmallRng::seed_from_u64(7);
    let data: Vec<u8> = (0..DATA_LEN).map(|_| rng.gen()).collect();
    let keys: Vec<Key> = (0..ENTRIES).map(|_| Key(rng.gen())).collect();
    let mut map = ShaMap::new(MapKind::AccountState);
    for k in &keys {
        map.insert(*k, &data).expect("random keys are distinct");
    }
    map.root_hash_serial();
    (map, keys, rng)
}

fn hashing(c: &mut Criterion) {
    let mut g = c.benchmark_group("sha512_half");
    // 22 B: a keylet; 167 B: a mean mainnet ledger entry; 516 B: an inner node.
    for len in [22usize, 167, 516] {
        let input = vec![0xA5u8; len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("{len} B"), |b| {
            b.iter(|| sha512_half(&[black_box(&input)]))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("sha512_lanes");
    let inner = vec![0xA5u8; 516];
    let msgs: Vec<&[u8]> = vec![&inner[..]; 8];
    let mut out = [[0u8; 32]; 8];
    g.throughput(Throughput::Elements(8));
    g.bench_function(
        format!("8 x 516 B ({})", sha512_lanes::backend().name()),
        |b| {
            b.iter(|| {
                sha512_lanes::sha512_half_batch(black_box(&msgs), &mut out);
                out[7][0]
            })
        },
    );
    g.finish();
}

fn map_ops(c: &mut Criterion) {
    let (mut map, keys, mut rng) = map_100k();
    let data = vec![0x3Cu8; DATA_LEN];
    let mut g = c.benchmark_group("map_100k");

    // Inserts in rounds of 10k new keys, each round removed again untimed,
    // so the map stays between 100k and 110k entries.
    g.bench_function("insert", |b| {
        b.iter_custom(|iters| {
            let mut left = iters;
            let mut took = Duration::ZERO;
            while left > 0 {
                let n = left.min(10_000);
                let fresh: Vec<Key> = (0..n).map(|_| Key(rng.gen())).collect();
                let t = Instant::now();
                for k in &fresh {
                    map.insert(*k, &data).expect("random keys are distinct");
                }
                took += t.elapsed();
                for k in &fresh {
                    map.remove(k).expect("just inserted");
                }
                left -= n;
            }
            map.root_hash_serial();
            took
        })
    });

    let probes: Vec<Key> = (0..1 << 16)
        .map(|_| keys[rng.gen_range(0..keys.len())])
        .collect();
    let mut i = 0usize;
    g.bench_function("get", |b| {
        b.iter(|| {
            i = (i + 1) & (probes.len() - 1);
            map.get(black_box(&probes[i])).map(<[u8]>::len)
        })
    });

    // 256 probes per call, reported per call (divide by 256 for a key).
    let mut j = 0usize;
    g.bench_function("get_many, 256 keys", |b| {
        b.iter(|| {
            j = (j + 256) & (probes.len() - 1);
            let mut found = 0usize;
            map.get_many(black_box(&probes[j..j + 256]), |_, d| {
                found += usize::from(d.is_some())
            });
            found
        })
    });

    g.bench_function("update 1 + root", |b| {
        b.iter(|| {
            i = (i + 1) & (probes.len() - 1);
            map.update(probes[i], &data[..DATA_LEN - (i & 1)])
                .expect("present");
            map.root_hash_serial()
        })
    });

    g.bench_function("snapshot: take + drop", |b| b.iter(|| map.snapshot()));

    g.bench_function("snapshot: take, update 1 + root, drop", |b| {
        b.iter(|| {
            let snap = map.snapshot();
            i = (i + 1) & (probes.len() - 1);
            map.update(probes[i], &data[..DATA_LEN - (i & 1)])
                .expect("present");
            map.root_hash_serial();
            snap
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = hashing, map_ops
}
criterion_main!(benches);
