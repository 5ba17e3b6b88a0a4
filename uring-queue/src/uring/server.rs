//! The server: receives requests, validates everything the client wrote,
//! and posts completions in any order.

use super::entry::{Cqe, Sqe};
use super::payload::{Area, Span};
use super::wake::{Link, Notifier, Options, Watch};
use super::{Error, Rejected};
use crate::{Consumer, Producer};
use core::fmt;

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
    /// See [`Ticket::user_data`](super::Ticket::user_data).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Incoming::user_data;
    /// ```
    pub fn user_data(&self) -> u64 {
        self.user_data
    }

    /// The request's opcode.
    ///
    /// # Examples
    ///
    /// See [`Incoming`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Incoming::opcode;
    /// ```
    pub fn opcode(&self) -> u32 {
        self.opcode
    }

    /// The request's flags.
    ///
    /// # Examples
    ///
    /// See [`Incoming`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Incoming::flags;
    /// ```
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// Length of the request body.
    ///
    /// # Examples
    ///
    /// See [`Incoming`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Incoming::payload_len;
    /// ```
    pub fn payload_len(&self) -> usize {
        self.payload.len as usize
    }

    /// Length of the response block: the most [`Server::complete`] may
    /// report.
    ///
    /// # Examples
    ///
    /// See [`Incoming`].
    ///
    /// ```
    /// # let _ = uring_queue::uring::Incoming::response_capacity;
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
/// See [`Client`](super::Client) and
/// [`Client::from_rings`](super::Client::from_rings).
///
/// ```
/// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::recv;
/// ```
pub struct Server<'a, W: Notifier, const K: usize = 1> {
    sq: Consumer<'a, Sqe, K>,
    cq: Producer<'a, Cqe>,
    link: &'a Link,
    area: Area<'a>,
    epoch: u32,
    notifier: W,
    options: Options,
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
    /// See [`Client::from_rings`](super::Client::from_rings).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::from_rings;
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
        let epoch = link.server.open(notifier.process_id());
        Self {
            sq,
            cq,
            link,
            area,
            epoch,
            notifier,
            options: Options::default(),
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
    /// See [`set_options`](Self::set_options).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::options;
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
            Err(crate::Error::Empty) => return Ok(None),
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
        'outer: loop {
            if let Some(incoming) = self.try_recv()? {
                return Ok(incoming);
            }
            if self.watch.is_gone() {
                return Err(Error::PeerGone);
            }
            for i in 0..self.options.spin {
                if !self.sq.is_empty() {
                    continue 'outer;
                }
                super::park::spin_step(i, self.options.yield_every);
            }
            let own = &self.link.server;
            self.publish_inbound();
            own.wake.arm();
            if !self.sq.is_empty() {
                own.wake.disarm();
                continue;
            }
            // The client's close, like its pushes, comes before its wake-up:
            // one that closed before the flag went up did not wake us, so
            // look now (the fence in `arm` orders this load after the flag)
            // instead of sleeping out a park timeout.
            let options = self.options;
            if !self
                .watch
                .check(&self.link.client, &self.notifier, &options, false)
            {
                own.wake.disarm();
                continue;
            }
            own.beat();
            self.notifier.wait(&own.wake, self.options.park_timeout);
            own.wake.disarm();
            if self.sq.is_empty() {
                let options = self.options;
                self.watch
                    .check(&self.link.client, &self.notifier, &options, true);
            }
        }
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
    /// See [`Uring`](super::Uring).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::payload;
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
    /// See [`Uring`](super::Uring).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::response_mut;
    /// ```
    pub fn response_mut(&mut self, incoming: &Incoming) -> Result<&mut [u8], Error> {
        self.check_owner(incoming)?;
        // SAFETY: validated span; `&mut self` makes this the only view of
        // the area this server has lent out.
        Ok(unsafe { self.area.bytes_mut(incoming.response) })
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
    /// See [`Uring`](super::Uring).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::buffers;
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
        let reject = |error, value| Err(Rejected { error, value });
        if let Err(e) = self.check_owner(&incoming) {
            return reject(e, incoming);
        }
        if response_len > incoming.response.len as usize {
            let max = incoming.response.len as usize;
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
            reserved: 0,
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
    /// See [`Client`](super::Client).
    ///
    /// ```
    /// # let _ = uring_queue::uring::Server::<uring_queue::uring::Spin>::handle::<fn(&uring_queue::uring::Incoming, &[u8], &mut [u8]) -> (i32, usize)>;
    /// ```
    pub fn handle<F>(&mut self, handler: F) -> Result<(), Error>
    where
        F: FnOnce(&Incoming, &[u8], &mut [u8]) -> (i32, usize),
    {
        let incoming = self.recv()?;
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

impl<W: Notifier, const K: usize> Drop for Server<'_, W, K> {
    fn drop(&mut self) {
        self.link.server.close();
        self.link.client.wake.notify(&self.notifier);
    }
}
