//! The server: receives requests, validates everything the client wrote,
//! and posts completions in any order.

use super::entry::{CQE_IN_PLACE, Cqe, Sqe};
use super::link::Link;
use super::liveness::Watch;
use super::park::{self, Round, SpinBudget};
use super::payload::{Area, Span};
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
use super::reactor;
#[cfg(all(feature = "tokio", target_os = "linux", not(loom)))]
use super::reactor::spread::{Spread, Step};
use super::table::Place;
use super::wake::Notifier;
use super::{Error, Options, Rejected};
use crate::{Consumer, Producer};
use core::fmt;
#[cfg(all(feature = "tokio", target_os = "linux", not(loom)))]
use core::task::Waker;

/// A request taken from the submission ring, its blocks validated against
/// the payload area. Redeem it with [`Server::complete`].
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
/// let t = client.try_submit(Request::new(2).with_flags(8)).unwrap();
/// let inc = server.recv().unwrap();
/// assert_eq!((inc.opcode(), inc.flags(), inc.payload_len(), inc.response_capacity()), (2, 8, 0, 0));
/// # server.complete(inc, 0, 0).unwrap(); client.wait(t).unwrap();
/// # }
/// ```
#[derive(Debug, PartialEq, Eq)]
pub struct Incoming {
    user_data: u64,
    opcode: u32,
    flags: u32,
    payload: Span,
    response: Span,
    owner: (usize, u32),
}

impl Incoming {
    /// The request's tag.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let ticket = client.try_submit(Request::new(7)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// // The client's tag, as it sent it.
    /// assert_eq!(incoming.user_data(), ticket.user_data());
    /// # server.complete(incoming, 0, 0).unwrap();
    /// # client.wait(ticket).unwrap();
    /// # }
    /// ```
    pub fn user_data(&self) -> u64 {
        self.user_data
    }

    /// The request's opcode.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// client.try_submit(Request::new(7)).unwrap();
    /// assert_eq!(server.try_recv().unwrap().unwrap().opcode(), 7);
    /// # }
    /// ```
    pub fn opcode(&self) -> u32 {
        self.opcode
    }

    /// The request's flags.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// client.try_submit(Request::new(7).with_flags(0b101)).unwrap();
    /// assert_eq!(server.try_recv().unwrap().unwrap().flags(), 0b101);
    /// # }
    /// ```
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// Length of the request body.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let body = client.alloc(100).unwrap();
    /// client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// assert_eq!(incoming.payload_len(), 100);
    /// assert_eq!(server.payload(&incoming).unwrap().len(), 100);
    /// # }
    /// ```
    pub fn payload_len(&self) -> usize {
        self.payload.len as usize
    }

    /// Length of the response block: the most [`Server::complete`] may
    /// report.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let out = client.alloc(16).unwrap();
    /// client.try_submit(Request::new(1).with_response(out)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// assert_eq!(incoming.response_capacity(), 16);
    /// // More than the block holds is refused, and the request comes back.
    /// let back = server.complete(incoming, 0, 17).unwrap_err();
    /// server.complete(back.value, 0, 16).unwrap();
    /// # }
    /// ```
    pub fn response_capacity(&self) -> usize {
        self.response.len as usize
    }
}

/// The serving side of a connection.
///
/// The client is not trusted: every block it names is checked against the
/// payload area (in bounds, request and response disjoint) before the
/// server touches a byte; a bad one latches [`Error::Corrupted`].
///
/// `K` is the release interval of the server's submission-ring consumer
/// (see [`Consumer`], "Release modes"; default 1, publish on every pop). A
/// server with `K > 1` (from [`Uring::into_deferred_server`](super::Uring::into_deferred_server)
/// or [`from_rings`](Self::from_rings) with a deferred consumer) publishes
/// the requests it took before every completion and before it parks, so the
/// client never finds the submission ring full while it holds a credit.
///
/// # Examples
///
/// A server thread answering until its client goes away:
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Config, Error, Request, Spin, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
/// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
/// std::thread::scope(|s| {
///     let served = s.spawn(move || {
///         let mut served = 0;
///         loop {
///             match server.recv() {
///                 Ok(incoming) => {
///                     let op = incoming.opcode() as i32;
///                     server.complete(incoming, -op, 0).unwrap();
///                     served += 1;
///                 }
///                 Err(Error::PeerGone) => return served,
///                 Err(e) => panic!("{e}"),
///             }
///         }
///     });
///     for op in 1..=3 {
///         assert_eq!(client.call(Request::new(op)).unwrap().result, -(op as i32));
///     }
///     drop(client);
///     assert_eq!(served.join().unwrap(), 3);
/// });
/// # }
/// ```
pub struct Server<'a, W: Notifier, const K: usize = 1> {
    sq: Consumer<'a, Sqe, K>,
    cq: Producer<'a, Cqe>,
    link: &'a Link,
    area: Area<'a>,
    epoch: u32,
    notifier: W,
    options: Options,
    spin_budget: SpinBudget,
    watch: Watch,
    corrupted: bool,
}

