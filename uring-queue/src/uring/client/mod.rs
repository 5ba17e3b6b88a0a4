//! The client: submits requests, tracks them in its in-flight table, and
//! routes completions back to their submitters, in any order, whichever of
//! the threads and tasks sharing it drains the completion ring.
//!
//! One concept a file: the client's state and constructors here; payload
//! blocks (`blocks`); submission and the routing of completions
//! (`submit`); the wake-ups routing owes to waiters (`wakeups`); parking,
//! with its driver and follower roles (`park`); blocking waits and
//! cancellation (`wait`); and the future of an async call (`call`).

mod blocks;
mod call;
mod park;
#[cfg(any(
    all(feature = "tokio", target_os = "linux", not(loom)),
    all(test, loom)
))]
mod reactor;
mod submit;
mod wait;
mod wakeups;

pub use call::Call;

use super::entry::{Cqe, Sqe};
use super::link::Link;
use super::liveness::Watch;
use super::park::SpinBudget;
use super::payload::{Allocator, Area, Owner};
use super::table::Table;
use super::wake::{Notifier, WakeFlag};
use super::{Error, Options};
use crate::loom::sync::SpinLock;
use crate::{Consumer, Producer};
use core::fmt;
use core::task::Waker;

/// Threads that wait for any completion or a credit (rather than one
/// reply) while another thread drives: each parks on a flag of its own, so
/// no waiter can clear another's.
const IDLE: usize = 4;

/// Tasks that wait for a credit at once, each with its waker kept until a
/// credit comes back. One more displaces (and wakes) the one stored longest,
/// which polls again.
const CREDIT_WAITERS: usize = 8;

/// What a thread waits for when it parks.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The reply of the request with this tag.
    Reply(super::request::Tag),
    /// Any completion, or a credit.
    Any,
}

/// What the client mutates, behind a spin lock so that threads and tasks
/// share one client. The lock is held for a few loads and stores at a time,
/// never across a park, an `.await` or a call out to user code (wakers and
/// the notifier run after it is released, see `Wakeups`).
struct Inner<'a, const N: usize, const K: usize> {
    sq: Producer<'a, Sqe>,
    cq: Consumer<'a, Cqe, K>,
    table: Table<N>,
    alloc: Allocator<N>,
    options: Options,
    /// Shared by the threads that spin: a heuristic, so a thread that
    /// writes back over another's update loses nothing that matters.
    spin_budget: SpinBudget,
    watch: Watch,
    corrupted: bool,
    /// Tasks waiting for a credit, all woken when one comes back.
    credit_wakers: [Option<Waker>; CREDIT_WAITERS],
    /// Whether `credit_wakers` holds any: what routing reads, one flag
    /// rather than eight slots on every completion.
    credit_waiting: bool,
    /// A thread parks on the client's wake flag (the one the server
    /// notifies): at most one at a time, the *driver*. Others park on
    /// their slot's flag or an idle flag and are woken by whoever routes.
    driving: bool,
    /// What the driver waits for.
    driver_target: Target,
    /// A task went pending while a thread drove, counting on the driver
    /// to route its completion: the driver wakes every waiting task when it
    /// leaves the role, so none is left without someone to poll it.
    tasks_wait_on_driver: bool,
    /// Idle flags in use (bit `k` for `Client::idle_flags[k]`).
    idle_mask: u8,
    /// Slots whose thread parks on the slot's flag.
    parked_slots: u32,
}

