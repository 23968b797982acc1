//! A file layer that loses what was never synced, for the power-loss
//! fault: an in-memory FUSE file system, in the manner of LazyFS (the file
//! system Jepsen and SQLite's testers use for the same job).
//!
//! Every write reaches it (it is mounted without a write-back cache, so
//! `write` returns only after the bytes are here) and it remembers, per
//! file, what each 4 KiB page held when the file was last synced
//! (`fsync`/`fdatasync`), and the file's length then. A power loss
//! ([`CrashFs::power_loss`]) writes an image of what a disk could hold
//! after the power went out:
//!
//! - **file data**: every synced page as synced; each page written since
//!   the last sync either as written or as it was when synced (zeros
//!   above the synced length), independently, with a probability of loss
//!   chosen per case (so any subset of the unsynced pages, not only a
//!   suffix); the length anywhere from the synced one to the current one,
//!   at a page boundary or either end;
//! - **names** (create, mkdir, unlink, rename): in order, as a journaling
//!   file system keeps them: every operation up to the last one a synced
//!   directory covers (`fsync` of the directory; the operations before it
//!   ride in the same journal commit), then a random prefix of the rest.
//!   Syncing a file does not make its name durable (POSIX; ext4 happens to
//!   do it, other file systems do not).
//!
//! **The cut** can be armed to fall on the N-th change the file system is
//! asked for ([`Mounted::arm`]): that request and every later one wait,
//! unanswered, until the image is made, so the power goes out in the
//! middle of whatever the writer was doing (a spill, a batch, a sync), as
//! LazyFS's fault injection does; or the harness cuts at once
//! ([`Mounted::cut_now`]). Either way nothing the writer does after the
//! cut reaches the image, and no sync after it is answered.
//!
//! Not modelled: a torn write inside one page (a page is written whole or
//! not at all, as the 4 KiB atomic sector size of the disks rippled's
//! operators use), hard and symbolic links (refused), extended
//! attributes.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{FileAttr, FileType, MountOption, FUSE_ROOT_ID};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// Bytes of a page: written back whole or not at all.
pub(super) const PAGE: u64 = 4096;

/// How long the kernel may cache names and attributes. Every change goes
/// through the mount, so its caches stay true.
const TTL: Duration = Duration::from_secs(1);

#[derive(Clone)]
struct FileData {
    data: Vec<u8>,
    /// The length when last synced.
    synced_len: u64,
    /// Pages changed since the last sync: what each held then (its bytes
    /// below the length of that moment; zeros past them).
    undo: BTreeMap<u64, Vec<u8>>,
}

impl FileData {
    fn new(data: Vec<u8>) -> FileData {
        FileData {
            synced_len: data.len() as u64,
            data,
            undo: BTreeMap::new(),
        }
    }

    /// Remembers the synced bytes of the pages `[from, to)` touches,
    /// before they change.
    fn touch(&mut self, from: u64, to: u64) {
        if to <= from {
            return;
        }
        for page in from / PAGE..to.div_ceil(PAGE) {
            self.undo.entry(page).or_insert_with(|| {
                let start = ((page * PAGE) as usize).min(self.data.len());
                let end = (((page + 1) * PAGE) as usize).min(self.data.len());
                self.data[start..end].to_vec()
            });
        }
    }

    fn write(&mut self, at: u64, bytes: &[u8]) {
        let end = at + bytes.len() as u64;
        self.touch(at, end);
        if end as usize > self.data.len() {
            self.data.resize(end as usize, 0);
        }
        self.data[at as usize..end as usize].copy_from_slice(bytes);
    }

    fn set_len(&mut self, len: u64) {
        let old = self.data.len() as u64;
        if len < old {
            self.touch(len, old);
        }
        self.data.resize(len as usize, 0);
    }

    fn sync(&mut self) {
        self.undo.clear();
        self.synced_len = self.data.len() as u64;
    }

    fn unsynced_pages(&self) -> usize {
        self.undo.len()
    }

    /// The bytes a disk could hold after a power loss: each unsynced page
    /// lost with probability `p`; the length between the synced and the
    /// current one. Returns the bytes and the number of pages lost.
    fn after_power_loss(&self, p: f64, rng: &mut SmallRng) -> (Vec<u8>, usize) {
        let now = self.data.len() as u64;
        let (lo, hi) = (self.synced_len.min(now), self.synced_len.max(now));
        let len = if lo == hi {
            hi
        } else {
            match rng.gen_range(0..3) {
                0 => self.synced_len,
                1 => now,
                _ => rng
                    .gen_range(lo.div_ceil(PAGE)..=hi.div_ceil(PAGE))
                    .saturating_mul(PAGE)
                    .clamp(lo, hi),
            }
        };
        let mut out = vec![0u8; len as usize];
        let mut lost = 0;
        for page in 0..len.div_ceil(PAGE) {
            let start = (page * PAGE) as usize;
            let end = (((page + 1) * PAGE) as usize).min(len as usize);
            let from: &[u8] = match self.undo.get(&page) {
                Some(synced) if rng.gen_bool(p) => {
                    lost += 1;
                    synced
                }
                _ => {
                    let have = self.data.len();
                    &self.data[start.min(have)..end.min(have)]
                }
            };
            let n = from.len().min(end - start);
            out[start..start + n].copy_from_slice(&from[..n]);
        }
        (out, lost)
    }
}

