//! Writing Clio's rows from verified ledgers (`shamap clio load`).
pub mod meta;
