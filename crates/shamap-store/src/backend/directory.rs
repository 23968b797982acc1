//! The one rule for creating an on-disk store in a directory: only where
//! there is nothing, an empty directory, or already a store of that kind;
//! and taking a store's writer lock.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::StoreError;

/// Refuses to create a store in an existing, non-empty directory that is
/// not already one (a mistyped `--db` must not scatter files among a
/// user's own). `is_store`: the directory holds a store of this kind;
/// `own_file`: a file the store itself may have left before it was whole
/// (a lock file), which does not make the directory foreign. A directory
/// that cannot be read passes: opening it reports why.
pub(crate) fn refuse_foreign_directory(
    path: &Path,
    is_store: bool,
    own_file: impl Fn(&OsStr) -> bool,
) -> Result<(), StoreError> {
    let loc = || path.display().to_string();
    match std::fs::read_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(StoreError::backend(loc(), "not a directory"))
        }
        Err(_) => Ok(()),
        Ok(mut entries) => {
            let only_own = entries.all(|e| e.is_ok_and(|e| own_file(&e.file_name())));
            if is_store || only_own {
                Ok(())
            } else {
                Err(StoreError::backend(
                    loc(),
                    "a non-empty directory that is not a store; refusing to create one in it",
                ))
            }
        }
    }
}

/// True when `e` says a directory or file cannot be written: a read-only
/// file system (`EROFS`), permission denied (`EACCES`), operation not
/// permitted (`EPERM`). The case for a read-only opening.
pub(crate) fn is_unwritable_io(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EROFS | libc::EACCES | libc::EPERM)
    ) || e.kind() == std::io::ErrorKind::PermissionDenied
}

/// How long [`take_lock`] keeps trying a lock that is held.
pub(crate) const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Takes the writer's lock on `lock` (a `flock`), trying again for up to
/// [`LOCK_PATIENCE`] while it is held. A `flock` belongs to the open file,
/// and a child process being started by any thread of this process shares
/// every open file until its `exec` closes them: a store closed and opened
/// again here while another thread spawns a process finds its own old lock
/// still held for that moment (measured: a fifth of openings in a loop
/// beside a thread running `/bin/true`, before this retry; none after). A
/// lock another writer holds is still refused, a second later.
pub(crate) fn take_lock(lock: &std::fs::File) -> Result<(), std::fs::TryLockError> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match lock.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Total bytes on disk of the files under `dir`.
pub(crate) fn dir_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let md = entry.metadata()?;
            if md.is_dir() {
                stack.push(entry.path());
            } else {
                total += allocated(&md);
            }
        }
    }
    Ok(total)
}

/// Bytes a file takes on disk: allocated blocks where the platform says
/// (journals are preallocated sparsely), else its length.
#[cfg(unix)]
fn allocated(md: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    md.blocks() * 512
}

#[cfg(not(unix))]
fn allocated(md: &std::fs::Metadata) -> u64 {
    md.len()
}

/// Refuses a store directory holding anything but regular files and
/// directories (a FIFO, a socket, a device) anywhere under it: a backend
/// that opens its files blocking (fjall) would wait for ever on a FIFO put
/// in one's place. A directory that does not exist or cannot be read
/// passes: opening it reports why.
pub(crate) fn refuse_special_files(dir: &Path) -> Result<(), StoreError> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if !kind.is_file() && !kind.is_symlink() {
                return Err(StoreError::backend(
                    dir.display().to_string(),
                    format!(
                        "cannot open: {} is not a regular file (a FIFO, socket or device)",
                        entry.path().display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Opens the store's file `path` (for reading, or reading and writing),
/// refusing anything but a regular file: a FIFO, a device or a directory
/// put in its place is an error at once (opened without blocking, then
/// checked), never an opening that waits for ever. `None` when there is
/// no such file.
pub(crate) fn open_regular(path: &Path, write: bool) -> std::io::Result<Option<File>> {
    open_checked(path, write, 0)
}

/// [`open_regular`] for a side file the store alone makes (`nodes.ack`,
/// `shamap.ack`, the index checkpoint): a symbolic link in its place is
/// refused too (opened with `O_NOFOLLOW`), so that nothing the store
/// writes lands outside its directory.
pub(crate) fn open_side_file(path: &Path, write: bool) -> std::io::Result<Option<File>> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link, not a regular file (the store makes this file itself)",
                path.display()
            ),
        ));
    }
    open_checked(path, write, libc::O_NOFOLLOW)
}

fn open_checked(path: &Path, write: bool, flags: i32) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | flags)
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
