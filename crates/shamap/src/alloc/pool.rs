//! A slab pool: equal chunks carved from aligned blocks, no per-chunk header.
//!
//! Block layout (`BLOCK_SIZE` bytes, aligned to `BLOCK_SIZE`):
//!
//! | offset          | bytes          | content                                  |
//! |-----------------|----------------|------------------------------------------|
//! | 0               | 64             | [`BlockHeader`] (lists, free head, counts)|
//! | 64 + i·chunk    | chunk          | chunk i: in use, free, or never touched  |
//!
//! A free chunk holds the address of the next free chunk of its block in its
//! first 8 bytes. Chunks past `bump` have never been handed out (and, being
//! untouched, are usually not resident). A block whose last chunk is freed is
//! returned to the OS, except that a pool still in use keeps one empty block
//! to absorb alloc/free churn at a block boundary; a pool with no chunk in
//! use holds no block at all.
//!
//! Invariants (audited by `audit` in tests):
//! - `live` of a block = chunks handed out and not freed; pool `live` = sum.
//! - a block is on the `avail` list iff it has a free or untouched chunk.
//! - every block is on the `all` list exactly once.

use std::ptr::NonNull;

use super::block::{alloc_block_from, free_block_to, BlockSource, BLOCK_SIZE};

/// Offset of the first chunk: the header, padded to a cache line.
const FIRST_CHUNK: usize = 64;

#[repr(C)]
struct BlockHeader {
    all_prev: Option<NonNull<BlockHeader>>,
    all_next: Option<NonNull<BlockHeader>>,
    avail_prev: Option<NonNull<BlockHeader>>,
    avail_next: Option<NonNull<BlockHeader>>,
    free: Option<NonNull<FreeChunk>>,
    bump: u32,
    live: u32,
    on_avail: bool,
    /// Where the block came from (and so where it goes back).
    source: BlockSource,
}

const _: () = assert!(std::mem::size_of::<BlockHeader>() <= FIRST_CHUNK);
const _: () = assert!(FIRST_CHUNK.is_multiple_of(8));

#[repr(C)]
struct FreeChunk {
    next: Option<NonNull<FreeChunk>>,
}

/// Counters describing one pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PoolStats {
    /// Bytes per chunk.
    pub chunk_size: usize,
    /// Blocks held.
    pub blocks: usize,
    /// Chunks in use.
    pub live_chunks: usize,
    /// Chunks a block could still hand out (freed or never touched).
    pub free_chunks: usize,
    /// Bytes of the pool's blocks that have ever been touched (pages up to
    /// each block's bump offset); the rest was never written and, on Unix
    /// where blocks are fresh mappings, is not resident.
    pub touched_bytes: usize,
}

/// Page granularity of residency.
const PAGE: usize = 4096;

fn page_round(x: usize) -> usize {
    (x + PAGE - 1) & !(PAGE - 1)
}

/// A pool of equal chunks.
pub(crate) struct SlabPool {
    /// Where blocks come from.
    source: BlockSource,
    chunk: usize,
    per_block: usize,
    all: Option<NonNull<BlockHeader>>,
    avail: Option<NonNull<BlockHeader>>,
    blocks: usize,
    empty_blocks: usize,
    live: usize,
    touched: usize,
}

// SAFETY: the pool exclusively owns its blocks (no sharing with other pools or
// threads); moving it to another thread moves that ownership.
unsafe impl Send for SlabPool {}
// SAFETY: `&SlabPool` only reads plain counters.
unsafe impl Sync for SlabPool {}

/// Empty blocks a pool keeps instead of returning them to the OS.
const KEEP_EMPTY: usize = 1;

impl SlabPool {
    /// A pool of `chunk`-byte chunks. `chunk` is a multiple of 8 between 8
    /// and a quarter block.
    #[cfg(test)]
    pub(crate) fn new(chunk: usize) -> SlabPool {
        SlabPool::with_source(chunk, BlockSource::Pages)
    }

