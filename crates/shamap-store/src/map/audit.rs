//! Auditing a store: the one home of `shamap verify --db` and Python's
//! `Store.verify()`, for every backend.
//!
//! [`audit`] opens the store (the backend decided once, by
//! [`crate::open::open_to_audit`]) and audits it:
//!
//! - rippled's NuDB store: the whole-store audit of
//!   [`crate::backend::nudb::audit()`] (every record decoded and hashed,
//!   the key file matched to the data file, every ledger walked with the
//!   verified fetch's node checks);
//! - a node log: the whole log read (damage by byte offset), then every
//!   retained root walked by [`verify_all`];
//! - any other store: every retained root walked by [`verify_all`].
//!
//! The result is one [`StoreAudit`] whatever the backend: the store-level
//! damage, one entry per root (a ledger: its hash, sequence when known,
//! name when the store keeps one, `ok`, counts, problems), the damaged
//! nodes with the roots they break, and notes. Its JSON ([`StoreAudit::to_json`],
//! or written as it goes by [`StoreAudit::write_json`], which holds no
//! document in memory) and its text ([`StoreAudit::to_text`]) are built
//! here only.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use shamap::Hash256;

#[cfg(feature = "nudb")]
use crate::backend::nudb::{self, AuditReport};
use crate::error::StoreError;
pub use crate::findings::{DamagedNode, Only};
use crate::map::authenticate::{authenticate, Authentication, StoreLedgers, Verdict};
use crate::map::{ledger, verify::verify_all};
use crate::meta;
use crate::open::Opened;
use crate::store::NodeStore;

/// `n` and the noun for it: `one` for 1, else `many` ("1 problem", "2
/// problems"): the counts of every audit report's text (the store's, the
/// CLI's `verify`, Clio's).
pub fn plural<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

/// How to audit.
#[derive(Clone, Debug, Default)]
pub struct AuditOptions {
    /// One ledger or root only (none: everything the store lists).
    pub only: Option<Only>,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Bytes the audit's caches may hold (NuDB: [`crate::backend::nudb::budget`];
    /// none: the default).
    pub memory: Option<u64>,
    /// rippled's `ledger.db` to read beside a NuDB store (none: the one
    /// found beside it, if any).
    pub ledger_db: Option<PathBuf>,
    /// A trusted ledger hash: every root found is then authenticated from
    /// it or not ([`crate::map::authenticate`]); none: nothing is.
    pub anchor: Option<Hash256>,
}

/// One root audited: a ledger (header and both maps) or a map root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditedRoot {
    /// The hash walked from (a ledger hash, or a map root).
    pub root: Hash256,
    /// The ledger's sequence, when known.
    pub seq: Option<u32>,
    /// The name the store keeps for it, if any.
    pub name: Option<String>,
    /// Inner nodes checked.
    pub inner: u64,
    /// Leaves checked.
    pub leaves: u64,
    /// Ledger headers checked.
    pub headers: u64,
    /// Bytes of stored values read (when counted).
    pub bytes: Option<u64>,
    /// Subtrees not walked again: whole in the ledger audited before.
    pub shared_subtrees: Option<u64>,
    /// Problems found.
    pub problems: u64,
    /// The first problem, on one line.
    pub error: Option<String>,
}

impl AuditedRoot {
    /// True when nothing is wrong with it.
    pub fn is_whole(&self) -> bool {
        self.problems == 0
    }
}

/// Damage found in the store's files, whatever roots it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreDamage {
    /// The file, when the store has several.
    pub file: Option<PathBuf>,
    /// Byte offset.
    pub at: u64,
    /// The node's key, when known.
    pub key: Option<Hash256>,
    /// What is wrong.
    pub what: String,
}

