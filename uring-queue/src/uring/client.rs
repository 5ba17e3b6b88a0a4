//! The client: submits requests, tracks them in a fixed in-flight table, and
//! routes completions back to their submitters, in any order.

use super::entry::{Cqe, Sqe};
use super::payload::{Allocator, Area, Block, Owner, Span};
use super::wake::{Link, Notifier, Options, WakeFlag, Watch};
use super::{Error, Rejected};
use crate::loom::sync::SpinLock;
use crate::loom::sync::atomic::Ordering;
use crate::loom::thread;
use crate::{Consumer, Producer};
use core::fmt;
use core::future::Future;
use core::pin::{Pin, pin};
use core::task::{Context, Poll, Waker};

/// A request to submit: an opcode and flags the application defines, a
/// request body and a block for the response (either may be
/// [`Block::empty`]).
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Block, Request};
///
/// let req = Request::new(3).with_flags(1).with_payload(Block::empty());
/// assert_eq!((req.opcode, req.flags), (3, 1));
/// assert!(req.response.is_empty());
/// ```
#[derive(Debug, Default)]
pub struct Request {
    /// What to do.
    pub opcode: u32,
    /// Application-defined flags.
    pub flags: u32,
    /// The request body, read by the server.
    pub payload: Block,
    /// Where the server writes its response.
    pub response: Block,
}

impl Request {
    /// A request with no body and no response block.
    ///
    /// # Examples
    ///
    /// ```
    /// let req = uring_queue::uring::Request::new(7);
    /// assert_eq!(req.opcode, 7);
    /// assert!(req.payload.is_empty());
    /// ```
    pub fn new(opcode: u32) -> Self {
        Self {
            opcode,
            ..Self::default()
        }
    }

    /// With these flags.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(uring_queue::uring::Request::new(1).with_flags(4).flags, 4);
    /// ```
    pub fn with_flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    /// With this request body.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Block, Request};
    ///
    /// assert!(Request::new(1).with_payload(Block::empty()).payload.is_empty());
    /// ```
    pub fn with_payload(mut self, payload: Block) -> Self {
        self.payload = payload;
        self
    }

    /// With this response block.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Block, Request};
    ///
    /// assert!(Request::new(1).with_response(Block::empty()).response.is_empty());
    /// ```
    pub fn with_response(mut self, response: Block) -> Self {
        self.response = response;
        self
    }
}

/// A completed request: the server's result and the request's blocks, handed
/// back to the submitter.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::Region;
///
/// #[repr(C, align(128))]
/// struct Mem([u8; 8192]);
/// let mut mem = Box::new(Mem([0; 8192]));
/// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 1024)).unwrap();
/// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
/// let ticket = client.try_submit(Request::new(1)).unwrap();
/// let incoming = server.try_recv().unwrap().unwrap();
/// server.complete(incoming, 42, 0).unwrap();
/// let reply = client.wait(ticket).unwrap();
/// assert_eq!(reply.result, 42);
/// assert_eq!(reply.response_len(), 0);
/// ```
#[derive(Debug)]
pub struct Reply {
    /// The server's result.
    pub result: i32,
    /// The server's flags.
    pub flags: u32,
    /// The request body's block, back for reuse or [`Client::free`].
    pub payload: Block,
    /// The response block; its first [`response_len`](Self::response_len)
    /// bytes are the response.
    pub response: Block,
    response_len: u32,
}

impl Reply {
    /// Bytes of the response block the server filled (never more than the
    /// block: the client checks).
    ///
    /// # Examples
    ///
    /// See [`Reply`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Reply::response_len;
    /// ```
    pub fn response_len(&self) -> usize {
        self.response_len as usize
    }
}

/// A submitted request, redeemed for its [`Reply`] with [`Client::wait`] or
/// [`Client::try_wait`], or given up with [`Client::cancel`]. Dropping it
/// instead leaves its slot reserved for the connection's lifetime.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::Region;
///
/// #[repr(C, align(128))]
/// struct Mem([u8; 8192]);
/// let mut mem = Box::new(Mem([0; 8192]));
/// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 0)).unwrap();
/// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
/// let ticket = client.try_submit(Request::new(1)).unwrap();
/// assert_eq!(client.in_flight(), 1);
/// client.cancel(ticket).unwrap();
/// // Still reserved: the server has not completed it yet.
/// assert_eq!(client.in_flight(), 1);
/// ```
#[must_use = "a dropped ticket keeps its slot reserved; wait for it or cancel it"]
#[derive(Debug, PartialEq, Eq)]
pub struct Ticket {
    index: u32,
    generation: u32,
    owner: Owner,
}

impl Ticket {
    /// The tag the request carries (`user_data`).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::Region;
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 0)).unwrap();
    /// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let ticket = client.try_submit(Request::new(1)).unwrap();
    /// assert_eq!(server.try_recv().unwrap().unwrap().user_data(), ticket.user_data());
    /// # client.cancel(ticket).unwrap();
    /// ```
    pub fn user_data(&self) -> u64 {
        tag(self.index, self.generation)
    }
}

fn tag(index: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(index)
}

#[derive(Debug)]
enum State {
    Free {
        next: u32,
    },
    /// Submitted; the submitter may be waiting.
    Pending {
        waker: Option<Waker>,
    },
    /// Submitted, then given up: the completion is discarded on arrival.
    Abandoned,
    /// Completed, reply not yet taken.
    Done {
        result: i32,
        flags: u32,
        response_len: u32,
    },
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    state: State,
    payload: Block,
    response: Block,
    /// A thread blocks on this slot's reply, parked on its flag
    /// (`Client::slot_flags`): whoever routes the reply wakes it.
    parked: bool,
}

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
    /// The reply of the request in this slot, of this generation.
    Slot(u32, u32),
    /// Any completion, or a credit.
    Any,
}

