//! The stores the harness tortures: how to open each and which of its
//! files the faults aim at.

use std::path::Path;

use shamap_store::{FjallStore, LogStore, NodeStore, StoreError};

use super::faults::Class;

/// A store the harness tortures: how to open it and which of its files
/// the file faults aim at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Backend {
    /// The node log (`LogStore`), the default store.
    Log,
    /// fjall (`FjallStore`).
    Fjall,
    /// RocksDB (`RocksStore`), with the `rocksdb` feature.
    #[cfg(feature = "rocksdb")]
    Rocks,
}

impl Backend {
    pub(super) fn name(self) -> &'static str {
        match self {
            Backend::Log => "log",
            Backend::Fjall => "fjall",
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => "rocks",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Backend> {
        match name {
            "log" => Some(Backend::Log),
            "fjall" => Some(Backend::Fjall),
            #[cfg(feature = "rocksdb")]
            "rocks" => Some(Backend::Rocks),
            _ => None,
        }
    }

    pub(super) fn open(self, dir: &Path) -> Result<Box<dyn NodeStore>, StoreError> {
        Ok(match self {
            Backend::Log => Box::new(LogStore::open(dir)?),
            Backend::Fjall => Box::new(FjallStore::open(dir)?),
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => Box::new(shamap_store::RocksStore::open(dir)?),
        })
    }

    /// Opens for a look that changes nothing, where the backend has such
    /// an opening that is cheap (the node log: a writer's opening removes
    /// the index checkpoint, which the copies taken next should keep).
    pub(super) fn open_read_only(self, dir: &Path) -> Result<Box<dyn NodeStore>, StoreError> {
        match self {
            Backend::Log => Ok(Box::new(LogStore::open_read_only(dir)?)),
            other => other.open(dir),
        }
    }

    /// True when `dir` holds a store of this backend.
    pub(super) fn is_store(self, dir: &Path) -> bool {
        match self {
            Backend::Log => LogStore::is_store(dir),
            Backend::Fjall => FjallStore::is_store(dir),
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => dir.join("CURRENT").is_file(),
        }
    }

    /// The writer's lock file.
    pub(super) fn lock_file(self) -> &'static str {
        match self {
            Backend::Log => "LOCK",
            Backend::Fjall => "lock",
            #[cfg(feature = "rocksdb")]
            Backend::Rocks => "LOCK",
        }
    }

    /// The fault classes that apply to this backend's files.
    pub(super) fn classes(self) -> &'static [Class] {
        match self {
            Backend::Log => &Class::ALL,
            // Batches are the node log's own format; elsewhere the files
            // are the engine's.
            _ => &Class::ENGINE,
        }
    }
}