#[derive(Clone)]
enum Kind {
    File(FileData),
    Dir(BTreeMap<OsString, u64>),
}

struct Inode {
    kind: Kind,
    perm: u16,
    mtime: SystemTime,
}

/// A change of names, in the order made.
#[derive(Clone, Debug)]
enum NameOp {
    Link {
        dir: u64,
        name: OsString,
        ino: u64,
    },
    Unlink {
        dir: u64,
        name: OsString,
    },
    Rename {
        from_dir: u64,
        from: OsString,
        to_dir: u64,
        to: OsString,
    },
}

impl NameOp {
    fn touches(&self, d: u64) -> bool {
        match self {
            NameOp::Link { dir, .. } | NameOp::Unlink { dir, .. } => *dir == d,
            NameOp::Rename {
                from_dir, to_dir, ..
            } => *from_dir == d || *to_dir == d,
        }
    }

    fn apply(&self, names: &mut HashMap<u64, BTreeMap<OsString, u64>>) {
        match self {
            NameOp::Link { dir, name, ino } => {
                names.entry(*dir).or_default().insert(name.clone(), *ino);
            }
            NameOp::Unlink { dir, name } => {
                names.entry(*dir).or_default().remove(name);
            }
            NameOp::Rename {
                from_dir,
                from,
                to_dir,
                to,
            } => {
                if let Some(ino) = names.entry(*from_dir).or_default().remove(from) {
                    names.entry(*to_dir).or_default().insert(to.clone(), ino);
                }
            }
        }
    }
}

struct State {
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
    /// The names when mounted (all durable).
    base: HashMap<u64, BTreeMap<OsString, u64>>,
    /// Changes of names since, and how many of them are durable.
    ops: Vec<NameOp>,
    durable_ops: usize,
    /// Counts, for the case's line.
    syncs: u64,
    writes: u64,
}

