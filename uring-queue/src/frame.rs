//! Framed records: variable-size messages in a ring of 8-byte words.
//!
//! Each record is a [`RecordHeader`] word followed by its payload rounded up
//! to whole words, and is always contiguous: when a record does not fit before
//! the end of the storage, the producer first fills the rest with a padding
//! record and starts the message at slot 0. The reader therefore gets every
//! message as one in-place `&[u8]`, and reads each header with a single
//! 8-byte load into a [`RecordHeader`] value (the slimcap lesson: one load of
//! a header struct, not several small reads).
//!
//! Records work on any `u64` ring: inline, heap or a shared [`Region`](crate::Region).

use crate::raw::RawRing;
use crate::{Consumer, Producer, RingError};
use core::{fmt, slice};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The first word of every record.
///
/// # Examples
///
/// ```
/// use uring_queue::RecordHeader;
/// let h = RecordHeader { len: 5, kind: RecordHeader::MESSAGE };
/// assert_eq!(h.units(), 2); // header word + one payload word
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C, align(8))]
pub struct RecordHeader {
    /// Payload length in bytes.
    pub len: u32,
    /// [`RecordHeader::MESSAGE`] or [`RecordHeader::PADDING`].
    pub kind: u32,
}

impl RecordHeader {
    /// A record carrying a message.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameProducer, RecordHeader, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, mut rx) = ring.split();
    /// FrameProducer::new(tx).send(b"hi").unwrap();
    /// // The record's first word, read as a header.
    /// let header: RecordHeader = zerocopy::transmute!(rx.pop().unwrap());
    /// assert_eq!(header, RecordHeader { len: 2, kind: RecordHeader::MESSAGE });
    /// ```
    pub const MESSAGE: u32 = 0x4D53_4731;
    /// A record that skips to the end of the storage.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameProducer, RecordHeader, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, mut rx) = ring.split();
    /// let mut tx = FrameProducer::new(tx);
    /// // Two records of three words each leave two words before the end.
    /// tx.send(&[1; 16]).unwrap();
    /// tx.send(&[2; 16]).unwrap();
    /// rx.pop_slice(&mut [0; 6]).unwrap();
    /// // A third does not fit there: a padding record fills them, and the
    /// // message starts at slot 0.
    /// tx.send(&[3; 16]).unwrap();
    /// let padding: RecordHeader = zerocopy::transmute!(rx.pop().unwrap());
    /// assert_eq!(padding, RecordHeader { len: 8, kind: RecordHeader::PADDING });
    /// assert_eq!(padding.units(), 2);
    /// ```
    pub const PADDING: u32 = 0x5041_4431;

    /// Words the whole record occupies: the header and the padded payload.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::RecordHeader;
    ///
    /// let empty = RecordHeader { len: 0, kind: RecordHeader::MESSAGE };
    /// assert_eq!(empty.units(), 1);
    /// // Nine bytes take two payload words.
    /// let nine = RecordHeader { len: 9, kind: RecordHeader::MESSAGE };
    /// assert_eq!(nine.units(), 3);
    /// ```
    pub const fn units(&self) -> usize {
        1 + (self.len as usize).div_ceil(8)
    }
}

const WORD: usize = 8;

/// Sends framed records through a `u64` [`Producer`].
///
/// # Examples
///
/// ```
/// use uring_queue::{FrameConsumer, FrameProducer, Ring};
///
/// let mut ring = Ring::<u64, 16>::new();
/// let (tx, rx) = ring.split();
/// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
/// tx.send(b"hello").unwrap();
/// let mut grant = tx.grant(3).unwrap();
/// grant.as_mut_bytes().copy_from_slice(b"abc");
/// grant.commit();
/// assert_eq!(&*rx.recv().unwrap(), b"hello");
/// assert_eq!(&*rx.recv().unwrap(), b"abc");
/// assert!(rx.recv().is_err());
/// ```
pub struct FrameProducer<'a> {
    inner: Producer<'a, u64>,
}