/// Who to wake once the lock is released: a call out to user code (a
/// waker, the notifier) never runs under the lock.
#[derive(Default)]
#[must_use]
struct Wakeups {
    /// The submitter's task.
    task: Option<Waker>,
    /// The tasks waiting for a credit.
    credit: bool,
    /// A thread parked on this slot's flag.
    slot: Option<u32>,
    /// Threads parked on these idle flags.
    idle: u8,
    /// The driving thread, parked on the client's wake flag.
    driver: bool,
}

impl Wakeups {
    fn is_empty(&self) -> bool {
        self.task.is_none() && !self.credit && self.slot.is_none() && self.idle == 0 && !self.driver
    }
}

/// What the client mutates, behind a spin lock so that threads and tasks
/// share one client. The lock is held for a few loads and stores at a time,
/// never across a park, an `.await` or a call out to user code (wakers and
/// the notifier run after it is released, see [`Wakeups`]).
struct Inner<'a, const N: usize, const K: usize> {
    sq: Producer<'a, Sqe>,
    cq: Consumer<'a, Cqe, K>,
    slots: [Slot; N],
    free_head: u32,
    /// Slots in use: submitted and not yet redeemed (or discarded).
    in_flight: u32,
    /// Requests whose completion has not been taken off the completion
    /// ring yet: what the rings' capacity bounds.
    outstanding: u32,
    /// The bound on `outstanding`: the smaller ring capacity.
    ring_credits: u32,
    alloc: Allocator<N>,
    options: Options,
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
    /// Idle flags in use (bit `k` for `Client::idle_flags[k]`).
    idle_mask: u8,
    /// Slots whose thread parks on the slot's flag.
    parked_slots: u32,
}

const NO_SLOT: u32 = u32::MAX;

impl<const N: usize, const K: usize> Inner<'_, N, K> {
    fn failure(&self) -> Option<Error> {
        if self.corrupted {
            Some(Error::Corrupted)
        } else if self.watch.is_gone() {
            Some(Error::PeerGone)
        } else {
            None
        }
    }

    /// The threads to wake because something changed (a completion routed,
    /// a credit back) that a thread waiting for anything may want: the idle
    /// ones and a driver. Nothing when no thread parks (the one-thread path).
    fn changed(&self) -> Wakeups {
        Wakeups {
            idle: self.idle_mask,
            driver: self.driving && matches!(self.driver_target, Target::Any),
            ..Wakeups::default()
        }
    }

    /// Whether a thread waiting for `target` must keep waiting.
    fn waits(&self, target: Target) -> bool {
        match target {
            Target::Slot(index, generation) => self.slots.get(index as usize).is_some_and(|s| {
                s.generation == generation && matches!(s.state, State::Pending { .. })
            }),
            Target::Any => true,
        }
    }

    /// Frees slot `index` for reuse: a new generation, so no old tag or
    /// ticket names it again, and a credit back.
    fn release(&mut self, index: u32) -> Wakeups {
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        slot.state = State::Free {
            next: self.free_head,
        };
        self.free_head = index;
        self.in_flight -= 1;
        Wakeups {
            credit: self.credit_waiting,
            ..self.changed()
        }
    }

    /// Applies one completion. Returns whom to wake: the submitter (its
    /// task, or its thread if parked, or the driver if it is the driver's)
    /// and those waiting for a credit.
    fn route(&mut self, cqe: Cqe) -> Result<Wakeups, Error> {
        let index = cqe.user_data as u32;
        let generation = (cqe.user_data >> 32) as u32;
        let slot = self
            .slots
            .get_mut(index as usize)
            .filter(|s| s.generation == generation)
            .ok_or(Error::Corrupted)?;
        if cqe.response_len as usize > slot.response.len() {
            return Err(Error::Corrupted);
        }
        match &mut slot.state {
            State::Pending { waker } => {
                let task = waker.take();
                let parked = slot.parked;
                slot.state = State::Done {
                    result: cqe.result,
                    flags: cqe.flags,
                    response_len: cqe.response_len,
                };
                self.outstanding -= 1;
                let mut wake = self.changed();
                wake.task = task;
                wake.slot = parked.then_some(index);
                wake.driver |=
                    self.driving && matches!(self.driver_target, Target::Slot(i, _) if i == index);
                // A ring credit came back.
                wake.credit = self.credit_waiting;
                Ok(wake)
            }
            State::Abandoned => {
                let payload = core::mem::take(&mut slot.payload);
                let response = core::mem::take(&mut slot.response);
                self.alloc.free(payload.span);
                self.alloc.free(response.span);
                self.outstanding -= 1;
                Ok(self.release(index))
            }
            State::Free { .. } | State::Done { .. } => Err(Error::Corrupted),
        }
    }

    /// Keeps `waker` until a credit comes back. Returns a waker displaced
    /// to make room (to wake, so that its task polls again) and `waker` if
    /// one that wakes the same task is already kept (to drop); both after
    /// the lock is released.
    fn add_credit_waiter(&mut self, waker: Waker) -> (Option<Waker>, Option<Waker>) {
        self.credit_waiting = true;
        let wakers = &mut self.credit_wakers;
        if wakers.iter().flatten().any(|w| w.will_wake(&waker)) {
            (None, Some(waker))
        } else if let Some(free) = wakers.iter_mut().find(|w| w.is_none()) {
            *free = Some(waker);
            (None, None)
        } else {
            // Full: the waker kept longest makes room.
            let oldest = wakers[0].take();
            wakers.rotate_left(1);
            wakers[CREDIT_WAITERS - 1] = Some(waker);
            (oldest, None)
        }
    }

    /// Takes the reply out of a completed slot.
    fn take(&mut self, index: u32) -> (Reply, Wakeups) {
        let slot = &mut self.slots[index as usize];
        let State::Done {
            result,
            flags,
            response_len,
        } = slot.state
        else {
            unreachable!("take is only called on a completed slot")
        };
        let reply = Reply {
            result,
            flags,
            payload: core::mem::take(&mut slot.payload),
            response: core::mem::take(&mut slot.response),
            response_len,
        };
        (reply, self.release(index))
    }

    /// Publishes everything consumed from the inbound (completion) ring, so
    /// the server's view of free completion slots matches our credits: a
    /// no-op while the ring publishes on every pop, the release of the
    /// pending head in a deferred-release mode.
    fn publish_inbound(&mut self) {
        self.cq.release();
    }
}

