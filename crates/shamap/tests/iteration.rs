//! Ordered iteration, ranges and bounds against a BTreeMap.

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::Rng;
use shamap::{Key, MapKind, ShaMap};

use crate::common::{key_near, random_key, rng};

fn setup() -> (ShaMap, BTreeMap<Key, Vec<u8>>, Vec<Key>) {
    let mut r = rng("iteration", 21);
    let mut map = ShaMap::new(MapKind::AccountState);
    let mut model = BTreeMap::new();
    let mut probes = Vec::new();
    for i in 0..3000u32 {
        let k = if i > 10 && i % 2 == 0 {
            let base = *model
                .keys()
                .nth(r.gen_range(0..model.len()))
                .expect("non-empty");
            key_near(&mut r, &base)
        } else {
            random_key(&mut r)
        };
        if map.insert(k, &i.to_be_bytes()).is_ok() {
            model.insert(k, i.to_be_bytes().to_vec());
        }
        // Probes: present keys, near misses, extremes.
        probes.push(k);
        probes.push(key_near(&mut r, &k));
    }
    probes.push(Key([0; 32]));
    probes.push(Key([0xFF; 32]));
    (map, model, probes)
}

#[test]
fn bounds_match_btreemap_semantics() {
    let (map, model, probes) = setup();
    let pair = |(k, v): (&Key, &Vec<u8>)| (*k, v.clone());
    let got = |o: Option<(&Key, &[u8])>| o.map(|(k, v)| (*k, v.to_vec()));
    for p in &probes {
        let want_upper = model
            .range((Bound::Excluded(*p), Bound::Unbounded))
            .next()
            .map(pair);
        assert_eq!(got(map.upper_bound(p)), want_upper, "upper_bound {p}");
        let want_lower = model.range(*p..).next().map(pair);
        assert_eq!(got(map.lower_bound(p)), want_lower, "lower_bound {p}");
        let want_below = model.range(..*p).next_back().map(pair);
        assert_eq!(got(map.last_below(p)), want_below, "last_below {p}");
    }
    assert_eq!(got(map.first()), model.iter().next().map(pair));
    assert_eq!(got(map.last()), model.iter().next_back().map(pair));
}

#[test]
fn ranges_match_btreemap() {
    let (map, model, probes) = setup();
    let mut r = rng("ranges", 22);
    for _ in 0..300 {
        let mut a = probes[r.gen_range(0..probes.len())];
        let mut b = probes[r.gen_range(0..probes.len())];
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        let got: Vec<Key> = map.range(a..b).map(|(k, _)| *k).collect();
        let want: Vec<Key> = model.range(a..b).map(|(k, _)| *k).collect();
        assert_eq!(got, want, "range {a}..{b}");
        let got: Vec<Key> = map.range(a..=b).map(|(k, _)| *k).collect();
        let want: Vec<Key> = model.range(a..=b).map(|(k, _)| *k).collect();
        assert_eq!(got, want, "range {a}..={b}");
        let got = map.range((Bound::Excluded(a), Bound::Unbounded)).count();
        assert_eq!(
            got,
            model.range((Bound::Excluded(a), Bound::Unbounded)).count()
        );
    }
    assert_eq!(map.range(..).count(), model.len());
    assert_eq!(map.iter().size_hint(), (model.len(), Some(model.len())));
}
