//! Size-class advisor: which child-array capacities a map should use.
//!
//! An inner node with `n` children takes the smallest size class whose
//! capacity is at least `n` (see [`SizeClasses`]); the slots between `n`
//! and that capacity are allocated and unused. Given how many inner nodes
//! have each number of children (a map's child-count histogram,
//! [`crate::ShapeStats::child_histogram`]), this module finds, for a budget
//! of `k` sparse classes (capacities 1..=15) plus the dense class 16, the
//! capacities that allocate the fewest slots in total — exactly, by dynamic
//! programming — and prices any given class set the same way.
//!
//! Fewest slots is also fewest bytes: an inner chunk is `32 + 8·capacity`
//! bytes here (and `64 + 40·capacity` in rippled), so for a fixed number of
//! inner nodes the bytes are an increasing function of the slots.
//!
//! This is the computation rippled's engineers did by hand to choose
//! `{2, 4, 6, 16}` and later to propose `{2, 4, 10, 16}` (rippled PR #4804).
//!
//! # The optimisation
//!
//! Let `w[n]` be the number of inner nodes with `n` children (`n` = 1..=16;
//! the childless root of an empty map counts as `n` = 1, since every class
//! has capacity at least 1) and `S` its prefix sums. Classes
//! `c_1 < … < c_j ≤ 15` cut `1..=16` into runs `(c_{i-1}, c_i]`, each
//! priced `c_i · (S[c_i] − S[c_{i-1}])`, plus the dense tail
//! `16 · (S[16] − S[c_j])`. With `f[i][c]` the cheapest price of `1..=c`
//! using `i` classes of which the largest is `c`:
//!
//! ```text
//! f[0][0] = 0
//! f[i][c] = min over p < c of  f[i-1][p] + c · (S[c] − S[p])
//! best(j) = min over c of      f[j][c] + 16 · (S[16] − S[c])
//! ```
//!
//! which is `O(k · 15²)` steps. The advice for a budget of `k` is the
//! cheapest of `best(0..=k)`. Ties are broken deterministically: fewest
//! classes first (fewer pools, less pool slack), then the smallest largest
//! sparse capacity, then the smallest next one down, and so on.

use crate::options::{SizeClasses, MAX_SIZE_CLASSES};

/// Most sparse classes a map can have: the pointer tag names
/// [`MAX_SIZE_CLASSES`] classes, one of which is the dense 16.
pub const MAX_SPARSE_CLASSES: usize = MAX_SIZE_CLASSES - 1;

/// Capacity of the dense class, which every class set ends with.
pub const DENSE_CAPACITY: u8 = 16;

/// Bytes of an inner chunk beyond its slots (the stored hash).
const INNER_HEADER_BYTES: u64 = 32;
/// Bytes per child slot (one node word).
const SLOT_BYTES: u64 = 8;

/// A class set priced on a histogram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassPlan {
    /// Capacities, strictly increasing, the last being 16.
    pub capacities: Vec<u8>,
    /// Inner nodes priced (the histogram's total).
    pub nodes: u64,
    /// Child slots allocated, used and unused.
    pub slots: u64,
}

impl ClassPlan {
    /// Sparse classes in the set (all but the dense 16).
    pub fn sparse_classes(&self) -> usize {
        self.capacities.len() - 1
    }

    /// Allocated slots per inner node (0 without inner nodes).
    pub fn slots_per_inner(&self) -> f64 {
        ratio(self.slots, self.nodes)
    }

    /// Bytes of inner chunks in this crate's layout: `32 + 8·capacity` per
    /// inner node.
    pub fn inner_bytes(&self) -> u64 {
        INNER_HEADER_BYTES * self.nodes + SLOT_BYTES * self.slots
    }

    /// The class set as engine options.
    pub fn size_classes(&self) -> SizeClasses {
        SizeClasses::new(&self.capacities)
            .expect("plans hold at most 7 increasing capacities ending with 16")
    }
}

/// The advice for one histogram: the dense baseline and the best set for
/// each budget of sparse classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advice {
    /// Every inner node at capacity 16.
    pub dense: ClassPlan,
    /// `best[k - 1]` is the cheapest set with at most `k` sparse classes.
    pub best: Vec<ClassPlan>,
}

