//! Loom models of which waiting call of an async client the reactor wakes
//! ([`ReactorWaiter`]: calls polling a reactor, registering and leaving in
//! every interleaving, the registration always naming the call whose waker
//! the reactor holds), and of whole calls waiting on a reactor
//! ([`OnReactor`] over a real client and server, no call ever waking its
//! own task). Without `--cfg loom` each model runs once, on real threads.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ncio-uring-queue --release --all-features --lib uring::reactor_waiter::loom
//! ```

use super::{Leave, OnReactor, ReactorWaiter, Wake};
use crate::HeapRing;
use crate::loom::sync::{Arc, Condvar, Mutex};
use crate::loom::{model, thread};
use crate::uring::{Client, Link, Notifier, Options, Request, Server, WakeFlag};
use alloc::boxed::Box;
use alloc::task::Wake as TaskWake;
use alloc::vec::Vec;
use core::future::{Future, poll_fn};
use core::num::NonZeroUsize;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

/// Call `id` polls a reactor that has nothing for it, and goes pending.
fn go_pending(waiter: &ReactorWaiter, id: NonZeroUsize) {
    assert_eq!(waiter.pend(id, || Poll::<()>::Pending), Poll::Pending);
}

/// What one call did: its id, and what its leave owed.
type Left = (NonZeroUsize, Leave);

/// A call as the async client makes one: takes an id, goes pending
/// `pending` times (registering each time), then leaves.
fn call(waiter: &ReactorWaiter, pending: usize) -> Left {
    let id = waiter.take_id();
    for _ in 0..pending {
        go_pending(waiter, id);
    }
    (id, waiter.leave(id))
}

fn hand_offs(calls: &[Left]) -> usize {
    calls.iter().filter(|(_, l)| *l == Leave::HandOff).count()
}

/// Ids are never 0 and never handed out twice.
fn assert_distinct(calls: &[Left]) {
    for (i, (a, _)) in calls.iter().enumerate() {
        assert_ne!(a.get(), 0);
        assert!(calls[i + 1..].iter().all(|(b, _)| a != b), "{calls:?}");
    }
}

/// Each of `pendings` is a call on a thread of its own, going pending
/// that many times; returns what each did and what is registered once
/// all have left.
fn run_calls(waiter: &Arc<ReactorWaiter>, pendings: &[usize]) -> (Vec<Left>, Option<NonZeroUsize>) {
    let threads: Vec<_> = pendings
        .iter()
        .map(|&pending| {
            let waiter = waiter.clone();
            thread::spawn(move || call(&waiter, pending))
        })
        .collect();
    let calls: Vec<Left> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    (calls, waiter.registered())
}

/// Two calls that both go pending, then leave: once both have left none
/// is registered, and the leave that cleared it handed off. Without a
/// hand-off, a registration must have been overwritten, so both handing
/// off means each cleared its own.
#[test]
fn two_calls_leave_nothing_registered() {
    model(|| {
        let waiter = Arc::new(ReactorWaiter::new());
        let (calls, registered) = run_calls(&waiter, &[1, 1]);
        assert_distinct(&calls);
        assert_eq!(registered, None);
        assert!((1..=2).contains(&hand_offs(&calls)), "{calls:?}");
    });
}

/// Three calls, one of which finishes before it goes pending (it never
/// registers, so it never hands off) and one that goes pending twice.
#[test]
fn three_calls_leave_nothing_registered() {
    model(|| {
        let waiter = Arc::new(ReactorWaiter::new());
        let (calls, registered) = run_calls(&waiter, &[0, 1, 2]);
        assert_distinct(&calls);
        assert_eq!(registered, None);
        assert_eq!(calls[0].1, Leave::Quietly, "{calls:?}");
        assert!((1..=2).contains(&hand_offs(&calls)), "{calls:?}");
    });
}

/// One call stays pending while another registers and leaves: a leave
/// that owes nothing has not touched the waiting call's registration, and
/// the waiting call's registration is gone only if the leave that took it
/// handed off (so the waiting call is woken to register again).
#[test]
fn a_leave_never_clears_another_calls_registration() {
    model(|| {
        let waiter = Arc::new(ReactorWaiter::new());
        let staying = waiter.take_id();
        let other = waiter.clone();
        let t = thread::spawn(move || call(&other, 1));
        go_pending(&waiter, staying);
        let (left, owed) = t.join().unwrap();
        assert_ne!(left, staying);
        match (owed, waiter.registered()) {
            // The leaving call was registered after the staying one, and
            // cleared its own id.
            (Leave::HandOff, None) => {}
            // The staying call registered after the other did.
            (_, Some(id)) => assert_eq!(id, staying),
            (Leave::Quietly, None) => panic!("a quiet leave cleared {staying}"),
        }
    });
}

