//! The duplicate-key check of a dump: a JSON object with the same key
//! twice is refused wherever it is, before anything is read from it.
//!
//! `serde_json` keeps the last of two equal keys, so `{"Balance": "1",
//! "Balance": "2"}` would read as one field: a dump that says two things
//! would verify as whichever came last. One streaming pass over the
//! document (no tree is built; memory is the deepest path's keys) finds
//! the first repeated key and where it is.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// The lists whose elements are named as entries in messages.
const ENTRY_LISTS: [&str; 3] = ["accountState", "state", "transactions"];

/// A key that appears twice in one object: the key, the JSON path of the
/// object (`result.ledger.transactions[3].metaData`), and the entry it is
/// in (`transactions entry 3`), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DuplicateKey {
    pub(crate) key: String,
    pub(crate) path: String,
    pub(crate) entry: Option<String>,
}

/// The first duplicate key of `input` (a JSON document), if any. `Ok(None)`
/// also when `input` is not JSON: the reader reports that itself.
pub(crate) fn first_duplicate(input: &[u8]) -> Option<DuplicateKey> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(input);
    let walk = Walk {
        path: &mut Vec::new(),
        found: &mut found,
    };
    // A syntax error ends the walk; the reader reports it.
    let _ = walk.deserialize(&mut de);
    found
}

/// One step of a JSON path (a key borrowed from the input unless it has
/// escapes).
enum Step<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

struct Walk<'a, 'de> {
    path: &'a mut Vec<Step<'de>>,
    found: &'a mut Option<DuplicateKey>,
}

/// Objects with more keys than this are checked through a hash set; smaller
/// ones (nearly all) by a scan of the keys seen.
const SCAN_KEYS: usize = 16;

impl Walk<'_, '_> {
    fn duplicate(&mut self, key: String) -> DuplicateKey {
        let mut path = String::new();
        let mut entry = None;
        for (i, step) in self.path.iter().enumerate() {
            match step {
                Step::Key(k) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
                Step::Index(n) => {
                    path.push_str(&format!("[{n}]"));
                    if entry.is_none() {
                        if let Some(Step::Key(list)) = i.checked_sub(1).map(|j| &self.path[j]) {
                            if ENTRY_LISTS.contains(&list.as_ref()) {
                                entry = Some(format!("{list} entry {n}"));
                            }
                        }
                    }
                }
            }
        }
        DuplicateKey { key, path, entry }
    }
}

/// The error that stops the walk once a duplicate is recorded.
fn stop<E: de::Error>() -> E {
    E::custom("duplicate key")
}

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        loop {
            self.path.push(Step::Index(i));
            let next = seq.next_element_seed(Walk {
                path: &mut *self.path,
                found: &mut *self.found,
            });
            self.path.pop();
            if next?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut few: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let repeated = if many.is_empty() && few.len() < SCAN_KEYS {
                let seen = few.contains(&key);
                few.push(key.clone());
                seen
            } else {
                many.extend(few.drain(..));
                !many.insert(key.clone())
            };
            if repeated {
                *self.found = Some(self.duplicate(key.into_owned()));
                // Consume nothing more: the error ends the walk.
                let _ = map.next_value::<IgnoredAny>();
                return Err(stop());
            }
            self.path.push(Step::Key(key));
            let value = map.next_value_seed(Walk {
                path: &mut *self.path,
                found: &mut *self.found,
            });
            self.path.pop();
            value?;
        }
        Ok(())
    }
}

/// An object key, unescaped: borrowed from the input when it has no
/// escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(json: &str) -> Option<(String, String, Option<String>)> {
        first_duplicate(json.as_bytes()).map(|d| (d.key, d.path, d.entry))
    }

    #[test]
    fn finds_the_first_repeated_key_with_its_path_and_entry() {
        assert_eq!(dup(r#"{"a": 1, "b": {"c": 2}}"#), None);
        assert_eq!(dup(r#"[1, {"a": [{"b": 1}, {"b": 2}]}]"#), None);
        assert_eq!(
            dup(r#"{"a": 1, "a": 2}"#),
            Some(("a".into(), String::new(), None))
        );
        let doc = r#"{"result": {"ledger": {"accountState": [
            {"index": "00", "Balance": "1"},
            {"index": "01", "Balance": "1", "Balance": "2"}]}}}"#;
        assert_eq!(
            dup(doc),
            Some((
                "Balance".into(),
                "result.ledger.accountState[1]".into(),
                Some("accountState entry 1".into())
            ))
        );
        let doc = r#"{"transactions": [{"metaData": {"AffectedNodes": [
            {"ModifiedNode": {"FinalFields": {"Flags": 0, "Flags": 1}}}]}}]}"#;
        assert_eq!(
            dup(doc),
            Some((
                "Flags".into(),
                "transactions[0].metaData.AffectedNodes[0].ModifiedNode.FinalFields".into(),
                Some("transactions entry 0".into())
            ))
        );
        // Keys equal once unescaped are the same key.
        assert_eq!(
            dup(r#"{"ab": 1, "a\u0062": 2}"#).map(|d| d.0),
            Some("ab".into())
        );
        // A large object (past the scan, into the hash set).
        let mut big: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
        assert_eq!(dup(&format!("{{{big}\"z\": 0}}")), None);
        big.push_str("\"k3\": 0");
        assert_eq!(dup(&format!("{{{big}}}")).map(|d| d.0), Some("k3".into()));
        // Not JSON: nothing to say here.
        assert_eq!(dup(r#"{"a": "#), None);
    }

    #[test]
    fn a_dump_with_a_duplicate_key_is_refused_in_one_line() {
        let doc =
            br#"{"ledger_index": 5, "transactions": [{"hash": "00", "Fee": "10", "Fee": "12"}]}"#;
        let e = crate::dump::parse(doc).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "transactions entry 0: duplicate key \"Fee\" in the object at transactions[0]: \
             each key of a JSON object must appear once"
        );
        let e =
            crate::dump::parse(br#"{"ledger_index": 5, "ledger_index": 6}"#).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "duplicate key \"ledger_index\" in the object at the top level: \
             each key of a JSON object must appear once"
        );
    }
}
