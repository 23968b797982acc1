//! The oracle: the contents of every version as a pure function of its
//! base and seed, the model of what was acknowledged, and the judgement of
//! what a checker found against it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind, ShaMap};

use super::protocol::Check;
use super::tally::Outcome;
use super::FIRST_ENTRIES;

pub(super) type Contents = BTreeMap<Key, Vec<u8>>;
pub(super) type Roots = Vec<(String, Hash256)>;

/// The changes of version `seed` over `base`, in order (`None`: a
/// remove). A pure function: the worker applies them to the store, the
/// parent to its model.
pub(super) fn changes(base: &Contents, seed: u64) -> Vec<(Key, Option<Vec<u8>>)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut keys: Vec<Key> = base.keys().copied().collect();
    let value = |rng: &mut SmallRng| -> Vec<u8> {
        let len = rng.gen_range(8..80);
        (0..len).map(|_| rng.gen()).collect()
    };
    let mut out = Vec::new();
    if keys.is_empty() {
        for _ in 0..FIRST_ENTRIES {
            out.push((Key(rng.gen()), Some(value(&mut rng))));
        }
        return out;
    }
    for _ in 0..rng.gen_range(20..200) {
        match rng.gen_range(0..10) {
            0..=6 => {
                let k = keys[rng.gen_range(0..keys.len())];
                out.push((k, Some(value(&mut rng))));
            }
            7 | 8 => {
                let k = Key(rng.gen());
                keys.push(k);
                out.push((k, Some(value(&mut rng))));
            }
            _ if keys.len() > 100 => {
                let k = keys.swap_remove(rng.gen_range(0..keys.len()));
                out.push((k, None));
            }
            _ => {}
        }
    }
    out
}

pub(super) fn apply(base: &Contents, seed: u64) -> Contents {
    let mut next = base.clone();
    for (k, v) in changes(base, seed) {
        match v {
            Some(v) => next.insert(k, v),
            None => next.remove(&k),
        };
    }
    next
}

/// The root of a state map holding `contents`, computed in memory.
pub(super) fn root_of(contents: &Contents) -> Hash256 {
    let mut map = ShaMap::new(MapKind::AccountState);
    for (k, v) in contents {
        map.insert(*k, v).expect("fresh key");
    }
    map.snapshot().root_hash()
}

/// What the parent knows: the retained roots the store must show (as
/// acknowledged), the contents of every root it may show, and the change
/// in flight (begun, not acknowledged), which may or may not be there.
#[derive(Clone, Default)]
pub(super) struct Model {
    pub(super) roots: Roots,
    pub(super) contents: HashMap<Hash256, Arc<Contents>>,
    /// The retained list if the change in flight took effect.
    pub(super) pending: Option<Roots>,
    /// The acknowledged list from before a change in flight was adopted
    /// because a read-only check after a crash showed it: that change was
    /// never acknowledged to the worker, and no writer has opened the
    /// store since (a writer's opening records what it recovered as
    /// acknowledged). Until one does, a copy that shows this list lost
    /// nothing acknowledged.
    pub(super) provisional: Option<Roots>,
    /// Acknowledgements read.
    pub(super) acks: u64,
}

pub(super) fn roots_text(roots: &Roots) -> String {
    let names: Vec<String> = roots
        .iter()
        .map(|(n, h)| format!("{n}={}", &h.to_hex()[..8]))
        .collect();
    format!("[{}]", names.join(" "))
}

impl Model {
    /// The contents of `base` (zero: empty), which must be a root the
    /// oracle holds.
    pub(super) fn base(&self, base: Hash256) -> Result<Arc<Contents>, String> {
        if base.is_zero() {
            return Ok(Arc::new(Contents::new()));
        }
        self.contents.get(&base).cloned().ok_or_else(|| {
            format!("the worker built on an unknown root: {base}, which the oracle never saw")
        })
    }

