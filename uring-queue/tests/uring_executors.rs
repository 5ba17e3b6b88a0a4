//! The client's futures with no thread driving: each pending future keeps
//! its own task scheduled while nobody else drains the completion ring, so
//! executors that poll only what was woken (`FuturesUnordered`, `join_all`
//! of many futures), a busy `block_on` and a parking `block_on` all run a
//! batch of calls to the end. A server thread answers; the client's own
//! thread does nothing but run the executor.

#![cfg(all(target_os = "linux", not(loom)))]

extern crate alloc;

use alloc::sync::Arc;
use alloc::task::Wake;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use std::thread::{self, Thread};
use uring_queue::uring::{Client, Config, Error, Futex, Reply, Request, Uring};

/// More calls than the client has credits, and more than `join_all` runs
/// by polling every future (30).
const CALLS: u32 = 64;
const SLOTS: usize = 8;

/// A `block_on` that parks its thread until a waker is called, as
/// `futures::executor::block_on` does.
fn parking_block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}

/// The calls' results, checked: request `i` is answered with `i * 3`.
fn check(replies: Vec<Result<Reply, Error>>) {
    let mut results: Vec<i32> = replies.into_iter().map(|r| r.unwrap().result).collect();
    results.sort_unstable();
    let expected: Vec<i32> = (0..CALLS as i32).map(|i| i * 3).collect();
    assert_eq!(results, expected);
}

/// Runs `client_side` on this thread against a server thread that triples
/// opcodes until the client is gone.
fn with_server(client_side: impl FnOnce(&Client<'_, SLOTS, Futex>)) {
    #[repr(C, align(128))]
    struct Mem([u8; 32768]);
    let mut mem = Box::new(Mem([0; 32768]));
    let uring = Uring::init(
        uring_queue::Region::new(&mut mem.0),
        Config::new(SLOTS, SLOTS, 0),
    )
    .unwrap();
    let (client, mut server) = uring.split::<SLOTS, _, _>(Futex::new(), Futex::new());
    thread::scope(|s| {
        s.spawn(move || {
            loop {
                match server.recv() {
                    Ok(incoming) => {
                        let op = incoming.opcode() as i32;
                        server.complete(incoming, op * 3, 0).unwrap();
                    }
                    Err(e) => break assert_eq!(e, Error::PeerGone),
                }
            }
        });
        client_side(&client);
        drop(client);
    });
}

fn unordered<'c>(
    client: &'c Client<'_, SLOTS, Futex>,
) -> FuturesUnordered<impl Future<Output = Result<Reply, Error>> + 'c> {
    (0..CALLS)
        .map(|i| client.call_async(Request::new(i)))
        .collect()
}

#[test]
#[cfg_attr(miri, ignore = "futex parking across threads")]
fn futures_unordered_under_a_busy_block_on() {
    with_server(|client| {
        check(embassy_futures::block_on(unordered(client).collect()));
    });
}

#[test]
#[cfg_attr(miri, ignore = "futex parking across threads")]
fn futures_unordered_under_a_parking_block_on() {
    with_server(|client| {
        check(parking_block_on(unordered(client).collect()));
    });
}

#[test]
#[cfg_attr(miri, ignore = "futex parking across threads")]
fn join_all_of_many_under_a_busy_block_on() {
    with_server(|client| {
        let calls = (0..CALLS).map(|i| client.call_async(Request::new(i)));
        check(embassy_futures::block_on(join_all(calls)));
    });
}

#[test]
#[cfg_attr(miri, ignore = "futex parking across threads")]
fn join_all_of_many_under_a_parking_block_on() {
    with_server(|client| {
        let calls = (0..CALLS).map(|i| client.call_async(Request::new(i)));
        check(parking_block_on(join_all(calls)));
    });
}

#[test]
#[cfg_attr(miri, ignore = "futex parking across threads")]
fn one_call_at_a_time_under_a_parking_block_on() {
    with_server(|client| {
        let replies = parking_block_on(async {
            let mut replies = Vec::new();
            for i in 0..CALLS {
                replies.push(client.call_async(Request::new(i)).await);
            }
            replies
        });
        check(replies);
    });
}

#[test]
#[cfg_attr(miri, ignore = "futex parking across threads")]
fn tasks_outlive_a_thread_that_drove_for_a_while() {
    // Another thread blocks in `call` now and then, so it drives while the
    // futures wait, and then stops for good: the tasks that counted on it
    // are woken when it leaves the role and finish on their own.
    with_server(|client| {
        thread::scope(|s| {
            s.spawn(|| {
                for i in 0..200 {
                    let reply = loop {
                        match client.call(Request::new(1000 + i)) {
                            // Every credit is held by a reply routed to a
                            // task that has not taken it yet: `submit`
                            // says so rather than wait for that task.
                            Err(Error::Busy) => thread::yield_now(),
                            other => break other.unwrap(),
                        }
                    };
                    assert_eq!(reply.result, (1000 + i as i32) * 3);
                }
            });
            let calls = (0..CALLS).map(|i| client.call_async(Request::new(i)));
            check(parking_block_on(join_all(calls)));
        });
    });
}
