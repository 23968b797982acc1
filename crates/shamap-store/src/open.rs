//! One way to open a store from a location: a directory holding a node
//! log ([`LogStore`], what a new directory store is) or a fjall database
//! an earlier version made ([`FjallStore`]), rippled's NuDB node store
//! (`nudb.dat` and `nudb.key`, or rotated `rippledb.*` directories; also
//! named `nudb:DIR`; read-only, `NudbStore`, with the `nudb` feature), or
//! a `cassandra://` URL
//! ([`crate::CassandraStore`], with the `cassandra` feature). The CLI, the
//! benchmark and the examples open stores only through [`open`] and
//! [`open_with`]; which backend a location holds is decided here, once.

use std::path::{Path, PathBuf};

use crate::backend::fjall::{FjallOptions, FjallStore};
use crate::backend::log_store::LogStore;
#[cfg(feature = "nudb")]
use crate::backend::nudb::{is_nudb_store, NudbStore};
use crate::error::StoreError;
use crate::store::{Access, NodeStore};

/// The format a new directory store is created in ([`Access::Create`]
/// where there is no store yet). An existing store opens in its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NewStore {
    /// The node log (the default).
    #[default]
    NodeLog,
    /// fjall (for comparisons: the benchmark's `ours-fjall`).
    Fjall,
    /// RocksDB (for comparisons; with the `rocksdb` feature).
    #[cfg(feature = "rocksdb")]
    Rocks,
}

/// How to open a store.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// What the opening is for.
    pub access: Access,
    /// The format of a store created here.
    pub new_store: NewStore,
    /// fjall's caches, for a fjall database: by default fjall's own
    /// ([`FjallOptions::default`]); [`FjallOptions::beside_node_cache`]
    /// under a backed map, so that its memory is the node-cache budget
    /// plus a fixed overhead.
    pub fjall: FjallOptions,
}

impl OpenOptions {
    /// `access`, a node log for a new store, fjall's default caches.
    pub fn new(access: Access) -> OpenOptions {
        OpenOptions {
            access,
            new_store: NewStore::default(),
            fjall: FjallOptions::default(),
        }
    }
}

/// An opened store, by backend.
#[derive(Debug)]
#[non_exhaustive]
pub enum Opened {
    /// A node log.
    Log(LogStore),
    /// A fjall database.
    Fjall(FjallStore),
    /// A RocksDB database.
    #[cfg(feature = "rocksdb")]
    Rocks(crate::RocksStore),
    /// A Cassandra (or ScyllaDB) keyspace.
    #[cfg(feature = "cassandra")]
    Cassandra(crate::CassandraStore),
    /// rippled's NuDB node store (read-only).
    #[cfg(feature = "nudb")]
    Nudb(NudbStore),
}

impl Opened {
    /// The store.
    pub fn store(&self) -> &dyn NodeStore {
        match self {
            Opened::Log(s) => s,
            Opened::Fjall(s) => s,
            #[cfg(feature = "rocksdb")]
            Opened::Rocks(s) => s,
            #[cfg(feature = "cassandra")]
            Opened::Cassandra(s) => s,
            #[cfg(feature = "nudb")]
            Opened::Nudb(s) => s,
        }
    }

    /// The store, boxed.
    pub fn into_boxed(self) -> Box<dyn NodeStore> {
        match self {
            Opened::Log(s) => Box::new(s),
            Opened::Fjall(s) => Box::new(s),
            #[cfg(feature = "rocksdb")]
            Opened::Rocks(s) => Box::new(s),
            #[cfg(feature = "cassandra")]
            Opened::Cassandra(s) => Box::new(s),
            #[cfg(feature = "nudb")]
            Opened::Nudb(s) => Box::new(s),
        }
    }
}

/// Opens the store at `location` for `access`, with the default options.
pub fn open(location: impl AsRef<Path>, access: Access) -> Result<Box<dyn NodeStore>, StoreError> {
    open_with(location, &OpenOptions::new(access)).map(Opened::into_boxed)
}

