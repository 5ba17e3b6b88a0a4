//! What a client hands in and gets back: the [`Request`], its [`Ticket`]
//! while in flight, the [`Reply`], and the tag that names a request on the
//! wire.

#[cfg(doc)]
use super::Client;
use super::payload::{Block, Owner};

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
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
/// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
/// let ticket = client.try_submit(Request::new(1)).unwrap();
/// let incoming = server.try_recv().unwrap().unwrap();
/// server.complete(incoming, 42, 0).unwrap();
/// let reply = client.wait(ticket).unwrap();
/// assert_eq!(reply.result, 42);
/// assert_eq!(reply.response_len(), 0);
/// # }
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
    /// bytes are the response, unless the server answered
    /// [`in_place`](Self::in_place).
    pub response: Block,
    pub(crate) response_len: u32,
    pub(crate) in_place: bool,
}

impl Reply {
    /// Bytes of the response block the server filled (never more than the
    /// block: the client checks).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let out = client.alloc(64).unwrap();
    /// let ticket = client.try_submit(Request::new(1).with_response(out)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.response_mut(&incoming).unwrap()[..2].copy_from_slice(b"ok");
    /// server.complete(incoming, 0, 2).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// // Two of the block's 64 bytes hold the response.
    /// assert_eq!((reply.response_len(), reply.response.len()), (2, 64));
    /// assert_eq!(client.response(&reply).unwrap(), b"ok");
    /// # }
    /// ```
    pub fn response_len(&self) -> usize {
        self.response_len as usize
    }

    /// Whether the server wrote its response over the request body
    /// ([`Server::complete_in_place`](super::Server::complete_in_place)):
    /// the response is then the first [`response_len`](Self::response_len)
    /// bytes of [`payload`](Self::payload)'s block (never more than that
    /// block: the client checks), and the response block, if any, is
    /// untouched. [`Client::response`] reads it from the right block
    /// either way.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut body = client.alloc(5).unwrap();
    /// client.bytes_mut(&mut body).unwrap().copy_from_slice(b"hello");
    /// let ticket = client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.payload_mut(&incoming).unwrap().make_ascii_uppercase();
    /// server.complete_in_place(incoming, 0, 5).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// assert!(reply.in_place());
    /// assert_eq!(client.response(&reply).unwrap(), b"HELLO");
    /// # }
    /// ```
    pub fn in_place(&self) -> bool {
        self.in_place
    }
}

/// A submitted request, redeemed for its [`Reply`] with [`Client::wait`] or
/// [`Client::try_wait`], or given up with [`Client::cancel`]. Dropping it
/// instead leaves its slot reserved for the connection's lifetime.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Config, Request, Spin, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
/// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
/// let ticket = client.try_submit(Request::new(1)).unwrap();
/// assert_eq!(client.in_flight(), 1);
/// client.cancel(ticket).unwrap();
/// // Still reserved: the server has not completed it yet.
/// assert_eq!(client.in_flight(), 1);
/// # }
/// ```
#[must_use = "a dropped ticket keeps its slot reserved; wait for it or cancel it"]
#[derive(Debug, PartialEq, Eq)]
pub struct Ticket {
    pub(crate) tag: Tag,
    pub(crate) owner: Owner,
}

impl Ticket {
    /// The tag the request carries (`user_data`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Request, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
    /// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let ticket = client.try_submit(Request::new(1)).unwrap();
    /// assert_eq!(server.try_recv().unwrap().unwrap().user_data(), ticket.user_data());
    /// # client.cancel(ticket).unwrap();
    /// # }
    /// ```
    pub fn user_data(&self) -> u64 {
        self.tag.user_data()
    }
}

/// A request's tag: its slot in the client's in-flight table, and the
/// slot's generation when it was submitted, so a tag is never reused while
/// its request is in flight. On the wire it is the `user_data` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl Tag {
    /// The slot index in the low 32 bits, the generation in the high 32.
    pub(crate) fn user_data(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// The tag a `user_data` word names (checked against the table before
    /// use: the peer wrote it).
    pub(crate) fn from_user_data(user_data: u64) -> Self {
        Self {
            index: user_data as u32,
            generation: (user_data >> 32) as u32,
        }
    }
}
