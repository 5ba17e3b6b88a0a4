//! The reactor-driven pair (feature `tokio`) within one process: calls that
//! complete on a `current_thread` runtime with nothing else driving (both
//! sides with their default spin, which yields to the runtime between
//! turns), 64 in flight, calls dropped at random points, a server that goes
//! away, a blocking server with an async client, a busy server that still
//! yields to the runtime, and a multi-thread runtime.

#![cfg(target_os = "linux")]

extern crate alloc;

use core::future::Future;
use core::future::poll_fn;
use core::task::{Context, Poll};
use futures_util::future::join_all;
use uring_queue::Region;
use uring_queue::uring::tokio::{AsyncClient, AsyncServer};
use uring_queue::uring::{Client, Config, Error, EventFd, NotifierKind, Request, Server, Uring};

mod common;
use common::XorShift;

const SLOTS: usize = 64;
const CONFIG: Config = Config::new(64, 64, 1 << 16).with_notifier(NotifierKind::EventFd);

#[repr(C, align(4096))]
struct Mem([u8; 1 << 18]);

fn memory() -> Box<Mem> {
    // Zeroed on the heap: the array is too large for a test's stack.
    let layout = core::alloc::Layout::new::<Mem>();
    // SAFETY: `Mem` is plain bytes, valid when zeroed; the layout is its own.
    unsafe { Box::from_raw(alloc::alloc::alloc_zeroed(layout).cast::<Mem>()) }
}

