//! `buffer_sv2` 3.x for crates written against it, made of nothing but
//! re-exports: `Buffer`, `BufferPool`, `BufferFromSystemMemory`, `Slice`,
//! `AeadBuffer`, `Write` and `WriteError` are those of `buffer-pool` and
//! `io-traits`.
#![no_std]

pub use buffer_pool::*;
pub use io_traits::*;
