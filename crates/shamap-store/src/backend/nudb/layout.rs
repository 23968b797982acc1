//! Where rippled's node store is under a path, and which of its NuDB
//! directories are read ([`Layout`]).
//!
//! - One NuDB directory: `nudb.dat` and `nudb.key` in the path.
//! - rippled's `online_delete` rotation: two `rippledb.*` directories under
//!   the path (the writable one and the archive). rippled records their
//!   paths in `state.db` (SQLite, in its `[database_path]`: table
//!   `DbState`, row `Key = 1`, columns `WritableDb` and `ArchiveDb`, as
//!   `initStateDB` in rippled's `State.cpp` creates them). When a
//!   `state.db` is in the path or the one above, it decides: the two
//!   directories it names (by file name under the path, as rippled resolves
//!   them when the configured path moved) are read, writable first, and any
//!   other NuDB files under the path are stale (rippled deletes other
//!   `rippledb.*` directories when it starts, and never the top-level pair
//!   left from before `online_delete`). A named directory that is not there
//!   is refused (rippled refuses to start then: "state db error"). A
//!   `state.db` is consulted only when the path has `rippledb.*`
//!   directories, so one above a single directory (given alone, or another
//!   program's) is not read.
//! - Without `state.db`: the rotated directories newest first (by their
//!   data file's modification time: rippled writes the writable one). When
//!   the path holds both a top-level pair and rotated directories, the ones
//!   whose data was written last are read: rippled writes only one of the
//!   two (the pair without `online_delete`, the rotated ones with it), so
//!   the other is what a change of configuration left behind. The store's
//!   description ([`Layout::describe`]) names what was read and what was
//!   not.
//!
//! Nothing here opens a NuDB file: a `nudb.dat` or `nudb.key` that is not
//! a regular file (a FIFO, which would block the opening; a directory) is
//! named as such, and so is a directory holding one of the two without
//! the other.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::sqlite::regular_file;

/// rippled's `state.db` (`SHAMapStoreImp`: `dbName_`).
pub const STATE_DB: &str = "state.db";
/// The prefix of rippled's rotated directories (`SHAMapStoreImp`:
/// `dbPrefix_`).
pub const ROTATED_PREFIX: &str = "rippledb.";

/// Why these directories are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The path is one NuDB directory.
    Single,
    /// The rotated directories `state.db` names (writable, then archive).
    StateDb(PathBuf),
    /// Rotated directories without `state.db`, newest first.
    Rotated,
}

/// The NuDB directories of a store, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The path given.
    pub path: PathBuf,
    /// The directories read, newest first.
    pub dirs: Vec<PathBuf>,
    /// Why these.
    pub source: Source,
    /// NuDB directories under the path that are not read (stale).
    pub ignored: Vec<PathBuf>,
}

/// True when `dir` holds a NuDB store (`nudb.dat` and `nudb.key`, regular
/// files).
pub fn is_nudb_dir(dir: &Path) -> bool {
    dir.join("nudb.dat").is_file() && dir.join("nudb.key").is_file()
}

/// True when `dir` has a `nudb.dat` or a `nudb.key`, of any kind.
fn has_nudb_file(dir: &Path) -> bool {
    ["nudb.dat", "nudb.key"]
        .iter()
        .any(|n| dir.join(n).symlink_metadata().is_ok())
}

/// True when `path` holds a NuDB store, or what is left of one: a
/// `nudb.dat` or `nudb.key` (of any kind), or `rippledb.*` directories
/// holding one. [`Layout::discover`] then says what is wrong with it.
pub fn is_nudb_store(path: &Path) -> bool {
    has_nudb_file(path) || !rotated_dirs(path).is_empty()
}

/// The `rippledb.*` directories under `path` holding a NuDB file, by name.
fn rotated_dirs(path: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(ROTATED_PREFIX))
        })
        .map(|e| e.path())
        .filter(|p| p.is_dir() && has_nudb_file(p))
        .collect();
    found.sort();
    found
}

