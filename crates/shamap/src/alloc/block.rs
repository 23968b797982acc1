//! Blocks: `BLOCK_SIZE` bytes aligned to `BLOCK_SIZE`, straight from the OS.
//!
//! Alignment lets a pool find a chunk's block by masking the chunk address,
//! so chunks carry no header. On Unix blocks come from `mmap` (over-map by one
//! block, then unmap the unaligned head and tail), which keeps untouched pages
//! out of the resident set and returns a released block's pages to the OS at
//! once. Elsewhere they come from the global allocator with an aligned layout.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Bytes per block. A power of two.
pub(crate) const BLOCK_SIZE: usize = 256 * 1024;

const _: () = assert!(BLOCK_SIZE.is_power_of_two());

/// Highest address (exclusive) a node may live below: the pointer module
/// keeps a 16-bit stamp above bit 47.
pub(crate) const ADDRESS_LIMIT: usize = 1 << 48;

fn check_address(p: NonNull<u8>, len: usize) -> NonNull<u8> {
    let end = p.as_ptr().addr().wrapping_add(len);
    if end > ADDRESS_LIMIT || end < p.as_ptr().addr() {
        // A 57-bit address space hands out such addresses only on request.
        panic!("shamap: allocation at {p:p} lies above the 48-bit address space it supports");
    }
    p
}

/// A fresh anonymous mapping of `size` bytes aligned to `size` (a power of
/// two, a multiple of the page size): over-map by `size`, then unmap the
/// unaligned head and tail.
#[cfg(unix)]
fn map_aligned(size: usize) -> NonNull<u8> {
    let len = 2 * size;
    // SAFETY: an anonymous private mapping with no address hint; all
    // arguments are valid by construction. The result is checked.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        std::alloc::handle_alloc_error(
            Layout::from_size_align(size, size).unwrap_or(block_layout()),
        );
    }
    let raw = raw.cast::<u8>();
    let start = raw.addr();
    let aligned = (start + size - 1) & !(size - 1);
    let head = aligned - start;
    let tail = len - head - size;
    if head > 0 {
        // SAFETY: [raw, raw+head) lies inside the mapping made above and is
        // not used; head is a multiple of the page size (both ends are).
        unsafe { libc::munmap(raw.cast(), head) };
    }
    if tail > 0 {
        // SAFETY: [aligned+size, raw+len) lies inside the mapping and is not
        // used; page-aligned as above.
        unsafe { libc::munmap(raw.wrapping_add(head + size).cast(), tail) };
    }
    let p = NonNull::new(raw.wrapping_add(head)).expect("mmap never maps page zero");
    check_address(p, size)
}

#[cfg(unix)]
pub(crate) fn alloc_block() -> NonNull<u8> {
    map_aligned(BLOCK_SIZE)
}

/// # Safety
/// 1. `block` came from [`alloc_block`] and has not been freed.
/// 2. Nothing points into it any more.
#[cfg(unix)]
pub(crate) unsafe fn free_block(block: NonNull<u8>) {
    // SAFETY: by (1) this is exactly one mapping of BLOCK_SIZE bytes we own;
    // by (2) unmapping it invalidates no live reference.
    unsafe { libc::munmap(block.as_ptr().cast(), BLOCK_SIZE) };
}

/// Where a pool's blocks come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum BlockSource {
    /// One mapping per block, in base pages.
    #[default]
    Pages,
    /// Blocks carved from 2 MiB regions the kernel is asked to back with
    /// transparent huge pages (Linux `MADV_HUGEPAGE`; elsewhere the same as
    /// `Pages`). Fewer TLB misses on large maps; a region is resident as a
    /// whole once touched, so up to one partly used region (2 MiB) per
    /// process is held beyond the blocks in use.
    Huge,
}

/// Bytes per huge-page region: eight blocks.
#[cfg(target_os = "linux")]
const REGION: usize = 2 << 20;
#[cfg(target_os = "linux")]
const _: () = assert!(REGION.is_multiple_of(BLOCK_SIZE));

/// The process-wide set of huge-page regions: free blocks, and the number
/// of blocks handed out per region (a region is unmapped when it drops to 0).
#[cfg(target_os = "linux")]
struct Regions {
    free: Vec<usize>,
    live: std::collections::BTreeMap<usize, usize>,
}

#[cfg(target_os = "linux")]
static REGIONS: std::sync::Mutex<Regions> = std::sync::Mutex::new(Regions {
    free: Vec::new(),
    live: std::collections::BTreeMap::new(),
});

