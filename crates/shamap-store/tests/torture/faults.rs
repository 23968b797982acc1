//! The fault classes, and the faults done to a copy of a store's files.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;
use shamap_store::backend::log_store::{checkpoint, format, LOG_FILE};

use super::backend::Backend;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Class {
    Sigkill,
    Close,
    Truncate,
    Flip,
    Replay,
    Swap,
    Fifo,
    Lock,
    Enospc,
    After,
    PowerLoss,
    AckFail,
}

impl Class {
    pub(super) const ALL: [Class; 12] = [
        Class::Sigkill,
        Class::Close,
        Class::Truncate,
        Class::Flip,
        Class::Replay,
        Class::Swap,
        Class::Fifo,
        Class::Lock,
        Class::Enospc,
        Class::After,
        Class::PowerLoss,
        Class::AckFail,
    ];
    /// All but the faults of the node log's own batch format (replay,
    /// swap), in [`Class::ALL`]'s order: those of another engine's files.
    pub(super) const ENGINE: [Class; 10] = {
        let mut out = [Class::Sigkill; 10];
        let (mut i, mut n) = (0, 0);
        while i < Class::ALL.len() {
            if !matches!(Class::ALL[i], Class::Replay | Class::Swap) {
                out[n] = Class::ALL[i];
                n += 1;
            }
            i += 1;
        }
        out
    };
    /// The faults applied to a copy of the files.
    pub(super) const FILE: [Class; 5] = [
        Class::Truncate,
        Class::Flip,
        Class::Replay,
        Class::Swap,
        Class::Fifo,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Class::Sigkill => "sigkill",
            Class::Close => "close",
            Class::Truncate => "truncate",
            Class::Flip => "flip",
            Class::Replay => "replay",
            Class::Swap => "swap",
            Class::Fifo => "fifo",
            Class::Lock => "lock",
            Class::Enospc => "enospc",
            Class::After => "after",
            Class::PowerLoss => "powerloss",
            Class::AckFail => "ackfail",
        }
    }

    pub(super) fn what(self) -> &'static str {
        match self {
            Class::Sigkill => "SIGKILL of the live worker at a random moment",
            Class::Close => "the live worker stopped and closed cleanly",
            Class::Truncate => "a file cut at a random length (node log: often at a batch boundary or in its last 4 KiB)",
            Class::Flip => "one bit flipped (node log: anywhere, the last batch, a batch header, nodes.idx)",
            Class::Replay => "an earlier whole batch appended again",
            Class::Swap => "two whole batches swapped",
            Class::Fifo => "a FIFO in place of one of the store's files",
            Class::Lock => "the lock file deleted while a writer runs, then a second writer",
            Class::Enospc => "a full disk (a tmpfs barely larger than the store)",
            Class::After => "writes go on after a file fault that was kept: a worker on the faulted copy, SIGKILL, the check again",
            Class::PowerLoss => "a power loss under a worker, on the crash file system (crash_fs): any subset of the pages written since their file's last sync lost, the length anywhere from the synced one, name changes after the last synced directory cut at a random point; the store must open with every acknowledged root",
            Class::AckFail => "the acknowledgment record fails (open or write; EPERM, EACCES, ENOSPC, EMFILE, EIO) under a worker; the store must open with every acknowledged root and no change an error called not committed",
        }
    }
}

/// Points the copy's index checkpoint (if any) at the copied log: it names
/// its log by device and inode, which a copy changes, and would be
/// ignored. The layout is the one `log_store::checkpoint` documents
/// (device and inode at bytes 16..32, a crc32c of everything before it
/// last); a checkpoint of another layout is left as it is.
pub(super) fn rehome_checkpoint(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let path = dir.join(checkpoint::CHECKPOINT_FILE);
    let Ok(mut bytes) = std::fs::read(&path) else {
        return false;
    };
    let Ok(log) = std::fs::metadata(dir.join(LOG_FILE)) else {
        return false;
    };
    if bytes.len() < 40 || &bytes[..8] != b"SHMAPIDX" || !matches!(bytes[8..12], [1 | 2, 0, 0, 0]) {
        return false;
    }
    let n = bytes.len();
    if crc32c::crc32c(&bytes[..n - 4]).to_le_bytes() != bytes[n - 4..] {
        return false;
    }
    bytes[16..24].copy_from_slice(&log.dev().to_le_bytes());
    bytes[24..32].copy_from_slice(&log.ino().to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).is_ok()
}

/// The whole batches of a node log's bytes: offset and length of each.
pub(super) fn log_batches(log: &[u8]) -> Vec<(usize, usize)> {
    crate::support::log_batches(log)
        .into_iter()
        .map(|b| (b.at, b.len))
        .collect()
}

/// Every regular file under `dir`, with its length.
pub(super) fn files_under(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                let len = e.metadata().map_or(0, |m| m.len());
                out.push((e.path(), len));
            }
        }
    }
    out.sort();
    out
}

pub(super) fn rel(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir).unwrap_or(p).display().to_string()
}