/// Opens the store at `location` as `opts` say. A mistyped directory is an
/// error ([`StoreError::NoStore`]) unless creating; another writer's store
/// is [`StoreError::Locked`].
pub fn open_with(location: impl AsRef<Path>, opts: &OpenOptions) -> Result<Opened, StoreError> {
    decide_and_open(location.as_ref(), opts, false).map(|(o, _)| o)
}

/// Opens the store at `location` read-only to audit it
/// ([`crate::map::audit`]): as [`open_with`] decides, except that a node
/// log is read whole by [`LogStore::open_audit`], whose damage comes back
/// as the audit's finding rather than as an error.
pub fn open_to_audit(
    location: impl AsRef<Path>,
) -> Result<(Opened, Option<crate::backend::log_store::LogAudit>), StoreError> {
    decide_and_open(location.as_ref(), &OpenOptions::new(Access::Read), true)
}

/// Where the backend is decided, once, for [`open_with`] and
/// [`open_to_audit`].
fn decide_and_open(
    dir: &Path,
    opts: &OpenOptions,
    audit: bool,
) -> Result<(Opened, Option<crate::backend::log_store::LogAudit>), StoreError> {
    let plain = |o: Result<Opened, StoreError>| o.map(|o| (o, None));
    if let Some(url) = dir.to_str().filter(|s| is_cassandra_url(s)) {
        return plain(open_cassandra(url, opts.access));
    }
    if let Some(nudb) = dir.to_str().and_then(|s| s.strip_prefix("nudb:")) {
        return plain(open_nudb(Path::new(nudb), opts.access));
    }
    let no_store = |reason: &str| StoreError::NoStore {
        location: dir.display().to_string(),
        reason: reason.to_owned(),
    };
    if opts.access != Access::Create && !dir.is_dir() {
        return Err(no_store("no store here (not a directory)"));
    }
    #[cfg(feature = "nudb")]
    if is_nudb_store(dir) {
        return plain(open_nudb(dir, opts.access));
    }
    // A directory that cannot be listed (mode 000, another user's) may well
    // hold a store: say so, not that there is none.
    if dir.is_dir() {
        if let Err(e) = std::fs::read_dir(dir) {
            return Err(StoreError::backend(
                dir.display().to_string(),
                format!("cannot read the directory: {e}"),
            ));
        }
    }
    if FjallStore::is_store(dir) {
        return plain(open_fjall(dir, opts));
    }
    if LogStore::is_store(dir) {
        if audit {
            let (store, a) = LogStore::open_audit(dir)?;
            return Ok((Opened::Log(store), Some(a)));
        }
        return plain(Ok(Opened::Log(match opts.access {
            Access::Read => LogStore::open_read_only(dir)?,
            Access::Create | Access::Write => LogStore::open(dir)?,
        })));
    }
    if opts.access != Access::Create {
        return Err(no_store(
            "no store here (neither a node log nor a fjall database)",
        ));
    }
    match opts.new_store {
        NewStore::NodeLog => plain(Ok(Opened::Log(LogStore::open(dir)?))),
        NewStore::Fjall => plain(open_fjall(dir, opts)),
        #[cfg(feature = "rocksdb")]
        NewStore::Rocks => plain(Ok(Opened::Rocks(crate::RocksStore::open(dir)?))),
    }
}

/// Opens rippled's NuDB store at `dir`, for reading only.
#[cfg(feature = "nudb")]
fn open_nudb(dir: &Path, access: Access) -> Result<Opened, StoreError> {
    if access != Access::Read {
        return Err(StoreError::NoStore {
            location: dir.display().to_string(),
            reason: crate::backend::nudb::store::READ_ONLY.to_owned(),
        });
    }
    Ok(Opened::Nudb(NudbStore::open(dir)?))
}