    /// A pool of `chunk`-byte chunks whose blocks come from `source`.
    pub(crate) fn with_source(chunk: usize, source: BlockSource) -> SlabPool {
        assert!(
            chunk >= 8 && chunk.is_multiple_of(8) && chunk <= (BLOCK_SIZE - FIRST_CHUNK) / 4,
            "bad chunk size {chunk}"
        );
        SlabPool {
            source,
            chunk,
            per_block: (BLOCK_SIZE - FIRST_CHUNK) / chunk,
            all: None,
            avail: None,
            blocks: 0,
            empty_blocks: 0,
            live: 0,
            touched: 0,
        }
    }

    /// Takes blocks made from now on from `source` (blocks already made go
    /// back where they came from).
    pub(crate) fn set_source(&mut self, source: BlockSource) {
        self.source = source;
    }

    /// Bytes per chunk.
    pub(crate) fn chunk_size(&self) -> usize {
        self.chunk
    }

    /// Counters.
    pub(crate) fn stats(&self) -> PoolStats {
        PoolStats {
            chunk_size: self.chunk,
            blocks: self.blocks,
            live_chunks: self.live,
            free_chunks: self.blocks * self.per_block - self.live,
            touched_bytes: self.touched,
        }
    }

    /// Hands out an uninitialised chunk of `chunk_size()` bytes, aligned to 8
    /// (to 64 when the chunk size is a multiple of 64).
    pub(crate) fn alloc(&mut self) -> NonNull<u8> {
        let b = match self.avail {
            Some(b) => b,
            None => self.new_block(),
        };
        let hdr = b.as_ptr();
        // SAFETY: `b` is on our avail list, so it is a live block we own whose
        // header was initialised by `new_block`; we hold `&mut self`, so no
        // other reference to the header exists.
        unsafe {
            if (*hdr).live == 0 {
                self.empty_blocks -= 1;
            }
            let chunk = if let Some(f) = (*hdr).free {
                (*hdr).free = (*f.as_ptr()).next;
                f.cast::<u8>()
            } else {
                let off = (*hdr).bump as usize;
                (*hdr).bump += self.chunk as u32;
                self.touched += page_round(off + self.chunk) - page_round(off);
                b.cast::<u8>().byte_add(off)
            };
            (*hdr).live += 1;
            if (*hdr).free.is_none() && (*hdr).bump as usize + self.chunk > BLOCK_SIZE {
                self.unlink_avail(b);
            }
            self.live += 1;
            chunk
        }
    }

    /// Returns a chunk to its block.
    ///
    /// # Safety
    /// 1. `p` was returned by `alloc` on this same pool and not freed since.
    /// 2. Nothing reads or writes the chunk after this call.
    pub(crate) unsafe fn free(&mut self, p: NonNull<u8>) {
        let b = NonNull::new(p.as_ptr().map_addr(|a| a & !(BLOCK_SIZE - 1)))
            .expect("blocks never start at address zero")
            .cast::<BlockHeader>();
        let hdr = b.as_ptr();
        // SAFETY: by (1) `p` lies in a live block of this pool, whose header
        // sits at the block's aligned start; `&mut self` excludes other
        // access; by (2) we may overwrite the chunk's first 8 bytes (every
        // chunk is at least 8 bytes and 8-aligned).
        unsafe {
            debug_assert!((*hdr).live > 0, "double free");
            if cfg!(debug_assertions) {
                // Poison freed chunks so a use after free shows up as garbage
                // (and as hash mismatches in `check()`) rather than as stale
                // but plausible data.
                p.as_ptr().write_bytes(0xDB, self.chunk);
            }
            let f = p.cast::<FreeChunk>();
            f.as_ptr().write(FreeChunk { next: (*hdr).free });
            (*hdr).free = Some(f);
            (*hdr).live -= 1;
            self.live -= 1;
            if !(*hdr).on_avail {
                self.push_avail(b);
            }
            if (*hdr).live == 0 {
                if self.live > 0 && self.empty_blocks < KEEP_EMPTY {
                    self.empty_blocks += 1;
                } else {
                    self.release(b);
                }
            }
            if self.live == 0 {
                self.release_all();
            }
        }
    }

    /// Returns every block to the OS; only when no chunk is in use.
    fn release_all(&mut self) {
        debug_assert_eq!(self.live, 0);
        while let Some(b) = self.all {
            // SAFETY: with no live chunk in the pool, every block is empty.
            unsafe { self.release(b) };
        }
        self.empty_blocks = 0;
    }