impl State {
    fn new() -> State {
        let mut inodes = HashMap::new();
        inodes.insert(
            FUSE_ROOT_ID,
            Inode {
                kind: Kind::Dir(BTreeMap::new()),
                perm: 0o755,
                mtime: SystemTime::now(),
            },
        );
        State {
            inodes,
            next_ino: FUSE_ROOT_ID + 1,
            base: HashMap::new(),
            ops: Vec::new(),
            durable_ops: 0,
            syncs: 0,
            writes: 0,
        }
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let node = self.inodes.get(&ino)?;
        let (kind, size, nlink) = match &node.kind {
            Kind::File(f) => (FileType::RegularFile, f.data.len() as u64, 1),
            Kind::Dir(_) => (FileType::Directory, 0, 2),
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: node.mtime,
            mtime: node.mtime,
            ctime: node.mtime,
            crtime: node.mtime,
            kind,
            perm: node.perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: PAGE as u32,
            flags: 0,
        })
    }

    fn dir(&self, ino: u64) -> Result<&BTreeMap<OsString, u64>, i32> {
        match self.inodes.get(&ino).map(|n| &n.kind) {
            Some(Kind::Dir(d)) => Ok(d),
            Some(Kind::File(_)) => Err(libc::ENOTDIR),
            None => Err(libc::ENOENT),
        }
    }

    fn dir_mut(&mut self, ino: u64) -> Result<&mut BTreeMap<OsString, u64>, i32> {
        match self.inodes.get_mut(&ino).map(|n| &mut n.kind) {
            Some(Kind::Dir(d)) => Ok(d),
            Some(Kind::File(_)) => Err(libc::ENOTDIR),
            None => Err(libc::ENOENT),
        }
    }

    fn file_mut(&mut self, ino: u64) -> Result<&mut FileData, i32> {
        let node = self.inodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        node.mtime = SystemTime::now();
        match &mut node.kind {
            Kind::File(f) => Ok(f),
            Kind::Dir(_) => Err(libc::EISDIR),
        }
    }

    /// The inode named `name` in `parent`.
    fn child(&self, parent: u64, name: &OsStr) -> Result<u64, i32> {
        self.dir(parent)?.get(name).copied().ok_or(libc::ENOENT)
    }

    /// Removes the name `name` from `parent` (which holds it).
    fn remove_name(&mut self, parent: u64, name: &OsStr) {
        if let Ok(d) = self.dir_mut(parent) {
            d.remove(name);
        }
        self.ops.push(NameOp::Unlink {
            dir: parent,
            name: name.to_owned(),
        });
    }

    /// A new inode named `name` in `parent`.
    fn make(&mut self, parent: u64, name: &OsStr, kind: Kind, perm: u16) -> Result<u64, i32> {
        if self.dir(parent)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(
            ino,
            Inode {
                kind,
                perm,
                mtime: SystemTime::now(),
            },
        );
        self.dir_mut(parent)?.insert(name.to_owned(), ino);
        self.ops.push(NameOp::Link {
            dir: parent,
            name: name.to_owned(),
            ino,
        });
        Ok(ino)
    }

    /// Loads the tree under `from` (a real directory) into `parent`, as
    /// synced: files, directories, nothing else.
    fn load(&mut self, parent: u64, from: &Path) -> std::io::Result<()> {
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let t = entry.file_type()?;
            let name = entry.file_name();
            let kind = if t.is_dir() {
                Kind::Dir(BTreeMap::new())
            } else if t.is_file() {
                Kind::File(FileData::new(std::fs::read(entry.path())?))
            } else {
                continue;
            };
            let is_dir = t.is_dir();
            let ino = self
                .make(parent, &name, kind, if is_dir { 0o755 } else { 0o644 })
                .map_err(std::io::Error::from_raw_os_error)?;
            if is_dir {
                self.load(ino, &entry.path())?;
            }
        }
        Ok(())
    }

    /// Everything as synced: the state a case starts from.
    fn sync_all(&mut self) {
        for node in self.inodes.values_mut() {
            if let Kind::File(f) = &mut node.kind {
                f.sync();
            }
        }
        self.base = HashMap::new();
        for (&ino, node) in &self.inodes {
            if let Kind::Dir(d) = &node.kind {
                self.base.insert(ino, d.clone());
            }
        }
        self.ops.clear();
        self.durable_ops = 0;
    }

    /// Writes the tree under `dir` in `names` to the real directory `to`.
    fn write_tree(
        &self,
        names: &HashMap<u64, BTreeMap<OsString, u64>>,
        dir: u64,
        to: &Path,
        files: &HashMap<u64, Vec<u8>>,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        let Some(entries) = names.get(&dir) else {
            return Ok(());
        };
        for (name, ino) in entries {
            let path = to.join(name);
            match self.inodes.get(ino).map(|n| &n.kind) {
                Some(Kind::Dir(_)) => self.write_tree(names, *ino, &path, files)?,
                Some(Kind::File(_)) => std::fs::write(&path, &files[ino])?,
                None => {}
            }
        }
        Ok(())
    }
}

/// Where the power cut falls, shared by the request handlers and the
/// harness.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    /// Changes asked for so far (writes, lengths, syncs, names).
    changes: u64,
    /// The change the power goes out on.
    trigger: Option<u64>,
    /// The power is out: requests wait.
    cut: Option<String>,
    /// The image is made: waiting requests fail.
    released: bool,
}