/// What the whole-file part of the audit read, per backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilesRead {
    /// Nothing beyond the roots' nodes.
    None,
    /// A node log read whole.
    Log {
        /// Whole batches read.
        batches: u64,
        /// Bytes up to the end of the last whole batch.
        bytes: u64,
        /// The last batch acknowledged as durable.
        acknowledged_batch: Option<u64>,
    },
    /// NuDB's data files scanned.
    Scan {
        /// Data records read.
        records: u64,
        /// Spill records passed.
        spill_records: u64,
        /// Bytes of the data files.
        bytes: u64,
        /// Bytes of the values once decoded.
        decoded_bytes: u64,
        /// Records per codec type (0 raw, 1 LZ4, 2, 3 inner, 4 other).
        codec_types: [u64; 5],
    },
}

/// The audit of a store (see the module docs).
#[derive(Clone, Debug)]
pub struct StoreAudit {
    /// The store, as named.
    pub db: String,
    /// Its backend.
    pub store: &'static str,
    /// Where the list of roots came from.
    pub roots_from: String,
    /// The whole-file part.
    pub files: FilesRead,
    /// Damage in the store's files (at most the first 10,000 listed).
    pub damage: Vec<StoreDamage>,
    /// Damage found in all, listed or not.
    pub damage_count: u64,
    /// Each root audited, in order (by sequence when known).
    pub roots: Vec<AuditedRoot>,
    /// Each damaged or missing node a walk met.
    pub nodes: Vec<DamagedNode>,
    /// What the reader noticed on the way.
    pub notes: Vec<String>,
    /// With an anchor: each root's verdict ([`crate::map::authenticate`]).
    pub authentication: Option<Authentication>,
}

