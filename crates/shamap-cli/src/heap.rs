//! The process's heap: its allocator, and what it holds.
//!
//! On Linux (feature `jemalloc`, on by default) the tool's heap is
//! jemalloc, not glibc's malloc (the engine's node pools map their own
//! blocks either way), with the settings in `.cargo/config.toml` (one
//! arena; freed pages returned after 1 s): faster and smaller than
//! glibc's malloc on `clio verify --state` (measurements in
//! docs/design.md, "The `shamap` binary's allocator"). Its counters give
//! [`probe`], which lets a backed map's budget cover the whole heap.

use shamap_store::HeapProbe;

#[cfg(all(target_os = "linux", feature = "jemalloc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The heap probe for a backed map ([`shamap_store::BackedOptions::heap_probe`]),
/// when the allocator can count: the pages jemalloc holds resident. None
/// with the system's malloc.
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

/// jemalloc's `stats.resident`, refreshed: the pages of live allocations,
/// its metadata, and freed pages it has not yet returned (their 1 s
/// decay). Counting those last makes the cache give way to them as well;
/// the cache's own segments are large allocations, returned when freed,
/// so it does not give way to what it has just freed. Measured against
/// `stats.active + stats.metadata` (what was counted before): 1.6–3.9
/// MiB lower peaks on `clio verify --state --cache-mb 64` (docs/design.md).
#[cfg(all(target_os = "linux", feature = "jemalloc"))]
fn jemalloc_heap_bytes() -> Option<usize> {
    use tikv_jemalloc_ctl::{epoch, stats};
    epoch::advance().ok()?;
    stats::resident::read().ok()
}
