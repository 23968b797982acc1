//! Input helpers shared by the fuzz targets (included with `#[path]`).

// Each target includes this module and uses part of it.
#![allow(dead_code)]

/// The next 32 bytes of `data` (zero-padded when fewer are left).
pub fn take32(data: &mut &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let n = data.len().min(32);
    out[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    out
}

/// Runs the mode that `data`'s first byte picks (`modes[byte % len]`) on
/// the rest of it; nothing for an empty input.
pub fn run_mode(data: &[u8], modes: &[fn(&[u8])]) {
    if let Some((&mode, rest)) = data.split_first() {
        modes[usize::from(mode) % modes.len()](rest);
    }
}

/// Splits `data` into at most `max` blobs, each a 2-byte little-endian
/// length and that many bytes (cut short at the end of the input).
pub fn split_blobs(mut data: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !data.is_empty() && out.len() < max {
        let len = if data.len() >= 2 {
            usize::from(u16::from_le_bytes([data[0], data[1]]))
        } else {
            usize::from(data[0])
        };
        data = &data[data.len().min(2)..];
        let len = len.min(data.len());
        out.push(data[..len].to_vec());
        data = &data[len..];
    }
    out
}

/// A fresh directory for one input, named after the target (in memory
/// where there is a tmpfs for it: each input writes files).
pub fn scratch_dir(target: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::path::Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!(
        "shamap-fuzz-{target}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}
