//! shamap itself, driven like the peers: one thread, root after every block.

use shamap::{HashWork, Key, MapKind, ShaMap};

use super::{Engine, KeyBytes, Op, Workload};

pub struct Ours {
    map: ShaMap,
    pool: rayon::ThreadPool,
    buf: Vec<u8>,
    build_work: HashWork,
    block_work: HashWork,
}

impl Ours {
    pub fn new() -> Ours {
        Ours {
            map: ShaMap::new(MapKind::AccountState),
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("a one-thread pool"),
            buf: Vec::new(),
            build_work: HashWork::default(),
            block_work: HashWork::default(),
        }
    }

    fn root(&mut self) -> ([u8; 32], HashWork) {
        let map = &mut self.map;
        let (h, w) = self.pool.install(|| map.root_hash_with_work());
        (h.0, w)
    }
}

impl Engine for Ours {
    fn build(&mut self, w: &Workload) -> Option<[u8; 32]> {
        for (i, k) in w.keys.iter().enumerate() {
            w.value_into(i as u64, &mut self.buf);
            self.map.insert(Key(*k), &self.buf).expect("distinct keys");
        }
        let (h, work) = self.root();
        self.build_work = work;
        Some(h)
    }

    fn block(&mut self, w: &Workload, ops: &[Op]) -> Option<[u8; 32]> {
        for op in ops {
            match *op {
                Op::Insert(k, tag) => {
                    w.value_into(tag, &mut self.buf);
                    self.map.insert(Key(k), &self.buf).expect("new key");
                }
                Op::Update(k, tag) => {
                    w.value_into(tag, &mut self.buf);
                    self.map.update(Key(k), &self.buf).expect("present key");
                }
                Op::Remove(k) => self.map.remove(&Key(k)).expect("present key"),
            }
        }
        let (h, work) = self.root();
        self.block_work.leaves += work.leaves;
        self.block_work.leaf_bytes += work.leaf_bytes;
        self.block_work.inner += work.inner;
        Some(h)
    }

    fn gets(&mut self, probes: &[KeyBytes]) -> Option<usize> {
        Some(
            probes
                .iter()
                .filter(|k| self.map.get(&Key(**k)).is_some())
                .count(),
        )
    }

    fn counted_bytes(&self) -> Option<u64> {
        Some(self.map.mem_stats().bytes.total as u64)
    }

    fn work(&self) -> Option<(HashWork, HashWork)> {
        Some((self.build_work, self.block_work))
    }
}