/// How a thread waits in [`Client::park`]: as the driver, on the client's
/// wake flag; on a flag of its own; or, when every idle flag is taken, by
/// yielding.
enum Role {
    Driver,
    Slot(u32),
    Idle(usize),
    Yield,
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
/// client with `K > 1` (from [`Uring::into_deferred_client`](super::Uring::into_deferred_client)
/// or [`from_rings`](Self::from_rings) with a deferred consumer) publishes
/// the completions it took before every submission and before it parks, so
/// the credits stay exact.
///
/// All methods take `&self`, and the client is `Sync` (when its notifier
/// is): many threads and tasks share one client (`&Client`, `Arc<Client>`),
/// each with its own requests, and a [`Submit`] future is `Send`, so it runs
/// on a multi-thread executor. The client's state sits behind a small spin
/// lock, held for a few loads and stores at a time, never across a park, an
/// `.await` or a call to a waker or the notifier. Completions reach their
/// submitter whichever thread drains the completion ring: the futures are
/// woken by whoever routes their completion (any poll of a `Submit`,
/// [`poll_completions`](Self::poll_completions), [`wait`](Self::wait),
/// [`park`](Self::park), [`block_on`](Self::block_on)), so on an executor
/// some thread must keep driving while futures wait: one that blocks in
/// `wait`/`call`, runs `block_on`, or loops on `park` and
/// `poll_completions`.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::Region;
///
/// #[repr(C, align(128))]
/// struct Mem([u8; 16384]);
/// let mut mem = Box::new(Mem([0; 16384]));
/// let uring = Uring::init(Region::new(&mut mem.0), Config::new(8, 8, 4096)).unwrap();
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
            d.field("in_flight", &inner.in_flight)
                .field("outstanding", &inner.outstanding)
                .field("corrupted", &inner.corrupted)
                .field("peer_gone", &inner.watch.is_gone());
        }
        d.finish_non_exhaustive()
    }
}

impl<'a, const N: usize, W: Notifier, const K: usize> Client<'a, N, W, K> {
    /// A client over two rings within one process (built, for example, with
    /// `HeapRing`), without a payload area: requests carry
    /// opcode and flags only. [`Uring`](super::Uring) builds clients with a
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
        let epoch = link.client.open(notifier.process_id());
        let ring_credits = sq.capacity().min(cq.capacity()).min(NO_SLOT as usize) as u32;
        let slots = core::array::from_fn(|i| Slot {
            generation: 0,
            state: State::Free {
                next: if i + 1 < N { i as u32 + 1 } else { NO_SLOT },
            },
            payload: Block::empty(),
            response: Block::empty(),
            parked: false,
        });
        let inner = Inner {
            sq,
            cq,
            slots,
            free_head: if N == 0 { NO_SLOT } else { 0 },
            in_flight: 0,
            outstanding: 0,
            ring_credits,
            alloc: Allocator::new(area.len()),
            options: Options::default(),
            watch: Watch::new(&link.server),
            corrupted: false,
            credit_wakers: Default::default(),
            credit_waiting: false,
            driving: false,
            driver_target: Target::Any,
            idle_mask: 0,
            parked_slots: 0,
        };
        Self {
            link,
            owner: Owner {
                area: area.id(),
                epoch,
            },
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
    /// See [`set_options`](Self::set_options).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::options;
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
        N.min(self.inner.lock().ring_credits as usize)
    }

    /// Requests submitted and not yet redeemed (including cancelled ones
    /// whose completion has not arrived).
    ///
    /// # Examples
    ///
    /// See [`Ticket`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::in_flight;
    /// ```
    pub fn in_flight(&self) -> usize {
        self.inner.lock().in_flight as usize
    }

    /// Allocates a payload block of `len` bytes (on a [`BLOCK_ALIGN`](super::BLOCK_ALIGN)
    /// boundary). `len == 0` gives an empty block.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] beyond the payload area, [`Error::NoSpace`] when no
    /// free range fits now (or `2 * N` blocks are live).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Error, Spin, Uring};
    /// use uring_queue::Region;
    ///
    /// #[repr(C, align(128))]
    /// struct Mem([u8; 8192]);
    /// let mut mem = Box::new(Mem([0; 8192]));
    /// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 1024)).unwrap();
    /// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
    /// let a = client.alloc(1000).unwrap();
    /// assert_eq!(a.len(), 1000);
    /// assert_eq!(client.alloc(100).unwrap_err(), Error::NoSpace { len: 100 });
    /// assert_eq!(client.alloc(2000).unwrap_err(), Error::TooLarge { max: 1024 });
    /// client.free(a);
    /// assert!(client.alloc(100).is_ok());
    /// ```
    pub fn alloc(&self, len: usize) -> Result<Block, Error> {
        let span = self.inner.lock().alloc.alloc(len)?;
        Ok(Block {
            owner: Some(self.owner),
            span,
        })
    }

