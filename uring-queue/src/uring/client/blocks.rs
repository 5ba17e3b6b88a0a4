//! Payload blocks: allocating, freeing and reaching the bytes of blocks of
//! the connection's payload area.

use super::Client;
use crate::uring::Error;
use crate::uring::payload::{Block, Span};
use crate::uring::request::Reply;
use crate::uring::wake::Notifier;

impl<const N: usize, W: Notifier, const K: usize> Client<'_, N, W, K> {
    /// Allocates a payload block of `len` bytes (on a [`BLOCK_ALIGN`](crate::uring::BLOCK_ALIGN)
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Error, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
    /// let a = client.alloc(1000).unwrap();
    /// assert_eq!(a.len(), 1000);
    /// assert_eq!(client.alloc(100).unwrap_err(), Error::NoSpace { len: 100 });
    /// assert_eq!(client.alloc(2000).unwrap_err(), Error::TooLarge { max: 1024 });
    /// client.free(a);
    /// assert!(client.alloc(100).is_ok());
    /// # }
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
    /// let block = client.alloc(10).unwrap();
    /// assert_eq!(client.blocks_in_use(), 1);
    /// client.free(block);
    /// assert_eq!(client.blocks_in_use(), 0);
    /// # }
    /// ```
    pub fn blocks_in_use(&self) -> usize {
        self.inner.lock().alloc.live_blocks()
    }

    /// Returns a block to the allocator. Blocks of another client are
    /// ignored.
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
    /// let block = client.alloc(1000).unwrap();
    /// assert!(client.alloc(1000).is_err());
    /// client.free(block);
    /// // The range is free again.
    /// assert_eq!(client.alloc(1000).unwrap().len(), 1000);
    /// # }
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
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let body = client.alloc(64).unwrap();
    /// let out = client.alloc(64).unwrap();
    /// let request = Request::new(1).with_payload(body).with_response(out);
    /// let ticket = client.try_submit(request).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.complete(incoming, 0, 0).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// assert_eq!(client.blocks_in_use(), 2);
    /// client.free_reply(reply);
    /// assert_eq!(client.blocks_in_use(), 0);
    /// # }
    /// ```
    pub fn free_reply(&self, reply: Reply) {
        self.free(reply.payload);
        self.free(reply.response);
    }

    /// The span of a block of this client (empty for an empty block).
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a block of another client.
    pub(super) fn check_owner(&self, block: &Block) -> Result<Span, Error> {
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
    /// # #[cfg(feature = "alloc")] {
    /// use uring_queue::uring::{Config, Spin, Uring};
    /// use uring_queue::AlignedBuf;
    ///
    /// let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// let (client, _server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut block = client.alloc(3).unwrap();
    /// client.bytes_mut(&mut block).unwrap().copy_from_slice(b"abc");
    /// assert_eq!(client.bytes(&block).unwrap(), b"abc");
    /// # }
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
    /// ```
    /// # #[cfg(feature = "alloc")] {
    /// # use uring_queue::uring::{Config, Request, Spin, Uring};
    /// # use uring_queue::AlignedBuf;
    /// # let mut mem = AlignedBuf::zeroed(8192).unwrap();
    /// # let uring = Uring::init(mem.region(), Config::new(4, 4, 1024)).unwrap();
    /// # let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    /// let mut body = client.alloc(4).unwrap();
    /// client.bytes_mut(&mut body).unwrap().copy_from_slice(&7u32.to_le_bytes());
    /// client.try_submit(Request::new(1).with_payload(body)).unwrap();
    /// // The server reads the bytes in place: nothing was copied.
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// assert_eq!(server.payload(&incoming).unwrap(), 7u32.to_le_bytes());
    /// # }
    /// ```
    pub fn bytes_mut<'b>(&'b self, block: &'b mut Block) -> Result<&'b mut [u8], Error> {
        let span = self.check_owner(block)?;
        // SAFETY: as in `bytes`, and the token is borrowed exclusively for
        // `'b`, and blocks never overlap, so this is the only reference.
        Ok(unsafe { self.area.bytes_mut(span) })
    }

    /// The response bytes of a reply: the first
    /// [`response_len`](Reply::response_len) bytes of its response block,
    /// or of its request block when the server answered
    /// [in place](Reply::in_place).
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] for a reply of another client, or one whose
    /// response block was replaced by a block shorter than the response.
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
    /// let out = client.alloc(64).unwrap();
    /// let ticket = client.try_submit(Request::new(1).with_response(out)).unwrap();
    /// let incoming = server.try_recv().unwrap().unwrap();
    /// server.response_mut(&incoming).unwrap()[..3].copy_from_slice(b"yes");
    /// server.complete(incoming, 0, 3).unwrap();
    /// let reply = client.wait(ticket).unwrap();
    /// // Only the bytes the server reported, not the whole block.
    /// assert_eq!(client.response(&reply).unwrap(), b"yes");
    ///
    /// // A block too short for the response, put in the reply's place, is
    /// // refused rather than read past.
    /// let mut reply = reply;
    /// let out = std::mem::replace(&mut reply.response, client.alloc(2).unwrap());
    /// assert_eq!(client.response(&reply), Err(uring_queue::uring::Error::Foreign));
    /// client.free(out);
    /// # }
    /// ```
    pub fn response<'b>(&'b self, reply: &'b Reply) -> Result<&'b [u8], Error> {
        let block = if reply.in_place() {
            &reply.payload
        } else {
            &reply.response
        };
        let bytes = self.bytes(block)?;
        // `route` checked the length against the block the request carried;
        // a shorter block put in its place since does not hold the response.
        bytes.get(..reply.response_len()).ok_or(Error::Foreign)
    }
}