#[cfg(target_os = "linux")]
fn regions() -> std::sync::MutexGuard<'static, Regions> {
    // Every critical section below leaves the lists consistent before any
    // call that could panic, so a poisoned lock is still usable.
    REGIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A block from `source`.
pub(crate) fn alloc_block_from(source: BlockSource) -> NonNull<u8> {
    #[cfg(target_os = "linux")]
    if source == BlockSource::Huge {
        return alloc_huge_block();
    }
    let _ = source;
    alloc_block()
}

/// # Safety
/// 1. `block` came from [`alloc_block_from`] with the same `source` and has
///    not been freed.
/// 2. Nothing points into it any more.
pub(crate) unsafe fn free_block_to(block: NonNull<u8>, source: BlockSource) {
    #[cfg(target_os = "linux")]
    if source == BlockSource::Huge {
        // SAFETY: forwarded contract.
        unsafe { free_huge_block(block) };
        return;
    }
    let _ = source;
    // SAFETY: forwarded contract; `Pages` blocks come from `alloc_block`.
    unsafe { free_block(block) }
}

#[cfg(target_os = "linux")]
fn alloc_huge_block() -> NonNull<u8> {
    let mut r = regions();
    if let Some(addr) = r.free.pop() {
        *r.live.entry(addr & !(REGION - 1)).or_insert(0) += 1;
        return region_block(addr);
    }
    let region = map_aligned(REGION).as_ptr();
    let aligned = region.addr();
    // SAFETY: advice on a range we own; failure (e.g. THP disabled) only
    // means base pages.
    unsafe { libc::madvise(region.cast(), REGION, libc::MADV_HUGEPAGE) };
    for i in 1..REGION / BLOCK_SIZE {
        r.free.push(aligned + i * BLOCK_SIZE);
    }
    r.live.insert(aligned, 1);
    // Blocks handed out later are found by address alone (the free list
    // holds addresses), so expose the region's provenance once here.
    region_block(region.expose_provenance())
}

/// The block at `addr` inside a region this module mapped, whose
/// provenance [`alloc_huge_block`] exposed when it mapped the region.
#[cfg(target_os = "linux")]
fn region_block(addr: usize) -> NonNull<u8> {
    let p = std::ptr::with_exposed_provenance_mut::<u8>(addr);
    NonNull::new(p).expect("regions never start at address zero")
}

/// # Safety
/// 1. `block` came from [`alloc_huge_block`] and has not been freed.
/// 2. Nothing points into it any more.
#[cfg(target_os = "linux")]
unsafe fn free_huge_block(block: NonNull<u8>) {
    // SAFETY: by (1) and (2) the block's pages are ours and unused; dropping
    // them returns the memory at once (a later reuse sees zero pages, as a
    // fresh mapping would).
    unsafe { libc::madvise(block.as_ptr().cast(), BLOCK_SIZE, libc::MADV_DONTNEED) };
    let addr = block.as_ptr().addr();
    let region = addr & !(REGION - 1);
    let mut r = regions();
    let left = match r.live.get_mut(&region) {
        Some(n) => {
            *n -= 1;
            *n
        }
        None => unreachable!("a huge block's region is live"),
    };
    if left > 0 {
        r.free.push(addr);
        return;
    }
    r.live.remove(&region);
    r.free.retain(|&b| b & !(REGION - 1) != region);
    // SAFETY: no block of the region is handed out (count 0) and none is on
    // the free list any more, so nothing points into it.
    unsafe { libc::munmap(block.as_ptr().wrapping_sub(addr - region).cast(), REGION) };
}

#[cfg(not(unix))]
pub(crate) fn alloc_block() -> NonNull<u8> {
    let layout = block_layout();
    // SAFETY: the layout has non-zero size.
    let raw = unsafe { std::alloc::alloc(layout) };
    let p = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
    check_address(p, BLOCK_SIZE)
}

/// # Safety
/// 1. `block` came from [`alloc_block`] and has not been freed.
/// 2. Nothing points into it any more.
#[cfg(not(unix))]
pub(crate) unsafe fn free_block(block: NonNull<u8>) {
    // SAFETY: by (1) it was allocated with this layout by the global allocator.
    unsafe { std::alloc::dealloc(block.as_ptr(), block_layout()) };
}

