//! The request/response layer's errors.

use super::kind::NotifierKind;
use crate::RegionError;
use core::fmt;

/// Why a request/response operation did not happen.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Error;
///
/// use uring_queue::RegionError;
///
/// assert_eq!(Error::PeerGone.to_string(), "the peer closed, exited or restarted");
/// assert_ne!(Error::Busy, Error::Corrupted);
/// // A region error reads as itself.
/// let e = Error::Region(RegionError::Misaligned { align: 128 });
/// assert_eq!(e.to_string(), "region is not aligned to 128 bytes");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The peer closed its side, its process exited, it re-attached (a new
    /// epoch), or its heartbeat went stale. Latched: the connection is over.
    PeerGone,
    /// The peer wrote something that breaks the protocol: an entry naming an
    /// unknown tag, a block outside the payload area, overlapping blocks, a
    /// response longer than its block, or broken ring indices. Latched.
    Corrupted,
    /// Every credit is in use: as many requests are in flight as the
    /// completion ring (or the in-flight table) holds. Retry after a
    /// completion, or use a call that waits.
    Busy,
    /// The payload area has no free range this large right now (or the block
    /// table is full); free blocks and retry.
    NoSpace {
        /// The length asked for.
        len: usize,
    },
    /// Larger than anything this connection can ever hold.
    TooLarge {
        /// The largest length accepted.
        max: usize,
    },
    /// The completion ring is full. An honest client's credits make this
    /// impossible; only a client that submits beyond its credits causes it.
    CompletionRingFull,
    /// The reply has not arrived yet.
    NotReady,
    /// A block or ticket that belongs to another connection (or another
    /// client instance on this one).
    Foreign,
    /// The region could not be set up or attached.
    Region(RegionError),
    /// The region records another way of waking than the attaching side
    /// uses ([`NotifierKind`]): a futex side and an eventfd side would never
    /// wake each other.
    NotifierMismatch {
        /// The kind the attaching side uses.
        expected: NotifierKind,
        /// The word the region records (see [`NotifierKind::from_word`]).
        found: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PeerGone => f.write_str("the peer closed, exited or restarted"),
            Self::Corrupted => f.write_str("the peer broke the protocol"),
            Self::Busy => f.write_str("every credit is in use"),
            Self::NoSpace { len } => write!(f, "no free payload block of {len} bytes"),
            Self::TooLarge { max } => write!(f, "larger than the limit of {max} bytes"),
            Self::CompletionRingFull => f.write_str("the completion ring is full"),
            Self::NotReady => f.write_str("the reply has not arrived yet"),
            Self::Foreign => f.write_str("block or ticket of another connection"),
            // The region's own message says what went wrong with it.
            Self::Region(e) => fmt::Display::fmt(e, f),
            Self::NotifierMismatch { expected, found } => match NotifierKind::from_word(*found) {
                Some(kind) => write!(f, "the region wakes through {kind}, not {expected}"),
                None => write!(f, "the region records an unknown notifier kind {found}"),
            },
        }
    }
}

// No `source`: the one wrapping variant, `Region`, shows its cause in its
// own message already.
impl core::error::Error for Error {}

impl From<RegionError> for Error {
    fn from(e: RegionError) -> Self {
        Self::Region(e)
    }
}

/// An error together with the value the operation took, handed back so that
/// nothing is lost (a request and its blocks, an incoming request).
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Error, Rejected};
///
/// let r = Rejected { error: Error::Busy, value: 5 };
/// assert_eq!(r.into_inner(), 5);
/// ```
#[derive(Debug)]
pub struct Rejected<T> {
    /// Why.
    pub error: Error,
    /// What the operation took.
    pub value: T,
}

impl<T> Rejected<T> {
    /// The value handed back.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Error, Rejected};
    ///
    /// assert_eq!(Rejected { error: Error::Busy, value: "req" }.into_inner(), "req");
    /// ```
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<T: fmt::Debug> core::error::Error for Rejected<T> {}

// The error only, so that `T` (a request, an incoming request) need not be
// `defmt::Format`.
#[cfg(feature = "defmt")]
impl<T> defmt::Format for Rejected<T> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Rejected {{ error: {}, .. }}", self.error);
    }
}

impl<T> From<Rejected<T>> for Error {
    fn from(r: Rejected<T>) -> Self {
        r.error
    }
}
