#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod buffer;
mod error;
mod impls;
mod write;

/// The in-place buffer of AEAD ciphers (`aead::Buffer`), implemented for
/// [`FixedBuffer`] and `BufferFromSystemMemory` with the `aead` feature.
#[cfg(feature = "aead")]
pub use aead::Buffer as AeadBuffer;
pub use buffer::Buffer;
pub use error::{BufferError, WriteError};
pub use impls::fixed::{FixedBuffer, FixedSlice};
#[cfg(feature = "alloc")]
pub use impls::system_memory::BufferFromSystemMemory;
pub use write::Write;

/// Adapters between this crate's [`Write`] and `embedded_io::Write`.
#[cfg(feature = "embedded-io")]
pub mod embedded {
    pub use crate::impls::embedded_io::{FromEmbeddedIo, ToEmbeddedIo};
}

/// Adapters between this crate's [`Write`] and `std::io::Write`.
#[cfg(feature = "std")]
pub mod std_io {
    pub use crate::impls::std_io::{FromStd, ToStd};
}