impl Gate {
    /// Lets a change of kind `what` through, or holds it at the cut
    /// (until released, then `EIO`).
    fn pass(&self, what: &str) -> Result<(), i32> {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if g.cut.is_none() {
            g.changes += 1;
            if Some(g.changes) != g.trigger {
                return Ok(());
            }
            g.cut = Some(format!("on change {} (a {what})", g.changes));
            self.changed.notify_all();
        }
        while !g.released {
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        Err(libc::EIO)
    }

    fn with<T>(&self, f: impl FnOnce(&mut GateState) -> T) -> T {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let out = f(&mut g);
        self.changed.notify_all();
        out
    }
}

/// The file system, shared with the harness.
pub(super) struct CrashFs {
    state: Arc<Mutex<State>>,
    gate: Arc<Gate>,
}

impl CrashFs {
    /// Holds a change at the cut; `Err(errno)` to answer with.
    fn pass(&self, what: &str) -> Result<(), i32> {
        self.gate.pass(what)
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic in a request handler is the harness's own bug: its
    // state is still the best account of the files.
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// A mounted [`CrashFs`]: unmounted when dropped.
pub(super) struct Mounted {
    session: Option<fuser::BackgroundSession>,
    state: Arc<Mutex<State>>,
    gate: Arc<Gate>,
    dir: tempfile::TempDir,
}

impl Mounted {
    /// Mounts a new file system holding a copy of `from` (if any) at
    /// `name` under its root, everything synced. `Err` when FUSE cannot be
    /// mounted here (no `/dev/fuse`, not root).
    pub(super) fn mount(from: Option<&Path>, name: &str) -> Result<Mounted, String> {
        let mut state = State::new();
        let db = state
            .make(
                FUSE_ROOT_ID,
                OsStr::new(name),
                Kind::Dir(BTreeMap::new()),
                0o755,
            )
            .map_err(|e| format!("errno {e}"))?;
        if let Some(from) = from.filter(|f| f.exists()) {
            state
                .load(db, from)
                .map_err(|e| format!("loading {}: {e}", from.display()))?;
        }
        state.sync_all();
        let state = Arc::new(Mutex::new(state));
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let gate = Arc::new(Gate::default());
        let fs = CrashFs {
            state: state.clone(),
            gate: gate.clone(),
        };
        let options = [
            MountOption::FSName("shamap-crashfs".to_owned()),
            MountOption::RW,
            MountOption::NoAtime,
        ];
        let session = fuser::spawn_mount2(fs, dir.path(), &options)
            .map_err(|e| format!("mounting FUSE at {}: {e}", dir.path().display()))?;
        Ok(Mounted {
            session: Some(session),
            state,
            gate,
            dir,
        })
    }

    /// The mount point.
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Takes whatever is on the mount now as synced (after the harness's
    /// own setup writes).
    pub(super) fn sync_all(&self) {
        lock(&self.state).sync_all();
    }

    /// The power goes out on the `n`-th change asked for from now on.
    pub(super) fn arm(&self, n: u64) {
        self.gate.with(|g| g.trigger = Some(g.changes + n.max(1)));
    }

    /// Where the cut fell, once it has.
    pub(super) fn cut(&self) -> Option<String> {
        self.gate.with(|g| g.cut.clone())
    }

    /// The power goes out now (if it has not): later changes wait.
    pub(super) fn cut_now(&self) -> String {
        self.gate.with(|g| {
            g.cut
                .get_or_insert_with(|| format!("by the harness after {} changes", g.changes))
                .clone()
        })
    }

    /// The requests held at the cut fail (`EIO`) from now on: after the
    /// image, so that a process waiting on one can end.
    pub(super) fn release(&self) {
        self.gate.with(|g| g.released = true);
    }

    /// Changes asked for since the mount.
    pub(super) fn changes(&self) -> u64 {
        self.gate.with(|g| g.changes)
    }

    /// The power goes out: writes an image of what the disk could hold
    /// (see the module's account) to the real directory `to`, and says in
    /// words what was lost. Whatever still runs on the mount goes on
    /// writing to it; the image is of this instant.
    pub(super) fn power_loss(&self, rng: &mut SmallRng, to: &Path) -> std::io::Result<String> {
        let state = lock(&self.state);
        let n_ops = state.ops.len();
        let kept_ops = match rng.gen_range(0..3) {
            0 => n_ops,
            1 => state.durable_ops,
            _ => rng.gen_range(state.durable_ops..=n_ops),
        };
        let mut names = state.base.clone();
        for op in &state.ops[..kept_ops] {
            op.apply(&mut names);
        }
        let p = *[0.05, 0.2, 0.5, 1.0].choose(rng).expect("not empty");
        let mut files = HashMap::new();
        let (mut unsynced, mut lost, mut cut) = (0, 0, 0);
        let mut inos: Vec<u64> = names.values().flat_map(|d| d.values().copied()).collect();
        inos.sort_unstable();
        inos.dedup();
        for ino in inos {
            if let Some(Inode {
                kind: Kind::File(f),
                ..
            }) = state.inodes.get(&ino)
            {
                let (bytes, l) = f.after_power_loss(p, rng);
                unsynced += f.unsynced_pages();
                lost += l;
                if (bytes.len() as u64) < f.data.len() as u64 {
                    cut += 1;
                }
                files.insert(ino, bytes);
            }
        }
        let _ = std::fs::remove_dir_all(to);
        state.write_tree(&names, FUSE_ROOT_ID, to, &files)?;
        let mut how = format!(
            "power loss after {} writes and {} syncs: {lost} of {unsynced} unsynced pages lost (p {p}), {cut} files shorter than written, {kept_ops} of {n_ops} name changes kept ({} synced)",
            state.writes, state.syncs, state.durable_ops
        );
        if kept_ops < n_ops {
            let _ = write!(how, "; the first dropped: {:?}", state.ops[kept_ops]);
        }
        Ok(how)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // Requests held at the cut fail now, so that the session can end.
        self.release();
        if let Some(session) = self.session.take() {
            drop(session);
        }
        // Whatever is left mounted (busy), detached.
        let path: PathBuf = self.dir.path().to_path_buf();
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&path)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

mod fuse_ops;
#[cfg(test)]
mod tests;