impl<W: Notifier, const K: usize> fmt::Debug for Server<'_, W, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("area", &self.area)
            .field("corrupted", &self.corrupted)
            .field("peer_gone", &self.watch.is_gone())
            .finish_non_exhaustive()
    }
}

impl<'a, W: Notifier, const K: usize> Server<'a, W, K> {
    /// A server over two rings within one process, without a payload area
    /// (see [`Client::from_rings`](super::Client::from_rings)).
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
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// let client = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// let ticket = client.try_submit(Request::new(3)).unwrap();
    /// // No payload area: opcode and flags only.
    /// let incoming = server.recv().unwrap();
    /// assert_eq!((incoming.opcode(), incoming.payload_len()), (3, 0));
    /// server.complete(incoming, 30, 0).unwrap();
    /// assert_eq!(client.wait(ticket).unwrap().result, 30);
    /// # }
    /// ```
    pub fn from_rings(
        sq: Consumer<'a, Sqe, K>,
        cq: Producer<'a, Cqe>,
        link: &'a Link,
        notifier: W,
    ) -> Self {
        Self::new(sq, cq, link, Area::empty(), notifier)
    }

    pub(crate) fn new(
        sq: Consumer<'a, Sqe, K>,
        cq: Producer<'a, Cqe>,
        link: &'a Link,
        area: Area<'a>,
        notifier: W,
    ) -> Self {
        notifier.bind(&link.server.wake, &link.client.wake);
        let epoch = link.server.open(notifier.process_id());
        Self {
            sq,
            cq,
            link,
            area,
            epoch,
            notifier,
            options: Options::default(),
            spin_budget: SpinBudget::new(),
            watch: Watch::new(&link.client),
            corrupted: false,
        }
    }

