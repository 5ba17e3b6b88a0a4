//! Loom models of the request/response layer: the wake-flag handshake
//! (no lost wake-up: a parked side whose wake-up went missing would sleep
//! forever, which loom reports as a deadlock), credit accounting (the
//! server never finds the completion ring full, also when both inbound
//! rings defer their releases), and two threads sharing
//! one client (each reply reaches its own caller, whichever thread drains
//! the completion ring and whichever parks). Without `--cfg loom` each
//! model runs once, on real threads.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ncio-uring-queue --release --all-features --lib uring::tests::loom
//! ```

use crate::HeapRing;
use crate::loom::sync::{Arc, Condvar, Mutex};
use crate::loom::{model, thread};
use crate::uring::{Client, Link, Notifier, Options, Request, Server, WakeFlag};
use alloc::boxed::Box;
use core::time::Duration;

/// A futex in loom's terms: `wait` sleeps only if the flag is still armed
/// when checked under the lock, and never times out, so a missed wake-up
/// is a deadlock. `wake` takes the same lock, so it cannot slip between
/// that check and the sleep.
#[derive(Clone)]
struct LoomFutex(Arc<(Mutex<()>, Condvar)>);

impl LoomFutex {
    fn new() -> Self {
        Self(Arc::new((Mutex::new(()), Condvar::new())))
    }
}

impl Notifier for LoomFutex {
    fn wait(&self, flag: &WakeFlag, _timeout: Duration) {
        let guard = self.0.0.lock().unwrap();
        if flag.is_armed() {
            drop(self.0.1.wait(guard).unwrap());
        }
    }

    fn wake(&self, _flag: &WakeFlag) {
        let _guard = self.0.0.lock().unwrap();
        self.0.1.notify_all();
    }
}

/// No spinning: every wait goes straight to the flag handshake.
const PARK_AT_ONCE: Options = Options {
    spin: 0,
    min_spin: 0,
    park_timeout: Duration::from_secs(3600),
    stale_after: None,
    yield_every: 0,
};

/// A value the model's threads borrow for `'static` (loom's threads, like
/// `std`'s, take `'static` closures), freed when the model ends: declare it
/// first, so it is dropped after everything that borrows it, and join the
/// threads that do.
struct Shared<T: 'static> {
    ptr: *mut T,
    value: &'static T,
}

