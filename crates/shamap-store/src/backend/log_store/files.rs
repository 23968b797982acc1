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
