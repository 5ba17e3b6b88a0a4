//! Implementations, one file per type or bridge.

#[cfg(feature = "embedded-io")]
pub(crate) mod embedded_io;
pub(crate) mod fixed;
mod slice;
#[cfg(feature = "std")]
pub(crate) mod std_io;
#[cfg(feature = "alloc")]
pub(crate) mod system_memory;
#[cfg(feature = "alloc")]
mod vec;
