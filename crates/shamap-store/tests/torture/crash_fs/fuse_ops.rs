//! The FUSE requests of [`CrashFs`]: every change passes the gate (the
//! power cut) first, then changes the state.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::time::SystemTime;

use fuser::{
    FileType, Filesystem, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};

use super::{lock, CrashFs, FileData, Inode, Kind, NameOp, State, PAGE, TTL};

/// Answers with `ino`'s attributes, or `ENOENT`.
fn reply_attr(s: &State, ino: u64, reply: ReplyAttr) {
    match s.attr(ino) {
        Some(a) => reply.attr(&TTL, &a),
        None => reply.error(libc::ENOENT),
    }
}

/// Answers `$reply` with the gate's error when the power is out.
macro_rules! gate {
    ($fs:expr, $what:expr, $reply:expr) => {
        if let Err(e) = $fs.pass($what) {
            return $reply.error(e);
        }
    };
}

impl Filesystem for CrashFs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let s = lock(&self.state);
        match s.child(parent, name).map(|ino| s.attr(ino)) {
            Ok(Some(a)) => reply.entry(&TTL, &a, 0),
            Ok(None) => reply.error(libc::ENOENT),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        reply_attr(&lock(&self.state), ino, reply);
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        if size.is_some() {
            gate!(self, "length change", reply);
        }
        let mut s = lock(&self.state);
        if let Some(len) = size {
            match s.file_mut(ino) {
                Ok(f) => f.set_len(len),
                Err(e) => return reply.error(e),
            }
            s.writes += 1;
        }
        if let Some(mode) = mode {
            if let Some(n) = s.inodes.get_mut(&ino) {
                n.perm = (mode & 0o7777) as u16;
            }
        }
        reply_attr(&s, ino, reply);
    }

    fn mknod(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(libc::EPERM);
        }
        gate!(self, "create", reply);
        let mut s = lock(&self.state);
        let kind = Kind::File(FileData::new(Vec::new()));
        match s.make(parent, name, kind, (mode & 0o7777) as u16) {
            Ok(ino) => reply.entry(&TTL, &s.attr(ino).expect("made"), 0),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        gate!(self, "mkdir", reply);
        let mut s = lock(&self.state);
        match s.make(
            parent,
            name,
            Kind::Dir(BTreeMap::new()),
            (mode & 0o7777) as u16,
        ) {
            Ok(ino) => reply.entry(&TTL, &s.attr(ino).expect("made"), 0),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        gate!(self, "unlink", reply);
        let mut s = lock(&self.state);
        let ino = match s.child(parent, name) {
            Ok(ino) => ino,
            Err(e) => return reply.error(e),
        };
        if matches!(s.inodes.get(&ino).map(|n| &n.kind), Some(Kind::Dir(_))) {
            return reply.error(libc::EISDIR);
        }
        s.remove_name(parent, name);
        reply.ok();
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        gate!(self, "rmdir", reply);
        let mut s = lock(&self.state);
        let ino = match s.child(parent, name) {
            Ok(ino) => ino,
            Err(e) => return reply.error(e),
        };
        match s.dir(ino) {
            Ok(d) if !d.is_empty() => return reply.error(libc::ENOTEMPTY),
            Ok(_) => {}
            Err(e) => return reply.error(e),
        }
        s.remove_name(parent, name);
        reply.ok();
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        gate!(self, "rename", reply);
        let mut s = lock(&self.state);
        if flags & !libc::RENAME_NOREPLACE != 0 {
            return reply.error(libc::EINVAL);
        }
        let ino = match s.child(parent, name) {
            Ok(ino) => ino,
            Err(e) => return reply.error(e),
        };
        let existing = match s.dir(newparent) {
            Ok(d) => d.get(newname).copied(),
            Err(e) => return reply.error(e),
        };
        if let Some(old) = existing {
            if flags & libc::RENAME_NOREPLACE != 0 {
                return reply.error(libc::EEXIST);
            }
            if matches!(s.inodes.get(&old).map(|n| &n.kind), Some(Kind::Dir(d)) if !d.is_empty()) {
                return reply.error(libc::ENOTEMPTY);
            }
        }
        s.dir_mut(parent).expect("a directory").remove(name);
        s.dir_mut(newparent)
            .expect("a directory")
            .insert(newname.to_owned(), ino);
        s.ops.push(NameOp::Rename {
            from_dir: parent,
            from: name.to_owned(),
            to_dir: newparent,
            to: newname.to_owned(),
        });
        reply.ok();
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if lock(&self.state).inodes.contains_key(&ino) {
            reply.opened(0, 0);
        } else {
            reply.error(libc::ENOENT);
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let s = lock(&self.state);
        match s.inodes.get(&ino).map(|n| &n.kind) {
            Some(Kind::File(f)) => {
                let start = (offset.max(0) as usize).min(f.data.len());
                let end = (start + size as usize).min(f.data.len());
                reply.data(&f.data[start..end]);
            }
            Some(Kind::Dir(_)) => reply.error(libc::EISDIR),
            None => reply.error(libc::ENOENT),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        gate!(self, "write", reply);
        let mut s = lock(&self.state);
        s.writes += 1;
        match s.file_mut(ino) {
            Ok(f) => {
                f.write(offset.max(0) as u64, data);
                reply.written(data.len() as u32);
            }
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _owner: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        gate!(self, "file sync", reply);
        let mut s = lock(&self.state);
        s.syncs += 1;
        if let Some(Inode {
            kind: Kind::File(f),
            ..
        }) = s.inodes.get_mut(&ino)
        {
            f.sync();
        }
        reply.ok();
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let s = lock(&self.state);
        let entries = match s.dir(ino) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let mut all: Vec<(u64, FileType, OsString)> = vec![
            (ino, FileType::Directory, ".".into()),
            (ino, FileType::Directory, "..".into()),
        ];
        for (name, &child) in entries {
            let kind = match s.inodes.get(&child).map(|n| &n.kind) {
                Some(Kind::Dir(_)) => FileType::Directory,
                _ => FileType::RegularFile,
            };
            all.push((child, kind, name.clone()));
        }
        for (i, (child, kind, name)) in all.iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(
                *child,
                (i + 1) as i64,
                *kind,
                OsStr::from_bytes(name.as_bytes()),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        gate!(self, "directory sync", reply);
        let mut s = lock(&self.state);
        s.syncs += 1;
        if let Some(last) = s.ops.iter().rposition(|op| op.touches(ino)) {
            s.durable_ops = s.durable_ops.max(last + 1);
        }
        reply.ok();
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        reply.statfs(
            1 << 24,
            1 << 23,
            1 << 23,
            1 << 20,
            1 << 19,
            PAGE as u32,
            255,
            PAGE as u32,
        );
    }

    fn access(&mut self, _req: &Request<'_>, _ino: u64, _mask: i32, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        gate!(self, "create", reply);
        let mut s = lock(&self.state);
        let kind = Kind::File(FileData::new(Vec::new()));
        match s.make(parent, name, kind, (mode & 0o7777) as u16) {
            Ok(ino) => reply.created(&TTL, &s.attr(ino).expect("made"), 0, 0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        gate!(self, "fallocate", reply);
        let mut s = lock(&self.state);
        let keep_size = mode == libc::FALLOC_FL_KEEP_SIZE;
        if mode != 0 && !keep_size {
            return reply.error(libc::EOPNOTSUPP);
        }
        match s.file_mut(ino) {
            Ok(f) => {
                let end = (offset.max(0) + length.max(0)) as u64;
                if !keep_size && end > f.data.len() as u64 {
                    f.set_len(end);
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }
}