impl<T> Shared<T> {
    fn new(value: T) -> Self {
        let ptr = Box::into_raw(Box::new(value));
        // SAFETY: `ptr` is a live, unique allocation; the reference lives
        // until `drop`, which each model reaches only after every user of
        // the reference is gone (see the type's docs).
        let value = unsafe { &*ptr };
        Self { ptr, value }
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::into_raw` and is freed only here,
        // once nothing uses the reference any more.
        drop(unsafe { Box::from_raw(self.ptr) });
    }
}

/// The bare handshake: a consumer arms its flag, re-checks, parks; the
/// producer pushes, then notifies.
#[test]
fn flag_handshake_loses_no_wake_up() {
    model(|| {
        let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
        let flag = Shared::new(WakeFlag::new());
        let flag = flag.value;
        let futex = LoomFutex::new();
        let waiter = futex.clone();
        let t = thread::spawn(move || {
            tx.push(7).unwrap();
            flag.notify(&futex);
        });
        let got = loop {
            if let Ok(v) = rx.pop() {
                break v;
            }
            flag.arm();
            if !rx.is_empty() {
                flag.disarm();
                continue;
            }
            waiter.wait(flag, Duration::from_secs(3600));
            flag.disarm();
        };
        assert_eq!(got, 7);
        t.join().unwrap();
    });
}

/// One request through client and server, both parking at once: the
/// server waits for the submission, the client for the completion.
#[test]
fn a_round_trip_with_both_sides_parking() {
    model(|| {
        let link = Shared::new(Link::new());
        let link = link.value;
        let futex = LoomFutex::new();
        let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new(2).unwrap();
        let mut client = Client::<2, _>::from_rings(sq_tx, cq_rx, link, futex.clone());
        let mut server = Server::from_rings(sq_rx, cq_tx, link, futex);
        client.set_options(PARK_AT_ONCE);
        server.set_options(PARK_AT_ONCE);
        let t = thread::spawn(move || {
            let incoming = server.recv().unwrap();
            assert_eq!(incoming.opcode(), 5);
            server.complete(incoming, 50, 0).unwrap();
        });
        let reply = client.call(Request::new(5)).unwrap();
        assert_eq!(reply.result, 50);
        t.join().unwrap();
    });
}

/// One credit (a completion ring of one): the client's second request
/// waits for the first completion, so the server's second completion
/// always finds room.
#[test]
fn credits_keep_the_completion_ring_from_filling() {
    model(|| {
        let link = Shared::new(Link::new());
        let link = link.value;
        let futex = LoomFutex::new();
        let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new(1).unwrap();
        let mut client = Client::<2, _>::from_rings(sq_tx, cq_rx, link, futex.clone());
        let mut server = Server::from_rings(sq_rx, cq_tx, link, futex);
        client.set_options(PARK_AT_ONCE);
        server.set_options(PARK_AT_ONCE);
        assert_eq!(client.credits(), 1);
        let t = thread::spawn(move || {
            for _ in 0..2 {
                let incoming = server.recv().unwrap();
                let op = incoming.opcode() as i32;
                // Never `CompletionRingFull`.
                server.complete(incoming, op, 0).unwrap();
            }
        });
        let first = client.submit(Request::new(1)).unwrap();
        // No credit left until the first completion is consumed.
        let second = client.submit(Request::new(2)).unwrap();
        assert_eq!(client.wait(first).unwrap().result, 1);
        assert_eq!(client.wait(second).unwrap().result, 2);
        t.join().unwrap();
    });
}

/// Two threads share one client, one request each, against one server: the
/// client's lock, the driving role and the per-slot flags. Whichever thread
/// drains a completion, its caller gets it; a thread parked on its slot's
/// flag, or waiting for the role, is always woken.
#[test]
fn two_threads_share_one_client() {
    model(|| {
        let link = Shared::new(Link::new());
        let link = link.value;
        let futex = LoomFutex::new();
        let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new(2).unwrap();
        let mut client = Client::<2, _>::from_rings(sq_tx, cq_rx, link, futex.clone());
        let mut server = Server::from_rings(sq_rx, cq_tx, link, futex);
        client.set_options(PARK_AT_ONCE);
        server.set_options(PARK_AT_ONCE);
        let client = Arc::new(client);
        let other = client.clone();
        let s = thread::spawn(move || {
            for _ in 0..2 {
                let incoming = server.recv().unwrap();
                let op = incoming.opcode() as i32;
                server.complete(incoming, op * 10, 0).unwrap();
            }
        });
        let t = thread::spawn(move || {
            assert_eq!(other.call(Request::new(1)).unwrap().result, 10);
        });
        assert_eq!(client.call(Request::new(2)).unwrap().result, 20);
        t.join().unwrap();
        s.join().unwrap();
        assert_eq!(client.in_flight(), 0);
    });
}

/// Deferred-release consumers (`K = 2`) on both inbound rings of one slot
/// each, so a consumer never publishes by count: the credit the client gets
/// back with the first reply must be a free submission slot for the second
/// request (the server released before it completed), and the server's
/// second completion must find room (the client released before it
/// submitted).
#[test]
fn deferred_release_keeps_credits_exact() {
    model(|| {
        let link = Shared::new(Link::new());
        let link = link.value;
        let futex = LoomFutex::new();
        let (sq_tx, sq_rx) = HeapRing::new_deferred::<2>(1).unwrap();
        let (cq_tx, cq_rx) = HeapRing::new_deferred::<2>(1).unwrap();
        let mut client: Client<'_, 2, _, 2> = Client::from_rings(sq_tx, cq_rx, link, futex.clone());
        let mut server: Server<'_, _, 2> = Server::from_rings(sq_rx, cq_tx, link, futex);
        client.set_options(PARK_AT_ONCE);
        server.set_options(PARK_AT_ONCE);
        assert_eq!(client.credits(), 1);
        let t = thread::spawn(move || {
            for _ in 0..2 {
                let incoming = server.recv().unwrap();
                let op = incoming.opcode() as i32;
                // Never `CompletionRingFull`.
                server.complete(incoming, op, 0).unwrap();
            }
        });
        let first = client.try_submit(Request::new(1)).unwrap();
        assert_eq!(client.wait(first).unwrap().result, 1);
        // The credit is back, so the submission ring has room: never `Busy`.
        let second = client.try_submit(Request::new(2)).unwrap();
        assert_eq!(client.wait(second).unwrap().result, 2);
        t.join().unwrap();
    });
}
