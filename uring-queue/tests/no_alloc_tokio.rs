//! No allocation per request through the tokio pair: a counting global
//! allocator sees none on the runtime's thread while a reactor-driven client
//! and server (two tasks of one `current_thread` runtime) exchange requests
//! in steady state, one at a time and four at a time.

#![cfg(target_os = "linux")]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;
use std::alloc::System;
use uring_queue::Region;
use uring_queue::uring::tokio::{AsyncClient, AsyncServer};
use uring_queue::uring::{Config, Error, EventFd, NotifierKind, Options, Request, Uring};

/// Counts the allocations of the thread that turned counting on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the thread's locals may be gone while it exits.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is passed to the system allocator unchanged; the
// counting touches only const-initialised thread locals, which allocate
// nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: delegated to the caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: delegated to the caller.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: delegated to the caller.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: delegated to the caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations made by this thread while `f` runs.
async fn allocations<F: Future<Output = ()>>(f: F) -> u64 {
    COUNT.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    f.await;
    COUNTING.with(|on| on.set(false));
    COUNT.with(Cell::get)
}

#[repr(C, align(4096))]
struct Mem([u8; 1 << 16]);

const ROUNDS: u32 = 10_000;

#[test]
#[cfg_attr(miri, ignore = "eventfd and epoll system calls")]
fn the_tokio_pair_allocates_nothing_per_request() {
    let mut mem = Box::new(Mem([0; 1 << 16]));
    let config = Config::new(8, 8, 4096).with_notifier(NotifierKind::EventFd);
    let (for_client, for_server) = EventFd::pair().unwrap();
    let (mut client, mut server) = Uring::init(Region::new(&mut mem.0), config)
        .unwrap()
        .split::<8, _, _>(for_client, for_server);
    // Both sides on one thread: little spinning (see tests/uring_tokio.rs).
    let options = Options {
        spin: 16,
        ..Options::default()
    };
    client.set_options(options);
    server.set_options(options);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = AsyncClient::new(client).unwrap();
        let mut server = AsyncServer::new(server).unwrap();
        let serve = async {
            loop {
                match server.recv().await {
                    Ok(incoming) => {
                        let op = incoming.opcode() as i32;
                        server.complete(incoming, op + 1, 0).unwrap();
                    }
                    Err(Error::PeerGone) => return,
                    Err(e) => panic!("server: {e}"),
                }
            }
        };
        let calls = async {
            let one = |op: u32| {
                let client = &client;
                async move {
                    let reply = client.call(Request::new(op)).await.unwrap();
                    assert_eq!(reply.result, op as i32 + 1);
                }
            };
            let run = || async {
                for op in 0..ROUNDS {
                    one(op).await;
                }
                for op in 0..ROUNDS / 4 {
                    tokio::join!(one(op), one(op + 1), one(op + 2), one(op + 3));
                }
            };
            // The counter counts.
            let one_box = allocations(async {
                drop(core::hint::black_box(Box::new(1u8)));
            });
            assert_eq!(one_box.await, 1);
            // Warm-up: the runtime's and the timer's first-use allocations.
            run().await;
            let counted = allocations(run()).await;
            assert_eq!(counted, 0, "allocations over {} requests", 2 * ROUNDS);
            drop(client);
        };
        tokio::join!(serve, calls);
    });
}
