//! Shared helpers: seeded RNG, key generators, oracle adapters, vector file.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, HashFunction, Key, MapKind, Nibble, ShaMap};
use shamap_oracle::OracleKind;

/// A seeded RNG. The seed comes from `SHAMAP_SEED` when set, else from
/// `default`; it is printed so that a failing run can be replayed (cargo
/// shows a test's output when it fails).
pub fn rng(test: &str, default: u64) -> SmallRng {
    let seed = std::env::var("SHAMAP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    eprintln!("{test}: seed {seed} (replay with SHAMAP_SEED={seed})");
    SmallRng::seed_from_u64(seed)
}

pub fn oracle_kind(kind: MapKind) -> OracleKind {
    match kind {
        MapKind::AccountState => OracleKind::AccountState,
        MapKind::TransactionWithMeta => OracleKind::TransactionWithMeta,
        MapKind::TransactionNoMeta => OracleKind::TransactionNoMeta,
    }
}

/// The oracle's root for the contents of a BTreeMap model.
pub fn oracle_root(kind: MapKind, model: &std::collections::BTreeMap<Key, Vec<u8>>) -> Hash256 {
    oracle_root_for(HashFunction::Sha512Half, kind, model)
}

/// The oracle's root for a map hashed with `f`.
pub fn oracle_root_for(
    f: HashFunction,
    kind: MapKind,
    model: &std::collections::BTreeMap<Key, Vec<u8>>,
) -> Hash256 {
    let items: Vec<([u8; 32], Vec<u8>)> = model.iter().map(|(k, v)| (k.0, v.clone())).collect();
    let h: shamap_oracle::HashFn = match f {
        HashFunction::Sha512Half => shamap_oracle::sha512_half,
        HashFunction::Blake3 => shamap_oracle::blake3,
    };
    Hash256(shamap_oracle::root_hash_with(h, oracle_kind(kind), &items))
}

pub fn random_key(rng: &mut SmallRng) -> Key {
    Key(rng.gen())
}

/// A key that shares exactly `shared` leading nibbles with `base` (< 64).
pub fn key_sharing(rng: &mut SmallRng, base: &Key, shared: usize) -> Key {
    assert!(shared < 64);
    let mut k = random_key(rng);
    for d in 0..shared {
        k.set_nibble(d, base.nibble(d));
    }
    let theirs = base.nibble(shared).get();
    let mut mine = rng.gen_range(0..15u8);
    if mine >= theirs {
        mine += 1;
    }
    k.set_nibble(shared, Nibble::new(mine).expect("mine < 16"));
    debug_assert_eq!(k.common_prefix_nibbles(base), shared);
    k
}

/// A key sharing a random number (0..=63) of leading nibbles with `base`.
pub fn key_near(rng: &mut SmallRng, base: &Key) -> Key {
    let shared = rng.gen_range(0..64);
    key_sharing(rng, base, shared)
}

/// Random data of 0..max bytes.
pub fn random_data(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = rng.gen_range(0..max);
    (0..len).map(|_| rng.gen()).collect()
}

/// Nibbles a generated key shares with an existing one: from none to 63
/// (the two keys differ only in the last nibble, so their leaves sit at
/// depth 64 below a chain of inner nodes).
pub const SHARED: [usize; 10] = [0, 1, 2, 3, 4, 5, 15, 31, 62, 63];

/// A key sharing a prefix of a [`SHARED`] length with one of `keys` (not
/// empty), both picked at random.
pub fn key_sharing_one_of(rng: &mut SmallRng, keys: &[Key]) -> Key {
    let base = keys[rng.gen_range(0..keys.len())];
    let shared = SHARED[rng.gen_range(0..SHARED.len())];
    key_sharing(rng, &base, shared)
}

/// `n` entries of random keys ([`random_key`]) and data ([`random_data`]:
/// under `max` bytes).
pub fn random_entries(rng: &mut SmallRng, n: usize, max: usize) -> Vec<(Key, Vec<u8>)> {
    (0..n)
        .map(|_| (random_key(rng), random_data(rng, max)))
        .collect()
}

/// Asserts that `map` holds exactly `model` (a map of `kind`), has the
/// oracle's root and passes its own check; `what` names the moment.
pub fn check_against(
    map: &mut ShaMap,
    model: &std::collections::BTreeMap<Key, Vec<u8>>,
    kind: MapKind,
    what: &str,
) {
    assert_eq!(map.len(), model.len(), "{what}: len");
    assert!(
        map.iter()
            .map(|(k, v)| (*k, v))
            .eq(model.iter().map(|(k, v)| (*k, &v[..]))),
        "{what}: contents differ from the BTreeMap"
    );
    assert_eq!(
        map.root_hash(),
        oracle_root_for(map.hash_function(), kind, model),
        "{what}: root differs from the oracle"
    );
    map.check()
        .unwrap_or_else(|e| panic!("{what}: check failed: {e}"));
}

/// True when `len` and `items` (in order) are exactly the model's.
pub fn same_items<'a>(
    len: usize,
    items: impl Iterator<Item = (&'a Key, &'a [u8])>,
    model: &std::collections::BTreeMap<Key, Vec<u8>>,
) -> bool {
    len == model.len()
        && items
            .map(|(k, v)| (*k, v))
            .eq(model.iter().map(|(k, v)| (*k, &v[..])))
}

