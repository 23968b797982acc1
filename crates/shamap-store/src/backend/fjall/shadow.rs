//! The read-only opening of a fjall directory that cannot be written:
//! fjall needs its lock and writes while it opens, so it opens a shadow
//! copy.

use std::path::{Path, PathBuf};

/// The shadow directory of a read-only opening: table and blob files
/// linked (fjall never changes one once written), everything else copied.
/// Removed on drop.
#[derive(Debug)]
pub(super) struct ShadowDir {
    pub(super) path: PathBuf,
}

impl ShadowDir {
    pub(super) fn mirror(store: &Path) -> std::io::Result<ShadowDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "shamap-read-only-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let shadow = ShadowDir { path };
        let _ = std::fs::remove_dir_all(&shadow.path);
        std::fs::create_dir_all(&shadow.path)?;
        let store = std::fs::canonicalize(store)?;
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            for entry in std::fs::read_dir(store.join(&rel))? {
                let entry = entry?;
                let name = entry.file_name();
                let rel_child = rel.join(&name);
                let from = store.join(&rel_child);
                let to = shadow.path.join(&rel_child);
                if entry.file_type()?.is_dir() {
                    std::fs::create_dir_all(&to)?;
                    stack.push(rel_child);
                } else if immutable(&rel) {
                    link(&from, &to)?;
                } else {
                    std::fs::copy(&from, &to)?;
                }
            }
        }
        Ok(shadow)
    }
}

/// Table and blob files: written once under a new name, never changed.
pub(super) fn immutable(dir: &Path) -> bool {
    matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("tables" | "blobs")
    )
}

#[cfg(unix)]
pub(super) fn link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
pub(super) fn link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to).map(|_| ())
}

impl Drop for ShadowDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
