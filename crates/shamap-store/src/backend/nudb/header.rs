//! The start of every NuDB file: its header read from disk and its magic
//! checked, with the same one-line errors for the data, key and log files.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Opens `path` read-only and reads its first `N` bytes: the file, its
/// length and the header. `what` names the header in the error ("a data
/// file header"), which names the file.
pub(crate) fn read_header<const N: usize>(
    path: &Path,
    what: &str,
) -> Result<(File, u64, [u8; N]), String> {
    let failed = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = File::open(path).map_err(failed)?;
    let len = file.metadata().map_err(failed)?.len();
    if len < N as u64 {
        return Err(format!(
            "{}: {len} bytes, shorter than {what} ({N})",
            path.display()
        ));
    }
    let mut b = [0u8; N];
    file.read_exact_at(&mut b, 0)
        .map_err(|e| format!("{}: reading the header: {e}", path.display()))?;
    Ok((file, len, b))
}

/// Checks that `b` holds at least `len` bytes (`what`: "a key file
/// header").
pub(crate) fn check_len(b: &[u8], len: usize, what: &str) -> Result<(), String> {
    if b.len() < len {
        return Err(format!("{} bytes, shorter than {what} ({len})", b.len()));
    }
    Ok(())
}

/// Checks that `b` starts with `magic` (`what`: "a NuDB key file").
pub(crate) fn check_magic(b: &[u8], magic: &str, what: &str) -> Result<(), String> {
    if !b.starts_with(magic.as_bytes()) {
        return Err(format!("does not start with `{magic}` (not {what})"));
    }
    Ok(())
}
