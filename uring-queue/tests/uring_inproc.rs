//! The request/response layer within one process: client and server on two
//! threads over a heap buffer, and each side against a hand-driven peer that
//! breaks the protocol. Cheap enough for Miri.

extern crate alloc;

use alloc::collections::VecDeque;
use core::future::Future;
use core::pin::{Pin, pin};
use core::task::{Context, Poll, Waker};
use uring_queue::uring::{
    Block, Call, Client, Config, Cqe, Error, Link, Options, Request, Server, Spin, Sqe, Uring,
};
use uring_queue::{CapacityError, HeapRing, Region, RegionError};

mod common;
use common::XorShift;

#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct Line([u8; 128]);

/// A zeroed buffer aligned for a connection region.
fn buffer(bytes: usize) -> Vec<Line> {
    vec![Line([0; 128]); bytes.div_ceil(128)]
}

fn region(buf: &mut [Line]) -> Region<'_> {
    let len = buf.len() * 128;
    // SAFETY: `Line` is 128 plain bytes, so the vector is `len` initialised
    // bytes, borrowed exclusively for the region's lifetime.
    let bytes = unsafe { core::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), len) };
    Region::new(bytes)
}

fn expected_byte(seq: u64, k: usize) -> u8 {
    (seq as usize).wrapping_mul(31).wrapping_add(k) as u8
}

/// The server's transformation: every byte plus one, in reverse order.
fn echo(_: &uring_queue::uring::Incoming, body: &[u8], out: &mut [u8]) -> (i32, usize) {
    for (o, b) in out.iter_mut().zip(body.iter().rev()) {
        *o = b.wrapping_add(1);
    }
    (body.len() as i32, body.len())
}

#[test]
fn two_threads_echo_random_sizes_pipelined() {
    let requests: u64 = if cfg!(miri) { 16 } else { 20_000 };
    let config = Config::new(8, 8, 16 << 10);
    let mut buf = buffer(Uring::required_size(&config).unwrap());
    let (client, mut server) = Uring::init(region(&mut buf), config)
        .unwrap()
        .split::<8, _, _>(Spin, Spin);
    let opts = Options {
        spin: 16,
        ..Options::default()
    };
    server.set_options(opts);
    std::thread::scope(|s| {
        s.spawn(move || {
            loop {
                match server.handle(echo) {
                    Ok(()) => {}
                    Err(Error::PeerGone) => break,
                    Err(e) => panic!("server: {e}"),
                }
            }
        });
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut pending = VecDeque::new();
        let check = |seq: u64, len: usize, ticket| {
            let reply = client.wait(ticket).unwrap();
            assert_eq!(reply.result, len as i32, "request {seq}");
            let got = client.response(&reply).unwrap();
            assert_eq!(got.len(), len);
            for (k, &b) in got.iter().enumerate() {
                assert_eq!(
                    b,
                    expected_byte(seq, len - 1 - k).wrapping_add(1),
                    "request {seq} byte {k}"
                );
            }
            client.free_reply(reply);
        };
        for seq in 0..requests {
            let len = (rng.next() % 1500) as usize;
            let (mut body, response) = loop {
                match (client.alloc(len), client.alloc(len)) {
                    (Ok(a), Ok(b)) => break (a, b),
                    (a, b) => {
                        for block in [a, b].into_iter().flatten() {
                            client.free(block);
                        }
                        // The area is full of in-flight blocks: retire one.
                        let (seq, len, ticket) = pending.pop_front().expect("area too small");
                        check(seq, len, ticket);
                    }
                }
            };
            for (k, b) in client.bytes_mut(&mut body).unwrap().iter_mut().enumerate() {
                *b = expected_byte(seq, k);
            }
            if pending.len() == client.credits() {
                let (seq, len, ticket) = pending.pop_front().unwrap();
                check(seq, len, ticket);
            }
            let ticket = client
                .submit(Request::new(1).with_payload(body).with_response(response))
                .unwrap();
            pending.push_back((seq, len, ticket));
        }
        for (seq, len, ticket) in pending.drain(..) {
            check(seq, len, ticket);
        }
        assert_eq!(client.in_flight(), 0);
        assert_eq!(client.blocks_in_use(), 0);
        drop(client);
    });
}