    /// Payload blocks allocated and not yet freed (including those of
    /// requests in flight).
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
    /// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 1024)).unwrap();
    /// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
    /// let block = client.alloc(10).unwrap();
    /// assert_eq!(client.blocks_in_use(), 1);
    /// client.free(block);
    /// assert_eq!(client.blocks_in_use(), 0);
    /// ```
    pub fn blocks_in_use(&self) -> usize {
        self.inner.lock().alloc.live_blocks()
    }

    /// Returns a block to the allocator. Blocks of another client are
    /// ignored.
    ///
    /// # Examples
    ///
    /// See [`alloc`](Self::alloc).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::free;
    /// ```
    pub fn free(&self, block: Block) {
        if block.owner == Some(self.owner) {
            self.inner.lock().alloc.free(block.span);
        }
    }

    /// Frees both blocks of a reply.
    ///
    /// # Examples
    ///
    /// See [`Client`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::free_reply;
    /// ```
    pub fn free_reply(&self, reply: Reply) {
        self.free(reply.payload);
        self.free(reply.response);
    }

    fn check_owner(&self, block: &Block) -> Result<Span, Error> {
        match block.owner {
            None => Ok(Span::default()),
            Some(owner) if owner == self.owner => Ok(block.span),
            Some(_) => Err(Error::Foreign),
        }
    }

    /// The bytes of a block.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a block of another client.
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
    /// let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 1024)).unwrap();
    /// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut block = client.alloc(3).unwrap();
    /// client.bytes_mut(&mut block).unwrap().copy_from_slice(b"abc");
    /// assert_eq!(client.bytes(&block).unwrap(), b"abc");
    /// ```
    pub fn bytes<'b>(&'b self, block: &'b Block) -> Result<&'b [u8], Error> {
        let span = self.check_owner(block)?;
        // SAFETY: the allocator made `span` inside the area; the block token
        // is unique and borrowed shared for `'b`, so no `&mut` to its bytes
        // exists in this process meanwhile (the server sees a block only
        // while it is in flight, when no token for it is outside the table).
        Ok(unsafe { self.area.bytes(span) })
    }

    /// The bytes of a block, to fill in place (zero copy).
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a block of another client.
    ///
    /// # Examples
    ///
    /// See [`bytes`](Self::bytes).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::bytes_mut;
    /// ```
    pub fn bytes_mut<'b>(&'b self, block: &'b mut Block) -> Result<&'b mut [u8], Error> {
        let span = self.check_owner(block)?;
        // SAFETY: as in `bytes`, and the token is borrowed exclusively for
        // `'b`, and blocks never overlap, so this is the only reference.
        Ok(unsafe { self.area.bytes_mut(span) })
    }

    /// The response bytes of a reply: the first
    /// [`response_len`](Reply::response_len) bytes of its response block.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a reply of another client.
    ///
    /// # Examples
    ///
    /// See [`Client`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::response;
    /// ```
    pub fn response<'b>(&'b self, reply: &'b Reply) -> Result<&'b [u8], Error> {
        let bytes = self.bytes(&reply.response)?;
        // `route` checked the length against the block.
        Ok(&bytes[..reply.response_len()])
    }

    /// Submits a request if a credit is free, without waiting.
    ///
    /// # Errors
    ///
    /// [`Error::Busy`] when every credit is in use, [`Error::Foreign`] for a
    /// block of another client, [`Error::PeerGone`] / [`Error::Corrupted`]
    /// once latched. The request comes back with the error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Request, Spin};
    ///
    /// let link = Link::new();
    /// let (sq, _sq_rx) = HeapRing::new(2).unwrap();
    /// let (_cq_tx, cq) = HeapRing::new(2).unwrap();
    /// let client = Client::<2, _>::from_rings(sq, cq, &link, Spin);
    /// let a = client.try_submit(Request::new(1)).unwrap();
    /// let b = client.try_submit(Request::new(2)).unwrap();
    /// // Two credits, both used: the third waits for a completion.
    /// let rejected = client.try_submit(Request::new(3)).unwrap_err();
    /// assert_eq!(rejected.error, Error::Busy);
    /// assert_eq!(rejected.value.opcode, 3);
    /// assert_ne!(a.user_data(), b.user_data());
    /// # client.cancel(a).unwrap(); client.cancel(b).unwrap();
    /// # }
    /// ```
    pub fn try_submit(&self, request: Request) -> Result<Ticket, Rejected<Request>> {
        self.submit_with(request, None)
    }

    /// [`try_submit`](Self::try_submit), with the submitter's waker
    /// registered in the same critical section. `waker` is dropped after
    /// the lock is released (parameters drop after locals).
    #[inline]
    fn submit_with(
        &self,
        request: Request,
        waker: Option<Waker>,
    ) -> Result<Ticket, Rejected<Request>> {
        let reject = |error, value| Err(Rejected { error, value });
        let (payload, response) = match (
            self.check_owner(&request.payload),
            self.check_owner(&request.response),
        ) {
            (Ok(p), Ok(r)) => (p, r),
            _ => return reject(Error::Foreign, request),
        };
        let mut inner = self.inner.lock();
        if let Some(e) = inner.failure() {
            return reject(e, request);
        }
        if inner.outstanding >= inner.ring_credits || inner.free_head == NO_SLOT {
            return reject(Error::Busy, request);
        }
        let index = inner.free_head;
        let slot = &inner.slots[index as usize];
        let State::Free { next } = slot.state else {
            inner.corrupted = true;
            return reject(Error::Corrupted, request);
        };
        let generation = slot.generation;
        let sqe = Sqe {
            user_data: tag(index, generation),
            opcode: request.opcode,
            flags: request.flags,
            payload_offset: u64::from(payload.offset),
            payload_len: payload.len,
            response_len: response.len,
            response_offset: u64::from(response.offset),
        };
        inner.publish_inbound();
        match inner.sq.push(sqe) {
            Ok(()) => {}
            // Credits never exceed the submission ring's capacity, so only
            // a server that stopped consuming leaves it full.
            Err(crate::PushError::Full(_)) => return reject(Error::Busy, request),
            Err(_) => {
                inner.corrupted = true;
                return reject(Error::Corrupted, request);
            }
        }
        inner.free_head = next;
        inner.in_flight += 1;
        inner.outstanding += 1;
        let slot = &mut inner.slots[index as usize];
        slot.state = State::Pending { waker };
        slot.payload = request.payload;
        slot.response = request.response;
        drop(inner);
        self.link.server.wake.notify(&self.notifier);
        self.link.client.beat();
        Ok(Ticket {
            index,
            generation,
            owner: self.owner,
        })
    }