/// Audits the store at `location` (see the module docs); `progress` gets
/// the bytes read so far where the audit reads files whole.
pub fn audit(
    location: &Path,
    opts: &AuditOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<StoreAudit, StoreError> {
    let (opened, log) = crate::open::open_to_audit(location)?;
    let db = location.display().to_string();
    // Only the NuDB audit reads files whole with progress to report.
    #[cfg(not(feature = "nudb"))]
    let _ = progress;
    #[cfg(feature = "nudb")]
    if let Opened::Nudb(mut s) = opened {
        if let Some(l) = &opts.ledger_db {
            if !l.is_file() {
                return Err(StoreError::backend(
                    &db,
                    format!("{}: no such file (the ledger.db to read)", l.display()),
                ));
            }
            s.set_ledger_db(Some(l.clone()));
        }
        let nudb_opts = nudb::AuditOptions {
            only: opts.only,
            threads: opts.threads,
            memory: opts.memory,
        };
        let r = nudb::audit(&s, &nudb_opts, progress)?;
        let mut report = from_nudb(db, r);
        report
            .notes
            .insert(0, format!("read: {}", s.layout().describe()));
        if let Some(anchor) = &opts.anchor {
            report.authenticate(&s, anchor);
        }
        return Ok(report);
    }
    if let Some(l) = &opts.ledger_db {
        return Err(StoreError::backend(
            &db,
            format!(
                "{}: a ledger.db is read beside a rippled NuDB store only",
                l.display()
            ),
        ));
    }
    let store = opened.store();
    let roots: Vec<(Option<String>, Option<u32>, Hash256)> = match opts.only {
        Some(only) => {
            let (seq, hash) = match only {
                Only::Hash(h) => (None, h),
                Only::Seq(s) => (Some(s), ledger::ledger_by_seq(store, s)?),
            };
            ledger::resolve_root(store, &hash, None)?;
            let name = seq.map_or_else(|| "given".to_owned(), |s| format!("ledger {s}"));
            vec![(Some(name), seq, hash)]
        }
        None => meta::retained(store)?
            .into_iter()
            .map(|r| (Some(r.name), None, r.hash))
            .collect(),
    };
    let damage: Vec<StoreDamage> = log
        .as_ref()
        .map(|a| {
            a.damage
                .iter()
                .map(|d| StoreDamage {
                    file: None,
                    at: d.at,
                    key: None,
                    what: d.what.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    if roots.is_empty() && damage.is_empty() {
        return Err(StoreError::Unresolved {
            location: db,
            message: "the store has no imported root".to_owned(),
        });
    }
    let mut audited = Vec::with_capacity(roots.len());
    for (name, seq, root) in roots {
        audited.push(match verify_all(store, &root) {
            Ok(r) => AuditedRoot {
                root,
                seq,
                name,
                inner: r.inner,
                leaves: r.leaves,
                headers: r.headers,
                bytes: Some(r.bytes),
                shared_subtrees: None,
                problems: 0,
                error: None,
            },
            Err(e) => AuditedRoot {
                root,
                seq,
                name,
                inner: 0,
                leaves: 0,
                headers: 0,
                bytes: None,
                shared_subtrees: None,
                problems: 1,
                error: Some(e.to_string()),
            },
        });
    }
    let files = log.as_ref().map_or(FilesRead::None, |a| FilesRead::Log {
        batches: a.batches,
        bytes: a.log_bytes,
        acknowledged_batch: a.acknowledged,
    });
    let mut report = StoreAudit {
        db,
        store: backend_name(&opened),
        roots_from: "the roots the store retains".to_owned(),
        files,
        damage_count: damage.len() as u64,
        damage,
        roots: audited,
        nodes: Vec::new(),
        notes: Vec::new(),
        authentication: None,
    };
    if let Some(anchor) = &opts.anchor {
        report.authenticate(store, anchor);
    }
    Ok(report)
}

/// The name of `opened`'s backend, as reports give it.
pub fn backend_name(opened: &Opened) -> &'static str {
    match opened {
        Opened::Log(_) => "node log",
        Opened::Fjall(_) => "fjall",
        #[cfg(feature = "rocksdb")]
        Opened::Rocks(_) => "rocksdb",
        #[cfg(feature = "cassandra")]
        Opened::Cassandra(_) => "cassandra",
        #[cfg(feature = "nudb")]
        Opened::Nudb(_) => "rippled NuDB",
    }
}

/// The NuDB audit's report as a [`StoreAudit`].
#[cfg(feature = "nudb")]
fn from_nudb(db: String, r: AuditReport) -> StoreAudit {
    let files = r
        .scan
        .as_ref()
        .map_or(FilesRead::None, |s| FilesRead::Scan {
            records: s.records,
            spill_records: s.spills,
            bytes: s.bytes,
            decoded_bytes: s.decoded_bytes,
            codec_types: s.codec_types,
        });
    let damage = r
        .damaged_records()
        .iter()
        .map(|d| StoreDamage {
            file: Some(d.file.clone()),
            at: d.offset,
            key: d.key,
            what: d.what.clone(),
        })
        .collect();
    let damage_count = r.scan.as_ref().map_or(0, |s| s.damaged_count);
    let roots = r
        .ledgers
        .iter()
        .map(|l| AuditedRoot {
            root: l.hash,
            seq: l.seq,
            name: None,
            inner: l.counts.inner,
            leaves: l.counts.leaves,
            headers: u64::from(l.problems.iter().all(|p| p.key != l.hash)),
            bytes: None,
            shared_subtrees: Some(l.counts.skipped),
            problems: l.problem_count,
            error: l
                .problems
                .first()
                .map(|p| format!("node {}: {}", p.key, p.what)),
        })
        .collect();
    let nodes = r.nodes;
    StoreAudit {
        db,
        store: "rippled NuDB",
        roots_from: r.ledgers_from,
        files,
        damage,
        damage_count,
        roots,
        nodes,
        notes: r.notes,
        authentication: None,
    }
}

impl StoreAudit {
    /// Authenticates every root from `anchor` (see [`crate::map::authenticate`]).
    pub fn authenticate(&mut self, store: &dyn NodeStore, anchor: &Hash256) {
        let found: Vec<(Option<u32>, Hash256)> =
            self.roots.iter().map(|r| (r.seq, r.root)).collect();
        let a = authenticate(&StoreLedgers(store), anchor, &found);
        self.notes.push(format!(
            "anchor {anchor}: {} ledger headers and their skip lists read, {} ledger hashes authenticated",
            a.ledgers_read,
            a.known.len()
        ));
        self.notes.extend(a.notes.iter().cloned());
        self.authentication = Some(a);
        self.reattribute_forged_parents();
    }

    /// A parent link that names another ledger than the one found at the
    /// sequence before is, without an anchor, damage to the child. When the
    /// child is authenticated and every ledger found at that sequence is
    /// forged, the child is right and the forged ledger is the fault, which
    /// its verdict already names: the child's problem is withdrawn (noted).
    fn reattribute_forged_parents(&mut self) {
        const PARENT_LINK: &str = "its parent_hash is ";
        let mut withdrawn = Vec::new();
        for i in 0..self.roots.len() {
            let r = &self.roots[i];
            let (Some(seq), true) = (r.seq, r.problems > 0) else {
                continue;
            };
            if !self.verdict(&r.root).is_some_and(Verdict::is_authenticated) {
                continue;
            }
            let before: Vec<&AuditedRoot> = self
                .roots
                .iter()
                .filter(|p| p.seq == Some(seq.wrapping_sub(1)))
                .collect();
            let all_forged = !before.is_empty()
                && before
                    .iter()
                    .all(|p| matches!(self.verdict(&p.root), Some(Verdict::Forged { .. })));
            if !all_forged {
                continue;
            }
            let root = r.root;
            let Some(n) = self
                .nodes
                .iter()
                .position(|n| n.key == root && n.what.starts_with(PARENT_LINK))
            else {
                continue;
            };
            let what = self.nodes.remove(n).what;
            let r = &mut self.roots[i];
            r.problems -= 1;
            if r.problems == 0 {
                r.error = None;
                r.headers = 1;
            }
            withdrawn.push(format!(
                "ledger {seq} {root}: {what}: the ledger found before it is forged, its own parent link is the validated one (not counted as damage)"
            ));
        }
        self.notes.extend(withdrawn);
    }

    /// The verdict on a root, when an anchor was given.
    pub fn verdict(&self, root: &Hash256) -> Option<&Verdict> {
        self.authentication
            .as_ref()
            .and_then(|a| a.verdicts.get(root))
    }

    /// With an anchor: true when every root is authenticated. Without: false
    /// (nothing is authenticated without an anchor).
    pub fn all_authenticated(&self) -> bool {
        self.authentication.is_some()
            && self
                .roots
                .iter()
                .all(|r| self.verdict(&r.root).is_some_and(Verdict::is_authenticated))
    }

    /// True when no damage was found and every root is whole.
    pub fn is_whole(&self) -> bool {
        self.damage_count == 0 && self.roots.iter().all(AuditedRoot::is_whole)
    }

    fn head_json(&self) -> Value {
        let mut v = json!({
            "db": self.db,
            "store": self.store,
            "ok": self.is_whole(),
            "roots_from": self.roots_from,
            "damage_count": self.damage_count,
            "notes": self.notes,
        });
        if self.authentication.is_some() {
            v["authenticated"] = Value::Bool(self.all_authenticated());
        }
        match &self.files {
            FilesRead::None => {}
            FilesRead::Log {
                batches,
                bytes,
                acknowledged_batch,
            } => {
                v["log"] = json!({
                    "batches": batches,
                    "bytes": bytes,
                    "acknowledged_batch": acknowledged_batch,
                });
            }
            FilesRead::Scan {
                records,
                spill_records,
                bytes,
                decoded_bytes,
                codec_types,
            } => {
                v["scan"] = json!({
                    "records": records,
                    "spill_records": spill_records,
                    "bytes": bytes,
                    "decoded_bytes": decoded_bytes,
                    "codec_types": codec_types,
                });
            }
        }
        v
    }

    fn damage_json(d: &StoreDamage) -> Value {
        json!({
            "file": d.file.as_ref().map(|f| f.display().to_string()),
            "at": d.at,
            "key": d.key.map(|k| k.to_hex()),
            "what": d.what,
        })
    }

    fn root_json(&self, r: &AuditedRoot) -> Value {
        let mut v = Self::root_fields(r);
        if let Some(verdict) = self.verdict(&r.root) {
            v["authenticated"] = Value::Bool(verdict.is_authenticated());
            v["authentication"] = Value::String(verdict.describe());
        }
        v
    }

    fn root_fields(r: &AuditedRoot) -> Value {
        json!({
            "root": r.root.to_hex(),
            "seq": r.seq,
            "name": r.name,
            "ok": r.is_whole(),
            "nodes": r.inner + r.leaves + r.headers,
            "inner": r.inner,
            "leaves": r.leaves,
            "headers": r.headers,
            "bytes": r.bytes,
            "shared_subtrees": r.shared_subtrees,
            "problems": r.problems,
            "error": r.error,
        })
    }

    fn node_json(n: &DamagedNode) -> Value {
        json!({
            "key": n.key.to_hex(),
            "file": n.at.as_ref().map(|(f, _)| f.display().to_string()),
            "at": n.at.as_ref().map(|(_, o)| *o),
            "what": n.what,
            "roots": n.ledgers.iter().map(|(s, h)| json!({"seq": s, "root": h.to_hex()})).collect::<Vec<_>>(),
        })
    }

    /// The report as one JSON document (what Python returns).
    pub fn to_json(&self) -> Value {
        let mut v = self.head_json();
        v["damage"] = self.damage.iter().map(Self::damage_json).collect();
        v["roots"] = self.roots.iter().map(|r| self.root_json(r)).collect();
        v["nodes"] = self.nodes.iter().map(Self::node_json).collect();
        v
    }

    /// Writes [`StoreAudit::to_json`]'s document to `w` as it goes, one
    /// root at a time: memory does not grow with the document.
    pub fn write_json(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let head = self.head_json();
        let Value::Object(fields) = head else {
            return Err(std::io::Error::other("the report's head is not an object"));
        };
        w.write_all(b"{")?;
        for (k, v) in &fields {
            serde_json::to_writer(&mut *w, k)?;
            w.write_all(b":")?;
            serde_json::to_writer(&mut *w, v)?;
            w.write_all(b",")?;
        }
        let list = |w: &mut dyn Write,
                    name: &str,
                    items: &mut dyn Iterator<Item = Value>,
                    last: bool|
         -> std::io::Result<()> {
            write!(w, "\"{name}\":[")?;
            for (i, item) in items.enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                serde_json::to_writer(&mut *w, &item)?;
            }
            w.write_all(if last { b"]" } else { b"]," })
        };
        list(
            w,
            "damage",
            &mut self.damage.iter().map(Self::damage_json),
            false,
        )?;
        list(
            w,
            "roots",
            &mut self.roots.iter().map(|r| self.root_json(r)),
            false,
        )?;
        list(
            w,
            "nodes",
            &mut self.nodes.iter().map(Self::node_json),
            true,
        )?;
        w.write_all(b"}\n")
    }

    /// The report as text: a line per note, for the files read, per
    /// damage, per root and per broken node.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        match &self.files {
            FilesRead::None => {}
            FilesRead::Log { batches, bytes, .. } => {
                let _ = writeln!(
                    out,
                    "log: {batches} batches, {bytes} bytes{}",
                    if self.damage.is_empty() {
                        ", whole"
                    } else {
                        ""
                    }
                );
            }
            FilesRead::Scan {
                records,
                spill_records,
                bytes,
                decoded_bytes,
                ..
            } => {
                let _ = writeln!(
                    out,
                    "scan: {records} records ({spill_records} spill records), {bytes} bytes of data files, {decoded_bytes} decoded bytes{}",
                    if self.damage_count == 0 {
                        ", every record whole".to_owned()
                    } else {
                        format!(", {} DAMAGED", self.damage_count)
                    }
                );
            }
        }
        for d in &self.damage {
            match &d.file {
                None => {
                    let _ = writeln!(out, "log DAMAGED at byte {}: {}", d.at, d.what);
                }
                Some(f) => {
                    let _ = writeln!(
                        out,
                        "record DAMAGED: {} at byte {}{}: {}",
                        f.display(),
                        d.at,
                        d.key.map(|k| format!(" (node {k})")).unwrap_or_default(),
                        d.what
                    );
                }
            }
        }
        if matches!(self.files, FilesRead::Scan { .. }) || self.store == "rippled NuDB" {
            let _ = writeln!(
                out,
                "ledgers from {}: {}",
                self.roots_from,
                self.roots.len()
            );
        }
        for r in &self.roots {
            match self.verdict(&r.root) {
                Some(v) => {
                    let _ = writeln!(out, "{}; {}", root_line(r), v.describe());
                }
                None => {
                    let _ = writeln!(out, "{}", root_line(r));
                }
            }
        }
        for n in &self.nodes {
            let roots: Vec<String> = n
                .ledgers
                .iter()
                .map(|(s, h)| format!("{} {h}", seq_name(*s)))
                .collect();
            let _ = writeln!(
                out,
                "node {} DAMAGED ({}): {}; breaks ledger{} {}",
                n.key,
                n.at.as_ref().map_or_else(
                    || "no record".to_owned(),
                    |(f, o)| format!("{} at byte {o}", f.display())
                ),
                n.what,
                if n.ledgers.len() == 1 { "" } else { "s" },
                roots.join(", ")
            );
        }
        out
    }

    /// One line saying what is damaged (for a report that is not whole).
    pub fn summary(&self) -> String {
        let mut line = format!("{}: ", self.db);
        if let Some(d) = self.damage.first().filter(|d| d.file.is_none()) {
            line.push_str(&format!(
                "the node log is damaged in {} (first at byte {}); ",
                plural(self.damage_count, "place", "places"),
                d.at
            ));
        } else if let Some(d) = self.damage.first() {
            line.push_str(&format!(
                "{} in the store's files (first: {}byte {}{}); ",
                plural(self.damage_count, "damaged place", "damaged places"),
                d.file
                    .as_ref()
                    .map(|f| format!("{} at ", f.display()))
                    .unwrap_or_default(),
                d.at,
                d.key.map(|k| format!(", node {k}")).unwrap_or_default()
            ));
        }
        let broken = self.roots.iter().filter(|r| !r.is_whole()).count();
        let noun = if self.store == "rippled NuDB" {
            "ledger"
        } else {
            "root"
        };
        line.push_str(&format!(
            "{broken} of {} damaged",
            plural(self.roots.len(), noun, &format!("{noun}s"))
        ));
        if let Some(n) = self.nodes.first() {
            line.push_str(&format!("; first bad node {}: {}", n.key, n.what));
        } else if let Some(e) = self.roots.iter().find_map(|r| r.error.as_ref()) {
            line.push_str(&format!("; first: {e}"));
        }
        line
    }
}

fn seq_name(seq: Option<u32>) -> String {
    seq.map_or_else(|| "?".to_owned(), |s| s.to_string())
}

/// A root's line of text.
fn root_line(r: &AuditedRoot) -> String {
    let what = match (&r.name, r.seq) {
        (Some(n), _) => format!("root {} ({n})", r.root),
        (None, s) => format!("ledger {} {}", seq_name(s), r.root),
    };
    if !r.is_whole() {
        return format!(
            "{what} DAMAGED: {}",
            r.error
                .clone()
                .unwrap_or_else(|| plural(r.problems, "problem", "problems"))
        );
    }
    match (r.bytes, r.shared_subtrees) {
        (Some(bytes), _) => format!(
            "{what} ok: {} nodes ({} inner, {} leaves, {} headers), {bytes} bytes",
            r.inner + r.leaves + r.headers,
            r.inner,
            r.leaves,
            r.headers
        ),
        (None, shared) => format!(
            "{what} whole: {} inner nodes, {} leaves read ({} subtrees shared with the ledger before)",
            r.inner,
            r.leaves,
            shared.unwrap_or(0)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn plural_says_one_for_one_and_many_otherwise() {
        assert_eq!(plural(1usize, "entry", "entries"), "1 entry");
        assert_eq!(plural(0u64, "entry", "entries"), "0 entries");
        assert_eq!(plural(2u32, "problem", "problems"), "2 problems");
    }
}
