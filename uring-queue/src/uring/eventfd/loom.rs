//! Loom model of how an [`EventFd`] tells the connection's two flags from
//! process-local ones: bound before the notifier is shared, then used by
//! threads that wake and wait through it. Loom checks the binding's atomics;
//! the eventfds are real. Without `--cfg loom` the model runs once, on real
//! threads.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ncio-uring-queue --release --all-features --lib uring::eventfd::loom
//! ```

use crate::loom::sync::Arc;
use crate::loom::{model, thread};
use crate::uring::{EventFd, Notifier, WakeFlag};
use core::time::Duration;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;

/// Both sides of a connection in one process, each with the notifier
/// its constructor bound, and a flag of neither (a thread of the
/// client's parks on it).
struct Sides {
    client_flag: WakeFlag,
    server_flag: WakeFlag,
    local: WakeFlag,
    client: EventFd,
    server: EventFd,
}

/// Empties `side`'s own eventfd, returning what was written to it
/// since it was last emptied.
fn take_count(side: &EventFd) -> u64 {
    let mut file = File::from(side.as_fd().try_clone_to_owned().unwrap());
    let mut word = [0u8; 8];
    match file.read(&mut word) {
        Ok(8) => u64::from_ne_bytes(word),
        Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
        other => panic!("reading an eventfd: {other:?}"),
    }
}

/// Binds both notifiers as `Client::new` and `Server::new` do (while
/// each owns its notifier), then shares them. The client's flag is armed
/// and its eventfd already written once (the server woke it before the
/// share), so the client's waiting thread has something to empty.
fn bound_sides() -> Arc<Sides> {
    let (client, server) = EventFd::pair().unwrap();
    // In place before the bind: the notifiers know the flags by address
    // (as a side's flags stay in their `Link`).
    let sides = Arc::new(Sides {
        client_flag: WakeFlag::new(),
        server_flag: WakeFlag::new(),
        local: WakeFlag::new(),
        client,
        server,
    });
    sides.client.bind(&sides.client_flag, &sides.server_flag);
    sides.server.bind(&sides.server_flag, &sides.client_flag);
    sides.client_flag.arm();
    sides.local.arm();
    sides.server.wake(&sides.client_flag);
    sides
}

/// Threads that reach the notifiers only after the bind, through the
/// share: every one routes each flag as bound. The peer's flag writes
/// the peer's eventfd, the own flag the own eventfd (waking another
/// thread of the side), waiting on the own flag empties the own
/// eventfd, and a process-local flag touches neither eventfd. A thread
/// that saw a bound address as 0 (the bind not yet visible) would route
/// a connection's flag to the futex and miss an eventfd write or the
/// drain, which the counts show. Waits take a zero timeout: the poll of
/// a real eventfd must not block the model.
#[test]
#[cfg_attr(miri, ignore = "eventfd and poll system calls")]
fn each_thread_routes_the_flags_as_bound() {
    model(|| {
        let sides = bound_sides();
        let s = sides.clone();
        // A client thread that pushed: wakes the server, and a thread
        // of its own process.
        let pusher = thread::spawn(move || {
            s.client.wake(&s.server_flag);
            s.client.wake(&s.local);
        });
        let s = sides.clone();
        // A server thread that finished work another server thread
        // parks for, then waits on a flag of its own process.
        let server = thread::spawn(move || {
            s.server.wake(&s.server_flag);
            s.server.wait(&s.local, Duration::ZERO);
        });
        let s = sides.clone();
        // The client's driving thread, parked on the client's flag.
        let driver = thread::spawn(move || s.client.wait(&s.client_flag, Duration::ZERO));
        for t in [pusher, server, driver] {
            t.join().unwrap();
        }
        assert_eq!(take_count(&sides.server), 2);
        assert_eq!(take_count(&sides.client), 0);
    });
}