fn block_layout() -> Layout {
    Layout::from_size_align(BLOCK_SIZE, BLOCK_SIZE).expect("power-of-two block size")
}

/// Allocates `size` bytes aligned to 8 for a chunk too large for a pool.
/// Returns the chunk and its footprint: the bytes the allocator really
/// holds for it. On Linux with glibc the chunk comes from `malloc` directly
/// (not the global allocator, which a program may replace), so the
/// footprint can be counted exactly: `malloc_usable_size` plus glibc's
/// 8-byte chunk header. Elsewhere it is the requested size.
pub(crate) fn alloc_large(size: usize) -> (NonNull<u8>, usize) {
    let size = size.max(8);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc with a non-zero size; the result is checked below.
        let raw = unsafe { libc::malloc(size) }.cast::<u8>();
        let p =
            NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(large_layout(size)));
        // SAFETY: `p` was just returned by malloc and not freed.
        let usable = unsafe { libc::malloc_usable_size(p.as_ptr().cast()) };
        debug_assert!(usable >= size && p.as_ptr().addr().is_multiple_of(8));
        (check_address(p, size), usable + 8)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let layout = large_layout(size);
        // SAFETY: the layout has non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let p = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        (check_address(p, size), size)
    }
}

/// The footprint [`alloc_large`] reported for `p` (recomputed: the same
/// value for the same live chunk).
///
/// # Safety
/// 1. `p` came from [`alloc_large`] with this same `size` and was not freed.
pub(crate) unsafe fn large_footprint(p: NonNull<u8>, size: usize) -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let _ = size;
        // SAFETY: by (1) `p` is a live malloc allocation.
        unsafe { libc::malloc_usable_size(p.as_ptr().cast()) + 8 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = p;
        size.max(8)
    }
}

/// # Safety
/// 1. `p` came from [`alloc_large`] with this same `size` and was not freed.
/// 2. Nothing points into it any more.
pub(crate) unsafe fn free_large(p: NonNull<u8>, size: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let _ = size;
        // SAFETY: by (1) `p` came from malloc; by (2) it is unused.
        unsafe { libc::free(p.as_ptr().cast()) };
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        // SAFETY: by (1) the layout matches the allocation's.
        unsafe { std::alloc::dealloc(p.as_ptr(), large_layout(size.max(8))) };
    }
}

fn large_layout(size: usize) -> Layout {
    Layout::from_size_align(size.max(8), 8).expect("chunk sizes are far below isize::MAX")
}

#[cfg(all(test, target_os = "linux"))]
mod huge_tests {
    use super::*;

    /// The only test of this library that takes huge-page blocks, so the
    /// process-wide region table holds nothing else while it runs.
    #[test]
    fn huge_blocks_are_aligned_distinct_zeroed_and_regions_go_back() {
        let blocks: Vec<NonNull<u8>> = (0..20)
            .map(|_| alloc_block_from(BlockSource::Huge))
            .collect();
        let mut addrs: Vec<usize> = blocks.iter().map(|b| b.as_ptr().addr()).collect();
        assert!(addrs.iter().all(|a| a % BLOCK_SIZE == 0));
        addrs.sort_unstable();
        addrs.dedup();
        assert_eq!(addrs.len(), 20, "distinct blocks");
        for b in &blocks {
            // SAFETY: each block is BLOCK_SIZE writable bytes we own.
            unsafe {
                assert_eq!(*b.as_ptr(), 0, "fresh blocks are zero");
                b.as_ptr().write_bytes(0xAB, BLOCK_SIZE);
            }
        }
        assert!(regions().live.len() >= 3, "20 blocks need three regions");
        // Free one and take it back: reused, and zero again.
        let first = blocks[0];
        // SAFETY: allocated above from Huge, nothing points into it.
        unsafe { free_block_to(first, BlockSource::Huge) };
        let again = alloc_block_from(BlockSource::Huge);
        // SAFETY: a live block of BLOCK_SIZE bytes.
        assert_eq!(unsafe { *again.as_ptr().add(BLOCK_SIZE - 1) }, 0);
        for b in std::iter::once(again).chain(blocks.into_iter().skip(1)) {
            // SAFETY: each came from Huge and is freed once.
            unsafe { free_block_to(b, BlockSource::Huge) };
        }
        let r = regions();
        assert!(r.live.is_empty(), "every region unmapped: {:?}", r.live);
        assert!(r.free.is_empty(), "no free block of an unmapped region");
    }
}
