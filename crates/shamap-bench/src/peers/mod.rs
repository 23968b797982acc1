//! Peers side by side: the same keys, values and operations, in one process
//! run, against shamap and other Merkle tries (nomt, jmt, alloy-trie), each
//! behind a feature of its own (`peer-nomt`, `peer-jmt`, `peer-alloy`;
//! `peers` turns on all three).
//!
//! Workloads, per engine, in this order: build N entries then the root; a
//! fixed number of update blocks (60% updates, 20% inserts, 20% removes, no
//! key twice in a block) with the root after each; random gets of present
//! keys. Every engine gets the same operations, so the time ratios compare
//! like with like except for the hash function, which is reported beside
//! each figure.

#[cfg(feature = "peer-alloy")]
mod alloy;
#[cfg(feature = "peer-jmt")]
mod jmt;
#[cfg(feature = "peer-nomt")]
mod nomt;
mod ours;
mod table;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{HashFunction, HashWork};

use crate::args::Args;
use crate::durable::ops::Values;
use crate::rss;
use table::{Mem, PeerRow, PeerTable};

/// A 256-bit key, as every engine here takes it.
pub type KeyBytes = [u8; 32];

/// One write of an update block; values are named by a tag (see
/// [`Workload::value`]).
#[derive(Clone, Copy)]
pub enum Op {
    Insert(KeyBytes, u64),
    Update(KeyBytes, u64),
    Remove(KeyBytes),
}

/// The operations every engine runs.
pub struct Workload {
    /// The base map's keys, in generation (random) order.
    pub keys: Vec<KeyBytes>,
    values: Values,
    pub blocks: Vec<Vec<Op>>,
    /// Present keys to look up after the blocks.
    pub probes: Vec<KeyBytes>,
}

impl Workload {
    fn generate(args: &Args) -> Workload {
        let mut rng = SmallRng::seed_from_u64(args.seed);
        let keys: Vec<KeyBytes> = (0..args.entries).map(|_| rng.gen()).collect();
        let template: Vec<u8> = (0..args.data_len.max(8)).map(|_| rng.gen()).collect();
        let mut live = keys.clone();
        let mut tag = keys.len() as u64;
        let mut blocks = Vec::with_capacity(args.peer_blocks);
        for _ in 0..args.peer_blocks {
            let mut touched = HashSet::with_capacity(args.block);
            let mut ops = Vec::with_capacity(args.block);
            while ops.len() < args.block {
                let roll = rng.gen_range(0..10);
                if (6..8).contains(&roll) || live.len() < 2 {
                    let k: KeyBytes = rng.gen();
                    touched.insert(k);
                    live.push(k);
                    tag += 1;
                    ops.push(Op::Insert(k, tag));
                    continue;
                }
                let i = rng.gen_range(0..live.len());
                if !touched.insert(live[i]) {
                    continue;
                }
                if roll < 6 {
                    tag += 1;
                    ops.push(Op::Update(live[i], tag));
                } else {
                    ops.push(Op::Remove(live.swap_remove(i)));
                }
            }
            blocks.push(ops);
        }
        let probes = (0..args.gets)
            .map(|_| live[rng.gen_range(0..live.len())])
            .collect();
        Workload {
            keys,
            values: Values::from_template(template),
            blocks,
            probes,
        }
    }

    /// The value named `tag` (see [`Values`]).
    pub fn value_into(&self, tag: u64, out: &mut Vec<u8>) {
        self.values.value_into(tag, out);
    }

    /// [`Workload::value_into`] into a new vector.
    pub fn value(&self, tag: u64) -> Vec<u8> {
        self.values.value(tag)
    }

    pub fn value_len(&self) -> usize {
        self.values.value_len()
    }

    /// The keys with their value tags (the key's index), sorted by key:
    /// what the engines that take sorted input start from.
    pub fn sorted_keys(&self) -> Vec<(KeyBytes, u64)> {
        let mut order: Vec<(KeyBytes, u64)> = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, i as u64))
            .collect();
        order.sort_unstable_by_key(|a| a.0);
        order
    }
}

/// A trie under test. `None` from a method means "not supported".
pub trait Engine {
    /// Inserts every key of `w.keys` (value tag = its index), then returns the root.
    fn build(&mut self, w: &Workload) -> Option<[u8; 32]>;
    /// Applies one block, then returns the root.
    fn block(&mut self, w: &Workload, ops: &[Op]) -> Option<[u8; 32]>;
    /// Looks every probe up; returns how many were found.
    fn gets(&mut self, probes: &[KeyBytes]) -> Option<usize>;
    /// Bytes the engine counts itself (nodes, keys, values), if it does.
    fn counted_bytes(&self) -> Option<u64> {
        None
    }
    /// Bytes on disk, for engines that keep their trie in files.
    fn disk_bytes(&self) -> Option<u64> {
        None
    }
    /// The hash function and hash work of (build, all blocks), for engines
    /// that report them.
    fn work(&self) -> Option<(HashFunction, HashWork, HashWork)> {
        None
    }
}

/// An engine's name, hash function and constructor.
struct Peer {
    name: &'static str,
    hash: &'static str,
    make: fn(&Args) -> Box<dyn Engine>,
}

