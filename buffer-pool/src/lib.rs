#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
// The loom builds are the crate's own model checks, not a configuration of users.
#![cfg_attr(docsrs, doc(auto_cfg(hide(loom))))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

#[macro_use]
mod loom;
#[macro_use]
mod forward;

mod control;
mod layout;
#[cfg(feature = "alloc")]
mod pool;
mod producer;
mod slice;
mod slot_map;
without_loom! {
    mod static_pool;
}

#[cfg(feature = "aead")]
pub use io_traits::AeadBuffer;
#[cfg(feature = "alloc")]
pub use io_traits::BufferFromSystemMemory;
pub use io_traits::{Buffer, BufferError, Write, WriteError};
pub use layout::PoolMode;
#[cfg(feature = "alloc")]
pub use pool::{BufferPool, Fallback};
pub use slice::Slice;
pub use slot_map::SlotMap;
without_loom! {
    pub use static_pool::{PoolStorage, StaticBufferPool, StorageInUse};
}
