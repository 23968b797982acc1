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

#[cfg(unix)]
pub(crate) fn alloc_block() -> NonNull<u8> {
    let len = 2 * BLOCK_SIZE;
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
        std::alloc::handle_alloc_error(block_layout());
    }
    let raw = raw.cast::<u8>();
    let start = raw.addr();
    let aligned = (start + BLOCK_SIZE - 1) & !(BLOCK_SIZE - 1);
    let head = aligned - start;
    let tail = len - head - BLOCK_SIZE;
    if head > 0 {
        // SAFETY: [raw, raw+head) lies inside the mapping made above and is
        // not used; head is a multiple of the page size (both ends are).
        unsafe { libc::munmap(raw.cast(), head) };
    }
    if tail > 0 {
        // SAFETY: [aligned+BLOCK_SIZE, raw+len) lies inside the mapping and is
        // not used; page-aligned as above.
        unsafe { libc::munmap(raw.wrapping_add(head + BLOCK_SIZE).cast(), tail) };
    }
    let block = NonNull::new(raw.wrapping_add(head)).expect("mmap never maps page zero");
    check_address(block, BLOCK_SIZE)
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
