//! Listing a ledger's whole state from Clio's tables: the scan modes
//! ([`ScanMode`]: Clio's ledger-page scan, unfiltered token-range scans of
//! `objects`, or the successor walk), the choice among them when a
//! keyspace is opened, and [`ClioReader::scan_state`].

use super::*;

/// How a ledger's whole state is listed (a first ledger's build, the
/// final audit, the read floor).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanMode {
    /// `Partition`, unless the server refuses its query (as AWS Keyspaces
    /// does `PER PARTITION LIMIT`): then `Objects`. The default.
    #[default]
    Auto,
    /// Clio's ledger-page query by token range: `… WHERE token(key) > ?
    /// AND token(key) <= ? AND sequence <= ? PER PARTITION LIMIT 1 ALLOW
    /// FILTERING` (and `successor` with `seq <= ?`).
    Partition,
    /// Token-range scans of `objects` and `successor` reading every row
    /// (every version of every key), keeping here each key's newest row at
    /// or below the ledger: no filtering on the server.
    Objects,
    /// The successor list walked from `00…00`, one key lookup at a time
    /// (Clio's `selectSuccessor`), each listed key's object read by key
    /// (`selectObject`, pipelined): only point reads, but one round trip
    /// per live key, and objects outside the list are not seen.
    Successor,
}

impl ScanMode {
    /// The mode's name (`--scan`).
    pub fn name(self) -> &'static str {
        match self {
            ScanMode::Auto => "auto",
            ScanMode::Partition => "partition",
            ScanMode::Objects => "objects",
            ScanMode::Successor => "successor",
        }
    }

    /// The mode named `s`.
    pub fn parse(s: &str) -> Option<ScanMode> {
        [
            ScanMode::Auto,
            ScanMode::Partition,
            ScanMode::Objects,
            ScanMode::Successor,
        ]
        .into_iter()
        .find(|m| m.name() == s)
    }
}

/// The scan to use when `asked`, given the partition scan's preparation
/// (`partition`, run only when it may be used): the mode (never `Auto`),
/// the prepared partition scan when used, and why `Auto` fell back. Asked
/// for `Partition` that the server refuses: an error line.
#[allow(clippy::type_complexity)]
pub(super) fn choose_scan<T>(
    asked: ScanMode,
    partition: impl FnOnce() -> Result<T, String>,
) -> Result<(ScanMode, Option<T>, Option<String>), String> {
    match asked {
        ScanMode::Partition => match partition() {
            Ok(p) => Ok((ScanMode::Partition, Some(p), None)),
            Err(e) => Err(format!(
                "--scan partition: the server refuses Clio's ledger-page scan: {e}"
            )),
        },
        ScanMode::Auto => match partition() {
            Ok(p) => Ok((ScanMode::Partition, Some(p), None)),
            Err(e) => Ok((
                ScanMode::Objects,
                None,
                Some(format!(
                    "scan: objects (the server refuses the PER PARTITION LIMIT scan: {e})"
                )),
            )),
        },
        other => Ok((other, None, None)),
    }
}

/// `n` contiguous token ranges `(lo, hi]` covering the Murmur3 ring.
pub(super) fn token_ranges(n: usize) -> Vec<(i64, i64)> {
    let n = n.max(1) as i128;
    let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    let span = max - min;
    (0..n)
        .map(|i| {
            let lo = min + span * i / n;
            let hi = if i + 1 == n {
                max
            } else {
                min + span * (i + 1) / n
            };
            // In range: both lie between i64::MIN and i64::MAX.
            (lo as i64, hi as i64)
        })
        .collect()
}

impl ClioReader {
    /// The state at `seq` as rows, in no particular order, to `f`: every
    /// key's newest `objects` row at or below `seq` (with `objects`), and
    /// every `successor` row at or below `seq` (with `successors`). Each
    /// table is read as [`SCAN_RANGES`] token-range scans, a few at a time
    /// (the same queries Clio's ledger-page reads use, with a token bound),
    /// the two tables side by side. `f` returning an error stops the scan
    /// with it.
    pub fn scan_state(
        &self,
        seq: u32,
        objects: bool,
        successors: bool,
        f: &mut dyn FnMut(StateRow) -> Result<(), ClioError>,
    ) -> Result<(), ClioError> {
        if self.scan == ScanMode::Successor {
            return self.walk_state(seq, objects, successors, f);
        }
        let ranges = token_ranges(SCAN_RANGES);
        let table = |objects: bool| {
            let sh = Arc::clone(&self.sh);
            stream::iter(ranges.clone())
                .map(move |(lo, hi)| sh.scan_range(objects, lo, hi, seq))
                .flatten_unordered(SCAN_CONCURRENCY)
                .boxed()
        };
        let none = || stream::empty().boxed();
        let mut rows = stream::select(
            if objects { table(true) } else { none() },
            if successors { table(false) } else { none() },
        );
        self.block_on(async {
            while let Some(row) = rows.next().await {
                match row {
                    Ok(r) => f(r)?,
                    Err(e) => {
                        return Err(self
                            .conn
                            .fail(&format!("cannot scan the state at ledger {seq}"), e))
                    }
                }
            }
            Ok(())
        })
    }

