//! The files of a node log store besides the log's bytes: creating a log
//! and the store's temporary files, and the words an opening's I/O error
//! gets when the directory cannot be written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::format;
use crate::error::StoreError;

/// Creates the temporary file `path` (a checkpoint or a log being made,
/// renamed into place once whole) for reading and writing, as a new
/// regular file of this process's own: whatever a crash or a user left
/// there is removed first (a regular file, a FIFO, a symlink: the link
/// itself, never its target), and the file is then created exclusively
/// (`O_CREAT | O_EXCL`, which refuses a name that exists, symlinks
/// included; with `O_NOFOLLOW` and `O_NONBLOCK` besides). So a FIFO there
/// never blocks the writer, and a symlink never sends the bytes outside the
/// store; anything put there again between the removal and the creation
/// makes the creation fail (`EEXIST`), which the caller reports. A
/// directory in its place is not removed: the creation fails then.
pub(crate) fn create_exclusive(path: &Path) -> std::io::Result<File> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_dir() => std::fs::remove_file(path)?,
        _ => {}
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file after its creation",
            path.display()
        )));
    }
    Ok(file)
}

/// Creates a log holding only its header (with a new identity,
/// [`format::file_header`]), synced, at the temporary path `path`
/// ([`create_exclusive`]); the file's cursor is after the header.
pub(super) fn create_log(path: &Path) -> std::io::Result<File> {
    let file = create_exclusive(path)?;
    (&file).write_all(&format::file_header())?;
    file.sync_data()?;
    Ok(file)
}

/// The first offset at or after `at` in `file` that holds data, not a
/// hole (`SEEK_DATA`); `None` when only holes follow. A hole reads as
/// zeros, so a search for bytes that are not zeros (a batch header) skips
/// it: a log whose tail was extended with gigabytes of zeros (a sparse
/// file) is searched in no time. Where the system cannot tell (another
/// platform, a file system without holes), `at` itself.
pub(super) fn next_data(file: &File, at: u64) -> std::io::Result<Option<u64>> {
    #[cfg(target_os = "linux")]
    {
        use nix::unistd::{lseek, Whence};
        let Ok(offset) = i64::try_from(at) else {
            return Ok(Some(at));
        };
        match lseek(file, offset, Whence::SeekData) {
            Ok(d) => Ok(Some(u64::try_from(d).unwrap_or(at).max(at))),
            Err(nix::errno::Errno::ENXIO) => Ok(None),
            Err(nix::errno::Errno::EINVAL) => Ok(Some(at)),
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Ok(Some(at))
    }
}

/// Syncs the directory `path` (its entries: a file created, renamed or
/// removed in it).
pub(super) fn sync_dir(path: &Path) -> std::io::Result<()> {
    File::open(path)?.sync_all()
}

/// An error of opening at `location`: [`StoreError::Unwritable`] when the
/// directory cannot be written (`EROFS`, `EACCES`, `EPERM`), the case for a
/// read-only opening; else a backend error.
pub(super) fn opening_error(location: &str, what: &str, e: std::io::Error) -> StoreError {
    if crate::backend::directory::is_unwritable_io(&e) {
        StoreError::Unwritable {
            location: location.to_owned(),
            message: format!("{what}: {e}"),
        }
    } else {
        StoreError::backend(location, format!("{what}: {e}"))
    }
}
