//! A ledger of random state entries with the sizes and rough shapes of
//! mainnet's (account roots, trust lines, offers, directories), for
//! benchmarks: a valid header whose `account_hash` is the state map's
//! root, an empty transaction map.

use rand::{Rng, SeedableRng};
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key, MapKind, ShaMap};

use crate::ledgers::Ledger;

/// Serialized-entry shapes: (weight, ledger entry type, fields), a field
/// being (field code byte, bytes of value, random or mostly zero).
const SHAPES: &[(u32, u16, &[(u8, usize, bool)])] = &[
    // AccountRoot: flags, sequence, owner count, balance, account, previd.
    (
        40,
        0x0061,
        &[
            (0x22, 4, false),
            (0x24, 4, true),
            (0x25, 4, true),
            (0x2D, 4, false),
            (0x55, 32, true),
            (0x62, 8, true),
            (0x81, 20, true),
        ],
    ),
    // RippleState: flags, balance, limits, previd, low/high nodes.
    (
        30,
        0x0072,
        &[
            (0x22, 4, false),
            (0x25, 4, true),
            (0x37, 8, false),
            (0x38, 8, false),
            (0x55, 32, true),
            (0x61, 48, true),
            (0x66, 48, true),
            (0x67, 48, true),
        ],
    ),
    // Offer: flags, sequence, book, previd, pays, gets, account.
    (
        15,
        0x006F,
        &[
            (0x22, 4, false),
            (0x24, 4, true),
            (0x34, 8, false),
            (0x50, 32, true),
            (0x55, 32, true),
            (0x64, 48, true),
            (0x65, 8, true),
            (0x81, 20, true),
        ],
    ),
    // DirectoryNode: owner, root index, indexes (a vector of hashes).
    (
        15,
        0x0064,
        &[
            (0x22, 4, false),
            (0x58, 32, true),
            (0x82, 20, true),
            (0x01, 0, true),
        ],
    ),
];

/// One random serialized ledger entry.
pub fn entry(rng: &mut impl Rng) -> Vec<u8> {
    let total: u32 = SHAPES.iter().map(|s| s.0).sum();
    let mut pick = rng.gen_range(0..total);
    let (_, ty, fields) = SHAPES
        .iter()
        .find(|s| {
            if pick < s.0 {
                true
            } else {
                pick -= s.0;
                false
            }
        })
        .copied()
        .unwrap_or(SHAPES[0]);
    let mut out = Vec::with_capacity(256);
    out.push(0x11);
    out.extend_from_slice(&ty.to_be_bytes());
    for &(code, len, random) in fields {
        out.push(code);
        if len == 0 {
            // A vector of 1..12 hashes (a directory's Indexes).
            let n = rng.gen_range(1..12usize);
            out.push((32 * n) as u8);
            for _ in 0..32 * n {
                out.push(rng.gen());
            }
            continue;
        }
        for i in 0..len {
            let b = if random || i + 2 >= len { rng.gen() } else { 0 };
            out.push(b);
        }
    }
    out
}

/// A ledger of `n` random state entries (random keys, [`entry`] data),
/// sequence `seq`, built from sorted keys.
pub fn ledger(n: usize, seed: u64, seq: u32) -> Ledger {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut keys: Vec<Key> = (0..n).map(|_| Key(rng.gen())).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut state = ShaMap::from_sorted(
        MapKind::AccountState,
        keys.into_iter().map(|k| (k, entry(&mut rng))),
    )
    .expect("sorted distinct keys build a map");
    let mut tx = ShaMap::new(MapKind::TransactionWithMeta);
    let (state, tx) = (state.snapshot(), tx.snapshot());
    let header = LedgerHeader {
        seq,
        total_coins: 99_987_654_321_000_000,
        parent_hash: Hash256(rng.gen()),
        transaction_hash: tx.root_hash(),
        account_hash: state.root_hash(),
        parent_close_time: 780_000_000,
        close_time: 780_000_010,
        close_time_resolution: 10,
        close_flags: 0,
    };
    Ledger { header, state, tx }
}
