//! What makes opening a fjall directory safe: the failures put into words
//! for one line, the version files checked before fjall reads them, a
//! panic inside fjall contained, a creation a crash cut short cleared, the
//! acknowledgment record read.

use std::path::Path;

use crate::error::StoreError;

/// A failure of the fjall backend, put into words for one error line.
pub(super) trait FjallFailure {
    fn in_words(&self) -> String;
}

impl FjallFailure for fjall::Error {
    fn in_words(&self) -> String {
        in_words(self)
    }
}

impl FjallFailure for String {
    fn in_words(&self) -> String {
        self.clone()
    }
}

impl FjallFailure for &str {
    fn in_words(&self) -> String {
        (*self).to_owned()
    }
}

impl FjallFailure for std::io::Error {
    fn in_words(&self) -> String {
        self.to_string()
    }
}

/// Checks each keyspace's current version file (`keyspaces/<id>/v<n>`, the
/// list of its tables) against the XXH3-128 checksum its `current` file
/// records (`n` as a `u64`, the checksum as a `u128`, both little-endian,
/// then `0` for XXH3: lsm-tree 3's `persist_version`). lsm-tree reads
/// `current` but does not check the checksum, and asserts on some damaged
/// version files inside a lock its own `Drop` then takes: a panic that
/// cannot be contained (the process aborts). A `current` file of another
/// shape is left to fjall.
pub(super) fn check_version_files(dir: &Path, loc: &str) -> Result<(), StoreError> {
    let keyspaces = dir.join("keyspaces");
    let Ok(entries) = std::fs::read_dir(&keyspaces) else {
        return Ok(());
    };
    let damaged = |what: String| {
        StoreError::backend(
            loc.to_owned(),
            format!("cannot open: {what} (the store's files are damaged)"),
        )
    };
    for entry in entries {
        let entry =
            entry.map_err(|e| damaged(format!("cannot list {}: {e}", keyspaces.display())))?;
        let current = entry.path().join("current");
        let Ok(bytes) = std::fs::read(&current) else {
            continue;
        };
        if bytes.len() != 25 || bytes[24] != 0 {
            continue;
        }
        let id = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let want = u128::from_le_bytes(bytes[8..24].try_into().expect("16 bytes"));
        let name = format!("keyspaces/{}/v{id}", entry.file_name().to_string_lossy());
        let version = std::fs::read(entry.path().join(format!("v{id}"))).map_err(|e| {
            damaged(format!(
                "cannot read {name}, which its `current` names: {e}"
            ))
        })?;
        if xxhash_rust::xxh3::xxh3_128(&version) != want {
            return Err(damaged(format!(
                "{name} ({} bytes) fails the checksum its `current` file records",
                version.len()
            )));
        }
    }
    Ok(())
}

thread_local! {
    /// Set while [`contain_panic`] runs a call into fjall on this thread.
    static PANIC_CONTAINED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a call into fjall that reads the store's files, and turns a
/// panic inside it into an error of one line. fjall and lsm-tree assert on
/// some damaged files instead of returning an error: a flipped bit in a
/// keyspace's version file (`filter_hash_type should be XXH3`), and, in
/// builds with debug assertions, in a journal entry's lengths. The torture
/// harness found both (3 of 323 bit flips on fjall at 541da3d).
///
/// The panic's own report is kept off stderr: the first call installs a
/// panic hook that says nothing for a panic on a thread inside this
/// function and hands every other panic to the hook that was installed
/// before it (a hook set later by the application replaces this one; then
/// a contained panic is reported by it too, and still contained).
pub(super) fn contain_panic<T>(location: &str, f: impl FnOnce() -> T) -> Result<T, StoreError> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !PANIC_CONTAINED.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = PANIC_CONTAINED.with(|c| c.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    PANIC_CONTAINED.with(|c| c.set(was));
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        let first = message.lines().next().unwrap_or_default().to_owned();
        StoreError::backend(
            location.to_owned(),
            format!("cannot open: fjall failed on its own files, which are damaged ({first})"),
        )
    })
}

/// fjall's errors print as their `Debug` form (`FjallError: Io(Os { code:
/// 28, .. })`); this says the same in words (`No space left on device (os
/// error 28)`).
pub(super) fn in_words(e: &fjall::Error) -> String {
    use fjall::Error as E;
    match e {
        E::Io(io) => io.to_string(),
        E::Storage(fjall::LsmError::Io(io)) => io.to_string(),
        E::Storage(fjall::LsmError::ChecksumMismatch { .. }) => {
            "a table block fails its checksum (the files are damaged)".to_owned()
        }
        E::Storage(inner) => format!("the table files are unreadable ({inner:?})"),
        E::Locked => "the store is locked by another process (one writer at a time)".to_owned(),
        E::Poisoned => {
            "an earlier write failed (is the disk full?); the store takes no more writes until reopened"
                .to_owned()
        }
        E::JournalRecovery(inner) => format!("the journal cannot be recovered ({inner})"),
        E::InvalidVersion(v) => format!("not a store of a fjall version this build reads ({v:?})"),
        E::Unrecoverable => "the store cannot be recovered".to_owned(),
        other => format!("{other:?}"),
    }
}

