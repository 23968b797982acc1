//! Printing, and the exit status, for every subcommand.
//!
//! Each subcommand's `run` returns `Result<Exit, Failure>`: the [`Exit`] it
//! ends with, or a [`Failure`], printed as one `error: <line>` on stderr. The
//! statuses are numbered in one place, [`Exit::code`]:
//!
//! | status | [`Exit`] | meaning |
//! |---|---|---|
//! | 0 | [`Exit::Done`] | done (and, for the commands that answer a question, the answer is yes) |
//! | 1 | [`Exit::Negative`] | a negative answer: a hash that does not match, a key not found, an invalid proof, more differences than `--max` |
//! | 2 | [`Exit::Unusable`] | unusable input or arguments, a damaged store, output that cannot be written |
//!
//! A negative answer that the command has printed on stdout (`verify`'s
//! `MISMATCH`, `check-proof`'s `invalid: …`) is `Ok(Exit::Negative)`, with
//! no `error:` line; one it has not printed is a [`Failure`] with
//! [`Exit::Negative`]. Usage errors (from clap) and panics are printed here
//! too, each as one `error:` line.
//!
//! Files a command writes (`stats --plot`'s charts, `export --out`'s
//! ledger) go through [`write_files_whole`] or, streamed,
//! [`write_file_streamed`]: each is written whole or not at all. A command
//! that writes while it reads a store never writes inside that store
//! ([`refuse_inside_store`]: `export --out`, `sync --to`), so an output
//! path can never replace the store's own files.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};

/// How a subcommand ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Status 0: done.
    Done,
    /// Status 1: a negative answer.
    Negative,
    /// Status 2: unusable input, a damaged store or unwritable output.
    Unusable,
}

impl Exit {
    /// The process exit status: the one place statuses are numbered.
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Done => ExitCode::SUCCESS,
            Exit::Negative => ExitCode::from(1),
            Exit::Unusable => ExitCode::from(2),
        }
    }
}

/// Why a subcommand stopped: its exit status and one line for stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The exit status.
    pub exit: Exit,
    /// What went wrong, without the `error: ` prefix; starts with the file,
    /// directory or node it concerns.
    pub line: String,
    /// True for a failure of the store layer (a [`shamap_store::StoreError`]),
    /// whose line [`Failure::about_store`] completes with the store's name.
    pub from_store: bool,
}

impl Failure {
    /// Status 1: a negative answer not printed on stdout.
    pub fn negative(line: impl Into<String>) -> Failure {
        Failure {
            exit: Exit::Negative,
            line: line.into(),
            from_store: false,
        }
    }

    /// Status 2: unusable input or arguments, or a damaged store.
    pub fn unusable(line: impl Into<String>) -> Failure {
        Failure {
            exit: Exit::Unusable,
            line: line.into(),
            from_store: false,
        }
    }

    /// The failure of a command on the store in `dir`: a store error's line
    /// names the store (a node error from deep in a walk does not say which
    /// store). Failures about the command's other inputs pass unchanged.
    pub fn about_store(self, dir: &std::path::Path) -> Failure {
        let name = dir.display().to_string();
        if !self.from_store || self.line.contains(&name) {
            return self;
        }
        Failure {
            line: format!("store {name}: {}", self.line),
            ..self
        }
    }

    /// The failure of a copy from the store `from` to the store `to`.
    pub fn about_sync(self, from: &std::path::Path, to: &std::path::Path) -> Failure {
        let (f, t) = (from.display().to_string(), to.display().to_string());
        if !self.from_store || self.line.contains(&f) || self.line.contains(&t) {
            return self;
        }
        Failure {
            line: format!("sync from {f} to {t}: {}", self.line),
            ..self
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line)
    }
}