    /// Sets how long [`recv`](Self::recv) spins and parks, and the heartbeat
    /// limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Link, Options, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (_, sq) = HeapRing::new(4).unwrap();
    /// let (cq, _) = HeapRing::new(4).unwrap();
    /// let mut server = Server::from_rings(sq, cq, &link, Spin);
    /// server.set_options(Options { spin: 10, ..Options::default() });
    /// assert_eq!(server.options().spin, 10);
    /// # }
    /// ```
    pub fn set_options(&mut self, options: Options) {
        self.options = options;
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
    /// let server = uring.into_server(Spin);
    /// assert_eq!(server.options(), Options::default());
    /// # }
    /// ```
    pub fn options(&self) -> Options {
        self.options
    }

    /// Publishes everything consumed from the inbound (submission) ring: a
    /// no-op while the ring publishes on every pop, the release of the
    /// pending head in a deferred-release mode.
    fn publish_inbound(&mut self) {
        self.sq.release();
    }

    /// Takes the next request, if one is there.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] (latched) for a block outside the payload area,
    /// a response block overlapping the request body, or broken ring
    /// indices.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Link, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (_sq_tx, sq) = HeapRing::new(4).unwrap();
    /// let (cq, _cq_rx) = HeapRing::new(4).unwrap();
    /// let mut server = Server::from_rings(sq, cq, &link, Spin);
    /// assert_eq!(server.try_recv(), Ok(None));
    /// # }
    /// ```
    pub fn try_recv(&mut self) -> Result<Option<Incoming>, Error> {
        if self.corrupted {
            return Err(Error::Corrupted);
        }
        let sqe = match self.sq.pop() {
            Ok(sqe) => sqe,
            Err(crate::RingError::Empty) => return Ok(None),
            Err(_) => return Err(self.corrupt()),
        };
        let (Ok(payload), Ok(response)) = (
            self.area.span(sqe.payload_offset, sqe.payload_len),
            self.area.span(sqe.response_offset, sqe.response_len),
        ) else {
            return Err(self.corrupt());
        };
        if payload.overlaps(&response) {
            return Err(self.corrupt());
        }
        self.link.server.beat();
        Ok(Some(Incoming {
            user_data: sqe.user_data,
            opcode: sqe.opcode,
            flags: sqe.flags,
            payload,
            response,
            owner: (self.area.id(), self.epoch),
        }))
    }

    fn corrupt(&mut self) -> Error {
        self.corrupted = true;
        Error::Corrupted
    }

    /// Waits for the next request: spins, then parks on the server's wake
    /// flag; the liveness checks run after every park round.
    ///
    /// # Errors
    ///
    /// As [`try_recv`](Self::try_recv), and [`Error::PeerGone`] once the
    /// client closed, exited, restarted or went silent, after every request
    /// it sent has been received.
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
    /// # client.cancel(t).unwrap();
    /// drop(client);
    /// // What the client sent before closing is still delivered.
    /// assert_eq!(server.recv().unwrap().opcode(), 1);
    /// assert_eq!(server.recv(), Err(Error::PeerGone));
    /// # }
    /// ```
    pub fn recv(&mut self) -> Result<Incoming, Error> {
        loop {
            if let Some(incoming) = self.try_recv()? {
                return Ok(incoming);
            }
            if self.watch.is_gone() {
                return Err(Error::PeerGone);
            }
            let options = self.options;
            let sq = &self.sq;
            if self.spin_budget.spin(&options, || !sq.is_empty()) {
                continue;
            }
            self.publish_inbound();
            // Whatever the round ends with, the loop looks again: requests
            // the client sent before it went away are still delivered.
            let round = park::park_round(
                &self.link.server,
                &self.link.client,
                &self.notifier,
                &options,
                &mut self.watch,
                || !self.sq.is_empty(),
            );
            if round == Round::Ready {
                self.spin_budget.came_just_after(&options);
            }
        }
    }

    /// Checks, without waiting, whether the client is still the one this
    /// server has been serving: for servers that poll with
    /// [`try_recv`](Self::try_recv), which runs no liveness check.
    ///
    /// Two words of the client's line decide it: its close flag (the
    /// client dropped its end) and its epoch, which moves when another
    /// client instance attaches to the same connection (the old one was
    /// killed and a new one took its place). After that, requests still in
    /// the submission ring came from an instance that is gone, and a
    /// completion could meet the new instance's first tags (each instance
    /// numbers its tags afresh): call this before [`try_recv`](Self::try_recv)
    /// and again before [`complete`](Self::complete), and on
    /// [`Error::PeerGone`] drop the connection and lay out a new one
    /// rather than serve on.
    ///
    /// A client that exited without a restart, or went silent, is judged
    /// only by [`recv`](Self::recv)'s park rounds (they ask the
    /// [`Notifier`] about the client's process and count the rounds its
    /// heartbeat stood still); this check makes no system call and counts
    /// nothing, so it is cheap enough for every turn of a polling loop.
    ///
    /// # Errors
    ///
    /// [`Error::PeerGone`], latched (as for `recv`), once the client
    /// closed or another instance attached; [`Error::Corrupted`] once the
    /// server latched it.
    ///
    /// # Examples
    ///
    /// A polling server, and a client instance that dies without closing
    /// while a newer one attaches to the same connection:
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::HeapRing;
    /// use uring_queue::uring::{Client, Error, Link, Request, Server, Spin};
    ///
    /// let link = Link::new();
    /// let (sq_tx, sq_rx) = HeapRing::new(4).unwrap();
    /// let (cq_tx, cq_rx) = HeapRing::new(4).unwrap();
    /// let mut server = Server::from_rings(sq_rx, cq_tx, &link, Spin);
    /// assert_eq!(server.check_peer(), Ok(()), "no client yet is no loss");
    /// let old = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// old.try_submit(Request::new(1)).unwrap();
    /// assert_eq!(server.check_peer(), Ok(()));
    /// // `old` is killed (never dropped: nothing tells the server), and a
    /// // new instance attaches in its place.
    /// let (_, cq_rx) = HeapRing::new(4).unwrap();
    /// let (sq_tx, _) = HeapRing::new(4).unwrap();
    /// let new = Client::<4, _>::from_rings(sq_tx, cq_rx, &link, Spin);
    /// assert_eq!(new.epoch(), old.epoch() + 1);
    /// // The old instance's request is still in the ring; the check says
    /// // not to serve it.
    /// assert_eq!(server.check_peer(), Err(Error::PeerGone));
    /// assert_eq!(server.check_peer(), Err(Error::PeerGone));
    /// # drop((old, new)); }
    /// ```
    pub fn check_peer(&mut self) -> Result<(), Error> {
        if self.corrupted {
            return Err(Error::Corrupted);
        }
        let alive = self
            .watch
            .check(&self.link.client, &self.notifier, &self.options, false);
        if alive { Ok(()) } else { Err(Error::PeerGone) }
    }

    fn check_owner(&self, incoming: &Incoming) -> Result<(), Error> {
        if incoming.owner == (self.area.id(), self.epoch) {
            Ok(())
        } else {
            Err(Error::Foreign)
        }
    }

    /// The request body, in place in shared memory.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a request another server received.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut body = client.alloc(5).unwrap();
    /// client.bytes_mut(&mut body).unwrap().copy_from_slice(b"hello");
    /// client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// assert_eq!(server.payload(&incoming).unwrap(), b"hello");
    /// # }
    /// ```
    pub fn payload(&self, incoming: &Incoming) -> Result<&[u8], Error> {
        self.check_owner(incoming)?;
        // SAFETY: `try_recv` validated the span against the area. Mutable
        // views of the area are only made through `&mut self`, so none is
        // alive while this shared borrow is; the client touches the block
        // only after the completion (and a hostile client's writes change
        // byte values only).
        Ok(unsafe { self.area.bytes(incoming.payload) })
    }

    /// The response block, to fill in place.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a request another server received.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let out = client.alloc(4).unwrap();
    /// let ticket = client.try_submit(Request::new(1).with_response(out)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.response_mut(&incoming).unwrap().copy_from_slice(b"pong");
    /// server.complete(incoming, 0, 4).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// assert_eq!(client.response(&reply).unwrap(), b"pong");
    /// # }
    /// ```
    pub fn response_mut(&mut self, incoming: &Incoming) -> Result<&mut [u8], Error> {
        self.check_owner(incoming)?;
        // SAFETY: validated span; `&mut self` makes this the only view of
        // the area this server has lent out.
        Ok(unsafe { self.area.bytes_mut(incoming.response) })
    }

    /// The request body, to read and transform in place before answering
    /// with [`complete_in_place`](Self::complete_in_place): the response
    /// then needs no block of its own.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a request another server received.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut body = client.alloc(3).unwrap();
    /// client.bytes_mut(&mut body).unwrap().copy_from_slice(b"abc");
    /// client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// let body = server.payload_mut(&incoming).unwrap();
    /// body.reverse();
    /// assert_eq!(body, b"cba");
    /// # }
    /// ```
    pub fn payload_mut(&mut self, incoming: &Incoming) -> Result<&mut [u8], Error> {
        self.check_owner(incoming)?;
        // SAFETY: validated span; `&mut self` makes this the only view of
        // the area this server has lent out, and the client does not touch
        // the block until the completion (a hostile client's writes change
        // byte values only).
        Ok(unsafe { self.area.bytes_mut(incoming.payload) })
    }

    /// The request body and the response block together (they never
    /// overlap: `try_recv` checked).
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a request another server received.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut body = client.alloc(3).unwrap();
    /// client.bytes_mut(&mut body).unwrap().copy_from_slice(b"abc");
    /// let out = client.alloc(3).unwrap();
    /// let request = Request::new(1).with_payload(body).with_response(out);
    /// let ticket = client.try_submit(request).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// // Read the body while writing the response, in place.
    /// let (body, out) = server.buffers(&incoming).unwrap();
    /// out.copy_from_slice(body);
    /// out.reverse();
    /// server.complete(incoming, 0, 3).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// assert_eq!(client.response(&reply).unwrap(), b"cba");
    /// # }
    /// ```
    pub fn buffers(&mut self, incoming: &Incoming) -> Result<(&[u8], &mut [u8]), Error> {
        self.check_owner(incoming)?;
        // SAFETY: both spans validated and disjoint (`try_recv`); `&mut self`
        // makes these the only views of the area lent out.
        Ok(unsafe {
            (
                self.area.bytes(incoming.payload),
                self.area.bytes_mut(incoming.response),
            )
        })
    }

    /// Posts the completion of `incoming`: `result` and the number of bytes
    /// written to its response block. Wakes the client if it is parked.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] when `response_len` exceeds the response block,
    /// [`Error::CompletionRingFull`] (only a client that submits beyond its
    /// credits causes it; retry later), [`Error::Foreign`],
    /// [`Error::Corrupted`]. The request comes back with the error.
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
    /// let inc = server.recv().unwrap();
    /// // No response block: no response bytes.
    /// let inc = server.complete(inc, 0, 1).unwrap_err();
    /// assert_eq!(inc.error, Error::TooLarge { max: 0 });
    /// server.complete(inc.value, 0, 0).unwrap();
    /// # client.wait(t).unwrap();
    /// # }
    /// ```
    pub fn complete(
        &mut self,
        incoming: Incoming,
        result: i32,
        response_len: usize,
    ) -> Result<(), Rejected<Incoming>> {
        self.post(incoming, result, (response_len, Place::ResponseBlock))
    }

    /// Posts the completion of `incoming` with its response written over
    /// the request body (see [`payload_mut`](Self::payload_mut)): the first
    /// `response_len` bytes of the request's own block are the response,
    /// and the response block, if the request has one, is left untouched.
    /// One block per request instead of two: half the memory a large
    /// request/response pair moves through the caches.
    ///
    /// The client reads the response only after it has taken the
    /// completion, through [`Client::response`](super::Client::response),
    /// which checks `response_len` against the request block again, so a
    /// server cannot make it read past its own block.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] when `response_len` exceeds the request body,
    /// and otherwise as [`complete`](Self::complete). The request comes
    /// back with the error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// use uring_queue::uring::Error;
    ///
    /// let mut body = client.alloc(4).unwrap();
    /// client.bytes_mut(&mut body).unwrap().copy_from_slice(b"ping");
    /// let ticket = client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.payload_mut(&incoming).unwrap().copy_from_slice(b"pong");
    /// // No more than the request block holds.
    /// let back = server.complete_in_place(incoming, 0, 5).unwrap_err();
    /// assert_eq!(back.error, Error::TooLarge { max: 4 });
    /// server.complete_in_place(back.value, 0, 4).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// assert_eq!(client.response(&reply).unwrap(), b"pong");
    /// client.free_reply(reply);
    /// # }
    /// ```
    pub fn complete_in_place(
        &mut self,
        incoming: Incoming,
        result: i32,
        response_len: usize,
    ) -> Result<(), Rejected<Incoming>> {
        self.post(incoming, result, (response_len, Place::RequestBlock))
    }

    /// The steps of [`complete`](Self::complete) and
    /// [`complete_in_place`](Self::complete_in_place): checks the response
    /// fits the block it is in, pushes the completion, wakes the client.
    fn post(
        &mut self,
        incoming: Incoming,
        result: i32,
        (response_len, place): (usize, Place),
    ) -> Result<(), Rejected<Incoming>> {
        let reject = |error, value| Err(Rejected { error, value });
        if let Err(e) = self.check_owner(&incoming) {
            return reject(e, incoming);
        }
        let (block, reserved) = match place {
            Place::ResponseBlock => (incoming.response, 0),
            Place::RequestBlock => (incoming.payload, CQE_IN_PLACE),
        };
        if response_len > block.len as usize {
            let max = block.len as usize;
            return reject(Error::TooLarge { max }, incoming);
        }
        if self.corrupted {
            return reject(Error::Corrupted, incoming);
        }
        let cqe = Cqe {
            user_data: incoming.user_data,
            result,
            // At most the block's `u32` length.
            response_len: response_len as u32,
            flags: 0,
            reserved,
        };
        self.publish_inbound();
        match self.cq.push(cqe) {
            Ok(()) => {
                self.link.client.wake.notify(&self.notifier);
                Ok(())
            }
            Err(crate::PushError::Full(_)) => reject(Error::CompletionRingFull, incoming),
            Err(_) => {
                let e = self.corrupt();
                reject(e, incoming)
            }
        }
    }

    /// Receives one request (waiting), lends `handler` its body and response
    /// block, and posts the completion with the `(result, response_len)` it
    /// returns.
    ///
    /// # Errors
    ///
    /// As [`recv`](Self::recv) and [`complete`](Self::complete);
    /// a `response_len` beyond the block is [`Error::TooLarge`] (the request
    /// is then completed with `result` and no response bytes).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// use uring_queue::uring::Error;
    ///
    /// let out = client.alloc(2).unwrap();
    /// let ticket = client.try_submit(Request::new(9).with_response(out)).unwrap();
    /// // The handler claims 3 response bytes of a 2-byte block: the request
    /// // is completed without response bytes, and the error reported.
    /// let handled = server.handle(|incoming, _body, _out| (incoming.opcode() as i32, 3));
    /// assert_eq!(handled, Err(Error::TooLarge { max: 2 }));
    /// let reply = client.wait(ticket).unwrap();
    /// assert_eq!((reply.result, reply.response_len()), (9, 0));
    /// # }
    /// ```
    pub fn handle<F>(&mut self, handler: F) -> Result<(), Error>
    where
        F: FnOnce(&Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        let incoming = self.recv()?;
        self.answer(incoming, handler)
    }

    /// The steps of [`handle`](Self::handle) after the request came: hands
    /// its body and response block to `handler`, completes it.
    pub(crate) fn answer<F>(&mut self, incoming: Incoming, handler: F) -> Result<(), Error>
    where
        F: FnOnce(&Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        let (payload, response) = self.buffers(&incoming)?;
        let (result, len) = handler(&incoming, payload, response);
        match self.complete(incoming, result, len) {
            Ok(()) => Ok(()),
            Err(Rejected {
                error: Error::TooLarge { max },
                value,
            }) => {
                self.complete(value, result, 0)?;
                Err(Error::TooLarge { max })
            }
            Err(r) => Err(r.error),
        }
    }
}

/// What a reactor-driven server (the `tokio` feature, a service's hub)
/// asks of the server: the steps of `uring::reactor` on the server's lines
/// and state.
#[cfg(all(feature = "std", target_os = "linux", not(loom)))]
impl<W: Notifier, const K: usize> Server<'_, W, K> {
    /// Publishes what was consumed, spins, then arms the server's wake flag
    /// for the reactor. Returns whether a request waits.
    pub(crate) fn reactor_arm(&mut self) -> bool {
        self.publish_inbound();
        let sq = &self.sq;
        reactor::arm(
            &self.link.server,
            &self.options,
            &mut self.spin_budget,
            || !sq.is_empty(),
        )
    }

