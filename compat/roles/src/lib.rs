//! The peers of a Stratum V2 role under test: a mock upstream speaking
//! Stratum V2 over Noise, a mock Template Provider, a recording relay, and
//! SV1 test miners. `tests/translator.rs` runs `translator_sv2` between the
//! miners and the mock upstream; `tests/pool.rs` runs `pool_sv2` on the
//! Template Provider with the translator in front of it.

pub mod check;
pub mod miner;
pub mod relay;
pub mod template_provider;
pub mod translator;
pub mod upstream;
