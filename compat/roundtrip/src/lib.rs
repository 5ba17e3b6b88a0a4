//! See `tests/roundtrip.rs`.

/// The migration guide of `docs/buffer-pool.md`, whose examples run as
/// doctests here, over the `buffer_sv2` that a migrating user imports.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/buffer-pool.md")]
pub struct MigrationGuideDoctests;