/// The store's error, with the next step it names worded as this tool
/// takes it ([`shamap_store::error::NextStep`]: the store states the fact,
/// the command line gives the advice).
impl From<shamap_store::StoreError> for Failure {
    fn from(e: shamap_store::StoreError) -> Failure {
        use shamap_store::error::NextStep;
        let advice = match e.next_step() {
            Some(NextStep::ListRoots) => Some("`shamap info` lists its roots and ledgers"),
            Some(NextStep::NameLedgerByHash) => Some("give the ledger hash with --root"),
            Some(NextStep::GiveLedgerDb) => Some("give one with --ledger-db"),
            Some(NextStep::CopyOut) => Some("`shamap sync --from` copies a ledger out"),
            Some(NextStep::Audit) => {
                Some("`shamap verify --db` lists the damage and the roots it affects")
            }
            _ => None,
        };
        let line = match advice {
            Some(a) => format!("{e}: {a}"),
            None => e.to_string(),
        };
        Failure {
            from_store: true,
            ..Failure::unusable(line)
        }
    }
}

/// The exit status of a subcommand's result, after printing its failure,
/// if any.
pub fn finish(result: Result<Exit, Failure>) -> ExitCode {
    match result {
        Ok(exit) => exit.code(),
        Err(f) => {
            report(&f);
            f.exit.code()
        }
    }
}

/// Prints `error: <line>` (one line) on stderr.
pub fn report(f: &Failure) {
    // A closed stderr leaves nowhere to report to.
    let _ = writeln!(io::stderr(), "error: {}", f.line.replace('\n', " "));
}

/// Writes `text` on stdout. A reader that stopped early (`| head`) is not
/// a failure; any other write error is (status 2).
pub fn print_text(text: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::unusable(format!("cannot write output: {e}"))),
    }
}

/// Writes `value` as pretty JSON and a newline on stdout, as [`print_text`].
pub fn print_json(value: &serde_json::Value) -> Result<(), Failure> {
    let mut s = serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot render JSON: {e}\"}}"));
    s.push('\n');
    print_text(&s)
}

/// Writes `value` as pretty JSON and a newline on stdout while it is
/// serialized (a document whose parts are computed as it is written, as
/// `clio verify --json`'s ledgers are), flushed as it goes; a closed pipe
/// is not an error, as [`print_text`].
pub fn print_json_streamed(value: &impl serde::Serialize) -> Result<(), Failure> {
    let mut stdout = io::LineWriter::new(io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut stdout, value)
        .map_err(io::Error::from)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::unusable(format!("cannot write output: {e}"))),
    }
}

/// Writes `text` on stdout; a write error is reported but does not change
/// the exit status. The store subcommands (`import`, `get`, `scan`,
/// `apply`, `info`, `sync`, `gc`, `verify --db`) have always printed this
/// way; their statuses are kept as they were.
pub fn print_text_status_kept(text: &str) {
    if let Err(f) = print_text(text) {
        report(&f);
    }
}

/// [`print_json`], with the exit status kept as [`print_text_status_kept`].
pub fn print_json_status_kept(value: &serde_json::Value) {
    if let Err(f) = print_json(value) {
        report(&f);
    }
}

/// Temporary files that are removed when dropped, unless kept.
struct TempFiles(Vec<PathBuf>);

impl Drop for TempFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            // Best effort: the failure being reported matters more.
            let _ = fs::remove_file(p);
        }
    }
}