    fn new_block(&mut self) -> NonNull<BlockHeader> {
        let b = alloc_block_from(self.source).cast::<BlockHeader>();
        // SAFETY: the block is freshly mapped, writable, aligned far beyond
        // the header's alignment, and large enough (const-asserted).
        unsafe {
            b.as_ptr().write(BlockHeader {
                all_prev: None,
                all_next: self.all,
                avail_prev: None,
                avail_next: None,
                free: None,
                bump: FIRST_CHUNK as u32,
                live: 0,
                on_avail: false,
                source: self.source,
            });
            if let Some(old) = self.all {
                (*old.as_ptr()).all_prev = Some(b);
            }
        }
        self.all = Some(b);
        self.blocks += 1;
        self.empty_blocks += 1;
        self.touched += page_round(FIRST_CHUNK);
        self.push_avail(b);
        b
    }

    fn push_avail(&mut self, b: NonNull<BlockHeader>) {
        // SAFETY: `b` and the current avail head are live blocks of this
        // pool with initialised headers; `&mut self` excludes other access.
        unsafe {
            let hdr = b.as_ptr();
            (*hdr).avail_prev = None;
            (*hdr).avail_next = self.avail;
            (*hdr).on_avail = true;
            if let Some(old) = self.avail {
                (*old.as_ptr()).avail_prev = Some(b);
            }
        }
        self.avail = Some(b);
    }

    fn unlink_avail(&mut self, b: NonNull<BlockHeader>) {
        // SAFETY: `b` is a live block on the avail list; its neighbours are
        // live blocks of this pool; `&mut self` excludes other access.
        unsafe {
            let hdr = b.as_ptr();
            let (prev, next) = ((*hdr).avail_prev, (*hdr).avail_next);
            match prev {
                Some(p) => (*p.as_ptr()).avail_next = next,
                None => self.avail = next,
            }
            if let Some(n) = next {
                (*n.as_ptr()).avail_prev = prev;
            }
            (*hdr).avail_prev = None;
            (*hdr).avail_next = None;
            (*hdr).on_avail = false;
        }
    }

    /// Unlinks an empty block from both lists and returns it to the OS.
    ///
    /// # Safety
    /// 1. `b` is a block of this pool with no live chunk.
    unsafe fn release(&mut self, b: NonNull<BlockHeader>) {
        // SAFETY: by (1) `b` is live and ours; neighbours on the `all` list
        // are live blocks of this pool.
        unsafe {
            let hdr = b.as_ptr();
            debug_assert_eq!((*hdr).live, 0);
            if (*hdr).on_avail {
                self.unlink_avail(b);
            }
            let (prev, next) = ((*hdr).all_prev, (*hdr).all_next);
            match prev {
                Some(p) => (*p.as_ptr()).all_next = next,
                None => self.all = next,
            }
            if let Some(n) = next {
                (*n.as_ptr()).all_prev = prev;
            }
            self.blocks -= 1;
            self.touched -= page_round((*hdr).bump as usize);
            // By (1) no chunk of the block is in use, so nothing points in;
            // the header says where the block came from.
            free_block_to(b.cast(), (*hdr).source);
        }
    }