    /// Moves every completion that has arrived to its slot and wakes its
    /// submitter. Returns how many arrived.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] (latched) for a completion naming no request in
    /// flight or a response longer than its block.
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
    /// let t = client.try_submit(Request::new(1)).unwrap();
    /// assert_eq!(client.poll_completions(), Ok(0));
    /// let incoming = server.recv().unwrap();
    /// server.complete(incoming, 0, 0).unwrap();
    /// assert_eq!(client.poll_completions(), Ok(1));
    /// assert!(client.try_wait(t).is_ok());
    /// # }
    /// ```
    pub fn poll_completions(&self) -> Result<usize, Error> {
        let mut n = 0;
        loop {
            // Completions that wake nobody are routed under one lock; one
            // that wakes someone ends the run, and its wake-up runs after
            // the lock is released (so a woken task may submit at once,
            // before the rest are taken).
            let mut wake = Wakeups::default();
            let (corrupted, drained) = {
                let mut inner = self.inner.lock();
                loop {
                    if inner.corrupted {
                        break (true, true);
                    }
                    let cqe = match inner.cq.pop() {
                        Ok(cqe) => cqe,
                        Err(crate::Error::Empty) => break (false, true),
                        Err(_) => {
                            inner.corrupted = true;
                            continue;
                        }
                    };
                    match inner.route(cqe) {
                        Ok(w) => {
                            n += 1;
                            if !w.is_empty() {
                                wake = w;
                                break (false, false);
                            }
                        }
                        Err(_) => inner.corrupted = true,
                    }
                }
            };
            self.wake(wake);
            if corrupted {
                self.wake_all();
                return Err(Error::Corrupted);
            }
            if drained {
                return Ok(n);
            }
        }
    }

    /// Wakes what routing or releasing asked for; the lock is not held.
    #[inline]
    fn wake(&self, wake: Wakeups) {
        if let Some(w) = wake.task {
            w.wake();
        }
        if wake.credit {
            self.wake_credit_waiters();
        }
        if let Some(i) = wake.slot {
            self.slot_flags[i as usize].notify(&self.notifier);
        }
        if wake.idle != 0 {
            self.wake_idle(wake.idle);
        }
        if wake.driver {
            self.link.client.wake.notify(&self.notifier);
        }
    }

    /// Wakes every task waiting for a credit: each polls again, and those
    /// that find none register again.
    #[cold]
    fn wake_credit_waiters(&self) {
        let wakers = {
            let mut inner = self.inner.lock();
            inner.credit_waiting = false;
            core::mem::take(&mut inner.credit_wakers)
        };
        for w in wakers.into_iter().flatten() {
            w.wake();
        }
    }

    #[cold]
    fn wake_idle(&self, mask: u8) {
        for (k, flag) in self.idle_flags.iter().enumerate() {
            if mask & (1 << k) != 0 {
                flag.notify(&self.notifier);
            }
        }
    }

    /// Wakes every waiting submitter, task or thread, so that they see a
    /// latched failure.
    fn wake_all(&self) {
        for i in 0..N {
            let (task, parked) = {
                let mut inner = self.inner.lock();
                let slot = &mut inner.slots[i];
                let task = match &mut slot.state {
                    State::Pending { waker } => waker.take(),
                    _ => None,
                };
                (task, slot.parked)
            };
            if let Some(w) = task {
                w.wake();
            }
            if parked {
                self.slot_flags[i].notify(&self.notifier);
            }
        }
        self.wake_credit_waiters();
        let idle = self.inner.lock().idle_mask;
        self.wake_idle(idle);
        self.link.client.wake.notify(&self.notifier);
    }

    /// Waits (spins, then parks on the client's wake flag) until a completion
    /// is available or one park round passes, then runs the liveness checks.
    /// If another thread already parks on that flag (it *drives*), parks on
    /// a flag of its own instead, until a completion is routed, a credit
    /// comes back or the driving role comes free.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] once the server closed, exited, restarted or went
    /// silent, and nothing is left to read; [`Error::Corrupted`] if latched.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// drop(server);
    /// assert_eq!(client.park(), Err(Error::PeerGone));
    /// # }
    /// ```
    pub fn park(&self) -> Result<(), Error> {
        self.park_on(Target::Any)
    }

