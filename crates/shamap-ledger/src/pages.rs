//! A ledger as read from files: one `ledger` response, or the
//! `ledger_data` pages of one ledger merged in order ([`PagedLedger`]), with
//! the file each entry came from. `shamap verify` (and the CLI's other
//! commands that read dumps) and the Python module's `read_ledger` group
//! their files here, under one rule for missing pages: a ledger whose pages
//! all end with a `marker` continues past them, so its last page is missing
//! and it is refused ([`PagedLedger::require_whole`]).
//!
//! ```
//! use shamap_ledger::pages::{PagedLedger, PagesError};
//!
//! let page = |body: &str| shamap_ledger::parse(body.as_bytes()).expect("parses");
//! let first = page(r#"{"ledger_index": 9, "state": [], "marker": "m"}"#);
//! let last = page(r#"{"ledger_index": 9, "state": []}"#);
//! let whole = PagedLedger::from_pages([("a".to_owned(), first.clone()), ("b".to_owned(), last)])?;
//! assert_eq!(whole.source_names(), "a, b");
//! let partial = PagedLedger::from_pages([("a".to_owned(), first)]);
//! assert!(matches!(partial, Err(PagesError::Incomplete { .. })));
//! # Ok::<(), PagesError>(())
//! ```

use crate::error::DumpError;
use crate::ledger_dump::{merge, DumpKind, LedgerDump};

/// A ledger that cannot be assembled from the files given. Each message is
/// one line that starts with the file (or files) it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PagesError {
    /// No file was given.
    #[error("no files given")]
    NoPages,
    /// A page that does not agree with the pages before it (another
    /// ledger, or conflicting header fields).
    #[error("{file}: {error}")]
    Conflict {
        /// The later page's file.
        file: String,
        /// Why it does not merge.
        error: Box<DumpError>,
    },
    /// `ledger_data` pages that all end with a marker: the ledger continues
    /// past them, so its last page is missing.
    #[error("{files}: {ledger} continues past {which}: give every page of the ledger")]
    Incomplete {
        /// The files, joined with `, `.
        files: String,
        /// The ledger's name ([`crate::HeaderFields::ledger_name`]).
        ledger: String,
        /// `this page (its marker is …)` or `these pages (every page has a
        /// marker)`.
        which: String,
    },
    /// An entry that cannot go into its map, located in its own file.
    #[error("{file}: {message}")]
    Entry {
        /// The file the entry came from.
        file: String,
        /// What is wrong, naming the entry by its index in that file.
        message: String,
    },
}

/// One file's contribution to a [`PagedLedger`], in merge order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file's name for messages.
    pub name: String,
    /// State entries it contributed.
    pub state_entries: usize,
    /// Transactions it contributed.
    pub transactions: usize,
}

impl Source {
    fn of(name: String, dump: &LedgerDump) -> Source {
        Source {
            name,
            state_entries: dump.state.as_ref().map_or(0, Vec::len),
            transactions: dump.transactions.as_ref().map_or(0, Vec::len),
        }
    }
}

/// All the input about one ledger: the merged dump and where its entries
/// came from.
#[derive(Debug, Clone)]
pub struct PagedLedger {
    /// Where the entries came from, in order (one file unless pages were
    /// merged).
    pub sources: Vec<Source>,
    /// The merged dump.
    pub dump: LedgerDump,
}

impl PagedLedger {
    /// The ledger of one file.
    pub fn new(name: String, dump: LedgerDump) -> PagedLedger {
        PagedLedger {
            sources: vec![Source::of(name, &dump)],
            dump,
        }
    }

    /// The pages given, in order, merged into one whole ledger: the first
    /// page that does not merge, or pages that all end with a marker, are
    /// an error.
    pub fn from_pages(
        pages: impl IntoIterator<Item = (String, LedgerDump)>,
    ) -> Result<PagedLedger, PagesError> {
        let mut pages = pages.into_iter();
        let (name, dump) = pages.next().ok_or(PagesError::NoPages)?;
        let mut ledger = PagedLedger::new(name, dump);
        for (name, dump) in pages {
            ledger.add_page(name, dump)?;
        }
        ledger.require_whole()?;
        Ok(ledger)
    }