/// A file fjall writes in every database directory it opens.
pub(super) const FJALL_MARKER: &str = "version";

/// fjall's lock file, made first when it creates a database.
pub(super) const FJALL_LOCK: &str = "lock";

/// The whole version marker: `FJL` and the format version byte.
pub(super) const FJALL_MARKER_LEN: u64 = 4;

/// What fjall 3's `Database::create_new` makes, in this order, before its
/// version marker is written and synced: the lock file, the `keyspaces`
/// folder (empty until then) and the first journal `0.jnl` (64 MiB of
/// preallocated zeros). Nothing is written to a database before
/// `create_new` returns, so a directory holding these alone, the marker
/// absent or shorter than its 4 bytes, is a creation that a crash or a
/// kill cut short: no data, and fjall itself cannot finish it (its journal
/// exists, so creating it again fails; without a whole marker it is no
/// store to recover). Before this was handled, a store killed in its first
/// milliseconds was refused at every later opening as "a non-empty
/// directory that is not a store".
///
/// Such leftovers, and only they (exactly these names and kinds), are
/// removed while holding the lock file's lock, so that this opening
/// creates the store afresh; a directory with anything else in it is left
/// to [`crate::backend::directory::refuse_foreign_directory`]. A creation still
/// running in another process holds the lock, and is reported as such.
pub(super) fn clear_unfinished_creation(path: &Path) -> Result<(), StoreError> {
    const LOCK: &str = FJALL_LOCK;
    const KEYSPACES: &str = "keyspaces";
    const FIRST_JOURNAL: &str = "0.jnl";
    let Ok(entries) = std::fs::read_dir(path) else {
        return Ok(()); // absent, or unreadable: the opening reports why
    };
    let mut seen = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else { return Ok(()) };
        let Ok(kind) = entry.file_type() else {
            return Ok(());
        };
        let name = entry.file_name();
        let leftover = match name.to_str() {
            Some(LOCK | FIRST_JOURNAL) => kind.is_file(),
            Some(KEYSPACES) => {
                kind.is_dir()
                    && std::fs::read_dir(entry.path()).is_ok_and(|mut d| d.next().is_none())
            }
            Some(FJALL_MARKER) => {
                kind.is_file() && entry.metadata().is_ok_and(|m| m.len() < FJALL_MARKER_LEN)
            }
            _ => false,
        };
        if !leftover {
            return Ok(());
        }
        seen.push(name);
    }
    if seen.is_empty() || seen.iter().all(|n| n == LOCK) {
        return Ok(()); // nothing begun, or only the lock file, which fjall reuses
    }
    let loc = || path.display().to_string();
    let fail = |what: &str, e: std::io::Error| {
        StoreError::backend(
            loc(),
            format!("an unfinished store creation was found; {what}: {e}"),
        )
    };
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.join(LOCK))
        .map_err(|e| fail("cannot open its lock file", e))?;
    match crate::backend::directory::take_lock(&lock) {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StoreError::backend(
                loc(),
                "the store is being created by another process (its lock is held)",
            ))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(fail("cannot lock it", e)),
    }
    // The marker first: a kill during the clean-up leaves again a state
    // this function recognizes.
    for name in [FJALL_MARKER, FIRST_JOURNAL] {
        match std::fs::remove_file(path.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(fail(&format!("cannot remove its {name}"), e))
            }
            _ => {}
        }
    }
    match std::fs::remove_dir(path.join(KEYSPACES)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(fail("cannot remove its keyspaces folder", e))
        }
        _ => {}
    }
    // The lock file stays (fjall opens an existing one); the lock is
    // released when `lock` closes, before fjall takes it.
    drop(lock);
    Ok(())
}

/// The acknowledgment record of the fjall store in `path`, if it has one.
pub(super) fn read_ack(path: &Path) -> Result<Option<crate::backend::ack::Ack>, StoreError> {
    crate::backend::ack::read(path, super::FJALL_ACK_FILE)
        .map_err(|e| StoreError::backend(path.display().to_string(), format!("cannot open: {e}")))
}
