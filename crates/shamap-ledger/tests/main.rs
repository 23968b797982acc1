//! Integration tests of shamap-ledger, compiled as one binary: the shipped
//! real ledgers read and every hash recomputed from them.

mod decoded;
mod ledgers;
mod proofs;
mod vectors;