    /// Whether `dump` is a further page of this ledger: both are
    /// `ledger_data` pages of the same ledger (same `ledger_index` and/or
    /// `ledger_hash`).
    pub fn takes_page(&self, dump: &LedgerDump) -> bool {
        self.dump.kind == DumpKind::LedgerDataPage
            && dump.kind == DumpKind::LedgerDataPage
            && self.dump.header.same_ledger(&dump.header)
    }

    /// Merges `dump`, read from file `name`, after the pages so far
    /// ([`merge`]). The file is counted among the sources even when it
    /// does not merge; the ledger is then left without entries, for the
    /// caller to drop (merging takes the pages by value, and a copy to
    /// restore would double the memory of a large ledger).
    fn add_page(&mut self, name: String, dump: LedgerDump) -> Result<(), PagesError> {
        let source = Source::of(name, &dump);
        let placeholder = LedgerDump {
            kind: DumpKind::LedgerDataPage,
            header: self.dump.header,
            state: None,
            transactions: None,
            marker: None,
        };
        let so_far = std::mem::replace(&mut self.dump, placeholder);
        let merged = merge([so_far, dump]);
        let result = match merged {
            Ok(merged) => {
                self.dump = merged;
                Ok(())
            }
            Err(error) => Err(PagesError::Conflict {
                file: source.name.clone(),
                error: Box::new(error),
            }),
        };
        self.sources.push(source);
        result
    }

    /// Fails when the ledger continues past the pages given: `ledger_data`
    /// pages that all end with a marker, so the last page is missing. Its
    /// state map would be a part of the ledger's, and nothing read from it
    /// (a root, a proof, a diff, stats, an import) would be the ledger's.
    /// The one place this rule is applied.
    pub fn require_whole(&self) -> Result<(), PagesError> {
        /// Characters of a marker quoted in the message.
        const SHOWN: usize = 80;
        let Some(marker) = self.dump.pending_marker() else {
            return Ok(());
        };
        let which = if self.sources.len() == 1 {
            let marker = match marker.char_indices().nth(SHOWN) {
                Some((cut, _)) => format!("{}…", &marker[..cut]),
                None => marker.to_owned(),
            };
            format!("this page (its marker is {marker})")
        } else {
            "these pages (every page has a marker)".to_owned()
        };
        Err(PagesError::Incomplete {
            files: self.source_names(),
            ledger: self.dump.header.ledger_name(),
            which,
        })
    }

    /// The file and the index within it of entry `index` of the merged
    /// list whose per-file lengths `count` gives.
    pub fn locate(&self, mut index: usize, count: fn(&Source) -> usize) -> (&str, usize) {
        for s in &self.sources {
            let n = count(s);
            if index < n {
                return (&s.name, index);
            }
            index -= n;
        }
        (self.sources.first().map_or("", |s| s.name.as_str()), index)
    }

    /// An error about entry `index` of the merged list whose per-file
    /// lengths `count` gives: `<file>: <what(index in that file)>`.
    pub fn error_at(
        &self,
        index: usize,
        count: fn(&Source) -> usize,
        what: impl FnOnce(usize) -> String,
    ) -> PagesError {
        let (file, local) = self.locate(index, count);
        PagesError::Entry {
            file: file.to_owned(),
            message: what(local),
        }
    }

