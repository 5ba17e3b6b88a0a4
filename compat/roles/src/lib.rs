//! The peers of a Stratum V2 role under test: a mock upstream speaking
//! Stratum V2 over Noise, and SV1 test miners. `tests/translator.rs` runs
//! `translator_sv2` between them.

pub mod miner;
pub mod upstream;