fn rings(link: &Link, n_sq: usize, n_cq: usize) -> (Client<'_, 4, Spin>, Server<'_, Spin>) {
    let (sq_tx, sq_rx) = HeapRing::new(n_sq).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new(n_cq).unwrap();
    let mut client = Client::from_rings(sq_tx, cq_rx, link, Spin);
    let mut server = Server::from_rings(sq_rx, cq_tx, link, Spin);
    let quick = Options {
        spin: 2,
        ..Options::default()
    };
    client.set_options(quick);
    server.set_options(quick);
    (client, server)
}

#[test]
fn completions_out_of_order_reach_their_submitters() {
    let link = Link::new();
    let (client, mut server) = rings(&link, 4, 4);
    let tickets: Vec<_> = (0..4)
        .map(|op| client.try_submit(Request::new(op)).unwrap())
        .collect();
    let incoming: Vec<_> = (0..4).map(|_| server.recv().unwrap()).collect();
    for inc in incoming.into_iter().rev() {
        let op = inc.opcode() as i32;
        server.complete(inc, 100 + op, 0).unwrap();
    }
    for (op, t) in tickets.into_iter().enumerate().rev() {
        assert_eq!(client.wait(t).unwrap().result, 100 + op as i32);
    }
    assert_eq!(client.in_flight(), 0);
}

#[test]
fn credits_bound_in_flight_by_the_completion_ring() {
    let link = Link::new();
    let (client, mut server) = rings(&link, 8, 2);
    assert_eq!(client.credits(), 2);
    let a = client.try_submit(Request::new(1)).unwrap();
    let b = client.try_submit(Request::new(2)).unwrap();
    let rejected = client.try_submit(Request::new(3)).unwrap_err();
    assert_eq!(rejected.error, Error::Busy);
    // The server can always post both completions.
    for _ in 0..2 {
        let inc = server.recv().unwrap();
        server.complete(inc, 0, 0).unwrap();
    }
    assert!(client.wait(a).is_ok());
    // One credit back.
    let c = client.try_submit(rejected.value).unwrap();
    assert!(client.wait(b).is_ok());
    let inc = server.recv().unwrap();
    assert_eq!(inc.opcode(), 3);
    server.complete(inc, 0, 0).unwrap();
    assert!(client.wait(c).is_ok());
}

#[test]
fn a_cancelled_request_keeps_its_tag_until_its_completion_arrives() {
    let link = Link::new();
    let (client, mut server) = rings(&link, 4, 4);
    let t = client.try_submit(Request::new(1)).unwrap();
    let tag = t.user_data();
    client.cancel(t).unwrap();
    assert_eq!(client.in_flight(), 1);
    // Other requests never get the tag while it is in flight.
    let others: Vec<_> = (0..3)
        .map(|_| client.try_submit(Request::new(2)).unwrap())
        .collect();
    assert!(others.iter().all(|o| o.user_data() != tag));
    assert_eq!(
        client.try_submit(Request::new(3)).unwrap_err().error,
        Error::Busy
    );
    let first = server.recv().unwrap();
    assert_eq!(first.user_data(), tag);
    server.complete(first, 7, 0).unwrap();
    // The discarded completion frees the slot; its next tag differs.
    assert_eq!(client.poll_completions(), Ok(1));
    assert_eq!(client.in_flight(), 3);
    let again = client.try_submit(Request::new(4)).unwrap();
    assert_ne!(again.user_data(), tag);
    for t in others.into_iter().chain([again]) {
        let inc = server.recv().unwrap();
        server.complete(inc, 1, 0).unwrap();
        assert_eq!(client.wait(t).unwrap().result, 1);
    }
}

fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_dropped_future_discards_its_completion() {
    let link = Link::new();
    let (client, mut server) = rings(&link, 2, 2);
    {
        let mut fut = pin!(client.call_async(Request::new(1)));
        assert!(poll_once(fut.as_mut()).is_pending());
        assert_eq!(client.in_flight(), 1);
    }
    // Dropped in flight: still reserved.
    assert_eq!(client.in_flight(), 1);
    let inc = server.recv().unwrap();
    server.complete(inc, 9, 0).unwrap();
    // Routed, and discarded: the slot is free again.
    assert_eq!(client.poll_completions(), Ok(1));
    assert_eq!(client.in_flight(), 0);
    let mut fut = pin!(client.call_async(Request::new(2)));
    assert!(poll_once(fut.as_mut()).is_pending());
    // This one gets its own completion, not the discarded one.
    assert_eq!(client.in_flight(), 1);
    let inc = server.recv().unwrap();
    assert_eq!(inc.opcode(), 2);
    server.complete(inc, 20, 0).unwrap();
    match poll_once(fut.as_mut()) {
        Poll::Ready(Ok(reply)) => assert_eq!(reply.result, 20),
        other => panic!("{other:?}"),
    }
}

/// A waker that counts how often it was woken.
struct WakeCount(core::sync::atomic::AtomicUsize);

impl WakeCount {
    fn new() -> alloc::sync::Arc<Self> {
        alloc::sync::Arc::new(Self(core::sync::atomic::AtomicUsize::new(0)))
    }

    fn get(&self) -> usize {
        self.0.load(core::sync::atomic::Ordering::SeqCst)
    }
}