/// The registered call leaves while another call, which never went
/// pending, leaves too: exactly the registered one hands off.
#[test]
fn only_the_registered_call_hands_off() {
    model(|| {
        let waiter = Arc::new(ReactorWaiter::new());
        let registered = waiter.take_id();
        go_pending(&waiter, registered);
        let other = waiter.clone();
        let t = thread::spawn(move || call(&other, 0));
        let owed = waiter.leave(registered);
        let (_, other_owed) = t.join().unwrap();
        assert_eq!((owed, other_owed), (Leave::HandOff, Leave::Quietly));
        assert_eq!(waiter.registered(), None);
    });
}

/// A reactor's one waker slot for a readiness, as tokio's `AsyncFd` keeps
/// it: each poll that finds nothing ready leaves the polling call's waker,
/// replacing the one before.
#[derive(Default)]
struct Reactor {
    waker: Mutex<Option<NonZeroUsize>>,
}

impl Reactor {
    fn poll(&self, id: NonZeroUsize) -> Poll<()> {
        *self.waker.lock().unwrap() = Some(id);
        Poll::Pending
    }

    fn waker(&self) -> Option<NonZeroUsize> {
        *self.waker.lock().unwrap()
    }
}

/// Two calls on two threads go pending at once (each polls the reactor and
/// registers), then one of them leaves: the call whose waker the reactor
/// holds is the registered one, so if it is the one that leaves, its leave
/// owes the hand-off that wakes the other; if the other leaves, it leaves
/// quietly and the reactor still wakes the right call. Were the poll and
/// the registration two steps, the registration could name the call the
/// reactor does not hold: the leave of the held one would then owe nothing,
/// and the other call would wait for its park timeout.
#[test]
fn the_registered_call_is_the_one_the_reactor_wakes() {
    model(|| {
        let waiter = Arc::new(ReactorWaiter::new());
        let reactor = Arc::new(Reactor::default());
        let ids = [waiter.take_id(), waiter.take_id()];
        let threads: Vec<_> = ids
            .iter()
            .map(|&id| {
                let (waiter, reactor) = (waiter.clone(), reactor.clone());
                thread::spawn(move || waiter.pend(id, || reactor.poll(id)))
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), Poll::Pending);
        }
        let held = reactor.waker().unwrap();
        assert_eq!(waiter.registered(), Some(held));
        // The held call leaves (its reply came): it owes the hand-off.
        assert_eq!(waiter.leave(held), Leave::HandOff);
        let other = ids.into_iter().find(|&id| id != held).unwrap();
        assert_eq!(waiter.leave(other), Leave::Quietly);
    });
}

/// The same two calls, each leaving on its own thread right after it went
/// pending, in every interleaving: whichever call the reactor holds last,
/// its leave hands off (no call registers after the last poll of the
/// reactor), and once both have left none is registered.
#[test]
fn the_last_call_the_reactor_holds_hands_off_as_it_leaves() {
    model(|| {
        let waiter = Arc::new(ReactorWaiter::new());
        let reactor = Arc::new(Reactor::default());
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (waiter, reactor) = (waiter.clone(), reactor.clone());
                thread::spawn(move || {
                    let id = waiter.take_id();
                    assert_eq!(waiter.pend(id, || reactor.poll(id)), Poll::Pending);
                    (id, waiter.leave(id))
                })
            })
            .collect();
        let calls: Vec<Left> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let held = reactor.waker().unwrap();
        let (_, held_left) = calls.iter().find(|(id, _)| *id == held).unwrap();
        assert_eq!(*held_left, Leave::HandOff, "{calls:?}");
        assert_eq!(waiter.registered(), None);
    });
}

/// A reactor as tokio's `AsyncFd` is for an eventfd: readiness set by the
/// peer's write and cleared by the poll that reports it, and one waker, the
/// last poller's, woken when readiness is set.
#[derive(Default)]
struct EventReactor {
    state: Mutex<(bool, Option<Waker>)>,
}

