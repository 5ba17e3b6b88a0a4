//! No allocation per request in steady state: a counting global allocator
//! watches the client's thread and the server's thread while requests run
//! through the blocking calls (`call`, `submit` + `wait`) and the
//! executor-agnostic futures (`call_async` under embassy's busy `block_on`
//! and under the client's own `block_on`), with payload and response blocks
//! and futex parking.
//!
//! One test runs every case in turn, so no other test's threads allocate
//! while a case is measured; only threads that opted in are counted.

#![cfg(all(target_os = "linux", not(loom)))]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::System;
use uring_queue::Region;
use uring_queue::uring::{Client, Config, Error, Futex, Reply, Request, Uring};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTED.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged; the counter is an
// atomic and the flag a const-initialised thread-local without a
// destructor, so neither allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: delegated to the caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: delegated to the caller.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: delegated to the caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: delegated to the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SLOTS: usize = 8;
const WARM_UP: u32 = 200;
const MEASURED: u32 = 5_000;
const BODY: usize = 64;

type Pair<'a> = Client<'a, SLOTS, Futex>;

/// A request with a body of `BODY` bytes (its opcode in each byte) and a
/// response block as large.
fn request(client: &Pair<'_>, op: u32) -> Request {
    let mut body = client.alloc(BODY).unwrap();
    client.bytes_mut(&mut body).unwrap().fill(op as u8);
    let response = client.alloc(BODY).unwrap();
    Request::new(op).with_payload(body).with_response(response)
}

/// Checks the echo of request `op` and gives its blocks back.
fn check(client: &Pair<'_>, op: u32, reply: Result<Reply, Error>) {
    let reply = reply.unwrap();
    assert_eq!(reply.result, op as i32);
    assert!(
        client
            .response(&reply)
            .unwrap()
            .iter()
            .all(|&b| b == op as u8)
    );
    client.free_reply(reply);
}

/// Runs `one` (a request through the client, checked) for a warm-up and
/// then `MEASURED` times with the client's and the server's threads
/// counted, against an echo server thread; returns the allocations seen.
fn allocations_per_steady_state(one: impl Fn(&Pair<'_>, u32)) -> usize {
    #[repr(C, align(128))]
    struct Mem([u8; 65536]);
    let mut mem = Box::new(Mem([0; 65536]));
    let uring = Uring::init(
        Region::new(&mut mem.0),
        Config::new(SLOTS, SLOTS, 4 * SLOTS * BODY),
    )
    .unwrap();
    let (client, mut server) = uring.split::<SLOTS, _, _>(Futex::new(), Futex::new());
    std::thread::scope(|s| {
        s.spawn(move || {
            COUNTED.with(|c| c.set(true));
            let echo = |incoming: &uring_queue::uring::Incoming, body: &[u8], out: &mut [u8]| {
                out[..body.len()].copy_from_slice(body);
                (incoming.opcode() as i32, body.len())
            };
            while server.handle(echo).is_ok() {}
        });
        for op in 0..WARM_UP {
            one(&client, op);
        }
        COUNTED.with(|c| c.set(true));
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for op in WARM_UP..WARM_UP + MEASURED {
            one(&client, op);
        }
        let seen = ALLOCATIONS.load(Ordering::Relaxed) - before;
        COUNTED.with(|c| c.set(false));
        drop(client);
        seen
    })
}

#[test]
#[cfg_attr(miri, ignore = "futex parking through system calls")]
fn no_allocation_per_request_in_steady_state() {
    let call = allocations_per_steady_state(|client, op| {
        check(client, op, client.call(request(client, op)));
    });
    let submit_wait = allocations_per_steady_state(|client, op| {
        let ticket = client.submit(request(client, op)).unwrap();
        check(client, op, client.wait(ticket));
    });
    let busy_block_on = allocations_per_steady_state(|client, op| {
        let reply = embassy_futures::block_on(client.call_async(request(client, op)));
        check(client, op, reply);
    });
    let own_block_on = allocations_per_steady_state(|client, op| {
        let reply = client.block_on(client.call_async(request(client, op)));
        check(client, op, reply);
    });
    let pipelined = allocations_per_steady_state(|client, op| {
        // Two calls in flight at once, joined on the client's executor.
        let (a, b) = client.block_on(async {
            let a = client.call_async(request(client, 2 * op));
            let b = client.call_async(request(client, 2 * op + 1));
            embassy_futures::join::join(a, b).await
        });
        check(client, 2 * op, a);
        check(client, 2 * op + 1, b);
    });
    assert_eq!(
        [call, submit_wait, busy_block_on, own_block_on, pipelined],
        [0; 5],
        "allocations over {MEASURED} requests: call, submit + wait, \
         call_async under a busy block_on, under Client::block_on, two joined"
    );
}