#[cfg(not(feature = "nudb"))]
fn open_nudb(dir: &Path, _: Access) -> Result<Opened, StoreError> {
    Err(StoreError::NoStore {
        location: dir.display().to_string(),
        reason: "this build reads no rippled NuDB store (feature `nudb`)".to_owned(),
    })
}

/// What reading a store reads on the local file system ([`paths_read`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathsRead {
    /// The store's directory (for `nudb:DIR`, DIR; rotated `rippledb.*`
    /// directories are inside it).
    pub dir: PathBuf,
    /// rippled's `ledger.db` read with a NuDB store (in its directory or
    /// the one above), when there is one.
    pub ledger_db: Option<PathBuf>,
}

/// What opening the store at `location` to read it reads, as
/// [`open_with`] decides, without opening it: for a command that must not
/// write where it reads. `None` for a Cassandra keyspace (no path).
pub fn paths_read(location: &Path) -> Option<PathsRead> {
    let text = location.to_str().unwrap_or_default();
    if is_cassandra_url(text) {
        return None;
    }
    let dir = text
        .strip_prefix("nudb:")
        .map_or_else(|| location.to_owned(), PathBuf::from);
    #[cfg(feature = "nudb")]
    let ledger_db = if dir.is_dir() && is_nudb_store(&dir) {
        crate::backend::nudb::layout::find_ledger_db(&dir)
    } else {
        None
    };
    #[cfg(not(feature = "nudb"))]
    let ledger_db = None;
    Some(PathsRead { dir, ledger_db })
}

/// True when `s` names a Cassandra keyspace rather than a directory.
pub fn is_cassandra_url(s: &str) -> bool {
    s.starts_with("cassandra://")
}

fn open_fjall(dir: &Path, opts: &OpenOptions) -> Result<Opened, StoreError> {
    match FjallStore::open_with(dir, &opts.fjall) {
        Err(e) if opts.access == Access::Read && FjallStore::is_unwritable(&e) => {
            Ok(Opened::Fjall(FjallStore::open_read_only(dir)?))
        }
        other => Ok(Opened::Fjall(other?)),
    }
}

#[cfg(feature = "cassandra")]
fn open_cassandra(url: &str, access: Access) -> Result<Opened, StoreError> {
    Ok(Opened::Cassandra(crate::CassandraStore::open_url(
        url, access,
    )?))
}

#[cfg(not(feature = "cassandra"))]
fn open_cassandra(url: &str, _: Access) -> Result<Opened, StoreError> {
    Err(StoreError::NoStore {
        location: url.to_owned(),
        reason: "this build has no Cassandra backend (feature `cassandra`)".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_opens_as_the_store_it_holds_and_errors_are_typed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let fjall = dir.path().join("fjall");
        let nothing = dir.path().join("nothing");
        assert!(matches!(
            open(&nothing, Access::Read),
            Err(StoreError::NoStore { .. })
        ));
        assert!(matches!(
            open(&nothing, Access::Write),
            Err(StoreError::NoStore { .. })
        ));
        let created = open_with(&log, &OpenOptions::new(Access::Create)).expect("create");
        assert!(matches!(created, Opened::Log(_)));
        assert!(matches!(
            open(&log, Access::Write),
            Err(StoreError::Locked { .. })
        ));
        assert!(matches!(
            open_with(&log, &OpenOptions::new(Access::Read)).expect("a reader"),
            Opened::Log(_)
        ));
        drop(created);
        let mut opts = OpenOptions::new(Access::Create);
        opts.new_store = NewStore::Fjall;
        drop(open_with(&fjall, &opts).expect("create fjall"));
        // An existing store opens in its own format, whatever a new one
        // would be.
        assert!(matches!(
            open_with(&fjall, &OpenOptions::new(Access::Write)).expect("reopen"),
            Opened::Fjall(_)
        ));
        std::fs::write(nothing.with_extension("txt"), b"x").expect("file");
        assert!(matches!(
            open(nothing.with_extension("txt"), Access::Read),
            Err(StoreError::NoStore { .. })
        ));
    }
}
