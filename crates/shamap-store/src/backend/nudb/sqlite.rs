//! rippled's SQLite databases (`ledger.db`, `state.db`) read as rippled
//! leaves them, running or killed, without creating, writing, truncating
//! or deleting a file beside them.
//!
//! rippled opens `ledger.db` in WAL mode: while it runs, and after it is
//! killed, its newest rows are only in `ledger.db-wal`, indexed by
//! `ledger.db-shm`. What SQLite (3.50, as rusqlite 0.37 bundles it) does
//! with a database opened read-only, measured with `strace` and by every
//! file's bytes before and after (a killed writer's `-wal` and `-shm`, a
//! `-wal` without `-shm`, a writer alive in another process, no `-wal`):
//!
//! - `mode=ro` alone opens `-wal` and `-shm` with `O_RDWR|O_CREAT`: it
//!   creates them when they are missing and writes the `-shm`.
//! - `immutable=1` opens the database file alone: rows only in the WAL are
//!   not seen.
//! - `PRAGMA locking_mode=EXCLUSIVE` before the first read fails ("disk
//!   I/O error"): the exclusive lock is a write lock, refused on a file
//!   opened read-only.
//! - `readonly_shm=1` opens the `-shm` read-only and never creates it; it
//!   takes read locks only. Beside a live writer it reads through the
//!   writer's index; when no process holds the `-shm` (a killed writer) it
//!   rebuilds the index from the `-wal` in heap memory. Without a `-shm` it
//!   cannot open ("unable to open database file"), and without a `-wal` it
//!   creates an empty one.
//! - The `unix-none` VFS (no file locks) with `locking_mode=EXCLUSIVE`
//!   keeps the WAL index in heap memory and never opens a `-shm`.
//! - Both open the `-wal` with `O_RDWR|O_CREAT` (no parameter changes
//!   that); an existing one is not written. Closing a connection tries a
//!   checkpoint (with `unix-none` it reached a write to the database file,
//!   refused only because the file was opened read-only): it is turned off
//!   (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), and then nothing is written.
//!
//! So the files beside the database decide ([`Opening`]): no `-wal`,
//! `immutable=1` (every row is in the database file); a `-wal` and a
//! `-shm`, `readonly_shm=1`; a `-wal` without a `-shm` (no writer is
//! alive: rippled's connections always map a `-shm`), `unix-none` with
//! exclusive locking. The two unlocked readings are checked afterwards: when
//! the database or its `-wal` changed meanwhile (a writer started), or a
//! `-wal` or `-shm` appeared, the reading is done again (three times at
//! most). A non-empty `-journal` (a rollback-journal writer inside a
//! transaction, or killed in one) is waited for the same way, then refused.
//!
//! Limits: run as root, SQLite gives the `-wal` and `-shm` it opens to the
//! database file's owner (`fchown` to the owner they have: only their
//! change time moves). A `-wal` deleted in the instant between the check
//! and SQLite's open (rippled closing then) is created again, empty, by
//! SQLite; an empty WAL is ignored by SQLite and rippled.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

/// How a database is opened, chosen by the files beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// No `-wal`: `immutable=1`, the database file alone.
    Immutable,
    /// A `-wal` and a `-shm`: `readonly_shm=1`, read locks only.
    SharedIndexReadOnly,
    /// A `-wal` without a `-shm`: the `unix-none` VFS, exclusive locking
    /// mode (the WAL index in heap memory).
    PrivateIndex,
}

impl Opening {
    fn uri_params(self) -> &'static str {
        match self {
            Opening::Immutable => "mode=ro&immutable=1",
            Opening::SharedIndexReadOnly => "mode=ro&readonly_shm=1",
            Opening::PrivateIndex => "mode=ro&vfs=unix-none",
        }
    }

    /// True when SQLite takes no lock, so a writer could change the files
    /// under the reading.
    fn unlocked(self) -> bool {
        self != Opening::SharedIndexReadOnly
    }
}

/// What identifies a file's content cheaply: inode, length, modification
/// time.
type Stamp = Option<(u64, u64, u64, i64, i64)>;