    /// Waits until `target` may have changed: a completion is on the ring,
    /// the reply was routed (by another thread), the driving role came
    /// free, or one park round passed.
    ///
    /// One thread at a time drives: it parks on the client's wake flag,
    /// which the server notifies, and runs the liveness checks. A thread
    /// that finds another driving parks on a flag of its own (its slot's,
    /// or an idle one), which whoever routes its reply or frees the role
    /// notifies. Every flag has one waiter, so the handshake of
    /// [`WakeFlag`] holds for each: the waiter arms, then re-checks under
    /// the lock; the waker changes the state under the lock, then notifies.
    fn park_on(&self, target: Target) -> Result<(), Error> {
        let options = {
            let inner = self.inner.lock();
            if let Some(e) = inner.failure() {
                return if inner.cq.is_empty() && inner.waits(target) {
                    Err(e)
                } else {
                    // Another thread routed our completion: take it first.
                    Ok(())
                };
            }
            inner.options
        };
        for i in 0..options.spin {
            {
                let inner = self.inner.lock();
                if !inner.cq.is_empty() || !inner.waits(target) {
                    return Ok(());
                }
            }
            super::park::spin_step(i, options.yield_every);
        }
        let role = {
            let mut inner = self.inner.lock();
            inner.publish_inbound();
            if let Some(e) = inner.failure() {
                return if inner.cq.is_empty() && inner.waits(target) {
                    Err(e)
                } else {
                    Ok(())
                };
            }
            if !inner.cq.is_empty() || !inner.waits(target) {
                return Ok(());
            }
            if !inner.driving {
                inner.driving = true;
                inner.driver_target = target;
                Role::Driver
            } else if let Target::Slot(index, _) = target {
                inner.slots[index as usize].parked = true;
                inner.parked_slots += 1;
                Role::Slot(index)
            } else if let Some(k) = (0..IDLE).find(|k| inner.idle_mask & (1 << k) == 0) {
                inner.idle_mask |= 1 << k;
                Role::Idle(k)
            } else {
                Role::Yield
            }
        };
        match role {
            Role::Driver => self.drive(target, &options),
            Role::Slot(index) => {
                let flag = &self.slot_flags[index as usize];
                self.park_follower(flag, target, &options);
                let mut inner = self.inner.lock();
                inner.slots[index as usize].parked = false;
                inner.parked_slots -= 1;
                Ok(())
            }
            Role::Idle(k) => {
                self.park_follower(&self.idle_flags[k], target, &options);
                self.inner.lock().idle_mask &= !(1 << k);
                Ok(())
            }
            Role::Yield => {
                thread::yield_now();
                Ok(())
            }
        }
    }

    /// A park round as the driver, on the client's wake flag; then the
    /// liveness checks, and the role handed on.
    fn drive(&self, target: Target, options: &Options) -> Result<(), Error> {
        let own = &self.link.client;
        own.wake.arm();
        let sleep = {
            let inner = self.inner.lock();
            inner.cq.is_empty() && inner.waits(target)
        };
        // A server that closed before the flag went up did not wake us: the
        // round then skips the wait and goes straight to the liveness check
        // (the fence in `arm` orders this load after the flag).
        if sleep && self.link.server.closed.load(Ordering::Relaxed) == 0 {
            own.beat();
            self.notifier.wait(&own.wake, options.park_timeout);
        }
        own.wake.disarm();
        let (ready, mut watch) = {
            let inner = self.inner.lock();
            (!inner.cq.is_empty() || !inner.waits(target), inner.watch)
        };
        // Judged by the driver alone, once per round (heartbeats count
        // rounds), and outside the lock: the notifier may make system calls.
        let alive =
            !sleep || ready || watch.check(&self.link.server, &self.notifier, options, true);
        let (parked, idle, settled) = {
            let mut inner = self.inner.lock();
            if sleep && !ready {
                // The driver is the only writer of `watch`.
                inner.watch = watch;
            }
            inner.driving = false;
            (
                inner.parked_slots != 0,
                inner.idle_mask,
                // Looked at again under this lock: another thread may have
                // drained the ring, and routed our completion, since `ready`.
                inner.cq.is_empty() && inner.waits(target),
            )
        };
        // Hand the role on: every parked thread re-checks, and one drives.
        if parked {
            for flag in &self.slot_flags {
                flag.notify(&self.notifier);
            }
        }
        if idle != 0 {
            self.wake_idle(idle);
        }
        if alive || !settled {
            return Ok(());
        }
        self.wake_all();
        Err(Error::PeerGone)
    }

    /// A park round on a thread's own `flag` while another thread drives.
    fn park_follower(&self, flag: &WakeFlag, target: Target, options: &Options) {
        flag.arm();
        let sleep = {
            let inner = self.inner.lock();
            inner.driving && inner.cq.is_empty() && inner.waits(target) && inner.failure().is_none()
        };
        if sleep {
            self.notifier.wait(flag, options.park_timeout);
        }
        flag.disarm();
    }

    /// Takes the reply if it has arrived, else hands the ticket back with
    /// [`Error::NotReady`].
    ///
    /// # Errors
    ///
    /// [`Error::NotReady`], [`Error::Foreign`] for another client's ticket,
    /// [`Error::PeerGone`] / [`Error::Corrupted`] once latched.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// let t = client.try_submit(Request::new(1)).unwrap();
    /// let t = client.try_wait(t).unwrap_err();
    /// assert_eq!(t.error, Error::NotReady);
    /// let incoming = server.recv().unwrap();
    /// server.complete(incoming, 5, 0).unwrap();
    /// assert_eq!(client.try_wait(t.value).unwrap().result, 5);
    /// # }
    /// ```
    pub fn try_wait(&self, ticket: Ticket) -> Result<Reply, Rejected<Ticket>> {
        if let Err(error) = self.poll_completions() {
            return Err(Rejected {
                error,
                value: ticket,
            });
        }
        match self.poll_ticket(&ticket, None) {
            Poll::Ready(Ok(reply)) => Ok(reply),
            Poll::Ready(Err(error)) => Err(Rejected {
                error,
                value: ticket,
            }),
            Poll::Pending => Err(Rejected {
                error: Error::NotReady,
                value: ticket,
            }),
        }
    }

