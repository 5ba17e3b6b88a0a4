//! Errors: one enum per kind of operation, one variant per cause.

use core::fmt;

/// Why a ring operation did not happen.
///
/// # Examples
///
/// ```
/// use uring_queue::{RingError, Ring};
///
/// let mut ring = Ring::<u32, 2>::new();
/// let (mut tx, mut rx) = ring.split();
/// assert_eq!(rx.pop(), Err(RingError::Empty));
/// tx.push(1).unwrap();
/// tx.push(2).unwrap();
/// assert_eq!(tx.push(3).map_err(RingError::from), Err(RingError::Full));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RingError {
    /// No free slot: the consumer has not caught up.
    Full,
    /// Nothing to read.
    Empty,
    /// Fewer slots (or items) than requested are available right now.
    Insufficient {
        /// How many there are.
        available: usize,
    },
    /// The request can never be satisfied by this ring, whatever the consumer
    /// does (a record longer than [`FrameProducer::max_len`](crate::FrameProducer::max_len)).
    TooLarge {
        /// The largest request the ring accepts.
        max: usize,
    },
    /// The other side's index or a record header broke the ring's invariants.
    /// Only a peer that writes to shared memory outside the protocol can cause
    /// this. It stays latched: every later operation on this half fails with it.
    Corrupted,
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => f.write_str("ring is full"),
            Self::Empty => f.write_str("ring is empty"),
            Self::Insufficient { available } => {
                write!(f, "only {available} available, fewer than requested")
            }
            Self::TooLarge { max } => write!(f, "request exceeds the ring's limit of {max}"),
            Self::Corrupted => f.write_str("shared ring state is corrupted"),
        }
    }
}

impl core::error::Error for RingError {}

/// Why a capacity was refused: the one capacity error of every storage
/// (`HeapRing`, [`SharedRing`](crate::SharedRing), and, inside
/// [`RegionError::Capacity`], the shared-memory layouts).
///
/// # Examples
///
/// ```
/// use uring_queue::{CapacityError, MAX_CAPACITY, RegionError, SharedRing};
///
/// assert_eq!(
///     SharedRing::<u64>::required_size(3),
///     Err(RegionError::Capacity(CapacityError::NotPowerOfTwo { capacity: 3 }))
/// );
/// let e = CapacityError::TooLarge { capacity: 2 * MAX_CAPACITY, max: MAX_CAPACITY };
/// assert_eq!(e.to_string(), "capacity 4294967296 exceeds the limit of 2147483648");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CapacityError {
    /// Capacities must be powers of two (and not zero).
    NotPowerOfTwo {
        /// The capacity asked for.
        capacity: usize,
    },
    /// Larger than this storage can hold: a ring's capacity above
    /// [`MAX_CAPACITY`](crate::MAX_CAPACITY), or one (or a payload area, in
    /// bytes) whose layout would not fit the 32-bit offsets of a region.
    TooLarge {
        /// The capacity asked for.
        capacity: usize,
        /// The largest one accepted here.
        max: usize,
    },
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPowerOfTwo { capacity } => {
                write!(f, "capacity {capacity} is not a power of two")
            }
            Self::TooLarge { capacity, max } => {
                write!(f, "capacity {capacity} exceeds the limit of {max}")
            }
        }
    }
}

impl core::error::Error for CapacityError {}

/// Why a shared region could not be initialised or attached.
///
/// # Examples
///
/// ```
/// use uring_queue::{Region, RegionError, SharedRing};
///
/// let mut mem = [0u64; 8];
/// let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
/// // A region nobody initialised is refused, and worth retrying later.
/// let e = SharedRing::<u32>::attach(region).unwrap_err();
/// assert_eq!(e, RegionError::NotReady { state: 0 });
/// assert_eq!(e.to_string(), "region is not ready yet (state 0x00000000)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionError {
    /// The region is smaller than the header, or than the layout needs.
    TooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        actual: usize,
    },
    /// The region's start is not aligned enough for the header or the elements.
    Misaligned {
        /// Alignment needed.
        align: usize,
    },
    /// The header does not start with this crate's magic number.
    BadMagic {
        /// The number found.
        found: u32,
    },
    /// The header was written by an incompatible layout version.
    BadVersion {
        /// The version found.
        found: u32,
    },
    /// The ring was set up for elements of another size or alignment.
    ElementLayout {
        /// Element size recorded in the header.
        size: u32,
        /// Element alignment recorded in the header.
        align: u32,
    },
    /// A release interval (how many pops a consumer may leave unpublished)
    /// that is zero or above its limit: the capacity, for one recorded in a
    /// header or asked of `init_deferred`; the recorded one, for a consumer.
    ReleaseInterval {
        /// The interval found or asked for.
        found: usize,
        /// The largest one allowed here.
        max: usize,
    },
    /// The capacity found in a header, or asked for, was refused.
    Capacity(CapacityError),
    /// The header's offsets overlap, are misaligned or point outside the region.
    BadOffsets,
    /// The creator has not finished initialising the region (yet).
    NotReady {
        /// The init state found.
        state: u32,
    },
    /// The indices in the region already break the ring's invariants.
    Corrupted,
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooSmall { needed, actual } => {
                write!(f, "region of {actual} bytes is too small, {needed} needed")
            }
            Self::Misaligned { align } => write!(f, "region is not aligned to {align} bytes"),
            Self::BadMagic { found } => write!(f, "bad magic number {found:#010x}"),
            Self::BadVersion { found } => write!(f, "unsupported layout version {found}"),
            Self::ElementLayout { size, align } => write!(
                f,
                "region holds elements of size {size} and alignment {align}, \
                 not this element type"
            ),
            Self::ReleaseInterval { found, max } => {
                write!(f, "release interval {found} is not within 1..={max}")
            }
            Self::Capacity(e) => fmt::Display::fmt(e, f),
            Self::BadOffsets => f.write_str("header offsets are inconsistent"),
            Self::NotReady { state } => {
                write!(f, "region is not ready yet (state {state:#010x})")
            }
            Self::Corrupted => f.write_str("ring indices in the region are inconsistent"),
        }
    }
}

impl core::error::Error for RegionError {}

impl From<CapacityError> for RegionError {
    fn from(e: CapacityError) -> Self {
        Self::Capacity(e)
    }
}