    /// The files, as named, joined with `, `.
    pub fn source_names(&self) -> String {
        self.sources
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One slot of [`group_each`]'s output while it is being built: a ledger
/// and the first problem found with it, or (no ledger) a file that could
/// not be read.
struct Slot<E> {
    /// The ledger, unless the slot is an unreadable file.
    ledger: Option<PagedLedger>,
    /// The first problem, if any.
    problem: Option<E>,
}

/// Makes one ledger per ledger given, in order of first appearance, going
/// on past problems: each `ledger` response alone, and `ledger_data` pages
/// merged with earlier pages of the same ledger
/// ([`PagedLedger::takes_page`]). One result per ledger, and one per input
/// that could not be read (`Err` in `inputs`, passed through). A ledger
/// with a problem (pages that conflict, a missing last page:
/// [`PagedLedger::require_whole`]) is its first problem, made an `E` by
/// `problem`; later pages of it join it silently.
pub fn group_each<E>(
    inputs: impl IntoIterator<Item = Result<(String, LedgerDump), E>>,
    problem: impl Fn(PagesError) -> E,
) -> Vec<Result<PagedLedger, E>> {
    let mut slots: Vec<Slot<E>> = Vec::new();
    for input in inputs {
        let (name, dump) = match input {
            Ok(input) => input,
            Err(e) => {
                slots.push(Slot {
                    ledger: None,
                    problem: Some(e),
                });
                continue;
            }
        };
        let same = slots
            .iter()
            .position(|s| s.ledger.as_ref().is_some_and(|l| l.takes_page(&dump)));
        let Some(Slot {
            ledger: Some(ledger),
            problem: first,
        }) = same.and_then(|pos| slots.get_mut(pos))
        else {
            slots.push(Slot {
                ledger: Some(PagedLedger::new(name, dump)),
                problem: None,
            });
            continue;
        };
        if first.is_none() {
            if let Err(e) = ledger.add_page(name, dump) {
                *first = Some(problem(e));
            }
        } else {
            ledger.sources.push(Source::of(name, &dump));
        }
    }
    slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot {
                problem: Some(e), ..
            } => Some(Err(e)),
            Slot {
                ledger: Some(l),
                problem: None,
            } => Some(l.require_whole().map(|()| l).map_err(&problem)),
            Slot {
                ledger: None,
                problem: None,
            } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY1: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
    const KEY2: &str = "032D4205B5D7DCEC8A4E56851C44555F6DC7D410AA823AE140C78674B8734DBF";

    fn page(index: u32, key: &str, marker: Option<&str>) -> LedgerDump {
        let marker = marker.map_or(String::new(), |m| format!(r#", "marker": "{m}""#));
        let json = format!(
            r#"{{"result": {{"ledger_index": {index}, "state": [{{"index": "{key}", "data": "11"}}]{marker}}}}}"#
        );
        crate::parse(json.as_bytes()).expect("page parses")
    }

    fn named(name: &str, dump: LedgerDump) -> (String, LedgerDump) {
        (name.to_owned(), dump)
    }

    #[test]
    fn pages_that_all_have_a_marker_are_refused() {
        let e = PagedLedger::from_pages([
            named("a", page(9, KEY1, Some("m1"))),
            named("b", page(9, KEY2, Some("m2"))),
        ])
        .expect_err("incomplete");
        assert_eq!(
            e.to_string(),
            "a, b: ledger 9 continues past these pages (every page has a marker): \
             give every page of the ledger"
        );
        let e = PagedLedger::from_pages([named("a", page(9, KEY1, Some("m1")))])
            .expect_err("incomplete");
        assert_eq!(
            e.to_string(),
            "a: ledger 9 continues past this page (its marker is m1): give every page of the ledger"
        );
        let whole = PagedLedger::from_pages([
            named("a", page(9, KEY1, Some("m1"))),
            named("b", page(9, KEY2, None)),
        ])
        .expect("whole");
        assert_eq!(whole.dump.state.as_ref().map(Vec::len), Some(2));
        assert_eq!(whole.locate(1, |s| s.state_entries), ("b", 0));
        assert!(matches!(
            PagedLedger::from_pages([]),
            Err(PagesError::NoPages)
        ));
    }

    #[test]
    fn pages_of_other_ledgers_conflict_in_one_ledger_and_group_apart() {
        let e = PagedLedger::from_pages([
            named("a", page(9, KEY1, Some("m"))),
            named("b", page(10, KEY2, None)),
        ])
        .expect_err("conflict");
        assert!(e.to_string().starts_with("b: "), "{e}");
        let groups = group_each(
            [
                Ok(named("a", page(9, KEY1, Some("m")))),
                Ok(named("b", page(10, KEY2, None))),
                Err("unreadable".to_owned()),
                Ok(named("c", page(9, KEY2, None))),
            ],
            |e| e.to_string(),
        );
        let names: Vec<Result<String, String>> = groups
            .into_iter()
            .map(|g| g.map(|l| l.source_names()))
            .collect();
        assert_eq!(
            names,
            [
                Ok("a, c".to_owned()),
                Ok("b".to_owned()),
                Err("unreadable".to_owned())
            ]
        );
    }
}
