//! The request/response pair with deferred-release consumers on its inbound
//! rings: the credits stay exact (the server never finds the completion ring
//! full, the client never finds the submission ring full while it holds a
//! credit), in process over heap rings and in a shared region whose header
//! records the intervals. Cheap enough for Miri.

extern crate alloc;

use alloc::collections::VecDeque;
use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::pin;
use core::ptr::NonNull;
use core::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use uring_queue::uring::{Client, Config, Error, Link, Options, Request, Server, Spin, Uring};
use uring_queue::{HeapRing, Region, RegionError};

fn quick() -> Options {
    Options {
        spin: 16,
        ..Options::default()
    }
}

/// What the server answers to opcode `op`.
fn answer(op: u32) -> i32 {
    (op.wrapping_mul(2_654_435_761) ^ 0x5A5A_5A5A) as i32
}

/// The server's loop: every request answered at once; any error but the
/// client's departure (a full completion ring above all) fails the test.
fn serve<const K: usize>(mut server: Server<'_, Spin, K>) -> u64 {
    let mut served = 0;
    loop {
        let incoming = match server.recv() {
            Ok(incoming) => incoming,
            Err(Error::PeerGone) => return served,
            Err(e) => panic!("server recv: {e}"),
        };
        let op = incoming.opcode();
        if let Err(rejected) = server.complete(incoming, answer(op), 0) {
            panic!("server complete of request {op}: {}", rejected.error);
        }
        served += 1;
    }
}

/// Keeps as many requests in flight as the client has credits, submitting
/// with `try_submit` (which must never be refused while a credit is free)
/// and checking every reply.
fn drive<const N: usize, const K: usize>(client: &Client<'_, N, Spin, K>, requests: u32) {
    let credits = client.credits();
    let mut pending = VecDeque::new();
    let check = |op: u32, ticket| {
        let reply = client.wait(ticket).unwrap();
        assert_eq!(reply.result, answer(op), "request {op}");
        client.free_reply(reply);
    };
    for op in 0..requests {
        if pending.len() == credits {
            let (op, ticket) = pending.pop_front().unwrap();
            check(op, ticket);
        }
        // Every taken reply gave its credit back, so this must go through:
        // a `Busy` here is a submission ring the server has not published.
        let ticket = client
            .try_submit(Request::new(op))
            .unwrap_or_else(|r| panic!("request {op} with a credit free: {}", r.error));
        pending.push_back((op, ticket));
    }
    for (op, ticket) in pending.drain(..) {
        check(op, ticket);
    }
    assert_eq!(client.in_flight(), 0);
}

/// Two threads, heap rings of `n_sq` and `n_cq` slots, the server's consumer
/// releasing every `SK` pops and the client's every `CK`.
fn pipelined<const SK: usize, const CK: usize>(n_sq: usize, n_cq: usize) {
    let requests = if cfg!(miri) { 24 } else { 5_000 };
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new_deferred::<SK>(n_sq).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new_deferred::<CK>(n_cq).unwrap();
    let mut client: Client<'_, 8, _, CK> = Client::from_rings(sq_tx, cq_rx, &link, Spin);
    let mut server: Server<'_, _, SK> = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    client.set_options(quick());
    server.set_options(quick());
    assert_eq!(client.credits(), n_sq.min(n_cq).min(8));
    std::thread::scope(|s| {
        let served = s.spawn(move || serve(server));
        drive(&client, requests);
        drop(client);
        assert_eq!(served.join().unwrap(), u64::from(requests));
    });
}

#[test]
fn pipelined_echo_k3_sq4_cq8() {
    pipelined::<3, 3>(4, 8);
}

#[test]
fn pipelined_echo_k3_sq8_cq4() {
    pipelined::<3, 3>(8, 4);
}

#[test]
fn pipelined_echo_k_is_capacity() {
    pipelined::<4, 4>(4, 4);
    pipelined::<8, 8>(8, 8);
}

#[test]
fn pipelined_echo_one_side_deferred() {
    pipelined::<4, 1>(4, 4);
    pipelined::<1, 4>(4, 4);
}

