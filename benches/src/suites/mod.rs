//! The suites, in the order `compare` runs them when none is named.

use crate::harness::Ctx;
use std::process::ExitCode;

mod batch;
mod copy;
pub mod ipc;
mod pool;
mod service;
mod spsc;
mod write;

/// A suite's entry point.
pub type Suite = fn(&Ctx);

/// Every suite: its name on the command line and its entry point.
pub const SUITES: &[(&str, Suite)] = &[
    ("copy", copy::run),       // memcpy ceiling
    ("write", write::run),     // 10-byte writes through Write impls
    ("pool", pool::run),       // buffer-pool vs buffer_sv2
    ("spsc", spsc::run),       // uring-queue vs rtrb, ringbuf, crossbeam, heapless, sync_channel
    ("ipc", ipc::run),         // uring-queue request/response vs UnixStream, tokio, memcpy
    ("service", service::run), // many client processes on one server, by name
    ("batch", batch::run), // batch-reader vs bare calls, deque, channels, raw syscalls, naive file reads
];

/// In a process the `ipc` or `service` suite started (a server, a client,
/// a load), serves its role and returns the exit code; `None` in the
/// benchmark process itself. `main` calls this first.
pub fn peer_main() -> Option<ExitCode> {
    let roles: Vec<_> = ipc::ROLES.iter().chain(service::ROLES).copied().collect();
    ipc::peer::main(&roles)
}