fn pair(mem: &mut Mem) -> (Client<'_, SLOTS, EventFd>, Server<'_, EventFd>) {
    let (for_client, for_server) = EventFd::pair().unwrap();
    Uring::init(Region::new(&mut mem.0), CONFIG)
        .unwrap()
        .split::<SLOTS, _, _>(for_client, for_server)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Answers every request with its opcode times two and the body echoed,
/// until the client goes away; returns how many it answered.
async fn serve(server: &mut AsyncServer<'_>) -> u64 {
    let mut served = 0;
    loop {
        let incoming = match server.recv().await {
            Ok(incoming) => incoming,
            Err(Error::PeerGone) => return served,
            Err(e) => panic!("server: {e}"),
        };
        let (body, out) = server.buffers(&incoming).unwrap();
        let n = body.len().min(out.len());
        out[..n].copy_from_slice(&body[..n]);
        let result = incoming.opcode() as i32 * 2;
        server.complete(incoming, result, n).unwrap();
        served += 1;
    }
}

/// One call with a body of `len` bytes, its echo checked.
async fn echo_call(client: &AsyncClient<'_, SLOTS>, op: u32, len: usize) -> Result<(), Error> {
    let mut body = client.alloc(len)?;
    for (k, b) in client.bytes_mut(&mut body)?.iter_mut().enumerate() {
        *b = (op as usize + k) as u8;
    }
    let out = client.alloc(len)?;
    let reply = client
        .call(Request::new(op).with_payload(body).with_response(out))
        .await?;
    assert_eq!(reply.result, op as i32 * 2);
    let got = client.response(&reply)?;
    assert_eq!(got.len(), len);
    assert!(
        got.iter()
            .enumerate()
            .all(|(k, &b)| b == (op as usize + k) as u8)
    );
    client.free_reply(reply);
    Ok(())
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn calls_complete_on_a_current_thread_runtime_with_nothing_else_driving() {
    let mut mem = memory();
    let (client, server) = pair(&mut mem);
    // One thread: the test's own, in `block_on`. Client and server are two
    // futures on it, woken by the reactor only.
    runtime().block_on(async {
        let mut server = AsyncServer::new(server).unwrap();
        let client = AsyncClient::new(client).unwrap();
        let calls = async move {
            for op in 0..10_000u32 {
                echo_call(&client, op, (op % 300) as usize).await.unwrap();
            }
            assert_eq!(client.in_flight(), 0);
            assert_eq!(client.blocks_in_use(), 0);
        };
        let (served, ()) = tokio::join!(serve(&mut server), calls);
        assert_eq!(served, 10_000);
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn sixty_four_calls_in_flight() {
    let mut mem = memory();
    let (client, server) = pair(&mut mem);
    runtime().block_on(async {
        let mut server = AsyncServer::new(server).unwrap();
        let client = AsyncClient::new(client).unwrap();
        let calls = async move {
            for round in 0..200u32 {
                let calls = (0..64u32)
                    .map(|i| client.call(Request::new(round * 64 + i)))
                    .collect::<Vec<_>>();
                for (i, reply) in join_all(calls).await.into_iter().enumerate() {
                    assert_eq!(reply.unwrap().result, (round * 64 + i as u32) as i32 * 2);
                }
            }
        };
        let (served, ()) = tokio::join!(serve(&mut server), calls);
        assert_eq!(served, 200 * 64);
    });
}

/// Polls `future` at most `polls` times (each time the task is woken),
/// then drops it: a call cancelled at a chosen point.
async fn cancel_after<F: Future>(future: F, polls: u64) -> Option<F::Output> {
    let mut future = Box::pin(future);
    let mut left = polls;
    poll_fn(|cx: &mut Context<'_>| {
        if left == 0 {
            return Poll::Ready(None);
        }
        left -= 1;
        future.as_mut().poll(cx).map(Some)
    })
    .await
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn calls_dropped_at_random_points_leave_the_client_consistent() {
    let mut mem = memory();
    let (client, server) = pair(&mut mem);
    runtime().block_on(async {
        let mut server = AsyncServer::new(server).unwrap();
        let client = AsyncClient::new(client).unwrap();
        let calls = async move {
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
            let mut finished = 0;
            for round in 0..2000u32 {
                let n = 1 + rng.next() % 70;
                let calls = (0..n)
                    .map(|i| {
                        let op = round * 128 + i as u32;
                        cancel_after(client.call(Request::new(op)), rng.next() % 4)
                    })
                    .collect::<Vec<_>>();
                for reply in join_all(calls).await.into_iter().flatten() {
                    assert!(reply.unwrap().result % 2 == 0);
                    finished += 1;
                }
            }
            assert!(finished > 0);
            // Every credit is back: 64 at once still go through, and after
            // them nothing is left in flight (the cancelled calls' replies
            // came before theirs and were discarded).
            assert_eq!(client.credits(), 64);
            let calls = (0..64u32)
                .map(|i| client.call(Request::new(i)))
                .collect::<Vec<_>>();
            for (i, reply) in join_all(calls).await.into_iter().enumerate() {
                assert_eq!(reply.unwrap().result, i as i32 * 2);
            }
            assert_eq!(client.in_flight(), 0);
        };
        tokio::join!(serve(&mut server), calls);
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn every_waiting_call_gets_peer_gone_when_the_server_goes() {
    let mut mem = memory();
    let (client, server) = pair(&mut mem);
    runtime().block_on(async {
        let mut server = AsyncServer::new(server).unwrap();
        let client = AsyncClient::new(client).unwrap();
        let stop = async move {
            // Take the requests, answer none, and go.
            for _ in 0..8 {
                server.recv().await.unwrap();
            }
            drop(server);
        };
        let calls = (0..16u32)
            .map(|i| client.call(Request::new(i)))
            .collect::<Vec<_>>();
        let (replies, ()) = tokio::join!(join_all(calls), stop);
        assert!(
            replies
                .iter()
                .all(|r| r.as_ref().err() == Some(&Error::PeerGone))
        );
        assert_eq!(
            client.call(Request::new(0)).await.unwrap_err(),
            Error::PeerGone
        );
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn a_blocking_server_serves_an_async_client() {
    let mut mem = memory();
    let (client, mut server) = pair(&mut mem);
    std::thread::scope(|s| {
        let served = s.spawn(move || {
            let mut served = 0u64;
            while server
                .handle(|inc, _, _| (inc.opcode() as i32 * 2, 0))
                .is_ok()
            {
                served += 1;
            }
            served
        });
        runtime().block_on(async move {
            let client = AsyncClient::new(client).unwrap();
            for op in 0..5000u32 {
                assert_eq!(
                    client.call(Request::new(op)).await.unwrap().result,
                    op as i32 * 2
                );
            }
        });
        assert_eq!(served.join().unwrap(), 5000);
    });
}

/// A server that always finds a request waiting still returns to the
/// runtime once its task has spent tokio's budget: on a multi-thread
/// runtime, tasks queued behind it on its worker (its clients' calls among
/// them) would otherwise wait until one of its spins came up empty.
#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn a_busy_server_yields_to_the_runtime() {
    // Three rounds of 48: more than tokio's budget for one poll of a task.
    const ROUNDS: usize = 3;
    const BATCH: usize = 48;
    let mut mem = memory();
    let (client, server) = pair(&mut mem);
    runtime().block_on(async {
        let mut server = AsyncServer::new(server).unwrap();
        // Within one poll of the task: each round submits a batch and takes
        // requests until `poll_recv` is pending.
        let mut taken = 0;
        for _ in 0..ROUNDS {
            for _ in 0..BATCH {
                // Its reply is not waited for: its credit comes back with it.
                let ticket = client.try_submit(Request::new(1)).unwrap();
                client.cancel(ticket).unwrap();
            }
            taken += poll_fn(|cx| {
                let mut n = 0;
                loop {
                    match server.poll_recv(cx) {
                        Poll::Ready(Ok(incoming)) => {
                            server.complete(incoming, 2, 0).unwrap();
                            n += 1;
                        }
                        Poll::Ready(Err(e)) => panic!("{e}"),
                        Poll::Pending => return Poll::Ready(n),
                    }
                }
            })
            .await;
            client.poll_completions().unwrap();
        }
        // The budget ran out: `poll_recv` was pending with requests waiting.
        assert!(taken < ROUNDS * BATCH, "{taken}");
        assert_eq!(client.in_flight(), ROUNDS * BATCH - taken);
        // Back from the runtime, the rest are served.
        while taken < ROUNDS * BATCH {
            let incoming = server.recv().await.unwrap();
            server.complete(incoming, 2, 0).unwrap();
            taken += 1;
        }
        client.poll_completions().unwrap();
        assert_eq!(client.in_flight(), 0);
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's reactor: epoll waits with timers, too slow under Miri; tests/uring_kind.rs and the reactor's unit tests cover the pure steps"
)]
fn tasks_on_a_multi_thread_runtime_share_a_client() {
    let mem: &'static mut Mem = Box::leak(memory());
    let (client, server) = pair(mem);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let server = tokio::spawn(async move {
            let mut server = AsyncServer::new(server).unwrap();
            serve(&mut server).await
        });
        let client = alloc::sync::Arc::new(AsyncClient::new(client).unwrap());
        let tasks: Vec<_> = (0..8u32)
            .map(|t| {
                let client = client.clone();
                tokio::spawn(async move {
                    for k in 0..500u32 {
                        let op = t * 1000 + k;
                        let reply = client.call(Request::new(op)).await.unwrap();
                        assert_eq!(reply.result, op as i32 * 2);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        drop(client);
        assert_eq!(server.await.unwrap(), 8 * 500);
    });
}
