//! A following ledger's diff: planned against the state before it, its
//! successor rows read ahead, its changes applied and checked.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};

use shamap::Key;

use shamap_store::BackedMap;
use shamap_store::StoreError;

use crate::{key_of, ClioError, FIRST_KEY, LAST_KEY};

use super::*;

impl<'r, 's> ClioVerifier<'r, 's> {
    /// The next live key after `key` in the map, or [`LAST_KEY`].
    /// Sorts ledger `seq`'s diff against the state before it: the changes
    /// to make, and the successor rows the ledger must have written with
    /// the next live key each must name. Each created key's row names the
    /// next live key after it; the row of the live key before each created
    /// or deleted key names the next live key after that one. Both are
    /// found in the state before the ledger, skipping the keys it deletes
    /// and adding the keys it creates, so that the rows can be read while
    /// the changes are made.
    pub(super) fn plan_diff(
        &self,
        seq: u32,
        keys: &[Key],
        objects: Vec<Option<(i64, Vec<u8>)>>,
        problems: &mut Vec<Problem>,
    ) -> Result<DiffPlan, ClioError> {
        let mut changes = Vec::with_capacity(keys.len());
        let (mut created, mut deleted) = (BTreeSet::new(), BTreeSet::new());
        for (key, obj) in keys.iter().zip(objects) {
            match obj {
                None => problems.push(Problem {
                    key: *key,
                    what: format!("in the diff of ledger {seq} but has no object at or below it"),
                }),
                Some((s, _)) if s != i64::from(seq) => problems.push(Problem {
                    key: *key,
                    what: format!(
                        "in the diff of ledger {seq} but its newest object is from ledger {s}"
                    ),
                }),
                Some((_, data)) if data.is_empty() => {
                    if self.map.contains(key)? {
                        deleted.insert(*key);
                        changes.push(Change::Delete(*key));
                    } else {
                        problems.push(Problem {
                            key: *key,
                            what: format!("deleted at ledger {seq} but was not live"),
                        });
                    }
                }
                Some((_, data)) => {
                    if !self.map.contains(key)? {
                        created.insert(*key);
                    }
                    changes.push(Change::Put(*key, data));
                }
            }
        }
        let live = Live {
            map: &self.map,
            created: &created,
            deleted: &deleted,
        };
        let mut successors = BTreeMap::new();
        for k in &created {
            let next = live.after(k)?;
            successors.insert(*k, next);
            successors.insert(live.before(k)?, *k);
        }
        for k in &deleted {
            successors.insert(live.before(k)?, live.after(k)?);
        }
        Ok(DiffPlan {
            changes,
            successors,
        })
    }

    /// Plans ledger `seq`'s diff (rows `diff`, their keys and objects)
    /// against the state map as it is, and starts reading its successor
    /// rows.
    pub(super) fn plan_diff_now(
        &self,
        seq: u32,
        diff: &[Vec<u8>],
        keys: &[Key],
        objects: Vec<Option<(i64, Vec<u8>)>>,
    ) -> Result<PlannedDiff, ClioError> {
        if let Some(raw) = diff.iter().find(|raw| key_of(raw).is_none()) {
            return Err(ClioError::unusable(
                seq,
                format!("a diff row's key is {} bytes, not 32", raw.len()),
            ));
        }
        let mut problems = Vec::new();
        let plan = self.plan_diff(seq, keys, objects, &mut problems)?;
        // Which successor rows, and what each must name, follow from the
        // state before the ledger and its diff: they are read while the
        // diff is applied and the root rehashed.
        let asked = plan.successors.keys().copied().collect();
        let successors = self.reader.successors_later(asked, seq);
        Ok(PlannedDiff {
            plan,
            problems,
            successors,
        })
    }

    /// After ledger `seq`'s changes: when the next ledger is to be read
    /// ahead, takes its rows and plans its diff against the state as it now
    /// is (the next ledger's state before), so that its successor rows are
    /// read while this ledger is hashed, checked and committed. If this
    /// ledger does not match, the plan is never used.
    pub(super) fn plan_next(&mut self, seq: u32) {
        let Some(next) = seq
            .checked_add(1)
            .filter(|n| self.horizon.is_some_and(|h| *n <= h))
        else {
            return;
        };
        // A read error is left for the next ledger's turn, which reads
        // again and reports it.
        let Ok(mut rows) = self.rows(next, true) else {
            return;
        };
        // The rows just read, and those read ahead since, are heap the
        // cache leaves free before planning loads nodes into it.
        self.map.probe_heap();
        let objects = std::mem::take(&mut rows.objects);
        let plan = self.plan_diff_now(next, &rows.diff, &rows.keys, objects);
        self.planned = Some(Planned {
            seq: next,
            rows,
            plan,
        });
    }

