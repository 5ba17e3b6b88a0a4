//! The suites, in the order `compare` runs them when none is named.

use crate::harness::Ctx;

mod batch;
mod copy;
pub mod ipc;
mod pool;
mod spsc;
mod write;

/// A suite's entry point.
pub type Suite = fn(&Ctx);

/// Every suite: its name on the command line and its entry point.
pub const SUITES: &[(&str, Suite)] = &[
    ("copy", copy::run),   // memcpy ceiling
    ("write", write::run), // 10-byte writes through Write impls
    ("pool", pool::run),   // buffer-pool vs buffer_sv2
    ("spsc", spsc::run),   // uring-queue vs rtrb, ringbuf, crossbeam, heapless, sync_channel
    ("ipc", ipc::run),     // uring-queue request/response vs UnixStream, tokio, memcpy
    ("batch", batch::run), // batch-reader vs bare calls, deque, channels, raw syscalls, naive file reads
];