/// Checks that `dir` holds a `nudb.dat` and a `nudb.key` that are regular
/// files, without opening them; the error is one line naming what is wrong.
pub fn check_nudb_dir(dir: &Path) -> Result<(), String> {
    let present =
        |name: &str| -> Result<bool, String> { Ok(regular_file(&dir.join(name))?.is_some()) };
    let (dat, key) = (present("nudb.dat")?, present("nudb.key")?);
    match (dat, key) {
        (true, true) => Ok(()),
        (true, false) => Err(format!(
            "{}: nudb.key is missing beside nudb.dat (a NuDB store is both files)",
            dir.display()
        )),
        (false, true) => Err(format!(
            "{}: nudb.dat is missing beside nudb.key (a NuDB store is both files)",
            dir.display()
        )),
        (false, false) => Err(format!("{}: no nudb.dat and nudb.key", dir.display())),
    }
}

/// When `dir`'s NuDB data was last written (its data file's modification
/// time, else its key file's).
fn written_at(dir: &Path) -> SystemTime {
    ["nudb.dat", "nudb.key"]
        .iter()
        .find_map(|n| {
            std::fs::metadata(dir.join(n))
                .and_then(|m| m.modified())
                .ok()
        })
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// `dirs` newest first (by [`written_at`]), then by name.
fn newest_first(dirs: &mut [PathBuf]) {
    dirs.sort_by_cached_key(|d| (std::cmp::Reverse(written_at(d)), d.clone()));
}

/// The file named `name` in `path` or the directory above (rippled's
/// `[database_path]` usually holds the node store's directory).
fn beside(path: &Path, name: &str) -> Option<PathBuf> {
    let mut candidates = vec![path.join(name)];
    if let Some(parent) = path.parent() {
        candidates.push(parent.join(name));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// rippled's `ledger.db` beside the store: in its directory or the one
/// above.
pub fn find_ledger_db(path: &Path) -> Option<PathBuf> {
    beside(path, "ledger.db")
}

/// rippled's `state.db` beside the store: in its directory or the one
/// above.
pub fn find_state_db(path: &Path) -> Option<PathBuf> {
    beside(path, STATE_DB)
}

/// The directories rippled's `state.db` at `path` names: `WritableDb` and
/// `ArchiveDb` of `DbState`'s row 1 (empty strings before rippled's first
/// start with `online_delete`). Read as [`super::sqlite::read`] reads.
pub fn read_state_db(path: &Path) -> Result<(String, String), String> {
    super::sqlite::read(path, |conn| {
        conn.query_row(
            "SELECT WritableDb, ArchiveDb FROM DbState WHERE Key = 1",
            [],
            |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            },
        )
        .map_err(|e| {
            format!(
                "{}: not rippled's state.db (table DbState, row 1): {e}",
                path.display()
            )
        })
    })
}

impl Layout {
    /// The NuDB directories at `path` ([`Layout`]'s rules, in the module's
    /// notes); `None` when there is no NuDB file there at all. The error is
    /// one line: a directory missing one of its two files or holding one
    /// that is not a file, a `state.db` naming directories that are not
    /// there or that cannot be read.
    pub fn discover(path: &Path) -> Result<Option<Layout>, String> {
        let pair = has_nudb_file(path);
        let rotated = rotated_dirs(path);
        // A `state.db` is consulted only where there are rotated
        // directories: another program's `state.db` above a single NuDB
        // directory is not read.
        if !rotated.is_empty() {
            if let Some(state_db) = find_state_db(path) {
                if let Some(layout) = Self::from_state_db(path, &state_db, pair, &rotated)? {
                    return Ok(Some(layout));
                }
            }
        }
        let layout = match (pair, rotated.is_empty()) {
            (false, true) => return Ok(None),
            (true, true) => Layout {
                path: path.to_owned(),
                dirs: vec![path.to_owned()],
                source: Source::Single,
                ignored: Vec::new(),
            },
            (false, false) => {
                let mut dirs = rotated;
                newest_first(&mut dirs);
                Layout {
                    path: path.to_owned(),
                    dirs,
                    source: Source::Rotated,
                    ignored: Vec::new(),
                }
            }
            (true, false) => {
                let mut dirs = rotated;
                newest_first(&mut dirs);
                if written_at(path) >= written_at(&dirs[0]) {
                    Layout {
                        path: path.to_owned(),
                        dirs: vec![path.to_owned()],
                        source: Source::Single,
                        ignored: dirs,
                    }
                } else {
                    Layout {
                        path: path.to_owned(),
                        dirs,
                        source: Source::Rotated,
                        ignored: vec![path.to_owned()],
                    }
                }
            }
        };
        for d in &layout.dirs {
            check_nudb_dir(d)?;
        }
        Ok(Some(layout))
    }

    /// The layout `state_db` gives `path` (which has the rotated
    /// directories `rotated`), or `None` when it names nothing yet.
    fn from_state_db(
        path: &Path,
        state_db: &Path,
        pair: bool,
        rotated: &[PathBuf],
    ) -> Result<Option<Layout>, String> {
        let (writable, archive) = read_state_db(state_db)?;
        let named: Vec<(&str, &str)> = [
            ("WritableDb", writable.as_str()),
            ("ArchiveDb", archive.as_str()),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect();
        if named.is_empty() {
            return Ok(None);
        }
        let mut dirs = Vec::new();
        for (column, value) in &named {
            let Some(file_name) = Path::new(value).file_name() else {
                return Err(format!(
                    "{}: {column} is {value:?}, not a directory's path",
                    state_db.display()
                ));
            };
            dirs.push((column, value, path.join(file_name)));
        }
        for (column, value, d) in &dirs {
            if !d.is_dir() {
                let present: Vec<String> = rotated
                    .iter()
                    .filter_map(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                return Err(format!(
                    "{}: {column} is {value}, but {} is not a directory ({} holds {}): rippled would refuse to start (\"state db error\")",
                    state_db.display(),
                    d.display(),
                    path.display(),
                    if present.is_empty() {
                        "no rippledb.* directory".to_owned()
                    } else {
                        present.join(", ")
                    }
                ));
            }
            check_nudb_dir(d)?;
        }
        let mut read: Vec<PathBuf> = dirs.into_iter().map(|(_, _, d)| d).collect();
        read.dedup();
        let mut ignored: Vec<PathBuf> = Vec::new();
        if pair {
            ignored.push(path.to_owned());
        }
        ignored.extend(rotated.iter().filter(|r| !read.contains(r)).cloned());
        Ok(Some(Layout {
            path: path.to_owned(),
            dirs: read,
            source: Source::StateDb(state_db.to_owned()),
            ignored,
        }))
    }

    /// One line: which directories are read, and why; which are not.
    pub fn describe(&self) -> String {
        let list = |ds: &[PathBuf]| {
            ds.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = match &self.source {
            Source::Single => format!("one NuDB directory, {}", self.path.display()),
            Source::StateDb(db) => match self.dirs.as_slice() {
                [w, a] => format!(
                    "the rotated directories {} names: writable {}, archive {}",
                    db.display(),
                    w.display(),
                    a.display()
                ),
                ds => format!(
                    "the rotated directories {} names: {}",
                    db.display(),
                    list(ds)
                ),
            },
            Source::Rotated => format!(
                "rotated directories, newest data first (no {STATE_DB} in {} or above): {}",
                self.path.display(),
                list(&self.dirs)
            ),
        };
        if !self.ignored.is_empty() {
            let why = match self.source {
                Source::StateDb(_) => format!("stale: {STATE_DB} does not name them"),
                _ => "stale: older data than what is read".to_owned(),
            };
            let what: Vec<String> = self
                .ignored
                .iter()
                .map(|d| {
                    if d == &self.path {
                        format!("the nudb.dat and nudb.key in {}", d.display())
                    } else {
                        d.display().to_string()
                    }
                })
                .collect();
            out.push_str(&format!("; not read ({why}): {}", what.join(", ")));
        }
        out
    }
}

/// The NuDB directories read at `path`, newest first ([`Layout::discover`]);
/// empty when there is no NuDB file there.
pub fn nudb_dirs(path: &Path) -> Result<Vec<PathBuf>, String> {
    Ok(Layout::discover(path)?.map(|l| l.dirs).unwrap_or_default())
}