impl fmt::Debug for FrameProducer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameProducer")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<'a> FrameProducer<'a> {
    /// Frames records on `producer`'s ring.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let mut tx = FrameProducer::new(tx);
    /// let mut rx = FrameConsumer::new(rx);
    /// tx.send(b"ping").unwrap();
    /// assert_eq!(&*rx.recv().unwrap(), b"ping");
    /// ```
    pub fn new(producer: Producer<'a, u64>) -> Self {
        Self { inner: producer }
    }

    /// The underlying element producer back.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, _rx) = ring.split();
    /// let mut tx = FrameProducer::new(tx);
    /// tx.send(b"abc").unwrap();
    /// // The element producer sees the record's two words: header and payload.
    /// let tx = tx.into_inner();
    /// assert_eq!(tx.len(), 2);
    /// ```
    pub fn into_inner(self) -> Producer<'a, u64> {
        self.inner
    }

    /// Longest payload accepted: half the storage less the header, so that a
    /// record always fits once the consumer catches up, wherever the wrap is.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 16>::new();
    /// let (tx, _rx) = ring.split();
    /// let mut tx = FrameProducer::new(tx);
    /// // Half of 16 words, less the header: 7 words of payload.
    /// assert_eq!(tx.max_len(), 56);
    /// assert_eq!(tx.send(&[0; 57]), Err(RingError::TooLarge { max: 56 }));
    /// ```
    pub fn max_len(&self) -> usize {
        (self.inner.capacity() / 2).saturating_sub(1) * WORD
    }

    /// Lends `len` contiguous payload bytes. Nothing is sent until
    /// [`FrameGrant::commit`]; the header (and any padding record) is written
    /// then, and published with the payload in one store.
    ///
    /// # Errors
    ///
    /// [`RingError::TooLarge`] beyond [`max_len`](Self::max_len), [`RingError::Full`]
    /// when the consumer has not freed enough room yet, [`RingError::Corrupted`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// let mut grant = tx.grant(5).unwrap();
    /// grant.as_mut_bytes().copy_from_slice(b"hello");
    /// grant.commit();
    /// assert_eq!(&*rx.recv().unwrap(), b"hello");
    /// assert_eq!(tx.grant(25).unwrap_err(), RingError::TooLarge { max: 24 });
    /// ```
    pub fn grant(&mut self, len: usize) -> Result<FrameGrant<'_>, RingError> {
        if self.inner.is_corrupted() {
            return Err(RingError::Corrupted);
        }
        let max = self.max_len();
        if len > max {
            return Err(RingError::TooLarge { max });
        }
        let units = 1 + len.div_ceil(WORD) as u32;
        let raw = self.inner.raw();
        let tail = self.inner.tail();
        let to_end = raw.capacity() - (tail & (raw.capacity() - 1));
        let pad = if units > to_end { to_end } else { 0 };
        let need = pad + units;
        if self.inner.free(need)? < need {
            return Err(RingError::Full);
        }
        let start = tail.wrapping_add(pad);
        raw.track(tail, need, true);
        let (raw, tail) = self.inner.parts();
        Ok(FrameGrant {
            tail,
            raw,
            pad,
            start,
            units,
            len: len as u32,
        })
    }

    /// Sends `payload` as one record (a copy into the ring).
    ///
    /// # Errors
    ///
    /// As [`grant`](Self::grant).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// // Each record takes a header word and three payload words: two fill the ring.
    /// tx.send(&[7; 24]).unwrap();
    /// tx.send(&[8; 24]).unwrap();
    /// assert_eq!(tx.send(b"x"), Err(RingError::Full));
    /// assert_eq!(&*rx.recv().unwrap(), [7; 24]);
    /// assert_eq!(tx.send(b"x"), Ok(()));
    /// ```
    pub fn send(&mut self, payload: &[u8]) -> Result<(), RingError> {
        let mut grant = self.grant(payload.len())?;
        grant.as_mut_bytes().copy_from_slice(payload);
        grant.commit();
        Ok(())
    }

    /// Whether the consumer was dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (tx, rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// assert!(!tx.is_abandoned());
    /// drop(rx);
    /// assert!(tx.is_abandoned());
    /// ```
    pub fn is_abandoned(&self) -> bool {
        self.inner.is_abandoned()
    }
}

/// Payload room lent by [`FrameProducer::grant`].
///
/// # Examples
///
/// ```
/// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
///
/// let mut ring = Ring::<u64, 8>::new();
/// let (tx, rx) = ring.split();
/// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
/// // Dropped without a commit: nothing is sent.
/// drop(tx.grant(3).unwrap());
/// assert_eq!(rx.recv().unwrap_err(), RingError::Empty);
/// let mut grant = tx.grant(3).unwrap();
/// grant.as_mut_bytes().copy_from_slice(b"abc");
/// grant.commit();
/// assert_eq!(&*rx.recv().unwrap(), b"abc");
/// ```
#[must_use = "nothing is sent until the grant is committed"]
pub struct FrameGrant<'p> {
    tail: &'p mut u32,
    raw: RawRing<u64>,
    pad: u32,
    start: u32,
    units: u32,
    len: u32,
}

