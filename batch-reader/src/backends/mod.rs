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

/// Serves a batch one op at a time, for backends without a batched system
/// call: takes the first `max_ops` ops, reads each with `read_one` (bytes read
/// from the op's start, and why the rest failed), and reports it with the op,
/// in order. Returns how many ops were taken.
#[cfg(any(all(feature = "std", unix), feature = "embedded-io"))]
fn one_by_one<R: FnMut(&crate::ReadOp<'_>, crate::Report)>(
    ops: &mut [crate::ReadOp<'_>],
    max_ops: usize,
    mut read_one: impl FnMut(u64, &mut [u8]) -> (usize, Option<crate::ReadErrorKind>),
    mut report: R,
) -> usize {
    let n = ops.len().min(max_ops);
    for op in &mut ops[..n] {
        let (valid, error) = read_one(op.addr, op.buf);
        let r = crate::Report {
            tag: op.tag,
            valid,
            error,
        };
        report(op, r);
    }
    n
}
