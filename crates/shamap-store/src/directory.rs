//! The one rule for creating an on-disk store in a directory: only where
//! there is nothing, an empty directory, or already a store of that kind.

use std::ffi::OsStr;
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