/// The database and the files SQLite keeps beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Beside {
    db: Stamp,
    wal: Stamp,
    shm: Stamp,
    journal: Stamp,
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// What a file that is not a regular file is, for messages.
pub fn kind_name(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// `p`'s metadata when it is a regular file, `None` when it does not
/// exist; an error naming it when it is anything else (a FIFO would block
/// an opening) or a symbolic link to nothing. Nothing is opened.
pub(crate) fn regular_file(p: &Path) -> Result<Option<std::fs::Metadata>, String> {
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => Ok(Some(m)),
        Ok(m) => Err(format!(
            "{}: {}, not a file",
            p.display(),
            kind_name(m.file_type())
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if p.symlink_metadata().is_ok() {
                Err(format!("{}: a symbolic link to nothing", p.display()))
            } else {
                Ok(None)
            }
        }
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

/// The stamp of `p`, `None` when it does not exist ([`regular_file`]).
fn stamp(p: &Path) -> Result<Stamp, String> {
    Ok(regular_file(p)?.map(|m| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec())))
}

impl Beside {
    fn of(path: &Path) -> Result<Beside, String> {
        Ok(Beside {
            db: stamp(path)?,
            wal: stamp(&sibling(path, "-wal"))?,
            shm: stamp(&sibling(path, "-shm"))?,
            journal: stamp(&sibling(path, "-journal"))?,
        })
    }

    fn opening(&self) -> Opening {
        match (self.wal.is_some(), self.shm.is_some()) {
            (false, _) => Opening::Immutable,
            (true, true) => Opening::SharedIndexReadOnly,
            (true, false) => Opening::PrivateIndex,
        }
    }

    /// Bytes of a `-journal` (a transaction in progress or interrupted).
    fn journal_len(&self) -> u64 {
        self.journal.map_or(0, |j| j.2)
    }
}

/// How [`read`] would open `path` now.
pub fn opening(path: &Path) -> Result<Opening, String> {
    Ok(Beside::of(path)?.opening())
}

/// Times a reading is done again when the files changed under it.
const ATTEMPTS: usize = 3;

/// Opens the SQLite database `path` read-only as the files beside it say
/// ([`Opening`], the module's notes) and runs `f` on it; an unlocked reading
/// during which the files changed is done again. Nothing is created,
/// written or deleted beside `path`. Errors are one line naming the file.
pub fn read<T>(
    path: &Path,
    mut f: impl FnMut(&Connection) -> Result<T, String>,
) -> Result<T, String> {
    let name = path.display();
    let mut last_change = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(50 << attempt));
        }
        let before = Beside::of(path)?;
        if before.db.is_none() {
            return Err(format!("{name}: no such file"));
        }
        if before.journal_len() > 0 {
            last_change = format!(
                "{}: {} bytes: a transaction SQLite has not finished (a writer inside it, or killed in it; SQLite rolls it back when a writer opens the database, which this reader never does)",
                sibling(path, "-journal").display(),
                before.journal_len()
            );
            continue;
        }
        let how = before.opening();
        let value = {
            let conn = open(path, how)?;
            f(&conn)?
        };
        if !how.unlocked() {
            return Ok(value);
        }
        let after = Beside::of(path)?;
        if after == before {
            return Ok(value);
        }
        last_change = format!(
            "{name}: the database or its -wal changed while it was read without a lock (a writer started?) {ATTEMPTS} times"
        );
    }
    Err(last_change)
}

/// Opens `path` as `how` says, read-only, without a checkpoint at closing.
fn open(path: &Path, how: Opening) -> Result<Connection, String> {
    let name = path.display();
    let uri = format!("file:{}?{}", uri_path(path), how.uri_params());
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("{name}: {e}"))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .map_err(|e| format!("{name}: turning the checkpoint at closing off: {e}"))?;
    if how == Opening::PrivateIndex {
        // Before the first read: the WAL index is then kept in heap memory.
        conn.query_row("PRAGMA locking_mode=EXCLUSIVE", [], |_| Ok(()))
            .map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(conn)
}

/// `path` for a `file:` URI: the characters a URI gives a meaning to
/// (`%`, `?`, `#`) escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}
