//! shamap itself, driven like the peers: one thread, root after every block.
//! Two engines: `ours` inserts the keys in the order they come and looks
//! probes up one by one; `ours-sorted` sorts the keys (timed, as for
//! alloy-trie) and builds with `ShaMap::from_sorted`, applies each block
//! with `ShaMap::apply`, and looks probes up with `get_many`: the batched
//! API. Blocks are the same for both.

use shamap::{HashFunction, HashWork, Key, MapKind, MapOptions, ShaMap};

use super::{Engine, KeyBytes, Op, Workload};

pub struct Ours {
    /// Build with `from_sorted`, write blocks with `apply`, look up with
    /// `get_many`.
    sorted: bool,
    hash: HashFunction,
    map: ShaMap,
    pool: rayon::ThreadPool,
    buf: Vec<u8>,
    build_work: HashWork,
    block_work: HashWork,
}

impl Ours {
    pub fn new(sorted: bool, hash: HashFunction) -> Ours {
        Ours {
            sorted,
            hash,
            map: ShaMap::with_options(MapKind::AccountState, MapOptions::default().with_hash(hash)),
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
        if self.sorted {
            let order = w.sorted_keys();
            let items = order.iter().map(|(k, tag)| (Key(*k), w.value(*tag)));
            let options = MapOptions::default().with_hash(self.hash);
            self.map = ShaMap::from_sorted_with_options(MapKind::AccountState, options, items)
                .expect("sorted, distinct");
            let (h, work) = self.root();
            self.build_work = work;
            return Some(h);
        }
        for (i, k) in w.keys.iter().enumerate() {
            w.value_into(i as u64, &mut self.buf);
            self.map.insert(Key(*k), &self.buf).expect("distinct keys");
        }
        let (h, work) = self.root();
        self.build_work = work;
        Some(h)
    }

    fn block(&mut self, w: &Workload, ops: &[Op]) -> Option<[u8; 32]> {
        if self.sorted {
            // The values side by side in one buffer, then one `apply` (on
            // the one-thread pool, like every other engine here).
            let len = w.value_len();
            self.buf.clear();
            let mut one = Vec::with_capacity(len);
            for op in ops {
                if let Op::Insert(_, tag) | Op::Update(_, tag) = *op {
                    w.value_into(tag, &mut one);
                    self.buf.extend_from_slice(&one);
                }
            }
            let mut values = self.buf.chunks_exact(len);
            let writes = ops.iter().map(|op| match *op {
                Op::Insert(k, _) | Op::Update(k, _) => (Key(k), values.next()),
                Op::Remove(k) => (Key(k), None),
            });
            let map = &mut self.map;
            let done = self.pool.install(|| map.apply(writes)).expect("apply");
            return Some(done.root_hash.0);
        }
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
        if self.sorted {
            let keys: Vec<Key> = probes.iter().map(|k| Key(*k)).collect();
            let mut found = 0;
            for batch in keys.chunks(4096) {
                self.map
                    .get_many(batch, |_, d| found += usize::from(d.is_some()));
            }
            return Some(found);
        }
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

    fn work(&self) -> Option<(HashFunction, HashWork, HashWork)> {
        // The floor rows are given once per hash function, for `ours` and
        // `ours-blake3`.
        (!self.sorted).then_some((self.hash, self.build_work, self.block_work))
    }
}