/// The server pops a request without publishing it (a deferred consumer
/// with more of the ring still to read), completes it, and the client takes
/// the reply: the credit it gets back must be a free submission slot, which
/// only the server's release before its completion push makes it.
#[test]
fn a_credit_back_is_a_free_submission_slot() {
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new_deferred::<2>(2).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new_deferred::<2>(2).unwrap();
    let client: Client<'_, 4, _, 2> = Client::from_rings(sq_tx, cq_rx, &link, Spin);
    let mut server: Server<'_, _, 2> = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    assert_eq!(client.credits(), 2);
    let mut next = 0;
    let mut tickets = VecDeque::new();
    for _ in 0..2 {
        tickets.push_back((next, client.try_submit(Request::new(next)).unwrap()));
        next += 1;
    }
    for _ in 0..6 {
        // The oldest request is popped (the other stays queued, so the pop
        // finds the ring non-empty and publishes nothing) and completed.
        let incoming = server.try_recv().unwrap().unwrap();
        let op = incoming.opcode();
        server.complete(incoming, answer(op), 0).unwrap();
        let (op, ticket) = tickets.pop_front().unwrap();
        assert_eq!(client.wait(ticket).unwrap().result, answer(op));
        assert_eq!(client.in_flight(), 1);
        let ticket = client
            .try_submit(Request::new(next))
            .unwrap_or_else(|r| panic!("request {next} with a credit free: {}", r.error));
        tickets.push_back((next, ticket));
        next += 1;
    }
    for (op, ticket) in tickets {
        let incoming = server.try_recv().unwrap().unwrap();
        server.complete(incoming, answer(op), 0).unwrap();
        assert_eq!(client.wait(ticket).unwrap().result, answer(op));
    }
    assert_eq!(server.try_recv(), Ok(None));
}

/// A waker that runs `hook` (on this thread) when woken.
///
/// # Safety
///
/// `hook` must outlive every wake through the waker or its clones (dropping
/// them does nothing), and they must stay on this thread.
unsafe fn hook_waker(hook: &&dyn Fn()) -> Waker {
    fn clone(p: *const ()) -> RawWaker {
        RawWaker::new(p, &VTABLE)
    }
    fn wake(p: *const ()) {
        // SAFETY: `p` is the `&&dyn Fn()` given to `hook_waker`, alive
        // while wakers are woken (its contract).
        unsafe { (*p.cast::<&dyn Fn()>())() }
    }
    fn drop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);
    let p = core::ptr::from_ref(hook).cast::<()>();
    // SAFETY: the vtable's functions keep the `RawWaker` contract under the
    // caller's promise above.
    unsafe { Waker::from_raw(RawWaker::new(p, &VTABLE)) }
}

/// The client takes a completion (its credit back) but more are still
/// queued, so its deferred consumer publishes nothing yet; a task woken by
/// that completion submits at once, and the server answers at once: the
/// completion ring must have room, which only the client's release before
/// its submission push gives.
#[test]
fn a_submission_right_after_a_completion_leaves_room_for_its_reply() {
    let link = Link::new();
    let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new_deferred::<2>(2).unwrap();
    let client: Client<'_, 4, _, 2> = Client::from_rings(sq_tx, cq_rx, &link, Spin);
    let server = RefCell::new(Server::from_rings(sq_rx, cq_tx, &link, Spin));
    assert_eq!(client.credits(), 2);
    let outcome = RefCell::new(None);
    // The future also wakes itself when it goes pending with nobody
    // driving; only the wake-up of the routing is the one looked at here.
    let routing = Cell::new(false);
    let hook = || {
        if !routing.get() || outcome.borrow().is_some() {
            return;
        }
        let submitted = client.try_submit(Request::new(2)).map_err(|r| r.error);
        let mut server = server.borrow_mut();
        let incoming = server.try_recv().unwrap().unwrap();
        assert_eq!(incoming.opcode(), 2);
        let completed = server.complete(incoming, answer(2), 0).map_err(|r| r.error);
        *outcome.borrow_mut() = Some((submitted, completed));
    };
    let hook: &dyn Fn() = &hook;
    // SAFETY: `hook` outlives this test's every wake (all happen in the
    // calls below, on this thread).
    let waker = unsafe { hook_waker(&hook) };
    let mut first = pin!(client.call_async(Request::new(0)));
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    let second = client.try_submit(Request::new(1)).unwrap();
    for op in 0..2 {
        let mut server = server.borrow_mut();
        let incoming = server.try_recv().unwrap().unwrap();
        assert_eq!(incoming.opcode(), op);
        server.complete(incoming, answer(op), 0).unwrap();
    }
    // The completion ring is full; taking the first completion wakes the
    // hook before the second is taken.
    routing.set(true);
    let taken = client.poll_completions();
    let (submitted, completed) = outcome.take().expect("the hook ran");
    let third = submitted.expect("a credit was free");
    assert_eq!(completed, Ok(()), "the server found no room for the reply");
    assert_eq!(taken, Ok(3));
    match first.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(reply) => assert_eq!(reply.unwrap().result, answer(0)),
        Poll::Pending => panic!("the first reply was routed"),
    }
    assert_eq!(client.wait(second).unwrap().result, answer(1));
    assert_eq!(client.wait(third).unwrap().result, answer(2));
    assert_eq!(client.in_flight(), 0);
}