impl Advice {
    /// Allocated slots of `plan` relative to dense (1 when there are no
    /// inner nodes).
    pub fn slots_vs_dense(&self, plan: &ClassPlan) -> f64 {
        if self.dense.slots == 0 {
            return 1.0;
        }
        ratio(plan.slots, self.dense.slots)
    }

    /// Inner-chunk bytes of `plan` relative to dense, in this crate's
    /// layout (1 when there are no inner nodes).
    pub fn inner_bytes_vs_dense(&self, plan: &ClassPlan) -> f64 {
        if self.dense.inner_bytes() == 0 {
            return 1.0;
        }
        ratio(plan.inner_bytes(), self.dense.inner_bytes())
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Node counts by number of children 1..=16 (index 0 unused), the
/// childless root folded into 1.
fn weights(hist: &[u64; 17]) -> [u64; 17] {
    let mut w = *hist;
    w[1] += w[0];
    w[0] = 0;
    w
}

/// Slots that `classes` allocate for the inner nodes of `hist`
/// (`hist[n]` = inner nodes with `n` children).
pub fn slots_for(hist: &[u64; 17], classes: &SizeClasses) -> u64 {
    (0..=16)
        .map(|n| hist[n] * classes.capacity(classes.class_for(n)) as u64)
        .sum()
}

/// Prices `classes` on `hist`.
pub fn price(hist: &[u64; 17], classes: &SizeClasses) -> ClassPlan {
    ClassPlan {
        capacities: classes.capacities().to_vec(),
        nodes: hist.iter().sum(),
        slots: slots_for(hist, classes),
    }
}

/// The cheapest class set with at most `max_sparse` sparse classes (values
/// above [`MAX_SPARSE_CLASSES`] are treated as that many), with the ties
/// broken as the module docs say.
pub fn optimal(hist: &[u64; 17], max_sparse: usize) -> ClassPlan {
    let k = max_sparse.min(MAX_SPARSE_CLASSES);
    let w = weights(hist);
    let mut s = [0u64; 17];
    for n in 1..=16 {
        s[n] = s[n - 1] + w[n];
    }
    let run = |p: usize, c: usize| c as u64 * (s[c] - s[p]);

    // f[i][c] and the p that reached it; None where unreachable.
    let mut f = [[None::<u64>; 16]; MAX_SPARSE_CLASSES + 1];
    let mut from = [[0usize; 16]; MAX_SPARSE_CLASSES + 1];
    f[0][0] = Some(0);
    for i in 1..=k {
        for c in i..=15 {
            for p in (i - 1)..c {
                let Some(prev) = f[i - 1][p] else { continue };
                let v = prev + run(p, c);
                // Strict `<` keeps the smallest `p` among ties.
                if f[i][c].is_none_or(|cur| v < cur) {
                    f[i][c] = Some(v);
                    from[i][c] = p;
                }
            }
        }
    }

    // (slots, classes, last capacity) of the best set; fewer classes first,
    // then the smaller largest sparse capacity.
    let mut best = (run(0, 16), 0usize, 0usize);
    for (j, row) in f.iter().enumerate().take(k + 1).skip(1) {
        for (c, cell) in row.iter().enumerate().skip(j) {
            let Some(v) = *cell else { continue };
            let total = v + run(c, 16);
            if total < best.0 {
                best = (total, j, c);
            }
        }
    }
    let (slots, mut j, mut c) = best;
    let mut capacities = vec![DENSE_CAPACITY];
    while j > 0 {
        capacities.push(c as u8);
        c = from[j][c];
        j -= 1;
    }
    capacities.reverse();
    ClassPlan {
        capacities,
        nodes: hist.iter().sum(),
        slots,
    }
}

/// The dense baseline and the optimal sets for 1..=`max_sparse` sparse
/// classes (capped at [`MAX_SPARSE_CLASSES`]).
pub fn advise(hist: &[u64; 17], max_sparse: usize) -> Advice {
    let dense = ClassPlan {
        capacities: vec![DENSE_CAPACITY],
        nodes: hist.iter().sum(),
        slots: hist.iter().sum::<u64>() * u64::from(DENSE_CAPACITY),
    };
    let best = (1..=max_sparse.min(MAX_SPARSE_CLASSES))
        .map(|k| optimal(hist, k))
        .collect();
    Advice { dense, best }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// A histogram shaped like that of uniformly random keys: a bulk
    /// around 3–4 children, plus full nodes near the root.
    fn random_like() -> [u64; 17] {
        let mut h = [0u64; 17];
        let bulk = [
            0, 21_000, 61_000, 80_000, 72_000, 51_000, 31_000, 17_000, 9_000, 4_500, 2_000, 900,
            400, 200, 100, 50, 11_470,
        ];
        h.copy_from_slice(&bulk);
        h
    }

    /// Every set of at most `k` sparse capacities, priced.
    fn brute_force(hist: &[u64; 17], k: usize) -> u64 {
        let mut best = u64::MAX;
        for bits in 0u32..(1 << 15) {
            if bits.count_ones() as usize > k {
                continue;
            }
            let mut caps: Vec<u8> = (1..=15u8).filter(|c| bits & (1 << (c - 1)) != 0).collect();
            caps.push(16);
            let classes = SizeClasses::new(&caps).expect("valid by construction");
            best = best.min(slots_for(hist, &classes));
        }
        best
    }

    fn random_hist(rng: &mut StdRng) -> [u64; 17] {
        let mut h = [0u64; 17];
        let zeros = rng.gen_range(0..12);
        for (n, v) in h.iter_mut().enumerate().skip(1) {
            *v = if rng.gen_range(0..16) < zeros {
                0
            } else {
                rng.gen_range(0..1000) * (17 - n as u64)
            };
        }
        h
    }

    #[test]
    fn dynamic_programme_matches_brute_force() {
        let seed = std::env::var("ADVISOR_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5EED_u64);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut hists = vec![random_like(), [0; 17], {
            let mut h = [0; 17];
            h[0] = 1;
            h
        }];
        hists.extend((0..40).map(|_| random_hist(&mut rng)));
        for h in &hists {
            for k in 1..=MAX_SPARSE_CLASSES {
                let plan = optimal(h, k);
                assert_eq!(
                    plan.slots,
                    brute_force(h, k),
                    "seed {seed} k {k} hist {h:?}"
                );
                assert_eq!(plan.slots, slots_for(h, &plan.size_classes()), "{h:?}");
                assert!(plan.sparse_classes() <= k);
            }
        }
    }

    #[test]
    fn more_classes_never_cost_more() {
        let a = advise(&random_like(), MAX_SPARSE_CLASSES);
        assert_eq!(a.best.len(), MAX_SPARSE_CLASSES);
        let mut prev = a.dense.slots;
        for plan in &a.best {
            assert!(plan.slots <= prev);
            prev = plan.slots;
        }
    }

    #[test]
    fn only_children_counts_present_become_classes() {
        // Nodes with 2 and 5 children only: {2, 5, 16} is exact, and a
        // larger budget adds no useless class.
        let mut h = [0; 17];
        h[2] = 10;
        h[5] = 7;
        let plan = optimal(&h, 6);
        assert_eq!(plan.capacities, [2, 5, 16]);
        assert_eq!(plan.slots, 10 * 2 + 7 * 5);
        assert_eq!(optimal(&h, 1).capacities, [5, 16]);
    }

    #[test]
    fn an_empty_histogram_needs_no_sparse_class() {
        let plan = optimal(&[0; 17], 3);
        assert_eq!(plan.capacities, [16]);
        assert_eq!(plan.slots, 0);
        let a = advise(&[0; 17], 2);
        assert_eq!(a.slots_vs_dense(&a.best[0]), 1.0);
    }

    #[test]
    fn empty_root_is_priced_at_the_smallest_class() {
        let mut h = [0; 17];
        h[0] = 1;
        let classes = SizeClasses::new(&[2, 4, 6, 16]).expect("valid");
        assert_eq!(slots_for(&h, &classes), 2);
        assert_eq!(optimal(&h, 1).capacities, [1, 16]);
    }

    #[test]
    fn prices_and_ratios_follow_the_layout() {
        let h = random_like();
        let nodes: u64 = h.iter().sum();
        let a = advise(&h, 3);
        assert_eq!(a.dense.slots, 16 * nodes);
        assert_eq!(a.dense.inner_bytes(), 160 * nodes);
        let rippled = price(&h, &SizeClasses::RIPPLED);
        assert_eq!(rippled.capacities, [2, 4, 6, 16]);
        assert!(a.best[2].slots <= rippled.slots);
        let r = a.inner_bytes_vs_dense(&a.best[2]);
        let expected = (32 * nodes + 8 * a.best[2].slots) as f64 / (160 * nodes) as f64;
        assert!((r - expected).abs() < 1e-12);
    }
}