    /// Checks a retained list the store showed: the acknowledged one, or
    /// the one with the change in flight applied (then adopted). Any
    /// other is a silent rollback or a wrong list.
    pub(super) fn resolve(&mut self, seen: &Roots) -> Result<(), String> {
        if *seen == self.roots {
            self.pending = None;
            return Ok(());
        }
        if self.provisional.as_ref() == Some(seen) {
            // Only the adopted, never acknowledged change is missing: this
            // store goes on from the list before it (a writer opening it
            // acknowledges that list), so the oracle does too.
            self.roots = self.provisional.take().unwrap_or_default();
            self.pending = None;
            return Ok(());
        }
        if self.pending.as_ref() == Some(seen) {
            self.roots = self.pending.take().unwrap_or_default();
            return Ok(());
        }
        let missing: Vec<String> = self
            .roots
            .iter()
            .filter(|r| !seen.contains(r))
            .map(|(n, h)| format!("{n}={}", &h.to_hex()[..8]))
            .collect();
        let extra = seen.iter().any(|r| !self.roots.contains(r));
        let what = if !missing.is_empty() {
            "silent rollback: acknowledged roots missing"
        } else if extra {
            "an older retained list: roots no longer (or never) acknowledged are listed"
        } else {
            "the retained roots in another order"
        };
        Err(format!(
            "{what}: the store lists {} but {} were acknowledged{}{}",
            roots_text(seen),
            roots_text(&self.roots),
            if missing.is_empty() {
                String::new()
            } else {
                format!(" (missing: {})", missing.join(" "))
            },
            match &self.pending {
                Some(p) => format!(" (or {} with the change in flight)", roots_text(p)),
                None => String::new(),
            }
        ))
    }

    /// Takes one protocol line of a worker. `Err`: a violation.
    pub(super) fn take(&mut self, line: &str) -> Result<(), String> {
        let words: Vec<&str> = line.split(' ').collect();
        let hash = |s: &str| Hash256::from_hex(s).map_err(|e| format!("bad hash {s:?}: {e}"));
        match words.as_slice() {
            ["opened", list @ ..] => {
                let seen = parse_roots(list)?;
                self.resolve(&seen)?;
                // A writer's opening records what it recovered as
                // acknowledged: the adopted change is the store's now.
                self.provisional = None;
                Ok(())
            }
            ["begin", "import", name, base, seed] | ["begin", "commit", name, base, seed] => {
                let base = self.base(hash(base)?)?;
                let seed: u64 = seed.parse().map_err(|_| format!("bad seed in {line:?}"))?;
                let next = apply(&base, seed);
                let root = root_of(&next);
                self.contents.insert(root, Arc::new(next));
                let mut roots = self.roots.clone();
                if words[1] == "import" {
                    roots.retain(|r| r.1 != root);
                    roots.push((name.to_string(), root));
                } else {
                    match roots.iter_mut().find(|r| r.0 == *name) {
                        Some(r) => r.1 = root,
                        None => roots.push((name.to_string(), root)),
                    }
                }
                self.pending = Some(roots);
                Ok(())
            }
            ["ack", "import" | "commit", name, root] => {
                let root = hash(root)?;
                let pending = self
                    .pending
                    .take()
                    .ok_or_else(|| format!("an ack without a change in flight: {line}"))?;
                let expected = pending.iter().find(|r| r.0 == *name).map(|r| r.1);
                if expected != Some(root) {
                    return Err(format!(
                        "wrong value: the worker's {name} recorded root {root}, the oracle computes {}",
                        expected.map_or("nothing".to_owned(), |h| h.to_string())
                    ));
                }
                self.roots = pending;
                self.acks += 1;
                Ok(())
            }
            ["begin", "gc", keep @ ..] => {
                let keep = keep
                    .iter()
                    .map(|h| hash(h))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut roots = self.roots.clone();
                roots.retain(|r| keep.contains(&r.1));
                self.pending = Some(roots);
                Ok(())
            }
            ["ack", "gc"] => {
                self.roots = self
                    .pending
                    .take()
                    .ok_or_else(|| "an ack of a gc never begun".to_owned())?;
                self.acks += 1;
                // Only what the store may still show is worth keeping.
                let roots = self.roots.clone();
                self.contents.retain(|h, _| roots.iter().any(|r| r.1 == *h));
                Ok(())
            }
            // A change whose error says it was not committed is not in
            // the store: an opening that shows it shows a change never
            // acknowledged.
            ["error", ..] if line.contains("not committed") => {
                self.pending = None;
                Ok(())
            }
            // A failed change may or may not have taken effect: it stays
            // in flight until an opening shows which.
            ["error", ..] | ["refused", ..] | ["closed"] => Ok(()),
            _ => Err(format!("an unknown line from the worker: {line:?}")),
        }
    }
}

