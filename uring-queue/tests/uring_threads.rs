//! One client shared by many threads, and by the tasks of a multi-thread
//! runtime, against a server thread, with real futex parking. The client's
//! park round lasts an hour here, so a lost wake-up between its threads
//! hangs the test instead of hiding in a park timeout. (The server keeps the
//! default round: it notices the client's close at its next round, by
//! design, rather than through a wake-up.)

#![cfg(all(target_os = "linux", not(loom)))]

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use uring_queue::Region;
use uring_queue::uring::{Client, Config, Error, Futex, Incoming, Options, Reply, Request, Uring};

mod common;
use common::XorShift;

const NO_TIMEOUT: Options = Options {
    spin: 64,
    min_spin: 64,
    park_timeout: Duration::from_secs(3600),
    stale_after: None,
    yield_every: 0,
};

#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct Line([u8; 128]);

/// A zeroed region for `config` that lives as long as the process, so the
/// client can go into an `Arc` and to spawned tasks.
fn leaked_region(config: &Config) -> Region<'static> {
    let lines = Uring::required_size(config).unwrap().div_ceil(128);
    let buf: &'static mut [Line] = Box::leak(vec![Line([0; 128]); lines].into_boxed_slice());
    // SAFETY: `Line` is 128 plain bytes, so the buffer is initialised bytes,
    // borrowed exclusively (and forever) by the region.
    let bytes =
        unsafe { core::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), lines * 128) };
    Region::new(bytes)
}

fn byte(seq: u64, k: usize) -> u8 {
    (seq as usize).wrapping_mul(31).wrapping_add(k) as u8
}

/// The server's transformation: every byte plus one, in reverse order; the
/// result is the request's opcode, which carries its sequence number.
fn echo(incoming: &Incoming, body: &[u8], out: &mut [u8]) -> (i32, usize) {
    for (o, b) in out.iter_mut().zip(body.iter().rev()) {
        *o = b.wrapping_add(1);
    }
    (incoming.opcode() as i32, body.len())
}

/// Builds request `seq` with a body of `len` bytes, allocating its blocks
/// (`None` while other requests fill the payload area).
fn request<const N: usize>(client: &Client<'_, N, Futex>, seq: u64, len: usize) -> Option<Request> {
    let (mut body, response) = match (client.alloc(len), client.alloc(len)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            for block in [a, b].into_iter().flatten() {
                client.free(block);
            }
            return None;
        }
    };
    for (k, b) in client.bytes_mut(&mut body).unwrap().iter_mut().enumerate() {
        *b = byte(seq, k);
    }
    Some(
        Request::new(seq as u32)
            .with_payload(body)
            .with_response(response),
    )
}

/// Checks that `reply` answers request `seq` (so a reply routed to another
/// submitter fails) and frees its blocks.
fn check<const N: usize>(client: &Client<'_, N, Futex>, seq: u64, len: usize, reply: Reply) {
    assert_eq!(reply.result, seq as i32, "request {seq}");
    let got = client.response(&reply).unwrap();
    assert_eq!(got.len(), len, "request {seq}");
    for (k, &b) in got.iter().enumerate() {
        assert_eq!(
            b,
            byte(seq, len - 1 - k).wrapping_add(1),
            "request {seq} byte {k}"
        );
    }
    client.free_reply(reply);
}

/// Serves until the client closes; returns how many requests it answered.
/// Without a park timeout, so a close that failed to wake the server hangs
/// the test instead of being noticed a timeout later.
fn serve(server: uring_queue::uring::Server<'_, Futex>) -> u64 {
    let mut server = server;
    server.set_options(NO_TIMEOUT);
    let mut served = 0;
    loop {
        match server.handle(echo) {
            Ok(()) => served += 1,
            Err(Error::PeerGone) => return served,
            Err(e) => panic!("server: {e}"),
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "parks on a futex and opens pidfds: system calls Miri does not model"
)]
fn threads_block_and_await_with_futex_parking() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 5_000;
    let config = Config::new(8, 8, 64 << 10);
    let (mut client, server) = Uring::init(leaked_region(&config), config)
        .unwrap()
        .split::<8, _, _>(Futex::new(), Futex::new());
    client.set_options(NO_TIMEOUT);
    std::thread::scope(|s| {
        let served = s.spawn(move || serve(server));
        let shared = &client;
        std::thread::scope(|w| {
            for t in 0..THREADS {
                w.spawn(move || {
                    let client = shared;
                    let mut rng = XorShift(0x2545_F491_4F6C_DD1D ^ (t + 1));
                    for i in 0..PER_THREAD {
                        let seq = t * PER_THREAD + i;
                        let len = (rng.next() % 3000) as usize;
                        let request = loop {
                            match request(client, seq, len) {
                                Some(r) => break r,
                                None => std::thread::yield_now(),
                            }
                        };
                        let reply = match i % 3 {
                            0 => client.call(request).unwrap(),
                            1 => client.block_on(client.call_async(request)).unwrap(),
                            _ => {
                                let ticket = client.submit(request).unwrap();
                                client.wait(ticket).unwrap()
                            }
                        };
                        check(client, seq, len, reply);
                    }
                });
            }
        });
        assert_eq!(client.in_flight(), 0);
        assert_eq!(client.blocks_in_use(), 0);
        drop(client);
        assert_eq!(served.join().unwrap(), THREADS * PER_THREAD);
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "parks on a futex and opens pidfds; tokio's runtime: system calls Miri does not model"
)]
fn tokio_tasks_on_worker_threads_share_one_client() {
    const TASKS: u64 = 16;
    const PER_TASK: u64 = 500;
    let config = Config::new(8, 8, 64 << 10);
    let (mut client, server) = Uring::init(leaked_region(&config), config)
        .unwrap()
        .split::<16, _, _>(Futex::new(), Futex::new());
    client.set_options(NO_TIMEOUT);
    let client = Arc::new(client);
    let server = std::thread::spawn(move || serve(server));
    // The tasks' completions are routed by whoever drains the completion
    // ring: the tasks' own polls, and this thread while they wait.
    let done = Arc::new(AtomicBool::new(false));
    let driver = {
        let (client, done) = (client.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                client.poll_completions().unwrap();
                client.park().unwrap();
            }
        })
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .build()
        .unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let client = client.clone();
                tokio::spawn(async move {
                    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                    for i in 0..PER_TASK {
                        let seq = t * PER_TASK + i;
                        let len = (rng.next() % 3000) as usize;
                        let request = loop {
                            match request(&client, seq, len) {
                                Some(r) => break r,
                                None => tokio::task::yield_now().await,
                            }
                        };
                        // Held across the `.await` on a worker thread: the
                        // future is `Send`.
                        let reply = client.call_async(request).await.unwrap();
                        check(&client, seq, len, reply);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    done.store(true, Ordering::Release);
    // The driver parks until something arrives: requests from this thread
    // wake it (their completions, routed by it or by this thread) until it
    // sees `done`.
    let mut seq = TASKS * PER_TASK;
    while !driver.is_finished() {
        let reply = client.call(request(&client, seq, 10).unwrap()).unwrap();
        check(&client, seq, 10, reply);
        seq += 1;
    }
    driver.join().unwrap();
    assert_eq!(client.in_flight(), 0);
    assert_eq!(client.blocks_in_use(), 0);
    drop(client);
    assert_eq!(server.join().unwrap(), seq);
}
