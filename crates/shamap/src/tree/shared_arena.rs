//! The arena a map shares with its snapshots, and the two ways every holder
//! touches it: taking its lock, and giving up a tree when a root goes.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::ptr::{NodeArena, NodePtr};

/// The arena a map shares with its snapshots and undo records.
pub(crate) type SharedArena = Arc<Mutex<NodeArena>>;

/// Locks the arena. A panic while it was held (never expected: arena
/// operations only panic on broken invariants) leaves no dangling pointer,
/// so the lock is taken over rather than poisoned forever.
pub(crate) fn lock(arena: &Mutex<NodeArena>) -> MutexGuard<'_, NodeArena> {
    arena.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Gives up a root's tree when the root (a map's or a snapshot's) is
/// dropped. The arena's last owner disposes of the tree wholesale (the arena
/// goes with it); otherwise the tree is released node by node, keeping what
/// other roots still share.
pub(crate) fn drop_tree(arena: &mut SharedArena, root: NodePtr) {
    match Arc::get_mut(arena) {
        Some(a) => a
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .dispose_tree(root),
        None => lock(arena).release(root),
    }
}