    /// Checks one ticket; registers `waker` if not complete.
    fn poll_ticket(&self, ticket: &Ticket, waker: Option<&Waker>) -> Poll<Result<Reply, Error>> {
        if ticket.owner != self.owner {
            return Poll::Ready(Err(Error::Foreign));
        }
        // Cloned only when the slot holds no waker that wakes the same
        // task, and outside the lock (a clone is a call out to the
        // executor): then the lock is taken again and the state looked at
        // afresh.
        let mut new: Option<Waker> = None;
        loop {
            let mut inner = self.inner.lock();
            let Some(slot) = inner
                .slots
                .get_mut(ticket.index as usize)
                .filter(|s| s.generation == ticket.generation)
            else {
                return Poll::Ready(Err(Error::Foreign));
            };
            let old = match &mut slot.state {
                State::Done { .. } => {
                    let (reply, wake) = inner.take(ticket.index);
                    drop(inner);
                    self.wake(wake);
                    return Poll::Ready(Ok(reply));
                }
                State::Pending { waker: slot_waker } => match waker {
                    Some(w) if !slot_waker.as_ref().is_some_and(|s| s.will_wake(w)) => {
                        if new.is_none() {
                            drop(inner);
                            new = Some(w.clone());
                            continue;
                        }
                        core::mem::replace(slot_waker, new.take())
                    }
                    _ => None,
                },
                State::Free { .. } | State::Abandoned => return Poll::Ready(Err(Error::Foreign)),
            };
            let failure = inner.failure();
            // A failure latched (by the driving thread) after our reply was
            // posted but before anyone routed it: the reply is on the ring,
            // so route it and look again rather than report the peer gone.
            // This ends: a tag completes at most once (a second completion
            // latches `Corrupted`), and nothing is submitted once the failure
            // is latched.
            let unrouted = failure == Some(Error::PeerGone) && !inner.cq.is_empty();
            drop(inner);
            drop(old);
            if unrouted {
                if let Err(e) = self.poll_completions() {
                    return Poll::Ready(Err(e));
                }
                continue;
            }
            drop(new);
            return match failure {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            };
        }
    }

    /// Waits for a submitted request's reply (spinning, then parking).
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`] (the server went away before replying),
    /// [`Error::Corrupted`], [`Error::Foreign`] for another client's ticket.
    ///
    /// # Examples
    ///
    /// See [`Reply`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::wait;
    /// ```
    pub fn wait(&self, ticket: Ticket) -> Result<Reply, Error> {
        loop {
            self.poll_completions()?;
            if let Poll::Ready(r) = self.poll_ticket(&ticket, None) {
                return r;
            }
            self.park_on(Target::Slot(ticket.index, ticket.generation))?;
        }
    }

    /// Gives a request up. Its slot (and blocks) stay reserved until the
    /// completion arrives, which is then discarded, so its tag is never
    /// reused while the server may still answer it.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for another client's ticket.
    ///
    /// # Examples
    ///
    /// See [`Ticket`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::cancel;
    /// ```
    pub fn cancel(&self, ticket: Ticket) -> Result<(), Error> {
        if ticket.owner != self.owner {
            return Err(Error::Foreign);
        }
        let mut inner = self.inner.lock();
        let Some(slot) = inner
            .slots
            .get_mut(ticket.index as usize)
            .filter(|s| s.generation == ticket.generation)
        else {
            return Err(Error::Foreign);
        };
        let (old, wake) = match &mut slot.state {
            State::Pending { waker } => {
                let old = waker.take();
                slot.state = State::Abandoned;
                (old, Wakeups::default())
            }
            State::Done { .. } => {
                let (reply, wake) = inner.take(ticket.index);
                inner.alloc.free(reply.payload.span);
                inner.alloc.free(reply.response.span);
                (None, wake)
            }
            State::Free { .. } | State::Abandoned => return Err(Error::Foreign),
        };
        drop(inner);
        drop(old);
        self.wake(wake);
        Ok(())
    }

    /// Submits a request and waits for its reply: waits for a credit first
    /// if all are in use.
    ///
    /// # Errors
    ///
    /// As [`try_submit`](Self::try_submit) (except [`Error::Busy`], which it
    /// waits out) and [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// See [`Client`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::call;
    /// ```
    pub fn call(&self, request: Request) -> Result<Reply, Error> {
        let ticket = self.submit_waiting(request)?;
        self.wait(ticket)
    }

    /// Submits a request, waiting for a credit if all are in use.
    ///
    /// # Errors
    ///
    /// As [`try_submit`](Self::try_submit); [`Error::Busy`] only when
    /// waiting cannot help: every slot holds a reply nobody has taken yet.
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
    /// // Pipelined: four in flight, answered in reverse order.
    /// let tickets: Vec<_> = (0..4).map(|i| client.submit_waiting(Request::new(i)).unwrap()).collect();
    /// let incoming: Vec<_> = (0..4).map(|_| server.recv().unwrap()).collect();
    /// for inc in incoming.into_iter().rev() {
    ///     let op = inc.opcode() as i32;
    ///     server.complete(inc, op * 10, 0).unwrap();
    /// }
    /// for (i, t) in tickets.into_iter().enumerate() {
    ///     assert_eq!(client.wait(t).unwrap().result, i as i32 * 10);
    /// }
    /// # }
    /// ```
    pub fn submit_waiting(&self, mut request: Request) -> Result<Ticket, Error> {
        loop {
            match self.try_submit(request) {
                Ok(ticket) => return Ok(ticket),
                Err(Rejected {
                    error: Error::Busy,
                    value,
                }) => request = value,
                Err(r) => return Err(r.error),
            }
            if self.poll_completions()? == 0 {
                if self.inner.lock().outstanding == 0 {
                    // Nothing will arrive: the slots hold untaken replies.
                    return Err(Error::Busy);
                }
                self.park()?;
            }
        }
    }