#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct Line([u8; 128]);

/// A zeroed buffer aligned for a connection region.
fn buffer(bytes: usize) -> Vec<Line> {
    vec![Line([0; 128]); bytes.div_ceil(128)]
}

fn bytes(buf: &mut [Line]) -> &mut [u8] {
    let len = buf.len() * 128;
    // SAFETY: `Line` is 128 plain bytes, so the vector is `len` initialised
    // bytes, borrowed exclusively for the slice's lifetime.
    unsafe { core::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), len) }
}

fn word(mem: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(mem[at..at + 4].try_into().unwrap())
}

/// Where a ring header keeps its release interval.
const RING_RELEASE_EVERY: usize = 40;
/// Where the connection header keeps the submission and completion rings'
/// offsets.
const SQ_OFFSET: usize = 12;
const CQ_OFFSET: usize = 20;

#[test]
fn the_region_records_the_intervals_and_refuses_bad_ones() {
    let config = Config::new(4, 8, 4096).with_release_every(3, 8);
    let mut buf = buffer(Uring::required_size(&config).unwrap());
    let mem = bytes(&mut buf);

    for (bad, found, max) in [
        (Config::new(4, 8, 0).with_release_every(0, 1), 0, 4),
        (Config::new(4, 8, 0).with_release_every(5, 1), 5, 4),
        (Config::new(4, 8, 0).with_release_every(1, 9), 9, 8),
    ] {
        let expected = RegionError::ReleaseInterval { found, max };
        assert_eq!(Uring::required_size(&bad), Err(expected));
        assert_eq!(
            Uring::init(Region::new(mem), bad).unwrap_err(),
            Error::Region(expected)
        );
    }

    let uring = Uring::init(Region::new(mem), config).unwrap();
    assert_eq!((uring.sq_release_every(), uring.cq_release_every()), (3, 8));
    let uring = Uring::attach(Region::new(mem)).unwrap();
    assert_eq!((uring.sq_release_every(), uring.cq_release_every()), (3, 8));
    assert_eq!(
        uring.into_deferred_server::<4, _>(Spin).unwrap_err(),
        Error::Region(RegionError::ReleaseInterval { found: 4, max: 3 })
    );
    let uring = Uring::attach(Region::new(mem)).unwrap();
    assert_eq!(
        uring.into_deferred_client::<8, 9, _>(Spin).unwrap_err(),
        Error::Region(RegionError::ReleaseInterval { found: 9, max: 8 })
    );
    // A smaller interval than recorded is fine (the producer was promised
    // at most the recorded one), and so is the plain role.
    let uring = Uring::attach(Region::new(mem)).unwrap();
    drop(uring.into_deferred_server::<2, _>(Spin).unwrap());
    let uring = Uring::attach(Region::new(mem)).unwrap();
    drop(uring.into_client::<8, _>(Spin));

    // A peer that writes garbage into a ring's recorded interval gets a
    // typed error at attach, never a consumer that trusts it.
    let sq = word(mem, SQ_OFFSET) as usize + RING_RELEASE_EVERY;
    let cq = word(mem, CQ_OFFSET) as usize + RING_RELEASE_EVERY;
    assert_eq!((word(mem, sq), word(mem, cq)), (3, 8));
    for (at, garbage, max) in [(sq, 0, 4), (sq, 5, 4), (cq, u32::MAX, 8), (cq, 9, 8)] {
        let saved = word(mem, at);
        mem[at..at + 4].copy_from_slice(&garbage.to_ne_bytes());
        assert_eq!(
            Uring::attach(Region::new(mem)).unwrap_err(),
            Error::Region(RegionError::ReleaseInterval {
                found: garbage as usize,
                max
            })
        );
        mem[at..at + 4].copy_from_slice(&saved.to_ne_bytes());
    }
    assert!(Uring::attach(Region::new(mem)).is_ok());
}