    /// One step of a reactor-driven wait's spin (see [`Spread`]), after
    /// publishing what was consumed.
    #[cfg(feature = "tokio")]
    pub(crate) fn reactor_step(&mut self, spread: &mut Spread, waker: &Waker) -> Step {
        self.publish_inbound();
        let sq = &self.sq;
        spread.step(
            &self.link.server,
            &self.options,
            &mut self.spin_budget,
            waker,
            || !sq.is_empty(),
        )
    }

    /// A request came while `spread` was under way: it ends as a spin that
    /// found one.
    #[cfg(feature = "tokio")]
    pub(crate) fn reactor_found(&mut self, spread: &mut Spread) {
        spread.found(&mut self.spin_budget);
    }

    /// The liveness checks (see `reactor::check`): whether the client still
    /// looks alive. Latched in the watch once it does not.
    pub(crate) fn reactor_check(&mut self, parked: bool) -> bool {
        reactor::check(
            &self.link.server,
            &self.link.client,
            &self.notifier,
            &self.options,
            &mut self.watch,
            parked,
        )
    }

    /// Latches the client gone (its connection's socket hung up); requests
    /// it sent before are still received.
    #[cfg(feature = "tokio")]
    pub(crate) fn reactor_gone(&mut self) {
        self.watch.latch_gone();
    }

    /// Whether the client's loss is latched.
    #[cfg(feature = "tokio")]
    pub(crate) fn is_peer_gone(&self) -> bool {
        self.watch.is_gone()
    }

    /// The server's notifier.
    pub(crate) fn notifier(&self) -> &W {
        &self.notifier
    }
}

impl<W: Notifier, const K: usize> Drop for Server<'_, W, K> {
    fn drop(&mut self) {
        self.link.server.close();
        self.link.client.wake.notify(&self.notifier);
    }
}