    /// Submits a request; the future resolves to its reply. Works with any
    /// executor: the client wakes the future when its completion is routed
    /// ([`poll_completions`](Self::poll_completions), which every poll of a
    /// `Submit` and [`block_on`](Self::block_on) run). Dropping the future
    /// cancels the request ([`cancel`](Self::cancel)).
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
    /// std::thread::scope(|s| {
    ///     s.spawn(move || {
    ///         for _ in 0..2 {
    ///             let inc = server.recv().unwrap();
    ///             let op = inc.opcode() as i32;
    ///             server.complete(inc, op + 1, 0).unwrap();
    ///         }
    ///     });
    ///     let (a, b) = client.block_on(async {
    ///         let a = client.submit(Request::new(1)).await.unwrap();
    ///         let b = client.submit(Request::new(2)).await.unwrap();
    ///         (a.result, b.result)
    ///     });
    ///     assert_eq!((a, b), (2, 3));
    /// });
    /// # }
    /// ```
    pub fn submit(&self, request: Request) -> Submit<'_, 'a, N, W, K> {
        Submit {
            client: self,
            state: SubmitState::Start(request),
        }
    }

    /// Runs `future` to completion on this thread: polls it, and while it is
    /// pending routes completions and parks on the client's wake flag. A
    /// minimal executor for the futures of this client.
    ///
    /// # Examples
    ///
    /// See [`submit`](Self::submit).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::block_on::<core::future::Ready<()>>;
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let mut future = pin!(future);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
            // Errors are latched: the pending futures report them when
            // polled next.
            if let Ok(0) = self.poll_completions() {
                let _ = self.park();
            }
        }
    }
}

impl<const N: usize, W: Notifier, const K: usize> Drop for Client<'_, N, W, K> {
    fn drop(&mut self) {
        self.link.client.close();
        self.link.server.wake.notify(&self.notifier);
    }
}

#[derive(Debug)]
enum SubmitState {
    Start(Request),
    Waiting(Ticket),
    Finished,
}

/// The future of [`Client::submit`].
///
/// # Examples
///
/// See [`Client::submit`].
///
/// ```
/// # let _ = uring_queue::uring::Client::<1, uring_queue::uring::Spin>::submit;
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Submit<'c, 'a, const N: usize, W: Notifier, const K: usize = 1> {
    client: &'c Client<'a, N, W, K>,
    state: SubmitState,
}

impl<const N: usize, W: Notifier, const K: usize> fmt::Debug for Submit<'_, '_, N, W, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Submit")
            .field("state", &self.state)
            .finish()
    }
}

impl<const N: usize, W: Notifier, const K: usize> Future for Submit<'_, '_, N, W, K> {
    type Output = Result<Reply, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let client = this.client;
        // Completions are routed at most once per poll, and only when the
        // state cannot move without them: no credit, or no reply yet.
        // `Ok(true)`: some arrived, so look again.
        let mut routed = false;
        let mut route = || -> Result<bool, Error> {
            if core::mem::replace(&mut routed, true) {
                return Ok(false);
            }
            client.poll_completions().map(|n| n > 0)
        };
        loop {
            match core::mem::replace(&mut this.state, SubmitState::Finished) {
                // Submitted with the waker in place: the reply cannot be
                // back yet, and whoever routes it wakes this task.
                SubmitState::Start(request) => match client
                    .submit_with(request, Some(cx.waker().clone()))
                {
                    Ok(ticket) => {
                        this.state = SubmitState::Waiting(ticket);
                        return Poll::Pending;
                    }
                    Err(Rejected {
                        error: Error::Busy,
                        value,
                    }) => {
                        match route() {
                            Ok(false) => {}
                            // Credits may have come back: try again.
                            Ok(true) => {
                                this.state = SubmitState::Start(value);
                                continue;
                            }
                            Err(e) => return Poll::Ready(Err(e)),
                        }
                        this.state = SubmitState::Start(value);
                        // Cloned before the lock: a call out to the executor.
                        let waker = cx.waker().clone();
                        let (displaced, unused) = {
                            let mut inner = client.inner.lock();
                            // Checked again under the lock that registers the
                            // waker: a credit that came back since
                            // `try_submit` found none has woken nobody.
                            if inner.outstanding < inner.ring_credits && inner.free_head != NO_SLOT
                            {
                                drop(inner);
                                cx.waker().wake_by_ref();
                                return Poll::Pending;
                            }
                            inner.add_credit_waiter(waker)
                        };
                        drop(unused);
                        // Displaced: let that task poll again rather than
                        // lose its wake-up.
                        if let Some(w) = displaced {
                            w.wake();
                        }
                        return Poll::Pending;
                    }
                    Err(r) => return Poll::Ready(Err(r.error)),
                },
                SubmitState::Waiting(ticket) => {
                    if let Poll::Ready(r) = client.poll_ticket(&ticket, Some(cx.waker())) {
                        return Poll::Ready(r);
                    }
                    match route() {
                        // Ours may be among them: look again.
                        Ok(true) => this.state = SubmitState::Waiting(ticket),
                        Ok(false) => {
                            this.state = SubmitState::Waiting(ticket);
                            return Poll::Pending;
                        }
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                }
                SubmitState::Finished => return Poll::Ready(Err(Error::Foreign)),
            }
        }
    }
}

impl<const N: usize, W: Notifier, const K: usize> Drop for Submit<'_, '_, N, W, K> {
    fn drop(&mut self) {
        if let SubmitState::Waiting(ticket) =
            core::mem::replace(&mut self.state, SubmitState::Finished)
        {
            let _ = self.client.cancel(ticket);
        }
    }
}
