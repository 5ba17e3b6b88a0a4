#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

#[cfg(all(feature = "alloc", not(loom)))]
mod aligned_buf;
#[cfg(feature = "std")]
mod blocking;
mod chunks;
mod consumer;
mod copy;
mod error;
mod frame;
mod half;
#[cfg(feature = "alloc")]
mod heap;
mod inline;
mod loom;
mod producer;
mod raw;
// Not built under loom: the layouts in a region of bytes keep their atomics
// in those bytes, which loom's atomics cannot live in. Loom models the
// in-process rings.
#[cfg(not(loom))]
mod layout;
#[cfg(not(loom))]
mod region;
#[cfg(not(loom))]
mod shared_ring;
// Loom models of the ring protocol (`producer`, `consumer`, `frame`); once
// on real threads without loom. Not under Miri, which never ran them.
#[cfg(all(test, feature = "std", not(miri)))]
mod tests {
    mod loom;
}
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
mod shm;
pub mod uring;

#[cfg(all(feature = "alloc", not(loom)))]
pub use aligned_buf::{AlignedBuf, AlignedBufError};
pub use chunks::{Batch, ReadChunk, WriteChunk};
pub use consumer::Consumer;
pub use copy::{CopyError, Fault};
pub use error::{CapacityError, RegionError, RingError};
pub use frame::{Frame, FrameConsumer, FrameGrant, FrameProducer, RecordHeader};
#[cfg(feature = "alloc")]
pub use heap::HeapRing;
pub use inline::Ring;
pub use producer::{Producer, PushError};
pub use raw::MAX_CAPACITY;
#[cfg(not(loom))]
pub use region::Region;
#[cfg(not(loom))]
pub use shared_ring::{SHARED_RING_ALIGN, SHARED_RING_MAGIC, SHARED_RING_VERSION, SharedRing};
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
pub use shm::{OpenError, Pages, SharedMemory};