/// Creates a new temporary file beside `target` (same directory, so that
/// renaming it over `target` replaces it in one step), named
/// `.<name>.<pid>.<n>.tmp`.
fn create_temp_beside(target: &Path) -> io::Result<(PathBuf, fs::File)> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pid = std::process::id();
    let mut n = 0u32;
    loop {
        let path = dir.join(format!(".{name}.{pid}.{n}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Writes each `(target, bytes)` whole or not at all. Every file's bytes
/// go first to a temporary file in the target's directory, written and
/// synced; only when all of them are complete are they renamed over their
/// targets. On any failure every temporary file is removed and no target
/// is touched (not created, or left as it was); the error is one line
/// naming the target. (Should a rename itself fail, which needs no space,
/// the targets renamed before it stay replaced, each whole.)
pub fn write_files_whole(files: &[(PathBuf, Vec<u8>)]) -> Result<(), Failure> {
    let fail = |target: &Path, e: io::Error| {
        Failure::unusable(format!("{}: cannot write: {e}", target.display()))
    };
    let mut temps = TempFiles(Vec::with_capacity(files.len()));
    for (target, bytes) in files {
        let (path, mut file) = create_temp_beside(target).map_err(|e| fail(target, e))?;
        temps.0.push(path);
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| fail(target, e))?;
    }
    for ((target, _), temp) in files.iter().zip(&temps.0) {
        fs::rename(temp, target).map_err(|e| fail(target, e))?;
    }
    temps.0.clear();
    Ok(())
}

/// Writes `target` whole or not at all from a stream: `fill` writes the
/// bytes (through a buffer) to a temporary file beside `target`, which is
/// synced and renamed over `target` only when `fill` succeeds. On any
/// failure, `fill`'s or the file's, the temporary file is removed and
/// `target` is not touched; the file's errors are one line naming
/// `target`. What `fill` writes is never held in memory whole.
///
/// `reading` is the store the bytes come from, if any: a `target` inside
/// it is refused before anything is created ([`refuse_inside_store`]).
pub fn write_file_streamed(
    target: &Path,
    reading: Option<&Path>,
    fill: &mut dyn FnMut(&mut dyn Write) -> Result<(), Failure>,
) -> Result<(), Failure> {
    if let Some(store) = reading {
        refuse_inside_store(target, store, "the output")?;
    }
    let fail = |e: io::Error| Failure::unusable(format!("{}: cannot write: {e}", target.display()));
    let (path, file) = create_temp_beside(target).map_err(fail)?;
    let mut temps = TempFiles(vec![path.clone()]);
    let mut w = io::BufWriter::with_capacity(1 << 20, file);
    fill(&mut w)?;
    let file = w.into_inner().map_err(|e| fail(e.into_error()))?;
    file.sync_all().map_err(fail)?;
    fs::rename(&path, target).map_err(fail)?;
    temps.0.clear();
    Ok(())
}

/// Refuses to write `out` (a file or a directory, `what` naming it in the
/// message: "the output", "the target") while reading the store `store`
/// names when the write would land inside that store: the one check every
/// command that writes while reading a store makes.
///
/// Paths are compared after resolving links ([`landings`]): `out`'s
/// directory is canonicalized (its nearest existing ancestor, for a
/// directory still to be created), and when `out` is a link, where the
/// link points is resolved the same way (a link pointing into the store is
/// refused, though the write would replace the link). The store is its
/// canonical directory (for `nudb:DIR`, DIR; rotated `rippledb.*`
/// directories are inside it) and, for rippled's node store, the
/// `ledger.db` read with it (in the directory or the one above). A path
/// elsewhere that merely has the same file name is allowed. A Cassandra
/// keyspace has no path, and a store that does not exist has nothing to
/// protect (opening it fails on its own): nothing is refused then.
pub fn refuse_inside_store(out: &Path, store: &Path, what: &str) -> Result<(), Failure> {
    // What the store crate's opening would read there (none: a Cassandra
    // keyspace).
    let Some(read) = shamap_store::open::paths_read(store) else {
        return Ok(());
    };
    let Ok(dir) = fs::canonicalize(&read.dir) else {
        return Ok(());
    };
    let ledger_db = read.ledger_db.and_then(|p| fs::canonicalize(p).ok());
    for at in landings(out) {
        let hit = if at.starts_with(&dir) {
            format!("the store {}", dir.display())
        } else if ledger_db.as_ref() == Some(&at) {
            format!("the store's ledger list {}", at.display())
        } else {
            continue;
        };
        return Err(Failure::unusable(format!(
            "{}: {what} would be written inside {hit}, which this command reads (resolved: {}): refusing to write over what is read",
            out.display(),
            at.display()
        )));
    }
    Ok(())
}

/// How many links [`landings`] follows (as the kernel's limit).
const MAX_LINKS: usize = 40;

/// Where writing `path` lands: the entry itself (its directory with links
/// resolved, and its name), then, while the entry is a symbolic link
/// (dangling or not), where the link points, resolved the same way.
fn landings(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut at = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    for _ in 0..MAX_LINKS {
        let entry = match (at.parent(), at.file_name()) {
            (Some(dir), Some(name)) => resolved(dir).join(name),
            _ => resolved(&at),
        };
        out.push(entry.clone());
        match fs::read_link(&entry) {
            // A relative target is relative to the link's directory.
            Ok(target) => at = entry.parent().map_or(target.clone(), |d| d.join(&target)),
            Err(_) => break,
        }
    }
    out
}

/// `dir` with links resolved: its longest existing prefix canonicalized,
/// and the rest of `dir` (not yet created, so holding no link) applied to
/// it (a `..` there going up one).
fn resolved(dir: &Path) -> PathBuf {
    let parts: Vec<Component<'_>> = dir.components().collect();
    for n in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..n].iter().collect();
        if let Ok(mut real) = fs::canonicalize(&prefix) {
            for c in &parts[n..] {
                match c {
                    Component::ParentDir => {
                        real.pop();
                    }
                    Component::Normal(name) => real.push(name),
                    Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                }
            }
            return real;
        }
    }
    dir.to_owned()
}

