//! Per-type byte counts of account-state data. The type of an entry and
//! rippled's names come from [`shamap_ledger::entry_type`] (shared with the
//! Python module); codes without a name print as hex.

use std::collections::BTreeMap;

pub use shamap_ledger::entry_type::{entry_type, name};

/// The code as printed: `0x0061`.
pub fn hex(code: u16) -> String {
    format!("0x{code:04X}")
}

/// Entries and data bytes of one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeStats {
    /// The type code; `None` for data without the `0x11` type field.
    pub code: Option<u16>,
    /// Entries of this type.
    pub entries: u64,
    /// Their data bytes.
    pub bytes: u64,
}

impl TypeStats {
    /// The type's name: rippled's, else the hex code, else `(no type field)`.
    pub fn label(&self) -> String {
        match self.code {
            Some(c) => name(c).map_or_else(|| hex(c), str::to_owned),
            None => "(no type field)".to_owned(),
        }
    }

    /// Mean data bytes per entry.
    pub fn mean(&self) -> f64 {
        self.bytes as f64 / self.entries.max(1) as f64
    }
}

/// Accumulates per-type counts.
#[derive(Clone, Debug, Default)]
pub struct TypeTally(BTreeMap<Option<u16>, (u64, u64)>);

impl TypeTally {
    /// Counts one entry's data.
    pub fn add(&mut self, data: &[u8]) {
        let e = self.0.entry(entry_type(data)).or_default();
        e.0 += 1;
        e.1 += data.len() as u64;
    }

    /// The counts, most bytes first (then by code).
    pub fn finish(self) -> Vec<TypeStats> {
        let mut v: Vec<TypeStats> = self
            .0
            .into_iter()
            .map(|(code, (entries, bytes))| TypeStats {
                code,
                entries,
                bytes,
            })
            .collect();
        v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.code.cmp(&b.code)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_orders_by_bytes() {
        let mut t = TypeTally::default();
        t.add(&[0x11, 0x00, 0x61, 0, 0]);
        t.add(&[0x11, 0x00, 0x72, 0, 0, 0, 0, 0]);
        t.add(&[0x11, 0x12, 0x34]);
        t.add(&[1]);
        let v = t.finish();
        let labels: Vec<String> = v.iter().map(TypeStats::label).collect();
        assert_eq!(
            labels,
            ["RippleState", "AccountRoot", "0x1234", "(no type field)"]
        );
        assert_eq!(v[0].entries, 1);
        assert_eq!(v[0].bytes, 8);
    }
}