/// Key `uint256(c)`: 31 zero bytes, then `c`.
pub fn small_key(c: u8) -> Key {
    let mut k = [0u8; 32];
    k[31] = c;
    Key(k)
}

/// The root the `proof_map_derived` vectors `v` give for the deep map of
/// [`deep_map_checked`] with its first `n` keys, if they give one.
pub fn derived_deep_root(v: &serde_json::Value, n: u8) -> Option<Hash256> {
    v["proof_map_derived"]["root_after"]
        .get(n.to_string())
        .map(|h| hex_hash(h.as_str().expect("hex")))
}

/// The `proof_map_derived` map (keys 1..=99 as [`small_key`], data = key),
/// built one key at a time, its root checked after each insert against
/// [`derived_deep_root`]; `after` runs after each insert of key `c`.
pub fn deep_map_checked(mut after: impl FnMut(&mut ShaMap, u8)) -> ShaMap {
    let v = vectors();
    let mut m = ShaMap::new(MapKind::AccountState);
    for c in 1..=99u8 {
        let k = small_key(c);
        m.insert(k, &k.0).expect("new");
        if let Some(want) = derived_deep_root(&v, c) {
            assert_eq!(m.root_hash(), want, "root after {c}");
        }
        after(&mut m, c);
    }
    m
}

/// The strings of the JSON array `v`, each read with `read`.
pub fn strings<T>(v: &serde_json::Value, read: impl Fn(&str) -> T) -> Vec<T> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|s| read(s.as_str().expect("a string")))
        .collect()
}

/// The known-answer vectors in `data/vectors/` (sources in `data/README.md`).
pub fn vectors() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/vectors/shamap-vectors.json"
    );
    let text = std::fs::read_to_string(path).expect("data/vectors/shamap-vectors.json in the repo");
    serde_json::from_str(&text).expect("vectors are JSON")
}

/// rippled's delta script (its SHAMap test): into a transaction map, keys
/// h2 and h1, then h4, h2 removed, h3; key hN with data `[N; 32]`. Checks
/// the key order on the way; returns the map and the key of each name.
pub fn delta_script() -> (ShaMap, impl Fn(&str) -> Key) {
    let keys = vectors()["delta"]["keys"].clone();
    let h = move |n: &str| hex_key(keys[n].as_str().expect("key"));
    let data = |n: u8| [n; 32];
    let mut map = ShaMap::new(MapKind::TransactionNoMeta);
    map.insert(h("h2"), &data(2)).expect("new");
    map.insert(h("h1"), &data(1)).expect("new");
    let ks: Vec<Key> = map.iter().map(|(k, _)| *k).collect();
    assert_eq!(ks, [h("h1"), h("h2")]);
    map.insert(h("h4"), &data(4)).expect("new");
    map.remove(&h("h2")).expect("present");
    map.insert(h("h3"), &data(3)).expect("new");
    let ks: Vec<Key> = map.iter().map(|(k, _)| *k).collect();
    assert_eq!(ks, [h("h1"), h("h3"), h("h4")]);
    (map, h)
}

pub fn hex_key(s: &str) -> Key {
    Key::from_hex(s).expect("vector keys are 64 hex digits")
}

pub fn hex_hash(s: &str) -> Hash256 {
    Hash256::from_hex(s).expect("vector hashes are 64 hex digits")
}

/// Builds a map from items, in the given order.
pub fn build(kind: MapKind, items: &[(Key, Vec<u8>)]) -> ShaMap {
    let mut m = ShaMap::new(kind);
    for (k, v) in items {
        m.insert(*k, v).expect("distinct keys");
    }
    m
}