    /// Walks every block and checks the counters; for tests and `check()`.
    pub(crate) fn audit(&self) -> Result<(), String> {
        let mut blocks = 0;
        let mut live = 0;
        let mut empty = 0;
        let mut touched = 0;
        let mut cur = self.all;
        while let Some(b) = cur {
            // SAFETY: blocks on the `all` list are live and ours; `&self`
            // means no one mutates them during the walk.
            unsafe {
                let hdr = b.as_ptr();
                let mut free = 0usize;
                let mut f = (*hdr).free;
                while let Some(c) = f {
                    free += 1;
                    if free > self.per_block {
                        return Err("free list longer than the block".into());
                    }
                    f = (*c.as_ptr()).next;
                }
                let carved = ((*hdr).bump as usize - FIRST_CHUNK) / self.chunk;
                if carved != free + (*hdr).live as usize {
                    return Err(format!(
                        "block carved {carved} chunks but has {free} free + {} live",
                        (*hdr).live
                    ));
                }
                let has_room = free > 0 || carved < self.per_block;
                if has_room != (*hdr).on_avail {
                    return Err("avail membership disagrees with free space".into());
                }
                live += (*hdr).live as usize;
                empty += usize::from((*hdr).live == 0);
                touched += page_round((*hdr).bump as usize);
                blocks += 1;
                cur = (*hdr).all_next;
            }
        }
        if touched != self.touched {
            return Err(format!(
                "touched bytes {touched}, recorded {}",
                self.touched
            ));
        }
        if (blocks, live, empty) != (self.blocks, self.live, self.empty_blocks) {
            return Err(format!(
                "counted blocks/live/empty {blocks}/{live}/{empty}, recorded {}/{}/{}",
                self.blocks, self.live, self.empty_blocks
            ));
        }
        Ok(())
    }
}

impl Drop for SlabPool {
    fn drop(&mut self) {
        let mut cur = self.all;
        while let Some(b) = cur {
            // SAFETY: every block on `all` is live and ours; the pool is being
            // dropped, so no chunk may be used afterwards (the owner frees or
            // forgets its nodes before dropping the pool).
            unsafe {
                cur = (*b.as_ptr()).all_next;
                free_block_to(b.cast(), (*b.as_ptr()).source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_distinct_aligned_and_reused() {
        let mut pool = SlabPool::new(48);
        let mut v: Vec<NonNull<u8>> = (0..5000).map(|_| pool.alloc()).collect();
        let mut addrs: Vec<usize> = v.iter().map(|p| p.as_ptr().addr()).collect();
        assert!(addrs.iter().all(|a| a % 8 == 0));
        addrs.sort_unstable();
        assert!(
            addrs.windows(2).all(|w| w[1] - w[0] >= 48),
            "chunks overlap"
        );
        pool.audit().expect("consistent after allocs");
        assert_eq!(pool.stats().live_chunks, 5000);
        let blocks = pool.stats().blocks;
        for p in v.drain(..2500) {
            // SAFETY: each pointer came from this pool and is freed once.
            unsafe { pool.free(p) };
        }
        pool.audit().expect("consistent after frees");
        let again: Vec<NonNull<u8>> = (0..2500).map(|_| pool.alloc()).collect();
        assert_eq!(pool.stats().blocks, blocks, "freed chunks are reused");
        for p in again.into_iter().chain(v) {
            // SAFETY: as above.
            unsafe { pool.free(p) };
        }
        pool.audit().expect("consistent when empty");
        assert_eq!(pool.stats().live_chunks, 0);
        assert_eq!(pool.stats().blocks, 0, "an unused pool holds no block");
    }

    #[test]
    fn chunk_memory_is_usable_for_its_full_size() {
        let mut pool = SlabPool::new(160);
        let ps: Vec<NonNull<u8>> = (0..1000).map(|_| pool.alloc()).collect();
        for (i, p) in ps.iter().enumerate() {
            // SAFETY: each chunk is 160 writable bytes owned by this test.
            unsafe { p.as_ptr().write_bytes(i as u8, 160) };
        }
        for (i, p) in ps.iter().enumerate() {
            // SAFETY: as above; reading back what was written.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), 160) };
            assert!(s.iter().all(|&b| b == i as u8), "chunk {i} was overwritten");
        }
        for p in ps {
            // SAFETY: from this pool, freed once.
            unsafe { pool.free(p) };
        }
        pool.audit().expect("consistent");
    }

    #[test]
    fn random_alloc_free_keeps_counters_exact() {
        let mut pool = SlabPool::new(64);
        let mut held = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if !x.is_multiple_of(3) || held.is_empty() {
                held.push(pool.alloc());
            } else {
                let i = (x >> 8) as usize % held.len();
                let p = held.swap_remove(i);
                // SAFETY: from this pool, freed once.
                unsafe { pool.free(p) };
            }
        }
        pool.audit().expect("consistent under churn");
        assert_eq!(pool.stats().live_chunks, held.len());
    }
}