    /// [`ClioReader::scan_state`] by [`ScanMode::Successor`]: the list
    /// walked from `00…00` one hop at a time, each hop a `Successor` row
    /// (the walk stops at a key without a row, at a `next` that is not a
    /// key above it, and at `FF…FF`); with `objects`, each listed key's
    /// newest object at or below `seq`, read in batches beside the walk.
    fn walk_state(
        &self,
        seq: u32,
        objects: bool,
        successors: bool,
        f: &mut dyn FnMut(StateRow) -> Result<(), ClioError>,
    ) -> Result<(), ClioError> {
        const BATCH: usize = 512;
        const BATCHES: usize = 4;
        type Batch = tokio::task::JoinHandle<Result<Vec<(Key, Option<(i64, Vec<u8>)>)>, ClioError>>;
        let fail = |e: BoxError| {
            self.conn.fail(
                &format!("cannot walk the successor list at ledger {seq}"),
                e,
            )
        };
        let spawn = |keys: Vec<Key>| -> Batch {
            let sh = Arc::clone(&self.sh);
            self.conn.runtime.spawn(async move {
                let found = sh.objects(&keys, seq).await?;
                Ok(keys.into_iter().zip(found).collect())
            })
        };
        let mut pending: VecDeque<Batch> = VecDeque::new();
        let emit = |b: Batch, f: &mut dyn FnMut(StateRow) -> Result<(), ClioError>| {
            let rows = self.block_on(b).map_err(|e| fail(Box::new(e)))??;
            for (k, o) in rows {
                if let Some((s, obj)) = o {
                    f(StateRow::Object(k.0.to_vec(), s, obj))?;
                }
            }
            Ok::<_, ClioError>(())
        };
        let mut key = FIRST_KEY;
        let mut batch = Vec::new();
        while let Some(next) = self.block_on(self.sh.hop(&key, seq)).map_err(fail)? {
            if successors {
                f(StateRow::Successor(
                    key.0.to_vec(),
                    seq_i64(seq),
                    next.clone(),
                ))?;
            }
            let Some(n) = key_of(&next).filter(|n| *n > key && *n != LAST_KEY) else {
                break;
            };
            key = n;
            if objects {
                batch.push(n);
                if batch.len() == BATCH {
                    pending.push_back(spawn(std::mem::take(&mut batch)));
                    while pending.len() > BATCHES {
                        if let Some(b) = pending.pop_front() {
                            emit(b, f)?;
                        }
                    }
                }
            }
        }
        if !batch.is_empty() {
            pending.push_back(spawn(batch));
        }
        while let Some(b) = pending.pop_front() {
            emit(b, f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_to_the_objects_scan_when_the_server_refuses_the_partition_scan() {
        let refused =
            || -> Result<u8, String> { Err("PER PARTITION LIMIT is not supported".to_owned()) };
        let (mode, p, note) = choose_scan(ScanMode::Auto, refused).expect("auto goes on");
        assert_eq!((mode, p), (ScanMode::Objects, None));
        assert_eq!(
            note.as_deref(),
            Some("scan: objects (the server refuses the PER PARTITION LIMIT scan: PER PARTITION LIMIT is not supported)")
        );
        assert_eq!(
            choose_scan(ScanMode::Auto, || Ok(7u8)).expect("ok"),
            (ScanMode::Partition, Some(7), None)
        );
        let e = choose_scan(ScanMode::Partition, refused).expect_err("refused");
        assert!(e.starts_with("--scan partition: the server refuses"), "{e}");
        // The other scans never try the partition scan.
        for m in [ScanMode::Objects, ScanMode::Successor] {
            let untried = || -> Result<u8, String> { panic!("tried") };
            assert_eq!(choose_scan(m, untried).expect("ok"), (m, None, None));
        }
        assert_eq!(ScanMode::parse("objects"), Some(ScanMode::Objects));
        assert_eq!(ScanMode::parse("sideways"), None);
    }

    #[test]
    fn token_ranges_cover_the_ring_without_gaps() {
        for n in [1, 2, 3, 7, 256] {
            let r = token_ranges(n);
            assert_eq!(r.len(), n);
            assert_eq!(r[0].0, i64::MIN);
            assert_eq!(r[n - 1].1, i64::MAX);
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                assert!(w[0].0 < w[0].1);
            }
        }
    }
}
