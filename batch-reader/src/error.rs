//! Error types: the per-byte-range [`ReadErrorKind`] and the configuration errors.

use core::fmt;

/// Why a byte range of a read failed.
///
/// Every failed range of every op carries one of these; a batch never fails as
/// a whole.
///
/// # Examples
///
/// ```
/// use batch_reader::{backends::MemoryBackend, Geometry, PartialRead, ReadErrorKind, Reader};
///
/// let mem = [0u8; 16];
/// let backend = MemoryBackend::new(&mem, Geometry::new(None, 16, 8)?);
/// let mut reader: Reader<_, _> = Reader::new(backend, [0u8; 0]);
/// assert_eq!(reader.read_val::<u32>(14), Err(ReadErrorKind::OutOfBounds));
/// let s = reader.read_buf(u64::MAX - 1, &mut [0u8; 4]);
/// assert_eq!(s.first_error(), Some(PartialRead { valid: 0, kind: ReadErrorKind::AddressOverflow }));
/// assert_eq!(ReadErrorKind::OutOfBounds.to_string(), "address past the end of the source");
/// # Ok::<(), batch_reader::GeometryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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

/// Where a read first failed: the bytes before `valid` were read and the
/// byte at `valid` failed with `kind`. Every read layer reports a failure
/// as this: [`ReadSummary::first_error`](crate::ReadSummary::first_error),
/// [`Completion::first_error`](crate::Completion::first_error) (offsets
/// within the op), and the error of [`AsyncReader::read`](crate::AsyncReader::read).
///
/// For an [`AsyncReader`](crate::AsyncReader) read, from `valid` on the
/// buffer holds what it held before, except after a read too large for the
/// staging space, which goes straight into the buffer: there it may also
/// hold bytes read past the failure.
///
/// # Examples
///
/// ```
/// use batch_reader::{PartialRead, ReadErrorKind};
///
/// let e = PartialRead { valid: 3, kind: ReadErrorKind::Unmapped };
/// assert_eq!(e.to_string(), "read failed after 3 bytes: address not mapped");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PartialRead {
    /// How many bytes, from the start of the buffer, were read.
    pub valid: usize,
    /// Why the byte at `valid` could not be read.
    pub kind: ReadErrorKind,
}

impl fmt::Display for PartialRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read failed after {} bytes: {}", self.valid, self.kind)
    }
}

impl core::error::Error for PartialRead {}

/// A [`Geometry`](crate::Geometry) that cannot describe a backend.
///
/// # Examples
///
/// ```
/// use batch_reader::{Geometry, GeometryError};
///
/// assert_eq!(Geometry::new(Some(0), 64, 1), Err(GeometryError::BadBoundary(0)));
/// assert_eq!(Geometry::new(Some(48), 64, 1), Err(GeometryError::BadBoundary(48)));
/// assert_eq!(Geometry::new(None, 0, 1), Err(GeometryError::ZeroTransfer));
/// assert_eq!(Geometry::new(None, 64, 0), Err(GeometryError::ZeroOps));
/// assert_eq!(GeometryError::ZeroOps.to_string(), "maximum ops per call is zero");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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

/// A fault a [`Faulty`](crate::backends::Faulty) backend cannot take.
///
/// # Examples
///
/// ```
/// use batch_reader::backends::{Faulty, MemoryBackend};
/// use batch_reader::{FaultMapError, Geometry, ReadErrorKind};
///
/// let inner = MemoryBackend::new(&[], Geometry::new(None, 16, 1)?);
/// let mut backend = Faulty::<_, 2>::with_room(inner);
/// backend.inject_fault(0..1, ReadErrorKind::Io)?;
/// backend.inject_fault(1..2, ReadErrorKind::Io)?;
/// let err = backend.inject_fault(2..3, ReadErrorKind::Io).unwrap_err();
/// assert_eq!(err, FaultMapError::Full { capacity: 2 });
/// assert_eq!(err.to_string(), "fault map full (2 faults)");
/// let err = backend.inject_fault(10..5, ReadErrorKind::Io).unwrap_err();
/// assert_eq!(err.to_string(), "fault range 10..5 ends before it starts");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FaultMapError {
    /// Every slot of the fault map is taken.
    Full {
        /// The number of slots.
        capacity: usize,
    },
    /// The range holds no address (`start == end`).
    EmptyRange {
        /// Where it starts and ends.
        at: u64,
    },
    /// The range ends before it starts.
    ReversedRange {
        /// Its start.
        start: u64,
        /// Its end, below `start`.
        end: u64,
    },
}

impl fmt::Display for FaultMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full { capacity } => write!(f, "fault map full ({capacity} faults)"),
            Self::EmptyRange { at } => write!(f, "fault range {at}..{at} holds no address"),
            Self::ReversedRange { start, end } => {
                write!(f, "fault range {start}..{end} ends before it starts")
            }
        }
    }
}

impl core::error::Error for FaultMapError {}
