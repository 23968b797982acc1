//! The in-memory workloads (`--workloads build,update,get,proof,snapshot,
//! session,diff`): one map built from `--entries` random entries, then each
//! workload run on it in the order given, every row reported beside its
//! hashing floor. The helpers here are shared with the `--quick` fixed
//! counts and the peers comparison.

mod blocks;
mod build;
mod reads;
mod update;
mod versions;

pub(crate) use blocks::{apply_block, gen_block, one_thread, write_block};
use build::build_map;
use reads::{gets, proofs};
use update::update_blocks;
use versions::{diffs, sessions, snapshots};

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::xrpl::sha512_half;
use shamap::{HashFunction, HashWork};

use crate::args::{Args, Workload};
use crate::report::Report;

/// Runs the workloads `args.workloads` names on one map and prints the
/// report (markdown, or JSON with `--json`).
pub(crate) fn run(args: &Args) {
    let mut report = Report::new(
        &args.entries,
        args.data_len,
        args.seed,
        args.hash,
        args.map_options().leaf_hashes,
    );
    let wanted = &args.workloads;
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let built = wanted.contains(&Workload::Build);
    let (mut map, mut keys) = build_map(args, &mut rng, &mut report, built);
    for w in wanted {
        match w {
            // `peers` and `durable` run alone (`main` picks them first).
            Workload::Build | Workload::Peers | Workload::Durable => {}
            Workload::Update => update_blocks(args, &mut rng, &mut map, &mut keys, &mut report),
            Workload::Get => gets(args, &mut rng, &map, &keys, &mut report),
            Workload::Proof => proofs(args, &mut rng, &mut map, &keys, &mut report),
            Workload::Snapshot => snapshots(args, &mut rng, &mut map, &keys, &mut report),
            Workload::Session => sessions(args, &mut rng, &mut map, &mut keys, &mut report),
            Workload::Diff => diffs(args, &mut rng, &mut map, &keys, &mut report),
        }
    }
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.markdown());
    }
}

pub(crate) fn random_data(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

/// The hashing floor of `work`: the time to hash with `f`, in a tight loop,
/// byte strings of the sizes and count that `work` describes (one message
/// at a time with `sha2` or the `blake3` crate; multi-lane batches of 512
/// like the engine's).
pub(crate) fn hash_floors(f: HashFunction, work: &HashWork) -> (Duration, Duration) {
    let leaf_len = work.leaf_bytes.checked_div(work.leaves).unwrap_or(0) as usize;
    let leaf = vec![0x5Au8; leaf_len];
    let inner = vec![0xA5u8; shamap::node_hash::INNER_MESSAGE_LEN];
    let mut acc = 0u8;
    let one: fn(&[u8]) -> u8 = match f {
        HashFunction::Sha512Half => |m| sha512_half(&[m]).0[0],
        HashFunction::Blake3 => |m| blake3::hash(m).as_bytes()[0],
    };
    let batch: fn(&[&[u8]], &mut [[u8; 32]]) = match f {
        HashFunction::Sha512Half => sha512_lanes::sha512_half_batch,
        HashFunction::Blake3 => blake3_lanes::hash_batch,
    };
    let t = Instant::now();
    for _ in 0..work.leaves {
        acc ^= one(std::hint::black_box(&leaf));
    }
    for _ in 0..work.inner {
        acc ^= one(std::hint::black_box(&inner));
    }
    let single = t.elapsed();
    let mut out = vec![[0u8; 32]; 512];
    let leaf_msgs: Vec<&[u8]> = vec![&leaf[..]; 512];
    let inner_msgs: Vec<&[u8]> = vec![&inner[..]; 512];
    let t = Instant::now();
    for (count, msgs) in [(work.leaves, &leaf_msgs), (work.inner, &inner_msgs)] {
        let mut left = count as usize;
        while left > 0 {
            let n = left.min(512);
            batch(&msgs[..n], &mut out[..n]);
            acc ^= out[0][0];
            left -= n;
        }
    }
    let lanes = t.elapsed();
    std::hint::black_box(acc);
    (single, lanes)
}
