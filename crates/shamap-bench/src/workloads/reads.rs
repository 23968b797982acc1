//! The `get` and `proof` workloads: lookups (single, batched, threaded) and
//! proof paths of random keys.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{Key, ShaMap};

use crate::args::Args;
use crate::report::{Report, Row};

pub(crate) fn gets(
    args: &Args,
    rng: &mut SmallRng,
    map: &ShaMap,
    keys: &[Key],
    report: &mut Report,
) {
    let n = 1_000_000usize;
    let probe: Vec<Key> = (0..n).map(|_| keys[rng.gen_range(0..keys.len())]).collect();
    let limit = args.time_limit.min(1.0);
    // Warm-up, and both forms must find every probe.
    let single = probe
        .iter()
        .take(n / 10)
        .filter(|k| map.get(k).is_some())
        .count();
    assert_eq!(single, n / 10, "every probed key is present");
    assert_eq!(get_batched(map, &probe[..n / 10]), n / 10);
    // Alternate the forms in rounds of the same probes, so that all of
    // them see the same machine (it is shared and noisy): one key at a
    // time and batched, on this thread, then both again with the probes
    // split between all the machine's threads (readers share `&ShaMap`;
    // a lookup takes no lock).
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut times = [Duration::ZERO; 4];
    let mut rounds = 0u64;
    let mut found = 0usize;
    while rounds == 0 || times.iter().sum::<Duration>().as_secs_f64() < 4.0 * limit {
        let forms: [Lookups<'_>; 2] = [
            &|p| p.iter().filter(|k| map.get(k).is_some()).count(),
            &|p| get_batched(map, p),
        ];
        for (i, form) in forms.iter().enumerate() {
            let t = Instant::now();
            found += form(&probe);
            times[i] += t.elapsed();
        }
        for (i, form) in forms.iter().enumerate() {
            let t = Instant::now();
            found += in_threads(threads, &probe, form);
            times[2 + i] += t.elapsed();
        }
        rounds += 1;
    }
    assert_eq!(
        found,
        4 * n * rounds as usize,
        "every probed key is present"
    );
    let done = n as u64 * rounds;
    let [single_time, batched_time, single_par, batched_par] = times;
    report.push(Row::new("get: random present keys", done, single_time));
    report.push(
        Row::new("get: same keys, batched (get_many)", done, batched_time)
            .baseline("single gets", single_time)
            .note(&format!(
                "{} lookups in flight",
                shamap::tree::GET_MANY_LANES
            )),
    );
    report.push(
        Row::new(
            &format!("get: same keys, {threads} threads"),
            done,
            single_par,
        )
        .baseline("single gets, 1 thread", single_time)
        .note("one key at a time; the probes split between the threads"),
    );
    report.push(
        Row::new(
            &format!("get: same keys, batched, {threads} threads"),
            done,
            batched_par,
        )
        .baseline("get_many, 1 thread", batched_time),
    );
}

/// A way of looking keys up: returns how many were found.
pub(crate) type Lookups<'a> = &'a (dyn Fn(&[Key]) -> usize + Sync);

/// Runs `form` on `threads` equal parts of `probe` at once; returns the sum
/// of what the parts return.
pub(crate) fn in_threads(threads: usize, probe: &[Key], form: Lookups<'_>) -> usize {
    let part = probe.len().div_ceil(threads.max(1));
    std::thread::scope(|s| {
        let handles: Vec<_> = probe
            .chunks(part)
            .map(|p| s.spawn(move || form(p)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("lookup thread"))
            .sum()
    })
}

/// Looks `probe` up with `get_many`, in batches of 4096 keys (a caller's
/// typical unit); returns how many were found.
pub(crate) fn get_batched(map: &ShaMap, probe: &[Key]) -> usize {
    let mut found = 0usize;
    for batch in probe.chunks(4096) {
        map.get_many(batch, |_, d| found += usize::from(d.is_some()));
    }
    found
}

pub(crate) fn proofs(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &[Key],
    report: &mut Report,
) {
    let snap = map.snapshot();
    let t = Instant::now();
    let mut n = 0u64;
    let mut bytes = 0usize;
    while n == 0 || t.elapsed().as_secs_f64() < args.time_limit.min(1.0) {
        for _ in 0..1000 {
            let p = snap.proof_path(&keys[rng.gen_range(0..keys.len())]);
            bytes += p.nodes.iter().map(Vec::len).sum::<usize>();
            n += 1;
        }
    }
    report.push(
        Row::new("proof: proof_path of a random key", n, t.elapsed())
            .note(&format!("{} B per proof", bytes as u64 / n)),
    );
}
