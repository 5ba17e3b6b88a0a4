use core::fmt;

/// Why a [`Write`](crate::Write) call failed.
///
/// Unlike `buffer_sv2::WriteError`, this is an ordinary error value: it can be
/// printed, compared, cloned, unwrapped and used with `?` in `core::error::Error` contexts.
///
/// # Examples
///
/// ```
/// use io_traits::{Write, WriteError};
///
/// let mut storage = [0u8; 2];
/// let mut sink: &mut [u8] = &mut storage;
/// assert_eq!(sink.write_all(b"abc"), Err(WriteError::WriteZero));
/// assert_eq!(WriteError::WriteZero.to_string(), "the sink accepted no more bytes");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WriteError {
    /// The sink accepted zero bytes: it is full, or closed.
    WriteZero,
    /// The operation was interrupted and may be retried.
    Interrupted,
    /// The sink could not allocate memory for the bytes.
    OutOfMemory,
    /// The sink is not connected, or its peer went away.
    NotConnected,
    /// The operation timed out.
    TimedOut,
    /// The sink failed for a reason none of the other variants describes.
    Other,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::WriteZero => "the sink accepted no more bytes",
            Self::Interrupted => "the write was interrupted",
            Self::OutOfMemory => "the sink ran out of memory",
            Self::NotConnected => "the sink is not connected",
            Self::TimedOut => "the write timed out",
            Self::Other => "the sink failed",
        })
    }
}

impl core::error::Error for WriteError {}

/// Why a [`Buffer`](crate::Buffer) could not hand out writable space.
///
/// # Examples
///
/// ```
/// use io_traits::{Buffer, BufferError, FixedBuffer};
///
/// let mut buf = FixedBuffer::<4>::new();
/// assert!(buf.try_get_writable(3).is_ok());
/// let full = buf.try_get_writable(2).unwrap_err();
/// assert_eq!(full, BufferError::CapacityExceeded { requested: 2, available: 1 });
/// assert_eq!(full.to_string(), "buffer full: 2 bytes requested, 1 available");
/// assert_eq!(
///     BufferError::NoFreeSlot.to_string(),
///     "no free slot: every slot is lent to a message still alive"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BufferError {
    /// The buffer's fixed storage has room for only `available` more bytes of
    /// the pending message, but `requested` were asked for.
    CapacityExceeded {
        /// Bytes asked for.
        requested: usize,
        /// Bytes still free for the pending message.
        available: usize,
    },
    /// Growing the buffer failed: the allocator refused, or the size overflowed.
    OutOfMemory,
    /// A new message needs a slot of its own and every slot is lent: the
    /// buffer lends finished messages out and can track only so many at
    /// once (8 for a pool with the default slot map), whatever bytes are
    /// free. Dropping a handed-out message frees its slot.
    NoFreeSlot,
}

impl fmt::Display for BufferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CapacityExceeded {
                requested,
                available,
            } => write!(
                f,
                "buffer full: {requested} bytes requested, {available} available"
            ),
            Self::OutOfMemory => f.write_str("buffer could not allocate memory"),
            Self::NoFreeSlot => {
                f.write_str("no free slot: every slot is lent to a message still alive")
            }
        }
    }
}

impl core::error::Error for BufferError {}
