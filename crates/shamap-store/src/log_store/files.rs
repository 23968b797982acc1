//! The files of a node log store besides the log's bytes: creating a log,
//! and the words an opening's I/O error gets when the directory cannot be
//! written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::format;
use crate::error::StoreError;

/// Creates a log holding only its header, synced; the file's cursor is
/// after the header.
pub(super) fn create_log(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    (&file).write_all(&format::file_header())?;
    file.sync_data()?;
    Ok(file)
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
    if matches!(e.raw_os_error(), Some(30 | 13 | 1)) {
        StoreError::Unwritable {
            location: location.to_owned(),
            message: format!("{what}: {e}"),
        }
    } else {
        StoreError::backend(location, format!("{what}: {e}"))
    }
}

/// Opens the store's file `path` (for reading, or reading and writing),
/// refusing anything but a regular file: a FIFO, a device or a directory
/// put in its place is an error at once (opened without blocking, then
/// checked), never an opening that waits for ever. `None` when there is
/// no such file.
pub(super) fn open_regular(path: &Path, write: bool) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is {}, not a regular file",
                path.display(),
                what_kind(kind)
            ),
        ));
    }
    Ok(Some(file))
}

/// A file type in words.
fn what_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "a special file"
    }
}