pub(super) fn parse_roots(words: &[&str]) -> Result<Roots, String> {
    words
        .iter()
        .filter(|w| !w.is_empty())
        .map(|w| {
            let (name, hash) = w
                .rsplit_once('=')
                .ok_or_else(|| format!("bad root {w:?}"))?;
            let hash = Hash256::from_hex(hash).map_err(|e| format!("bad root {w:?}: {e}"))?;
            Ok((name.to_owned(), hash))
        })
        .collect()
}

/// Judges what the checker found against the model (adopting the change
/// in flight if the store shows it). `refusal_fails`: a refusal is a
/// failure here (after a crash or a clean close: nothing was damaged).
/// `read_only`: the checker opened the store read-only (an adoption is
/// then provisional, see [`Model::provisional`]).
pub(super) fn judge(
    model: &mut Model,
    check: Check,
    refusal_fails: bool,
    read_only: bool,
) -> Outcome {
    match check {
        Check::Broken(why) => Outcome::Failed(why),
        Check::Refused(line) if line.starts_with("MULTILINE") => {
            Outcome::Failed(format!("a refusal of more than one line: {line}"))
        }
        Check::Refused(line) if refusal_fails => Outcome::Failed(format!(
            "the store refuses to open although nothing damaged it: {line}"
        )),
        Check::Refused(line) => Outcome::Refused(line),
        Check::Opened { roots, results } => {
            let before = model.roots.clone();
            let adopts = roots != before && model.pending.as_ref() == Some(&roots);
            if let Err(why) = model.resolve(&roots) {
                return Outcome::Failed(why);
            }
            if adopts && read_only {
                model.provisional = Some(before);
            }
            let mut refused = None;
            // The list resolved: the acknowledged one, or (a copy taken
            // before any writer recovered the store) the provisional one.
            for (name, root) in &roots {
                let Some((_, result)) = results.iter().find(|r| r.0 == *root) else {
                    return Outcome::Failed(format!("a root was not checked: {name}"));
                };
                match result {
                    Err(e) if e.starts_with("MULTILINE") => {
                        return Outcome::Failed(format!("an error of more than one line: {e}"))
                    }
                    Err(e) => {
                        refused.get_or_insert_with(|| format!("root {name}: {e}"));
                    }
                    Ok((leaves, items, rebuilt)) => {
                        let want = model.contents.get(root).map_or(0, |c| c.len() as u64);
                        if rebuilt != root || *leaves != want || *items != want {
                            return Outcome::Failed(format!(
                                "wrong value: root {name} ({root}) reads as {items} items, {leaves} leaves verified, rebuilding to {rebuilt}; the oracle holds {want} items"
                            ));
                        }
                    }
                }
            }
            match refused {
                Some(line) if refusal_fails => Outcome::Failed(format!(
                    "a root fails to verify although nothing damaged the store: {line}"
                )),
                Some(line) => Outcome::RefusedAtVerify(line),
                None => Outcome::Kept,
            }
        }
    }
}
