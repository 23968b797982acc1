//! The files of a node log store besides the log's bytes: creating a log,
//! and the words an opening's I/O error gets when the directory cannot be
//! written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::format;

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

/// An I/O error of opening, with the words [`super::LogStore::is_unwritable`]
/// looks for when the directory cannot be written.
pub(super) fn unwritable(e: std::io::Error) -> String {
    if matches!(e.raw_os_error(), Some(30 | 13 | 1)) {
        format!("{e}{UNWRITABLE_MARK}")
    } else {
        e.to_string()
    }
}

pub(super) const UNWRITABLE_MARK: &str = " (the directory cannot be written)";
pub(super) const LOCKED_MESSAGE: &str =
    "the store is locked by another process (one writer at a time)";
