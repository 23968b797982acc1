//! The process's heap: its allocator, and what it holds.
//!
//! On Linux (feature `jemalloc`, on by default) the tool's heap is
//! jemalloc, not glibc's malloc (the engine's node pools map their own
//! blocks either way), with the settings in `.cargo/config.toml` (one
//! arena; freed pages returned after 100 ms): faster and smaller than
//! glibc's malloc on `clio verify --state` (measurements in
//! docs/design.md, "The `shamap` binary's allocator"). Its counters give
//! [`probe`], which lets a backed map's budget cover the whole heap.

use shamap_store::HeapProbe;

#[cfg(all(target_os = "linux", feature = "jemalloc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The heap probe for a backed map ([`shamap_store::BackedOptions::heap_probe`]),
/// when the allocator can count: jemalloc's pages backing live
/// allocations plus its metadata. None with the system's malloc.
pub(crate) fn probe() -> Option<HeapProbe> {
    #[cfg(all(target_os = "linux", feature = "jemalloc"))]
    {
        Some(HeapProbe(jemalloc_heap_bytes))
    }
    #[cfg(not(all(target_os = "linux", feature = "jemalloc")))]
    {
        None
    }
}

/// jemalloc's `stats.active` + `stats.metadata`, refreshed. Free pages
/// not yet returned (up to the 100 ms decay) are not counted: they go back
/// on their own, and counting them would make the cache give way to the
/// memory it has just freed.
#[cfg(all(target_os = "linux", feature = "jemalloc"))]
fn jemalloc_heap_bytes() -> Option<usize> {
    use tikv_jemalloc_ctl::{epoch, stats};
    epoch::advance().ok()?;
    Some(stats::active::read().ok()? + stats::metadata::read().ok()?)
}