fn peers() -> Vec<Peer> {
    vec![
        Peer {
            name: "ours",
            hash: "SHA512Half",
            make: |_| Box::new(ours::Ours::new(false, HashFunction::Sha512Half)),
        },
        Peer {
            name: "ours-sorted",
            hash: "SHA512Half (sort + from_sorted; apply; get_many)",
            make: |_| Box::new(ours::Ours::new(true, HashFunction::Sha512Half)),
        },
        Peer {
            name: "ours-blake3",
            hash: "BLAKE3 (multi-lane)",
            make: |_| Box::new(ours::Ours::new(false, HashFunction::Blake3)),
        },
        Peer {
            name: "ours-sorted-blake3",
            hash: "BLAKE3 (multi-lane; sort + from_sorted; apply; get_many)",
            make: |_| Box::new(ours::Ours::new(true, HashFunction::Blake3)),
        },
        #[cfg(feature = "peer-nomt")]
        Peer {
            name: "nomt",
            hash: "BLAKE3 (binary trie)",
            make: |a| Box::new(nomt::NomtPeer::new(a.entries)),
        },
        #[cfg(feature = "peer-jmt")]
        Peer {
            name: "jmt",
            hash: "SHA-256 (Sha256Jmt)",
            make: |_| Box::new(jmt::JmtPeer::new()),
        },
        #[cfg(feature = "peer-alloy")]
        Peer {
            name: "alloy-trie",
            hash: "Keccak-256 (HashBuilder)",
            make: |_| Box::new(alloy::AlloyPeer::new()),
        },
    ]
}

const BUILD: &str = "build N + root";

fn update_label(w: &Workload, args: &Args) -> String {
    format!("update: {} blocks of {} + root", w.blocks.len(), args.block)
}

/// Runs the comparison and prints the table (or JSON).
pub fn run(args: &Args) {
    let w = Workload::generate(args);
    let wanted: Vec<&str> = args.engines.iter().map(String::as_str).collect();
    let all = peers();
    for name in &wanted {
        if !all.iter().any(|p| p.name == *name) {
            eprintln!(
                "error: engine {name:?} not built in (features: peer-nomt, peer-jmt, peer-alloy)"
            );
            std::process::exit(2);
        }
    }
    let mut table = PeerTable::new(args, w.value_len());
    for peer in all.iter().filter(|p| wanted.contains(&p.name)) {
        run_engine(peer, args, &w, &mut table);
    }
    if args.json {
        println!("{}", table.json());
    } else {
        print!("{}", table.markdown());
    }
}

fn run_engine(peer: &Peer, args: &Args, w: &Workload, table: &mut PeerTable) {
    let n = w.keys.len() as f64;
    let rss0 = rss::current().unwrap_or(0);
    let peak_ok = rss::reset_peak();
    let mut engine = (peer.make)(args);

    let t = Instant::now();
    let root = engine.build(w);
    let build = t.elapsed();
    let rss_build = rss::current().unwrap_or(0);
    let peak_build = rss::peak().filter(|_| peak_ok).unwrap_or(0);
    if root.is_some() {
        let mem = Mem {
            counted: engine.counted_bytes().map(|b| b as f64 / n),
            rss: rss_build.saturating_sub(rss0) as f64 / n,
            peak: (peak_build > 0).then(|| peak_build.saturating_sub(rss0) as f64 / n),
            disk: engine.disk_bytes().map(|b| b as f64 / n),
        };
        table.push(PeerRow::new(BUILD, peer, w.keys.len() as u64, build).mem(mem));
    }

    let mut total = Duration::ZERO;
    let mut ops = 0u64;
    let mut supported = true;
    for block in &w.blocks {
        let t = Instant::now();
        if engine.block(w, block).is_none() {
            supported = false;
            break;
        }
        total += t.elapsed();
        ops += block.len() as u64;
    }
    if supported && !w.blocks.is_empty() {
        table.push(PeerRow::new(&update_label(w, args), peer, ops, total));
    }

    let t = Instant::now();
    if let Some(found) = engine.gets(&w.probes) {
        let took = t.elapsed();
        assert_eq!(
            found,
            w.probes.len(),
            "{}: every probe is present",
            peer.name
        );
        table.push(PeerRow::new(
            "get: random present keys",
            peer,
            found as u64,
            took,
        ));
    }

    if let Some((hash, build_work, block_work)) = engine.work() {
        let update = update_label(w, args);
        floor_rows(table, w, hash, &build_work, (&update, &block_work));
    }
    drop(engine);
}

/// Rows for the hash function alone, on the byte strings our engine hashed
/// with it: the multi-lane floor (as the engine hashes) and, for BLAKE3,
/// the `blake3` crate one message at a time (as nomt hashes).
fn floor_rows(
    table: &mut PeerTable,
    w: &Workload,
    hash: HashFunction,
    build_work: &HashWork,
    (update, block_work): (&str, &HashWork),
) {
    let cases = [
        (BUILD, w.keys.len() as u64, build_work),
        (
            update,
            w.blocks.iter().map(|b| b.len() as u64).sum(),
            block_work,
        ),
    ];
    for (name, ops, work) in cases {
        if ops == 0 {
            continue;
        }
        let (single, lanes) = crate::workloads::hash_floors(hash, work);
        let note = format!(
            "{} leaves ({} B each) + {} inner (516 B)",
            work.leaves,
            work.leaf_bytes.checked_div(work.leaves).unwrap_or(0),
            work.inner
        );
        let row = |what: &str, hash: &str, t: Duration| {
            PeerRow::named(name, what, hash, ops, t).note(&note)
        };
        match hash {
            HashFunction::Sha512Half => {
                table.push(row("ours: hashing floor", "SHA512Half (multi-lane)", lanes));
            }
            HashFunction::Blake3 => {
                table.push(row(
                    "ours-blake3: hashing floor",
                    "BLAKE3 (multi-lane)",
                    lanes,
                ));
                table.push(row(
                    "BLAKE3 one message at a time, same byte strings",
                    "BLAKE3 (blake3 crate)",
                    single,
                ));
            }
        }
    }
}