impl fmt::Debug for FrameGrant<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameGrant")
            .field("len", &self.len)
            .finish()
    }
}

impl FrameGrant<'_> {
    /// The payload bytes, contiguous, in place in the ring. They hold stale
    /// bytes until written.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// let mut grant = tx.grant(4).unwrap();
    /// let bytes = grant.as_mut_bytes();
    /// assert_eq!(bytes.len(), 4);
    /// bytes.copy_from_slice(b"data");
    /// grant.commit();
    /// assert_eq!(&*rx.recv().unwrap(), b"data");
    /// ```
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        let payload = self.raw.slot(self.start.wrapping_add(1));
        // SAFETY: `grant` checked that the `units` slots from `start` are free
        // (owned by this grant, which borrows the producer mutably) and do not
        // cross the end of the storage, so the `units - 1` payload words, of
        // which `len` bytes are lent, are in bounds and initialised.
        unsafe { slice::from_raw_parts_mut(payload.cast::<u8>(), self.len as usize) }
    }

    /// Sends the record: writes the padding and record headers, then
    /// publishes the tail once.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// let mut grant = tx.grant(2).unwrap();
    /// grant.as_mut_bytes().copy_from_slice(b"ok");
    /// // Nothing is sent before the commit.
    /// assert_eq!(rx.recv().unwrap_err(), RingError::Empty);
    /// grant.commit();
    /// assert_eq!(&*rx.recv().unwrap(), b"ok");
    /// ```
    pub fn commit(self) {
        if self.pad != 0 {
            let tail = *self.tail;
            let header = RecordHeader {
                len: (self.pad - 1) * WORD as u32,
                kind: RecordHeader::PADDING,
            };
            // SAFETY: the padding slot at `tail` is part of this grant.
            unsafe { self.raw.write(tail, zerocopy::transmute!(header)) };
        }
        let header = RecordHeader {
            len: self.len,
            kind: RecordHeader::MESSAGE,
        };
        // SAFETY: the header slot at `start` is part of this grant.
        unsafe { self.raw.write(self.start, zerocopy::transmute!(header)) };
        // All `pad + units` slots were free and are now written: one publish.
        self.raw.advance_tail(self.tail, self.pad + self.units);
    }
}

/// Receives framed records from a `u64` [`Consumer`].
///
/// A malformed header (unknown kind, a length running past the published
/// data or the end of the storage, a misplaced padding record) latches
/// [`RingError::Corrupted`].
///
/// # Examples
///
/// ```
/// use uring_queue::{RingError, FrameConsumer, RecordHeader, Ring};
///
/// let mut ring = Ring::<u64, 8>::new();
/// let (mut tx, rx) = ring.split();
/// let mut rx = FrameConsumer::new(rx);
/// // A header whose 16-byte payload was never published.
/// let header = RecordHeader { len: 16, kind: RecordHeader::MESSAGE };
/// tx.push(zerocopy::transmute!(header)).unwrap();
/// assert_eq!(rx.recv().unwrap_err(), RingError::Corrupted);
/// // Latched: the error stays once the payload words arrive.
/// tx.push_slice(&[0, 0]).unwrap();
/// assert_eq!(rx.recv().unwrap_err(), RingError::Corrupted);
/// ```
pub struct FrameConsumer<'a> {
    inner: Consumer<'a, u64>,
}