    /// Makes a diff's changes to the state map.
    pub(super) fn apply_changes(&mut self, changes: Vec<Change>) -> Result<(), ClioError> {
        for change in changes {
            match change {
                Change::Put(key, data) => {
                    if self.map.upsert(key, &data)? {
                        self.entries += 1;
                    }
                }
                Change::Delete(key) => {
                    if self.map.remove(&key)? {
                        self.entries -= 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A diff's changes and the successor rows it must have written
/// ([`ClioVerifier::plan_diff`]).
pub(super) struct DiffPlan {
    pub(super) changes: Vec<Change>,
    /// Key → the next live key its successor row must name.
    pub(super) successors: BTreeMap<Key, Key>,
}

/// One change of a diff to the state map.
pub(super) enum Change {
    /// Created or modified.
    Put(Key, Vec<u8>),
    Delete(Key),
}

/// The live keys after a ledger, seen from the state map before it and
/// the keys the ledger creates and deletes.
pub(super) struct Live<'a, 'm> {
    map: &'a BackedMap<'m>,
    created: &'a BTreeSet<Key>,
    deleted: &'a BTreeSet<Key>,
}

impl Live<'_, '_> {
    /// The first live key after `key`, or the list's tail.
    fn after(&self, key: &Key) -> Result<Key, StoreError> {
        let mut kept = self.map.next_after(key)?.map(|(k, _)| k);
        while let Some(k) = kept.filter(|k| self.deleted.contains(k)) {
            kept = self.map.next_after(&k)?.map(|(k, _)| k);
        }
        let made = self
            .created
            .range((Excluded(*key), Unbounded))
            .next()
            .copied();
        Ok(match (kept, made) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(LAST_KEY),
        })
    }

    /// The last live key before `key`, or the list's head.
    fn before(&self, key: &Key) -> Result<Key, StoreError> {
        let mut kept = self.map.last_before(key)?.map(|(k, _)| k);
        while let Some(k) = kept.filter(|k| self.deleted.contains(k)) {
            kept = self.map.last_before(&k)?.map(|(k, _)| k);
        }
        let made = self.created.range(..*key).next_back().copied();
        Ok(match (kept, made) {
            (Some(a), Some(b)) => a.max(b),
            (a, b) => a.or(b).unwrap_or(FIRST_KEY),
        })
    }
}

/// Compares the successor rows `found` (in the order of `want`'s keys)
/// with the next live key each must name.
pub(super) fn check_successors(
    seq: u32,
    want: &BTreeMap<Key, Key>,
    found: Vec<Option<Vec<u8>>>,
    problems: &mut Vec<Problem>,
) {
    for ((key, expected), got) in want.iter().zip(found) {
        match got.as_deref().map(key_of) {
            Some(Some(n)) if n == *expected => {}
            Some(Some(n)) => problems.push(Problem {
                key: *key,
                what: format!(
                    "its successor at ledger {seq} is {n}, but the next live key is {expected}"
                ),
            }),
            Some(None) => problems.push(Problem {
                key: *key,
                what: format!("its successor at ledger {seq} is not a 32-byte key"),
            }),
            None => problems.push(Problem {
                key: *key,
                what: format!(
                    "no successor row at or below ledger {seq} (the next live key is {expected})"
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The live keys around each created and deleted key, found from the
    /// state before a ledger ([`Live`]), are those of the state after it
    /// (a `BTreeSet` oracle), including the list's head and tail, runs of
    /// deleted neighbours and created keys side by side; keys drawn from a
    /// small space so that neighbours collide.
    #[test]
    fn live_keys_from_the_state_before_match_the_state_after() {
        for seed in 0..40u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let store = shamap_store::MemStore::new();
            let mut map = BackedMap::open(
                &store,
                Hash256::ZERO,
                MapKind::AccountState,
                BackedOptions::default(),
            )
            .expect("open");
            let key = |rng: &mut SmallRng| {
                let mut k = [0u8; 32];
                k[0] = rng.gen_range(1..=254);
                k[1] = rng.gen_range(0..4);
                Key(k)
            };
            let mut before = BTreeSet::new();
            for _ in 0..rng.gen_range(0..120) {
                let k = key(&mut rng);
                map.upsert(k, &[1]).expect("upsert");
                before.insert(k);
            }
            let (mut created, mut deleted) = (BTreeSet::new(), BTreeSet::new());
            for _ in 0..rng.gen_range(0..60) {
                let k = key(&mut rng);
                if before.contains(&k) {
                    deleted.insert(k);
                } else {
                    created.insert(k);
                }
            }
            let after: BTreeSet<Key> = before
                .difference(&deleted)
                .chain(&created)
                .copied()
                .collect();
            let live = Live {
                map: &map,
                created: &created,
                deleted: &deleted,
            };
            for k in created.iter().chain(&deleted) {
                let next = after
                    .range((Excluded(*k), Unbounded))
                    .next()
                    .copied()
                    .unwrap_or(LAST_KEY);
                let prev = after.range(..*k).next_back().copied().unwrap_or(FIRST_KEY);
                assert_eq!(
                    live.after(k).expect("after"),
                    next,
                    "seed {seed}, after {k}"
                );
                assert_eq!(
                    live.before(k).expect("before"),
                    prev,
                    "seed {seed}, before {k}"
                );
            }
        }
    }
}
