//! See `tests/roundtrip.rs`.