/// The two sides attach separately to one region, as two processes would,
/// each with a deferred consumer; requests carry bodies through the payload
/// area, every reply checked byte by byte.
#[test]
fn shared_region_echo_with_deferred_consumers() {
    let requests: u32 = if cfg!(miri) { 16 } else { 5_000 };
    let config = Config::new(4, 8, 8 << 10).with_release_every(3, 8);
    let mut buf = buffer(Uring::required_size(&config).unwrap());
    let mem = bytes(&mut buf);
    let (ptr, len) = (NonNull::from(&mut *mem).cast::<u8>(), mem.len());
    // SAFETY: `buf` outlives both views and is reached only through them
    // meanwhile; one view builds the server, the other the client, so each
    // ring has one producer and one consumer.
    let (a, b) = unsafe {
        (
            Region::from_raw_parts(ptr, len),
            Region::from_raw_parts(ptr, len),
        )
    };
    let mut server = Uring::init(a, config)
        .unwrap()
        .into_deferred_server::<3, _>(Spin)
        .unwrap();
    let mut client = Uring::attach(b)
        .unwrap()
        .into_deferred_client::<8, 8, _>(Spin)
        .unwrap();
    server.set_options(quick());
    client.set_options(quick());
    assert_eq!(client.credits(), 4);
    std::thread::scope(|s| {
        s.spawn(move || {
            loop {
                let done = server.handle(|incoming, body, out| {
                    for (o, b) in out.iter_mut().zip(body.iter().rev()) {
                        *o = b.wrapping_add(1);
                    }
                    (incoming.opcode() as i32, body.len())
                });
                match done {
                    Ok(()) => {}
                    Err(Error::PeerGone) => break,
                    Err(e) => panic!("server: {e}"),
                }
            }
        });
        let credits = client.credits();
        let mut pending = VecDeque::new();
        let check = |op: u32, len: usize, ticket| {
            let reply = client.wait(ticket).unwrap();
            assert_eq!(reply.result, op as i32);
            let got = client.response(&reply).unwrap();
            assert_eq!(got.len(), len, "request {op}");
            for (k, &b) in got.iter().enumerate() {
                let sent = (op as usize * 31 + (len - 1 - k)) as u8;
                assert_eq!(b, sent.wrapping_add(1), "request {op} byte {k}");
            }
            client.free_reply(reply);
        };
        for op in 0..requests {
            let len = (op as usize * 97) % 700;
            if pending.len() == credits {
                let (op, len, ticket) = pending.pop_front().unwrap();
                check(op, len, ticket);
            }
            let mut body = client.alloc(len).unwrap();
            for (k, b) in client.bytes_mut(&mut body).unwrap().iter_mut().enumerate() {
                *b = (op as usize * 31 + k) as u8;
            }
            let response = client.alloc(len).unwrap();
            let request = Request::new(op).with_payload(body).with_response(response);
            let ticket = client
                .try_submit(request)
                .unwrap_or_else(|r| panic!("request {op} with a credit free: {}", r.error));
            pending.push_back((op, len, ticket));
        }
        for (op, len, ticket) in pending.drain(..) {
            check(op, len, ticket);
        }
        assert_eq!(client.in_flight(), 0);
        assert_eq!(client.blocks_in_use(), 0);
        drop(client);
    });
}