impl fmt::Debug for FrameConsumer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameConsumer")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<'a> FrameConsumer<'a> {
    /// Reads framed records from `consumer`'s ring.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let mut tx = FrameProducer::new(tx);
    /// let mut rx = FrameConsumer::new(rx);
    /// assert_eq!(rx.recv().unwrap_err(), RingError::Empty);
    /// tx.send(b"pong").unwrap();
    /// assert_eq!(&*rx.recv().unwrap(), b"pong");
    /// ```
    pub fn new(consumer: Consumer<'a, u64>) -> Self {
        Self { inner: consumer }
    }

    /// The underlying element consumer back.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let mut tx = FrameProducer::new(tx);
    /// let rx = FrameConsumer::new(rx);
    /// tx.send(b"abc").unwrap();
    /// // The element consumer sees the record's two words: header and payload.
    /// let rx = rx.into_inner();
    /// assert_eq!(rx.len(), 2);
    /// ```
    pub fn into_inner(self) -> Consumer<'a, u64> {
        self.inner
    }

    /// The next message, in place. Dropping the [`Frame`] releases its room.
    ///
    /// # Errors
    ///
    /// [`RingError::Empty`], or [`RingError::Corrupted`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// tx.send(b"one").unwrap();
    /// tx.send(b"two").unwrap();
    /// assert_eq!(&*rx.recv().unwrap(), b"one");
    /// assert_eq!(&*rx.recv().unwrap(), b"two");
    /// assert_eq!(rx.recv().unwrap_err(), RingError::Empty);
    /// ```
    pub fn recv(&mut self) -> Result<Frame<'_>, RingError> {
        // A padding record is always followed by a record at slot 0, which is
        // never padding, so two rounds suffice and a peer cannot loop us.
        for _ in 0..2 {
            let available = self.inner.available(1)?;
            if available == 0 {
                return Err(RingError::Empty);
            }
            let raw = self.inner.raw();
            let head = self.inner.head();
            let pos = head & (raw.capacity() - 1);
            raw.track(head, 1, false);
            // SAFETY: the slot at `head` is published (available >= 1), so ours
            // to read. Volatile: exactly one 8-byte load of the whole header,
            // whose value is then validated and used, never re-read.
            let word = unsafe { raw.slot(head).read_volatile() };
            let header: RecordHeader = zerocopy::transmute!(word);
            let units = header.units();
            if units > available as usize || pos as usize + units > raw.capacity() as usize {
                return Err(self.inner.latch());
            }
            let units = units as u32;
            match header.kind {
                RecordHeader::MESSAGE => {
                    raw.track(head.wrapping_add(1), units - 1, false);
                    let payload = raw.slot(head.wrapping_add(1)).cast::<u8>();
                    let (raw, head) = self.inner.parts();
                    // SAFETY: the record's `units` slots are published and do
                    // not cross the end of the storage (checked above), so the
                    // `len` payload bytes are in bounds and initialised; they
                    // stay ours until the frame releases them.
                    let bytes = unsafe { slice::from_raw_parts(payload, header.len as usize) };
                    return Ok(Frame {
                        raw,
                        head,
                        units,
                        bytes,
                    });
                }
                RecordHeader::PADDING if pos != 0 && pos + units == raw.capacity() => {
                    // SAFETY: the padding's slots are published.
                    unsafe { self.inner.advance(units) };
                }
                _ => return Err(self.inner.latch()),
            }
        }
        Err(self.inner.latch())
    }

    /// Whether the producer was dropped (drain until empty after seeing this).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{FrameConsumer, FrameProducer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (tx, rx) = ring.split();
    /// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    /// tx.send(b"last").unwrap();
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// // What was sent before is still there.
    /// assert_eq!(&*rx.recv().unwrap(), b"last");
    /// ```
    pub fn is_abandoned(&self) -> bool {
        self.inner.is_abandoned()
    }

    /// Whether a malformed record or index was seen.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, FrameConsumer, Ring};
    ///
    /// let mut ring = Ring::<u64, 8>::new();
    /// let (mut tx, rx) = ring.split();
    /// let mut rx = FrameConsumer::new(rx);
    /// // A header of kind 0, which is neither a message nor padding.
    /// tx.push(0).unwrap();
    /// assert!(!rx.is_corrupted());
    /// assert_eq!(rx.recv().unwrap_err(), RingError::Corrupted);
    /// assert!(rx.is_corrupted());
    /// ```
    pub fn is_corrupted(&self) -> bool {
        self.inner.is_corrupted()
    }
}

/// One received message, in place in the ring; released on drop.
///
/// # Examples
///
/// ```
/// use uring_queue::{RingError, FrameConsumer, FrameProducer, Ring};
///
/// let mut ring = Ring::<u64, 4>::new();
/// let (tx, rx) = ring.split();
/// let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
/// tx.send(b"12345678").unwrap();
/// tx.send(b"12345678").unwrap();
/// let frame = rx.recv().unwrap();
/// assert_eq!(frame.len(), 8);
/// // The frame's room is still taken while it lives...
/// assert_eq!(tx.send(b"more"), Err(RingError::Full));
/// drop(frame);
/// // ...and released when it is dropped.
/// assert_eq!(tx.send(b"more"), Ok(()));
/// ```
pub struct Frame<'c> {
    raw: RawRing<u64>,
    head: &'c mut u32,
    units: u32,
    bytes: &'c [u8],
}

impl fmt::Debug for Frame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl core::ops::Deref for Frame<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl Drop for Frame<'_> {
    fn drop(&mut self) {
        self.raw.advance_head(self.head, self.units);
    }
}