impl EventReactor {
    fn poll(&self, cx: &Context<'_>) -> Poll<Wake> {
        let mut state = self.state.lock().unwrap();
        if core::mem::replace(&mut state.0, false) {
            return Poll::Ready(Wake::Notified);
        }
        state.1 = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The peer writes the eventfd.
    fn write(&self) {
        let waker = {
            let mut state = self.state.lock().unwrap();
            state.0 = true;
            state.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The notifiers of the model: the server parks on a condition variable
/// (never timing out, so a lost wake-up is a deadlock loom reports); the
/// server's wake-ups of the client write the client's [`EventReactor`].
struct Side {
    parking: Arc<(Mutex<()>, Condvar)>,
    /// The client's reactor, on the server's side: what its wake-ups write.
    reactor: Option<Arc<EventReactor>>,
}

impl Notifier for Side {
    fn wait(&self, flag: &WakeFlag, _timeout: Duration) {
        let guard = self.parking.0.lock().unwrap();
        if flag.is_armed() {
            drop(self.parking.1.wait(guard).unwrap());
        }
    }

    fn wake(&self, _flag: &WakeFlag) {
        if let Some(reactor) = &self.reactor {
            reactor.write();
        }
        let _guard = self.parking.0.lock().unwrap();
        self.parking.1.notify_all();
    }
}

/// A task's wake-up, for [`block_on`]: a flag and a condition variable.
#[derive(Default)]
struct Unpark {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl TaskWake for Unpark {
    fn wake(self: alloc::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &alloc::sync::Arc<Self>) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_one();
    }
}

/// Runs `future` as one task on this thread: polls it, and sleeps until its
/// waker is woken between polls, with no timeout.
fn block_on<F: Future>(future: F) -> F::Output {
    let unpark = alloc::sync::Arc::new(Unpark::default());
    let waker = Waker::from(unpark.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        let mut woken = unpark.woken.lock().unwrap();
        while !*woken {
            woken = unpark.cv.wait(woken).unwrap();
        }
        *woken = false;
    }
}

/// No spinning, and no park timeout that matters: every wait goes to the
/// reactor, and only a wake-up ends it.
const REACTOR_ONLY: Options = Options {
    spin: 0,
    min_spin: 0,
    park_timeout: Duration::from_secs(3600),
    stale_after: None,
    yield_every: 0,
};

/// A call as the tokio client makes one, without its liveness timer (which
/// would hide a lost wake-up): its future never wakes its own task.
fn reactor_call(
    client: &Client<'_, 2, Side>,
    waiter: &ReactorWaiter,
    reactor: &EventReactor,
    op: u32,
) -> i32 {
    let mut on_reactor = OnReactor::new(client, waiter);
    let mut call = pin!(client.call_on_reactor(Request::new(op)));
    let reply = block_on(poll_fn(|cx| {
        on_reactor.poll(call.as_mut(), cx, |cx| reactor.poll(cx))
    }));
    reply.unwrap().result
}

/// Runs two calls of one reactor-driven client, on two threads, against a
/// blocking server on a third, the client with `options`; checks both
/// replies and that nothing is left in flight or registered.
fn two_calls_on_a_reactor(options: Options) {
    let link = Box::leak(Box::new(Link::new()));
    let reactor = Arc::new(EventReactor::default());
    let parking = Arc::new((Mutex::new(()), Condvar::new()));
    let (sq_tx, sq_rx) = HeapRing::new(2).unwrap();
    let (cq_tx, cq_rx) = HeapRing::new(2).unwrap();
    let client_side = Side {
        parking: parking.clone(),
        reactor: None,
    };
    let server_side = Side {
        parking,
        reactor: Some(reactor.clone()),
    };
    let mut client = Client::<2, _>::from_rings(sq_tx, cq_rx, link, client_side);
    let mut server = Server::from_rings(sq_rx, cq_tx, link, server_side);
    client.set_options(options);
    server.set_options(REACTOR_ONLY);
    let client = Arc::new(client);
    let waiter = Arc::new(ReactorWaiter::new());
    let s = thread::spawn(move || {
        for _ in 0..2 {
            let incoming = server.recv().unwrap();
            let op = incoming.opcode() as i32;
            server.complete(incoming, op * 10, 0).unwrap();
        }
    });
    let (other, other_waiter, other_reactor) = (client.clone(), waiter.clone(), reactor.clone());
    let t = thread::spawn(move || reactor_call(&other, &other_waiter, &other_reactor, 1));
    assert_eq!(reactor_call(&client, &waiter, &reactor, 2), 20);
    assert_eq!(t.join().unwrap(), 10);
    s.join().unwrap();
    assert_eq!(client.in_flight(), 0);
    assert_eq!(waiter.registered(), None);
}

/// The same two calls, each spinning two checks spread over two polls (one
/// check a turn under loom) before it arms the flag: a call that yields
/// between its turns is neither registered with the reactor nor counted on
/// by the server's notify, and in every interleaving of those yields with
/// the server's answers and the other call's routing, both replies still
/// reach their callers and nobody sleeps for good.
#[test]
fn two_reactor_calls_that_spin_between_polls_finish() {
    model(|| {
        two_calls_on_a_reactor(Options {
            spin: 2,
            min_spin: 2,
            ..REACTOR_ONLY
        });
    });
}

/// Two tasks on two threads share one reactor-driven client, one call each,
/// against a server on a third thread. Neither call wakes its own task, so
/// each is woken only by the reactor (as the registered call), by the call
/// that routes its reply, or by a hand-off: in every interleaving both
/// replies reach their callers, and nobody sleeps for good.
#[test]
fn two_reactor_calls_finish_without_waking_themselves() {
    model(|| two_calls_on_a_reactor(REACTOR_ONLY));
}