impl alloc::task::Wake for WakeCount {
    fn wake(self: alloc::sync::Arc<Self>) {
        self.0.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn futures_wait_for_credits_and_are_woken() {
    let link = Link::new();
    let (client, mut server) = rings(&link, 1, 1);
    let wakes = WakeCount::new();
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    let mut a = pin!(client.call_async(Request::new(1)));
    let mut b = pin!(client.call_async(Request::new(2)));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    // No credit for `b`: it waits.
    assert!(b.as_mut().poll(&mut cx).is_pending());
    let inc = server.recv().unwrap();
    server.complete(inc, 1, 0).unwrap();
    assert_eq!(client.poll_completions(), Ok(1));
    // `a`'s waker fired.
    assert!(wakes.get() >= 1);
    assert!(matches!(a.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
    // Taking `a`'s reply freed the credit and woke `b`.
    assert!(wakes.get() >= 2);
    assert!(b.as_mut().poll(&mut cx).is_pending());
    let inc = server.recv().unwrap();
    assert_eq!(inc.opcode(), 2);
    server.complete(inc, 2, 0).unwrap();
    assert!(matches!(b.as_mut().poll(&mut cx), Poll::Ready(Ok(r)) if r.result == 2));
}

/// Several tasks wait for one credit each with nobody driving: each poll
/// keeps its own task scheduled (it wakes itself, so the executor polls it
/// again and the poll drains the completion ring) and never wakes another
/// (which would have them poll each other awake in turn while no credit is
/// free); as credits come back, the task that polls first gets in.
#[test]
fn many_tasks_wait_for_credits_without_waking_each_other() {
    let link = Link::new();
    // One ring credit, four slots.
    let (client, mut server) = rings(&link, 1, 1);
    let first = client.try_submit(Request::new(0)).unwrap();
    let counts: Vec<_> = (0..3).map(|_| WakeCount::new()).collect();
    let wakers: Vec<Waker> = counts.iter().map(|c| Waker::from(c.clone())).collect();
    let mut futs: Vec<_> = (1..=3)
        .map(|i| Box::pin(client.call_async(Request::new(i))))
        .collect();
    let woken = |counts: &[alloc::sync::Arc<WakeCount>]| -> Vec<usize> {
        counts.iter().map(|c| c.get()).collect()
    };
    // Polls task `k`, which must stay pending: it wakes itself once, and
    // nobody else.
    let poll_pending = |futs: &mut [Pin<Box<Call<'_, '_, 4, Spin>>>], k: usize| {
        let before = woken(&counts);
        assert!(
            futs[k]
                .as_mut()
                .poll(&mut Context::from_waker(&wakers[k]))
                .is_pending()
        );
        let mut expected = before;
        expected[k] += 1;
        assert_eq!(woken(&counts), expected, "task {k}'s poll");
    };
    // Every task polls twice while no credit is free.
    for _ in 0..2 {
        for k in 0..3 {
            poll_pending(&mut futs, k);
        }
    }
    let inc = server.recv().unwrap();
    server.complete(inc, 0, 0).unwrap();
    assert_eq!(client.wait(first).unwrap().result, 0);
    let mut done = [None; 3];
    // Each round: a credit is free; the first task to poll gets in, and the
    // others find none.
    for round in 0..3 {
        let waiting: Vec<usize> = (0..3).filter(|&k| done[k].is_none()).collect();
        for &k in &waiting {
            poll_pending(&mut futs, k);
        }
        let inc = server.recv().unwrap();
        let op = inc.opcode();
        assert_eq!(
            op as usize - 1,
            waiting[0],
            "round {round}: the first to poll"
        );
        server.complete(inc, op as i32 * 10, 0).unwrap();
        assert_eq!(client.poll_completions(), Ok(1));
        let k = op as usize - 1;
        match futs[k].as_mut().poll(&mut Context::from_waker(&wakers[k])) {
            Poll::Ready(Ok(reply)) => done[k] = Some(reply.result),
            other => panic!("round {round}: {other:?}"),
        }
    }
    assert_eq!(done, [Some(10), Some(20), Some(30)]);
}

#[test]
fn a_closed_server_is_peer_gone_after_its_completions() {
    let link = Link::new();
    let (client, mut server) = rings(&link, 4, 4);
    let a = client.try_submit(Request::new(1)).unwrap();
    let b = client.try_submit(Request::new(2)).unwrap();
    let inc = server.recv().unwrap();
    server.complete(inc, 5, 0).unwrap();
    drop(server);
    // Completed before the close: delivered.
    assert_eq!(client.wait(a).unwrap().result, 5);
    assert_eq!(client.wait(b).unwrap_err(), Error::PeerGone);
    assert_eq!(
        client.try_submit(Request::new(3)).unwrap_err().error,
        Error::PeerGone
    );
}

#[test]
fn a_silent_peer_goes_stale() {
    let link = Link::new();
    let (mut client, server) = rings(&link, 4, 4);
    client.set_options(Options {
        spin: 1,
        stale_after: Some(5),
        ..Options::default()
    });
    let t = client.try_submit(Request::new(1)).unwrap();
    // The server exists but never runs: its heartbeat does not move.
    assert_eq!(client.wait(t).unwrap_err(), Error::PeerGone);
    drop(server);
}

#[test]
fn a_restarted_peer_is_peer_gone() {
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    let (sq2_tx, _sq2_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (_cq2_tx, cq2_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    server.set_options(Options {
        spin: 1,
        ..Options::default()
    });
    // A second client instance attaches to the same link: a new epoch.
    let newer = Client::<4, _>::from_rings(sq2_tx, cq2_rx, &link, Spin);
    assert_eq!(server.recv(), Err(Error::PeerGone));
    drop((client, newer));
}

#[test]
fn a_peer_restarted_before_the_first_check_is_peer_gone() {
    // The client attaches first; a server instance attaches, takes a request
    // and goes; another attaches, all before the client looks at the link.
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    let (_sq2_tx, sq2_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (cq2_tx, _cq2_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    let t = client.try_submit(Request::new(1)).unwrap();
    let mut first = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    let taken = first.try_recv().unwrap().unwrap();
    assert_eq!(taken.opcode(), 1);
    // Gone without answering; the next instance's attach clears the close
    // flag, so only the epoch tells.
    drop((first, taken));
    let second = Server::from_rings(sq2_rx, cq2_tx, &link, Spin);
    // The request the first instance took is never answered: the client is
    // told, rather than waiting for a reply that cannot come.
    assert_eq!(client.wait(t).unwrap_err(), Error::PeerGone);
    drop(second);
}

/// A polling server (`try_recv`, no park rounds) asks `check_peer` before
/// each request: a client instance that dies without closing and a newer
/// one that attaches in its place is seen at once, before the dead one's
/// requests still in the ring are served.
#[test]
fn a_polling_server_sees_a_restarted_client_before_serving_its_predecessor() {
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    assert_eq!(server.check_peer(), Ok(()), "no client yet");
    let old = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    assert_eq!(old.epoch(), 1);
    let answered = old.try_submit(Request::new(1)).unwrap();
    let _left = old.try_submit(Request::new(2)).unwrap();
    assert_eq!(server.check_peer(), Ok(()));
    let incoming = server.try_recv().unwrap().unwrap();
    assert_eq!(server.check_peer(), Ok(()));
    server.complete(incoming, 10, 0).unwrap();
    assert_eq!(old.wait(answered).unwrap().result, 10);
    // `old` dies here without closing (a killed process); a new instance
    // attaches to the same link, with rings of its own.
    let (sq2_tx, _sq2_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (_cq2_tx, cq2_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let new = Client::<4, _>::from_rings(sq2_tx, cq2_rx, &link, Spin);
    assert_eq!(new.epoch(), 2, "the new instance knows it is not the first");
    assert_eq!(server.check_peer(), Err(Error::PeerGone));
    // Latched, however often it is asked.
    for _ in 0..3 {
        assert_eq!(server.check_peer(), Err(Error::PeerGone));
    }
    drop((old, new));
}

/// A client that closes (drops its end) is gone for `check_peer` too.
#[test]
fn check_peer_sees_a_closed_client() {
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (cq_tx, cq_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    assert_eq!(server.check_peer(), Ok(()));
    drop(client);
    assert_eq!(server.check_peer(), Err(Error::PeerGone));
}

/// `check_peer` reports a latched corruption first: the server serves
/// nothing more either way.
#[test]
fn check_peer_reports_a_latched_corruption() {
    let link = Link::new();
    let (mut sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    let (cq_tx, _cq_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    sq_tx
        .push(Sqe {
            payload_len: 1,
            ..Sqe::default()
        })
        .unwrap();
    assert_eq!(server.try_recv(), Err(Error::Corrupted));
    assert_eq!(server.check_peer(), Err(Error::Corrupted));
}

#[test]
fn a_hostile_client_is_refused_without_touching_bytes() {
    let link = Link::new();
    for bad in [
        // Outside the (empty) payload area.
        Sqe {
            payload_len: 1,
            ..Sqe::default()
        },
        Sqe {
            response_offset: u64::MAX,
            response_len: 8,
            ..Sqe::default()
        },
        Sqe {
            payload_offset: u64::MAX - 2,
            payload_len: 4,
            ..Sqe::default()
        },
    ] {
        let (mut sq_tx, sq_rx) = HeapRing::new(4).unwrap();
        let (cq_tx, _cq_rx) = HeapRing::<Cqe>::new(4).unwrap();
        let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
        sq_tx.push(bad).unwrap();
        sq_tx.push(Sqe::default()).unwrap();
        assert_eq!(server.try_recv(), Err(Error::Corrupted));
        // Latched: the valid request after it is not served.
        assert_eq!(server.try_recv(), Err(Error::Corrupted));
    }
}

/// A peer's header is checked before anything in it is used: the stamp,
/// then every part apart from the others and from the header and link,
/// aligned, and inside the region.
#[test]
fn a_connection_header_is_checked_on_attach() {
    let config = Config::new(4, 4, 4096);
    let len = Uring::required_size(&config).unwrap();
    assert_eq!(len, 8192);
    let bad = RegionError::BadOffsets;
    let cases = [
        (0, 0x5555_5555, RegionError::BadMagic { found: 0x5555_5555 }),
        (8, 1, RegionError::NotReady { state: 1 }),
        // The submission ring over the link, or off its line.
        (12, 128, bad),
        (12, 704, bad),
        // The completion ring on the submission ring.
        (20, 640, bad),
        // The payload area off its block boundary.
        (28, 4096 + 8, bad),
        // A payload area beyond the region.
        (
            32,
            4097,
            RegionError::TooSmall {
                needed: 8193,
                actual: 8192,
            },
        ),
    ];
    for (at, value, expected) in cases {
        let mut buf = buffer(len);
        Uring::init(region(&mut buf), config).unwrap();
        buf[0].0[at..at + 4].copy_from_slice(&u32::to_ne_bytes(value));
        assert_eq!(
            Uring::attach(region(&mut buf)).unwrap_err(),
            Error::Region(expected),
            "word at {at} set to {value}"
        );
    }
    // Parts elsewhere than `init` puts them are fine while apart, aligned
    // and inside the region: the payload area moved 4096 bytes on, in a
    // larger region.
    let mut buf = buffer(len + 4096);
    Uring::init(region(&mut buf), config).unwrap();
    buf[0].0[28..32].copy_from_slice(&u32::to_ne_bytes(8192));
    assert_eq!(Uring::attach(region(&mut buf)).unwrap().payload_len(), 4096);
}

// A 32-bit `usize` cannot name such a size.
#[cfg(target_pointer_width = "64")]
#[test]
fn sizes_beyond_32_bit_offsets_are_refused() {
    let too_big = 1usize << 32;
    assert_eq!(
        Uring::required_size(&Config::new(4, 4, too_big)),
        Err(RegionError::Capacity(CapacityError::TooLarge {
            capacity: too_big,
            max: u32::MAX as usize
        }))
    );
}

#[test]
fn overlapping_blocks_are_refused() {
    let config = Config::new(4, 4, 4096);
    let len = Uring::required_size(&config).unwrap();
    let mut buf = buffer(len);
    let base = core::ptr::NonNull::new(buf.as_mut_ptr().cast::<u8>()).unwrap();
    let sq_len = uring_queue::SharedRing::<Sqe>::required_size(4).unwrap();
    // SAFETY: `buf` outlives both views and is not otherwise used meanwhile.
    // The submission ring sits at offset 640 of the region (see
    // docs/uring-queue.md); the second view builds one producer on it,
    // standing in for a hostile client, and the region's own producer
    // (`_client`) is never used.
    let (whole, sq_view) = unsafe {
        (
            Region::from_raw_parts(base, len),
            Region::from_raw_parts(base.add(640), sq_len),
        )
    };
    let (_client, mut server) = Uring::init(whole, config)
        .unwrap()
        .split::<4, _, _>(Spin, Spin);
    let mut hostile = uring_queue::SharedRing::<Sqe>::attach(sq_view)
        .unwrap()
        .into_producer();
    hostile
        .push(Sqe {
            payload_offset: 0,
            payload_len: 128,
            response_offset: 64,
            response_len: 128,
            ..Sqe::default()
        })
        .unwrap();
    assert_eq!(server.try_recv(), Err(Error::Corrupted));
}

#[test]
fn a_hostile_server_is_refused() {
    let link = Link::new();
    // A completion naming a tag never submitted.
    let (sq_tx, _sq_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (mut cq_tx, cq_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    let t = client.try_submit(Request::new(1)).unwrap();
    cq_tx
        .push(Cqe {
            user_data: t.user_data() + 1,
            ..Cqe::default()
        })
        .unwrap();
    assert_eq!(client.poll_completions(), Err(Error::Corrupted));
    assert_eq!(client.wait(t).unwrap_err(), Error::Corrupted);

    // A response longer than its (empty) block.
    let (sq_tx, _sq_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (mut cq_tx, cq_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    let t = client.try_submit(Request::new(1)).unwrap();
    cq_tx
        .push(Cqe {
            user_data: t.user_data(),
            response_len: 1,
            ..Cqe::default()
        })
        .unwrap();
    assert_eq!(client.wait(t).unwrap_err(), Error::Corrupted);

    // A second completion for the same request.
    let (sq_tx, _sq_rx) = HeapRing::<Sqe>::new(4).unwrap();
    let (mut cq_tx, cq_rx) = HeapRing::<Cqe>::new(4).unwrap();
    let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    let t = client.try_submit(Request::new(1)).unwrap();
    let tag = t.user_data();
    cq_tx
        .push(Cqe {
            user_data: tag,
            ..Cqe::default()
        })
        .unwrap();
    assert!(client.wait(t).is_ok());
    cq_tx
        .push(Cqe {
            user_data: tag,
            ..Cqe::default()
        })
        .unwrap();
    assert_eq!(client.poll_completions(), Err(Error::Corrupted));
}

#[test]
fn a_client_beyond_its_credits_gets_a_typed_error_from_the_server() {
    let link = Link::new();
    let (mut sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    let (cq_tx, _cq_rx) = HeapRing::<Cqe>::new(2).unwrap();
    let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    for tag in 0..3 {
        sq_tx
            .push(Sqe {
                user_data: tag,
                ..Sqe::default()
            })
            .unwrap();
    }
    for _ in 0..2 {
        let inc = server.try_recv().unwrap().unwrap();
        server.complete(inc, 0, 0).unwrap();
    }
    let inc = server.try_recv().unwrap().unwrap();
    let rejected = server.complete(inc, 0, 0).unwrap_err();
    assert_eq!(rejected.error, Error::CompletionRingFull);
    // Nothing lost: the request comes back to retry.
    assert_eq!(rejected.value.user_data(), 2);
}

#[test]
fn blocks_and_tickets_of_another_connection_are_foreign() {
    let config = Config::new(4, 4, 4096);
    let mut a = buffer(Uring::required_size(&config).unwrap());
    let mut b = buffer(Uring::required_size(&config).unwrap());
    let (ca, _sa) = Uring::init(region(&mut a), config)
        .unwrap()
        .split::<4, _, _>(Spin, Spin);
    let (cb, _sb) = Uring::init(region(&mut b), config)
        .unwrap()
        .split::<4, _, _>(Spin, Spin);
    let mut block = ca.alloc(16).unwrap();
    assert_eq!(cb.bytes_mut(&mut block).unwrap_err(), Error::Foreign);
    let rejected = cb
        .try_submit(Request::new(1).with_payload(block))
        .unwrap_err();
    assert_eq!(rejected.error, Error::Foreign);
    let t = ca.try_submit(Request::new(1)).unwrap();
    let t = cb.try_wait(t).unwrap_err();
    assert_eq!(t.error, Error::Foreign);
    ca.cancel(t.value).unwrap();
    ca.free(rejected.value.payload);
    assert_eq!(ca.blocks_in_use(), 0);
    let _ = Block::empty();
}

#[test]
fn an_untaken_reply_holds_a_slot_but_not_a_ring_credit() {
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new(1).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new(1).unwrap();
    let client = Client::<2, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    let first = client.try_submit(Request::new(1)).unwrap();
    let inc = server.recv().unwrap();
    server.complete(inc, 1, 0).unwrap();
    // The completion is in; its reply not taken. The ring credit is back.
    assert_eq!(client.poll_completions(), Ok(1));
    let second = client.submit(Request::new(2)).unwrap();
    let inc = server.recv().unwrap();
    server.complete(inc, 2, 0).unwrap();
    assert_eq!(client.poll_completions(), Ok(1));
    // Both slots hold replies nobody took: waiting for one could never end.
    assert_eq!(client.submit(Request::new(3)).unwrap_err(), Error::Busy);
    assert_eq!(client.wait(second).unwrap().result, 2);
    assert_eq!(client.wait(first).unwrap().result, 1);
}

fn assert_send<T: Send>(_: &T) {}
fn assert_sync<T: Sync>(_: &T) {}

/// Checks one echo reply: the result is the body's length and the response
/// is the body reversed, each byte plus one, so a reply routed to the wrong
/// submitter fails.
fn check_echo<const N: usize>(
    client: &Client<'_, N, Spin>,
    seq: u64,
    len: usize,
    reply: uring_queue::uring::Reply,
) {
    assert_eq!(reply.result, len as i32, "request {seq}");
    let got = client.response(&reply).unwrap();
    assert_eq!(got.len(), len, "request {seq}");
    for (k, &b) in got.iter().enumerate() {
        assert_eq!(
            b,
            expected_byte(seq, len - 1 - k).wrapping_add(1),
            "request {seq} byte {k}"
        );
    }
    client.free_reply(reply);
}

#[test]
fn threads_share_one_client() {
    const THREADS: u64 = if cfg!(miri) { 3 } else { 4 };
    let per_thread: u64 = if cfg!(miri) { 4 } else { 3_000 };
    let config = Config::new(4, 4, 16 << 10);
    let mut buf = buffer(Uring::required_size(&config).unwrap());
    let (mut client, mut server) = Uring::init(region(&mut buf), config)
        .unwrap()
        .split::<8, _, _>(Spin, Spin);
    let opts = Options {
        spin: 16,
        ..Options::default()
    };
    client.set_options(opts);
    server.set_options(opts);
    // The client is shared by reference; its futures may move threads.
    assert_sync(&client);
    {
        let fut = client.call_async(Request::new(0));
        assert_send(&fut);
    }
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut served = 0u64;
            loop {
                match server.handle(echo) {
                    Ok(()) => served += 1,
                    Err(Error::PeerGone) => break,
                    Err(e) => panic!("server: {e}"),
                }
            }
            assert_eq!(served, THREADS * per_thread);
        });
        let shared = &client;
        std::thread::scope(|w| {
            for t in 0..THREADS {
                w.spawn(move || {
                    let client = shared;
                    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                    for i in 0..per_thread {
                        let seq = t * per_thread + i;
                        let len = (rng.next() % 700) as usize;
                        let (mut body, response) = loop {
                            match (client.alloc(len), client.alloc(len)) {
                                (Ok(a), Ok(b)) => break (a, b),
                                (a, b) => {
                                    // Other threads' blocks fill the area for now.
                                    for block in [a, b].into_iter().flatten() {
                                        client.free(block);
                                    }
                                    std::thread::yield_now();
                                }
                            }
                        };
                        for (k, b) in client.bytes_mut(&mut body).unwrap().iter_mut().enumerate() {
                            *b = expected_byte(seq, k);
                        }
                        let request = Request::new(seq as u32)
                            .with_payload(body)
                            .with_response(response);
                        // Blocking calls and futures, mixed.
                        let reply = if i % 2 == 0 {
                            client.call(request).unwrap()
                        } else {
                            client.block_on(client.call_async(request)).unwrap()
                        };
                        check_echo(client, seq, len, reply);
                    }
                });
            }
        });
        assert_eq!(client.in_flight(), 0);
        assert_eq!(client.blocks_in_use(), 0);
        // Closing the client ends the server's loop.
        drop(client);
    });
}