impl<const N: usize, const K: usize> Inner<'_, N, K> {
    /// The latched failure, if any.
    fn failure(&self) -> Option<Error> {
        if self.corrupted {
            Some(Error::Corrupted)
        } else if self.watch.is_gone() {
            Some(Error::PeerGone)
        } else {
            None
        }
    }

    /// Whether a thread waiting for `target` must keep waiting.
    fn waits(&self, target: Target) -> bool {
        match target {
            Target::Reply(tag) => self.table.slot(tag).is_some_and(|s| s.is_pending()),
            Target::Any => true,
        }
    }

    /// Whether a waiter for `target` has something to do: a completion to
    /// route, or its wait is over.
    fn ready(&self, target: Target) -> bool {
        !self.cq.is_empty() || !self.waits(target)
    }

    /// Publishes everything consumed from the inbound (completion) ring, so
    /// the server's view of free completion slots matches our credits: a
    /// no-op while the ring publishes on every pop, the release of the
    /// pending head in a deferred-release mode.
    fn publish_inbound(&mut self) {
        self.cq.release();
    }
}

/// The submitting side of a connection.
///
/// `N` is the size of the in-flight table: at most `N` requests are in
/// flight (submitted and not yet redeemed) at once. Independently, at most
/// as many as the completion ring holds (the ring *credits*) have their
/// completion still to come, so the server can always post it.
///
/// `K` is the release interval of the client's completion-ring consumer
/// (see [`Consumer`], "Release modes"; default 1, publish on every pop). A
/// client with `K > 1` (from [`Uring::into_deferred_client`](crate::uring::Uring::into_deferred_client)
/// or [`from_rings`](Self::from_rings) with a deferred consumer) publishes
/// the completions it took before every submission and before it parks, so
/// the credits stay exact.
///
/// All methods take `&self`, and the client is `Sync` (when its notifier
/// is): many threads and tasks share one client (`&Client`, `Arc<Client>`),
/// each with its own requests, and a [`Call`] future is `Send`, so it runs
/// on a multi-thread executor. The client's state sits behind a small spin
/// lock, held for a few loads and stores at a time, never across a park, an
/// `.await` or a call to a waker or the notifier. Completions reach their
/// submitter whichever thread drains the completion ring: the futures are
/// woken by whoever routes their completion (any poll of a `Call`,
/// [`poll_completions`](Self::poll_completions), [`wait`](Self::wait),
/// [`park`](Self::park), [`block_on`](Self::block_on)).
///
/// **Who drives.** Nothing is required: a [`Call`] that goes pending while
/// no thread drives wakes its own task, so any executor (a busy or a
/// parking `block_on`, `FuturesUnordered`, `join_all` of any size, a
/// firmware executor) polls it again, and each poll drains the completion
/// ring. The price is that the executor does not go to sleep while such a
/// future waits: it polls it in a loop. To wait without spinning, let a
/// thread *drive*: one that blocks in [`wait`](Self::wait) or
/// [`call`](Self::call), runs [`block_on`](Self::block_on), or loops on
/// [`park`](Self::park) and [`poll_completions`](Self::poll_completions).
/// While it parks on the client's wake flag, the futures rest until their
/// completion is routed, and when it stops driving it wakes them, so they
/// poll again (and drive themselves if nobody else does).
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(16384).unwrap();
/// let uring = Uring::init(mem.region(), Config::new(8, 8, 4096)).unwrap();
/// let (client, mut server) = uring.split::<8, _, _>(Spin, Spin);
///
/// std::thread::scope(|s| {
///     s.spawn(move || {
///         // Echo: copy the request body into the response block.
///         server
///             .handle(|_, body, out| {
///                 out[..body.len()].copy_from_slice(body);
///                 (0, body.len())
///             })
///             .unwrap();
///     });
///     let mut body = client.alloc(5).unwrap();
///     client.bytes_mut(&mut body).unwrap().copy_from_slice(b"hello");
///     let response = client.alloc(5).unwrap();
///     let reply = client
///         .call(Request::new(1).with_payload(body).with_response(response))
///         .unwrap();
///     assert_eq!(client.response(&reply).unwrap(), b"hello");
///     client.free_reply(reply);
/// });
/// # }
/// ```
pub struct Client<'a, const N: usize, W: Notifier, const K: usize = 1> {
    link: &'a Link,
    area: Area<'a>,
    owner: Owner,
    notifier: W,
    /// Process-local flags: `slot_flags[i]` for the thread blocked on slot
    /// `i`'s reply (one thread per ticket, so one waiter per flag).
    slot_flags: [WakeFlag; N],
    /// Process-local flags for threads waiting for anything (a completion,
    /// a credit) while another drives; claimed through `Inner::idle_mask`.
    idle_flags: [WakeFlag; IDLE],
    inner: SpinLock<Inner<'a, N, K>>,
}