/// A progress bar over `len` nodes on stderr when it is a terminal;
/// hidden otherwise.
pub fn node_progress(len: u64, what: &str) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(&format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} nodes ({{per_sec}}, {{eta}})"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// The exit status for a command line clap could not accept, or for
/// `--help` / `--version`: help and version go to stdout with status 0;
/// usage errors to stderr as one line, with status 2. A closed stdout is
/// not worth reporting.
pub fn usage(e: &clap::Error) -> ExitCode {
    if e.use_stderr() {
        let _ = writeln!(io::stderr(), "{}", one_line(e));
        return Exit::Unusable.code();
    }
    let _ = e.print();
    Exit::Done.code()
}

/// A clap usage error as one line: its message lines joined, without the
/// usage block and the `--help` hint.
fn one_line(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "error: a subcommand is required (see --help)".to_owned();
    }
    let rendered = e.render().to_string();
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let line = parts.join(" ");
    if line.starts_with("error:") {
        line
    } else {
        format!("error: {line}")
    }
}

/// Replaces the default panic report (several lines, with "panicked" and a
/// backtrace hint) by one `error:` line. A panic is a bug in this tool.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".to_owned());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let what = what.replace('\n', " ");
        // Ignore a closed stderr: there is nowhere left to report to.
        let _ = writeln!(
            io::stderr(),
            "error: internal error{place}: {what} (please report this bug)"
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_store_error_gets_the_advice_of_its_next_step_and_others_none() {
        use shamap_store::{Access, MemStore, OpenOptions, StoreError};
        let store = MemStore::new();
        let absent = shamap::Hash256([7; 32]);
        let f = Failure::from(
            shamap_store::map::ledger::resolve_root(&store, &absent, None)
                .expect_err("nothing is stored there"),
        );
        assert!(
            f.line
                .ends_with("this store: `shamap info` lists its roots and ledgers"),
            "{}",
            f.line
        );
        let f = Failure::from(
            shamap_store::open_with("nudb:/nonexistent", &OpenOptions::new(Access::Write))
                .expect_err("a NuDB store is read-only"),
        );
        assert!(
            f.line
                .ends_with("a rippled NuDB store: `shamap sync --from` copies a ledger out"),
            "{}",
            f.line
        );
        let f = Failure::from(StoreError::Missing { hash: absent });
        assert_eq!(f.line, format!("node {absent} is missing from the store"));
    }

    #[test]
    fn files_are_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().expect("temp dir");
        let a = dir.path().join("a.svg");
        fs::write(&a, b"old").expect("write");
        let ok = [
            (a.clone(), b"new a".to_vec()),
            (dir.path().join("b.svg"), b"b".to_vec()),
        ];
        write_files_whole(&ok).expect("written");
        assert_eq!(fs::read(&a).expect("a"), b"new a");
        assert_eq!(names(dir.path()), ["a.svg", "b.svg"]);
        // The second target cannot be written: the first is left as it was,
        // and no temporary file stays.
        let bad = dir.path().join("missing-dir").join("c.svg");
        let e = write_files_whole(&[(a.clone(), b"newer".to_vec()), (bad.clone(), vec![1])])
            .expect_err("no such directory");
        assert!(
            e.line
                .starts_with(&format!("{}: cannot write: ", bad.display())),
            "{e}"
        );
        assert_eq!(e.exit, Exit::Unusable);
        assert_eq!(fs::read(&a).expect("a"), b"new a");
        assert_eq!(names(dir.path()), ["a.svg", "b.svg"]);
    }
}
