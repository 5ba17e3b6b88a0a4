//! Error types: the per-byte-range [`ReadErrorKind`] and the configuration errors.

use core::fmt;

/// Why a byte range of a read failed.
///
/// Every failed range of every op carries one of these; a batch never fails as
/// a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The address is not mapped (no page, no sector behind it).
    Unmapped,
    /// The address lies past the end of the device, file or memory.
    OutOfBounds,
    /// The backend is not allowed to read this address.
    PermissionDenied,
    /// The medium or transport reported an error.
    Io,
    /// The backend gave up waiting.
    TimedOut,
    /// `address + length` of the op does not fit in a `u64`; nothing was read.
    AddressOverflow,
    /// The backend accepted none of a non-empty batch, so the fragments still
    /// waiting in the window were not attempted.
    Rejected,
    /// The backend reported fewer bytes than asked without saying why, or did
    /// not report an op it accepted.
    Incomplete,
    /// Any other backend failure.
    Other,
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unmapped => "address not mapped",
            Self::OutOfBounds => "address past the end of the source",
            Self::PermissionDenied => "permission denied",
            Self::Io => "I/O error",
            Self::TimedOut => "timed out",
            Self::AddressOverflow => "address + length overflows u64",
            Self::Rejected => "backend accepted no ops",
            Self::Incomplete => "backend reported a short read without a cause",
            Self::Other => "backend error",
        })
    }
}

impl core::error::Error for ReadErrorKind {}

/// A [`Geometry`](crate::Geometry) that cannot describe a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeometryError {
    /// The split boundary is zero or not a power of two.
    BadBoundary(u64),
    /// The maximum transfer size is zero.
    ZeroTransfer,
    /// The most ops per call is zero.
    ZeroOps,
}

impl fmt::Display for GeometryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadBoundary(b) => write!(f, "boundary {b} is not a non-zero power of two"),
            Self::ZeroTransfer => f.write_str("maximum transfer size is zero"),
            Self::ZeroOps => f.write_str("maximum ops per call is zero"),
        }
    }
}

impl core::error::Error for GeometryError {}

/// The fault map of a [`MemoryBackend`](crate::backends::MemoryBackend) has no
/// room for another fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultMapError {
    /// Every slot of the fault map is taken.
    Full {
        /// The number of slots.
        capacity: usize,
    },
}

impl fmt::Display for FaultMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full { capacity } => write!(f, "fault map full ({capacity} faults)"),
        }
    }
}

impl core::error::Error for FaultMapError {}