impl<const N: usize, W: Notifier, const K: usize> fmt::Debug for Client<'_, N, W, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Client");
        d.field("area", &self.area);
        if let Some(inner) = self.inner.try_lock() {
            d.field("in_flight", &inner.table.in_flight())
                .field("outstanding", &inner.table.outstanding())
                .field("corrupted", &inner.corrupted)
                .field("peer_gone", &inner.watch.is_gone());
        }
        d.finish_non_exhaustive()
    }
}

impl<'a, const N: usize, W: Notifier, const K: usize> Client<'a, N, W, K> {
    /// A client over two rings within one process (built, for example, with
    /// `HeapRing`), without a payload area: requests carry
    /// opcode and flags only. [`Uring`](crate::uring::Uring) builds clients with a
    /// payload area, in shared memory.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// let ticket = client.try_submit(Request::new(9)).unwrap();
    /// let incoming = server.recv().unwrap();
    /// assert_eq!(incoming.opcode(), 9);
    /// server.complete(incoming, 1, 0).unwrap();
    /// assert_eq!(client.wait(ticket).unwrap().result, 1);
    /// # }
    /// ```
    ///
    /// With a deferred-release consumer of the completion ring (and of the
    /// submission ring on the server's side), the credits stay the rings'
    /// capacity:
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new_deferred::<2>(2).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new_deferred::<2>(2).unwrap();
    /// let client: Client<'_, 2, _, 2> = Client::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let mut server: Server<'_, _, 2> = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// for round in 0..3 {
    ///     let a = client.try_submit(Request::new(round)).unwrap();
    ///     let b = client.try_submit(Request::new(round + 10)).unwrap();
    ///     for _ in 0..2 {
    ///         let incoming = server.recv().unwrap();
    ///         let opcode = incoming.opcode();
    ///         server.complete(incoming, opcode as i32, 0).unwrap();
    ///     }
    ///     assert_eq!(client.wait(a).unwrap().result, round as i32);
    ///     assert_eq!(client.wait(b).unwrap().result, round as i32 + 10);
    /// }
    /// # }
    /// ```
    pub fn from_rings(
        sq: Producer<'a, Sqe>,
        cq: Consumer<'a, Cqe, K>,
        link: &'a Link,
        notifier: W,
    ) -> Self {
        Self::new(sq, cq, link, Area::empty(), notifier)
    }

    pub(crate) fn new(
        sq: Producer<'a, Sqe>,
        cq: Consumer<'a, Cqe, K>,
        link: &'a Link,
        area: Area<'a>,
        notifier: W,
    ) -> Self {
        notifier.bind(&link.client.wake, &link.server.wake);
        let epoch = link.client.open(notifier.process_id());
        let ring_credits = sq.capacity().min(cq.capacity()).min(u32::MAX as usize) as u32;
        let owner = Owner {
            area: area.id(),
            epoch,
        };
        let inner = Inner {
            sq,
            cq,
            table: Table::new(ring_credits, owner),
            alloc: Allocator::new(area.len()),
            options: Options::default(),
            spin_budget: SpinBudget::new(),
            watch: Watch::new(&link.server),
            corrupted: false,
            credit_wakers: Default::default(),
            credit_waiting: false,
            driving: false,
            driver_target: Target::Any,
            tasks_wait_on_driver: false,
            idle_mask: 0,
            parked_slots: 0,
        };
        Self {
            link,
            owner,
            area,
            notifier,
            slot_flags: core::array::from_fn(|_| WakeFlag::new()),
            idle_flags: core::array::from_fn(|_| WakeFlag::new()),
            inner: SpinLock::new(inner),
        }
    }

