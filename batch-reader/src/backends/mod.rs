//! Backends: where the bytes come from.
//!
//! - [`MemoryBackend`]: a byte slice with injectable faults and backpressure,
//!   for tests and benchmarks (always available).
//! - `FileBackend`: positioned reads on a file (`std`, Unix).
//! - `ProcessBackend`: another process's memory through `process_vm_readv`
//!   (`std`, Linux).
//! - `EmbeddedIoBackend`: any `embedded_io::Read + Seek` (`embedded-io`).

mod memory;
pub use memory::{Fault, MemoryBackend};

#[cfg(all(feature = "std", unix))]
mod file;
#[cfg(all(feature = "std", unix))]
pub use file::FileBackend;

#[cfg(all(feature = "std", target_os = "linux"))]
mod process;
#[cfg(all(feature = "std", target_os = "linux"))]
pub use process::ProcessBackend;

#[cfg(feature = "embedded-io")]
mod embedded;
#[cfg(feature = "embedded-io")]
pub use embedded::EmbeddedIoBackend;
