//! Fuzz target: the ledger-dump reader must return a value or an error for
//! any bytes, never panic, and what it returns must be self-consistent and
//! equal to what the full `Value` parse returns.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shamap_ledger::dump::{self, DumpError};

fuzz_target!(|data: &[u8]| {
    let parsed = dump::parse(data);
    match &parsed {
        Ok(d) => {
            // Keys are never all zeros; a complete header round-trips.
            if let Some(state) = &d.state {
                assert!(state.iter().all(|e| !e.key.is_zero()));
            }
            if let Some(h) = d.header.complete_header() {
                assert!(d.header.missing_fields().is_empty());
                let _ = h.hash();
            } else {
                assert!(!d.header.missing_fields().is_empty());
            }
            let _ = d.header.header_with_roots(Some(Default::default()), None);
            let _ = d.header.ledger_name();
            // Merging a dump with itself keeps one ledger and doubles the lists.
            match dump::merge([d.clone(), d.clone()]) {
                Ok(m) => {
                    let len = |s: &Option<Vec<_>>| s.as_ref().map(Vec::len);
                    assert_eq!(len(&m.state), len(&d.state).map(|n| 2 * n));
                    assert_eq!(m.header, d.header);
                }
                Err(e) => panic!("merging a dump with itself failed: {e}"),
            }
        }
        Err(e) => {
            // Every error is one line.
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
            assert!(!matches!(e, DumpError::NothingToMerge));
        }
    }
    // Parsing is deterministic, and the fast path (taken by `parse` when it
    // can) gives exactly what the full `Value` parse gives.
    assert_eq!(dump::parse(data), parsed);
    assert_eq!(dump::parse_dom(data), parsed);
});
