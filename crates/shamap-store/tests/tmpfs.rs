//! A tmpfs mounted for one test (root only), for real full-disk and
//! read-only-file-system cases. Shared by the store's and the CLI's tests
//! (the CLI's include this file by path).

use std::path::PathBuf;
use std::process::Command;

/// A tmpfs mounted for one test, unmounted on drop.
pub struct Tmpfs {
    _dir: tempfile::TempDir,
    /// The mount point.
    pub path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount's syntax: `3m`); `None` when this
    /// process may not mount (not root, or no `mount` here), with the
    /// reason printed.
    pub fn mount(size: &str) -> Option<Tmpfs> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).expect("mount point");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: `mount -t tmpfs` failed here");
            return None;
        }
        Some(Tmpfs { _dir: dir, path })
    }

    /// [`Tmpfs::mount`], and the path `db` on it for a store.
    pub fn mount_db(size: &str) -> Option<(Tmpfs, PathBuf)> {
        let fs = Tmpfs::mount(size)?;
        let db = fs.path.join("db");
        Some((fs, db))
    }

    /// Remounts with `opts` (`ro`, `size=64m`, ...).
    pub fn remount(&self, opts: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&self.path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {opts}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}