/// Applies a fault of `class` to the store copy in `dir`; returns what was
/// done, or `None` when the class does not apply to this copy (a log of
/// fewer batches than it needs).
pub(super) fn apply_file_fault(
    backend: Backend,
    class: Class,
    dir: &Path,
    rng: &mut SmallRng,
) -> Option<String> {
    let log_path = dir.join(LOG_FILE);
    match (backend, class) {
        (Backend::Log, Class::Truncate) => {
            let log = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&log);
            let len = log.len();
            let (to, how) = match rng.gen_range(0..10) {
                // At a batch boundary: the last 1..=3 whole batches gone.
                0..=3 if batches.len() > 1 => {
                    let k = rng.gen_range(1..=3.min(batches.len() - 1));
                    (
                        batches[batches.len() - k].0,
                        format!(
                            "at a batch boundary, the last {k} of {} batches gone",
                            batches.len()
                        ),
                    )
                }
                // In the last 4 KiB.
                4..=6 => (
                    len - rng.gen_range(1..=4096.min(len)),
                    "in its last 4 KiB".to_owned(),
                ),
                _ => (rng.gen_range(0..len), "anywhere".to_owned()),
            };
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&log_path)
                .ok()?;
            f.set_len(to as u64).ok()?;
            Some(format!("nodes.log cut from {len} to {to} bytes ({how})"))
        }
        (Backend::Log, Class::Flip) => {
            let idx = dir.join(checkpoint::CHECKPOINT_FILE);
            let mut target = log_path.clone();
            let mut bytes = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&bytes);
            let (at, region) = match rng.gen_range(0..20) {
                0..=2 if idx.is_file() => {
                    target = idx;
                    bytes = std::fs::read(&target).ok()?;
                    (rng.gen_range(0..bytes.len()), "nodes.idx")
                }
                3..=7 if !batches.is_empty() => {
                    let (off, len) = batches[batches.len() - 1];
                    (off + rng.gen_range(0..len), "the last batch")
                }
                8..=10 if !batches.is_empty() => {
                    let (off, _) = *batches.choose(rng)?;
                    (
                        off + rng.gen_range(0..format::BATCH_HEADER_LEN),
                        "a batch header",
                    )
                }
                11..=12 if !batches.is_empty() => {
                    let (off, _) = *batches.choose(rng)?;
                    (off + rng.gen_range(16..24), "a batch's sequence number")
                }
                _ => (rng.gen_range(0..bytes.len()), "anywhere"),
            };
            let bit = rng.gen_range(0..8);
            bytes[at] ^= 1 << bit;
            std::fs::write(&target, &bytes).ok()?;
            let what = batches
                .iter()
                .position(|&(o, l)| target.ends_with(LOG_FILE) && at >= o && at < o + l)
                .map_or(String::new(), |i| {
                    format!(", batch {i} of {} at byte {}", batches.len(), batches[i].0)
                });
            Some(format!(
                "bit {bit} of byte {at} of {} flipped ({region}{what})",
                rel(dir, &target)
            ))
        }
        (Backend::Log, Class::Replay) => {
            let mut log = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&log);
            if batches.len() < 2 {
                return None;
            }
            let (end_off, end_len) = batches[batches.len() - 1];
            // Whole batches only: a torn tail after the last is dropped.
            log.truncate(end_off + end_len);
            let i = rng.gen_range(0..batches.len() - 1);
            let (off, len) = batches[i];
            let copy = log[off..off + len].to_vec();
            log.extend_from_slice(&copy);
            std::fs::write(&log_path, &log).ok()?;
            Some(format!(
                "batch {i} of {} (bytes {off}..{}) appended again",
                batches.len(),
                off + len
            ))
        }
        (Backend::Log, Class::Swap) => {
            let log = std::fs::read(&log_path).ok()?;
            let batches = log_batches(&log);
            if batches.len() < 2 {
                return None;
            }
            let i = rng.gen_range(0..batches.len() - 1);
            let j = if rng.gen_bool(0.6) {
                i + 1
            } else {
                rng.gen_range(i + 1..batches.len())
            };
            let (a, alen) = batches[i];
            let (b, blen) = batches[j];
            let mut out = log[..a].to_vec();
            out.extend_from_slice(&log[b..b + blen]);
            out.extend_from_slice(&log[a + alen..b]);
            out.extend_from_slice(&log[a..a + alen]);
            out.extend_from_slice(&log[b + blen..]);
            std::fs::write(&log_path, &out).ok()?;
            Some(format!("batches {i} and {j} of {} swapped", batches.len()))
        }
        (_, Class::Fifo) => {
            let names: Vec<String> = match backend {
                Backend::Log => vec![
                    checkpoint::CHECKPOINT_FILE.to_owned(),
                    backend.lock_file().to_owned(),
                    LOG_FILE.to_owned(),
                ],
                _ => {
                    let mut v = vec![backend.lock_file().to_owned()];
                    v.extend(files_under(dir).into_iter().map(|(p, _)| rel(dir, &p)));
                    v
                }
            };
            let name = names.choose(rng)?.clone();
            let path = dir.join(&name);
            let _ = std::fs::remove_file(&path);
            let ok = Command::new("mkfifo")
                .arg(&path)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "mkfifo {}", path.display());
            assert!(std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_fifo()));
            Some(format!("a FIFO in place of {name}"))
        }
        (_, Class::Truncate) => {
            let files: Vec<_> = files_under(dir).into_iter().filter(|f| f.1 > 0).collect();
            let (path, len) = files.choose(rng)?.clone();
            let to = if rng.gen_bool(0.5) {
                len - rng.gen_range(1..=4096.min(len))
            } else {
                rng.gen_range(0..len)
            };
            let f = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
            f.set_len(to).ok()?;
            Some(format!("{} cut from {len} to {to} bytes", rel(dir, &path)))
        }
        (_, Class::Flip) => {
            let files: Vec<_> = files_under(dir).into_iter().filter(|f| f.1 > 0).collect();
            let (path, len) = files.choose(rng)?.clone();
            let at = rng.gen_range(0..len);
            let bit = rng.gen_range(0..8);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .ok()?;
            use std::os::unix::fs::FileExt;
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, at).ok()?;
            b[0] ^= 1 << bit;
            f.write_all_at(&b, at).ok()?;
            Some(format!(
                "bit {bit} of byte {at} of {} ({len} bytes) flipped",
                rel(dir, &path)
            ))
        }
        _ => None,
    }
}
