//! Ordered iteration, ranges and bound searches.
//!
//! Bound semantics (rippled's differ for `lower_bound`, so both are offered
//! under distinct names):
//!
//! | method            | returns                  | rippled name            |
//! |-------------------|--------------------------|-------------------------|
//! | `upper_bound(k)`  | first item with key > k  | `upper_bound` (same)    |
//! | `lower_bound(k)`  | first item with key >= k | (none; C++/std meaning) |
//! | `last_below(k)`   | last item with key < k   | `lower_bound`           |

use std::ops::{Bound, RangeBounds};

use crate::hash::Key;
use crate::ptr::NodeBox;

use super::map::ShaMap;

/// Iterator over `(key, data)` in ascending key order.
pub struct Iter<'a> {
    /// Frames of sibling slices still to visit, innermost last; at most 65.
    stack: Vec<std::slice::Iter<'a, NodeBox>>,
    remaining: Option<usize>,
}

/// Iterator over the items whose keys lie in a range, ascending.
pub struct Range<'a> {
    inner: Iter<'a>,
    end: Bound<Key>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Key, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let top = self.stack.last_mut()?;
            let Some(node) = top.next() else {
                self.stack.pop();
                continue;
            };
            if let Some(leaf) = node.leaf() {
                if let Some(r) = self.remaining.as_mut() {
                    *r -= 1;
                }
                return Some((leaf.key(), leaf.data()));
            }
            let inner = node.inner().expect("not a leaf");
            self.stack.push(inner.children().iter());
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.remaining {
            Some(r) => (r, Some(r)),
            None => (0, None),
        }
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = (&'a Key, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (k, v) = self.inner.next()?;
        let inside = match &self.end {
            Bound::Included(e) => k <= e,
            Bound::Excluded(e) => k < e,
            Bound::Unbounded => true,
        };
        if inside {
            Some((k, v))
        } else {
            self.inner.stack.clear();
            None
        }
    }
}

impl<'a> IntoIterator for &'a ShaMap {
    type Item = (&'a Key, &'a [u8]);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl ShaMap {
    /// All items in ascending key order.
    pub fn iter(&self) -> Iter<'_> {
        let root = self.root.inner().expect("the root is an inner node");
        Iter {
            stack: vec![root.children().iter()],
            remaining: Some(self.len),
        }
    }

    /// The items whose keys lie in `range`, ascending.
    pub fn range<R: RangeBounds<Key>>(&self, range: R) -> Range<'_> {
        let inner = match range.start_bound() {
            Bound::Included(k) => self.seek(k, true),
            Bound::Excluded(k) => self.seek(k, false),
            Bound::Unbounded => self.iter(),
        };
        Range {
            inner,
            end: range.end_bound().cloned(),
        }
    }

    /// The first item with key > `key` (rippled's `upper_bound`).
    pub fn upper_bound(&self, key: &Key) -> Option<(&Key, &[u8])> {
        self.seek(key, false).next()
    }

    /// The first item with key >= `key` (std/C++ meaning; rippled's
    /// `lower_bound` is [`ShaMap::last_below`]).
    pub fn lower_bound(&self, key: &Key) -> Option<(&Key, &[u8])> {
        self.seek(key, true).next()
    }

    /// The last item with key < `key` (rippled's `lower_bound`).
    pub fn last_below(&self, key: &Key) -> Option<(&Key, &[u8])> {
        last_below_in(&self.root, 0, key)
    }

    /// The first item, if any.
    pub fn first(&self) -> Option<(&Key, &[u8])> {
        self.iter().next()
    }

    /// The last item, if any.
    pub fn last(&self) -> Option<(&Key, &[u8])> {
        last_in(&self.root)
    }

    /// An iterator positioned at the first key >= `key` (`inclusive`) or
    /// > `key`.
    fn seek(&self, key: &Key, inclusive: bool) -> Iter<'_> {
        let mut stack = Vec::with_capacity(8);
        let mut node = &self.root;
        let mut depth = 0;
        loop {
            let inner = node.inner().expect("descent stays on inner nodes");
            let b = key.nibble(depth);
            let mask = inner.mask();
            let children = inner.children();
            let slot = mask.slot(b);
            if !mask.has(b) {
                // Everything from `slot` on has a larger branch: all > key.
                stack.push(children[slot..].iter());
                break;
            }
            stack.push(children[slot + 1..].iter());
            let child = &children[slot];
            if let Some(leaf) = child.leaf() {
                let k = leaf.key();
                if k > key || (inclusive && k == key) {
                    stack.push(std::slice::from_ref(child).iter());
                }
                break;
            }
            node = child;
            depth += 1;
        }
        Iter {
            stack,
            remaining: None,
        }
    }
}

fn last_in(node: &NodeBox) -> Option<(&Key, &[u8])> {
    let mut node = node;
    loop {
        if let Some(leaf) = node.leaf() {
            return Some((leaf.key(), leaf.data()));
        }
        node = node.inner().expect("not a leaf").children().last()?;
    }
}

fn last_below_in<'a>(node: &'a NodeBox, depth: usize, key: &Key) -> Option<(&'a Key, &'a [u8])> {
    let inner = node.inner().expect("descent stays on inner nodes");
    let b = key.nibble(depth);
    let mask = inner.mask();
    let children = inner.children();
    let slot = mask.slot(b);
    if mask.has(b) {
        let child = &children[slot];
        let found = match child.leaf() {
            Some(leaf) => (leaf.key() < key).then(|| (leaf.key(), leaf.data())),
            None => last_below_in(child, depth + 1, key),
        };
        if found.is_some() {
            return found;
        }
    }
    // Every child before `slot` has a smaller branch: its last item is < key.
    children[..slot].last().and_then(last_in)
}
