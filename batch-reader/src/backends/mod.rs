//! Backends: where the bytes come from.
//!
//! - [`MemoryBackend`]: a byte slice (always available).
//! - [`Faulty`]: any backend with injected faults and backpressure, for
//!   tests and benchmarks (always available).
//! - `FileBackend`: positioned reads on a file (`std`, Unix).
//! - `ProcessBackend`: another process's memory through `process_vm_readv`
//!   (`std`, Linux).
//! - `EmbeddedIoBackend`: any `embedded_io::Read + Seek` (`embedded-io`).
//!
//! The memory, file and embedded-io backends read one op at a time and
//! implement [`ReadAt`](crate::ReadAt), whose blanket impl makes them
//! backends; the process backend reads a whole batch per system call.

mod faulty;
mod memory;
pub use faulty::{Fault, Faulty};
pub use memory::MemoryBackend;

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
