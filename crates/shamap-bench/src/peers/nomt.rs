//! nomt (thrumdev): a disk-backed binary Merkle trie hashed with BLAKE3,
//! opened in a temporary directory. Each build or block is one session:
//! `finish` computes the root, `commit` writes it to disk (both timed: that
//! is what a block costs in nomt).

use nomt::hasher::Blake3Hasher;
use nomt::{KeyReadWrite, Nomt, Options, SessionParams};

use super::{Engine, KeyBytes, Op, Workload};

pub struct NomtPeer {
    db: Nomt<Blake3Hasher>,
    dir: tempfile::TempDir,
}

impl NomtPeer {
    pub fn new(entries: usize) -> NomtPeer {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut o = Options::new();
        o.path(dir.path().join("nomt"));
        o.commit_concurrency(1);
        o.bitbox_seed([7; 16]);
        // One bucket per page of the trie, with room: about one page per
        // four leaves at the bottom level for uniformly random keys.
        let buckets = (entries as u64 / 2).clamp(64_000, u32::MAX as u64 / 2);
        o.hashtable_buckets(buckets as u32);
        o.preallocate_ht(false);
        NomtPeer {
            db: Nomt::open(o).expect("nomt opens in a fresh directory"),
            dir,
        }
    }

    fn apply(&mut self, mut actuals: Vec<(KeyBytes, KeyReadWrite)>) -> [u8; 32] {
        actuals.sort_unstable_by_key(|a| a.0);
        let session = self.db.begin_session(SessionParams::default());
        let finished = session.finish(actuals).expect("nomt finish");
        let root = finished.root().into_inner();
        finished.commit(&self.db).expect("nomt commit");
        root
    }
}

impl Engine for NomtPeer {
    fn build(&mut self, w: &Workload) -> Option<[u8; 32]> {
        let actuals = w
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, KeyReadWrite::Write(Some(w.value(i as u64)))))
            .collect();
        Some(self.apply(actuals))
    }

    fn block(&mut self, w: &Workload, ops: &[Op]) -> Option<[u8; 32]> {
        let actuals = ops
            .iter()
            .map(|op| match *op {
                Op::Insert(k, tag) | Op::Update(k, tag) => {
                    (k, KeyReadWrite::Write(Some(w.value(tag))))
                }
                Op::Remove(k) => (k, KeyReadWrite::Write(None)),
            })
            .collect();
        Some(self.apply(actuals))
    }

    fn gets(&mut self, probes: &[KeyBytes]) -> Option<usize> {
        let session = self.db.begin_session(SessionParams::default());
        let found = probes
            .iter()
            .filter(|k| session.read(**k).expect("nomt read").is_some())
            .count();
        Some(found)
    }

    fn disk_bytes(&self) -> Option<u64> {
        Some(crate::durable::allocated_bytes(self.dir.path()))
    }
}