    /// Sets how long waits spin and park, and the heartbeat limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Link, Options, Spin};
    ///
    /// let link = Link::new();
    /// let (sq, _) = HeapRing::new(4).unwrap();
    /// let (_, cq) = HeapRing::new(4).unwrap();
    /// let mut client = Client::<4, _>::from_rings(sq, cq, &link, Spin);
    /// client.set_options(Options { spin: 0, ..Options::default() });
    /// assert_eq!(client.options().spin, 0);
    /// # }
    /// ```
    pub fn set_options(&mut self, options: Options) {
        self.inner.get_mut().options = options;
    }

    /// The current options.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
    /// use uring_queue::uring::Options;
    ///
    /// let client = uring.into_client::<4, _>(Spin);
    /// assert_eq!(client.options(), Options::default());
    /// # }
    /// ```
    pub fn options(&self) -> Options {
        self.inner.lock().options
    }

    /// How many requests may be in flight at once: the smallest of `N` and
    /// the two rings' capacities.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Link, Spin};
    ///
    /// let link = Link::new();
    /// let (sq, _) = HeapRing::new(8).unwrap();
    /// let (_, cq) = HeapRing::new(2).unwrap();
    /// // The completion ring holds 2: never more in flight.
    /// assert_eq!(Client::<16, _>::from_rings(sq, cq, &link, Spin).credits(), 2);
    /// # }
    /// ```
    pub fn credits(&self) -> usize {
        N.min(self.inner.lock().table.ring_credits() as usize)
    }

    /// Requests submitted and not yet redeemed (including cancelled ones
    /// whose completion has not arrived).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
    /// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let ticket = client.try_submit(Request::new(1)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.complete(incoming, 0, 0).unwrap();
    /// client.poll_completions().unwrap();
    /// // Completed, but its reply not taken yet: still in flight.
    /// assert_eq!(client.in_flight(), 1);
    /// client.wait(ticket).unwrap();
    /// assert_eq!(client.in_flight(), 0);
    /// # }
    /// ```
    pub fn in_flight(&self) -> usize {
        self.inner.lock().table.in_flight() as usize
    }

    /// The epoch this client took as it attached: 1 for the first client
    /// of a freshly laid out connection, one more for each client instance
    /// that attached to it before.
    ///
    /// A process that restarts and finds the connection it used before
    /// still laid out must not submit on it when this is not 1: requests
    /// of its dead predecessor may still be in the rings, and their
    /// completions could meet its own first tags. Attaching has already
    /// told the server (whose [`Server::check_peer`](super::Server::check_peer)
    /// and `recv` now report [`Error::PeerGone`]); drop this client and
    /// attach the connection the server lays out next.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::Region;
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// let config = Config::new(4, 4, 0);
    /// Uring::init(Region::new(&mut mem.0), config).unwrap();
    /// fn attach(mem: &mut Mem) -> Uring<'_> {
    ///     Uring::attach(Region::new(&mut mem.0)).unwrap()
    /// }
    /// assert_eq!(attach(&mut mem).into_client::<4, _>(Spin).epoch(), 1);
    /// // A second instance of the client process finds the connection used.
    /// assert_eq!(attach(&mut mem).into_client::<4, _>(Spin).epoch(), 2);
    /// // The server lays out a fresh one: its first client again.
    /// Uring::init(Region::new(&mut mem.0), config).unwrap();
    /// assert_eq!(attach(&mut mem).into_client::<4, _>(Spin).epoch(), 1);
    /// ```
    pub fn epoch(&self) -> u32 {
        self.owner.epoch
    }
}

impl<const N: usize, W: Notifier, const K: usize> Drop for Client<'_, N, W, K> {
    fn drop(&mut self) {
        self.link.client.close();
        self.link.server.wake.notify(&self.notifier);
    }
}
