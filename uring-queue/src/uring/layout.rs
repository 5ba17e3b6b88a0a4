//! The wire layout of a connection: its header, the sizes it is made from
//! ([`Config`]), and where its parts sit.
//!
//! | offset | size | what |
//! |---|---|---|
//! | 0 | 64 | header: magic `"URQU"`, version, state, offsets and sizes of the parts |
//! | 128 | 512 | the [`Link`]: client lines (wake flag, closed, epoch, pid; heartbeat on a line of its own), then the server's |
//! | 640 | `sq_size` | submission ring (a [`SharedRing`] of [`Sqe`], with its own header) |
//! | next multiple of 128 | `cq_size` | completion ring ([`SharedRing`] of [`Cqe`]) |
//! | next multiple of 4096 | `payload_size` | payload area |

#[cfg(doc)]
use super::Uring;
use super::entry::{Cqe, Sqe};
use super::kind::NotifierKind;
use super::link::Link;
use super::payload::BLOCK_ALIGN;
use crate::layout::{self, LayoutId, Part, Stamp};
use crate::loom::sync::atomic::{AtomicU32, Ordering};
use crate::{CapacityError, RegionError, SharedRing};
use core::mem::{align_of, size_of};

/// First word of a connection region: `"URQU"` in memory order.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Error, URING_MAGIC, Uring};
/// use uring_queue::{AlignedBuf, RegionError, SHARED_RING_MAGIC, SharedRing};
///
/// assert_eq!(&URING_MAGIC.to_ne_bytes(), b"URQU");
/// let mut mem = AlignedBuf::zeroed(4096).unwrap();
/// // A shared ring's region is no connection.
/// SharedRing::<u64>::init(mem.region(), 16).unwrap();
/// let found = SHARED_RING_MAGIC;
/// assert_eq!(
///     Uring::attach(mem.region()).unwrap_err(),
///     Error::Region(RegionError::BadMagic { found })
/// );
/// # }
/// ```
pub const URING_MAGIC: u32 = u32::from_ne_bytes(*b"URQU");

/// Version of the connection layout, the header's second word. An attacher
/// refuses any other (`RegionError::BadVersion`).
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "alloc")] {
/// use uring_queue::uring::{Config, URING_VERSION, Uring};
/// use uring_queue::AlignedBuf;
///
/// let mut mem = AlignedBuf::zeroed(8192).unwrap();
/// Uring::init(mem.region(), Config::new(4, 4, 0)).unwrap();
/// assert_eq!(mem[4..8], URING_VERSION.to_ne_bytes());
/// # }
/// ```
pub const URING_VERSION: u32 = 3;

const ID: LayoutId = LayoutId::new(URING_MAGIC, URING_VERSION);

/// Where the [`Link`] sits.
pub(super) const LINK_OFFSET: usize = 128;
const RINGS_OFFSET: usize = 640;
/// The rings start on lines of their own.
const RING_ALIGN: usize = 128;
const PAYLOAD_ALIGN: usize = 4096;

/// The connection's header. Every field is an atomic word, so a peer
/// writing it concurrently is a race on values, never on memory safety.
#[repr(C)]
pub(super) struct Header {
    stamp: Stamp,
    sq_offset: AtomicU32,
    sq_size: AtomicU32,
    cq_offset: AtomicU32,
    cq_size: AtomicU32,
    payload_offset: AtomicU32,
    payload_size: AtomicU32,
    /// The [`NotifierKind`] both sides use (0, [`NotifierKind::Word`], in
    /// regions laid out before it was recorded).
    notifier: AtomicU32,
    reserved: [AtomicU32; 6],
}

// SAFETY: the stamp and every other field are atomic words.
unsafe impl layout::Header for Header {}

const _: () = assert!(size_of::<Header>() == 64);
const _: () = assert!(size_of::<Link>() == 512 && align_of::<Link>() <= super::URING_ALIGN);
const _: () = assert!(LINK_OFFSET + size_of::<Link>() == RINGS_OFFSET);

impl Header {
    /// Publishes the layout written by [`Layout::write`], once the parts are
    /// set up too (see [`Stamp::publish`]).
    pub(super) fn publish(&self) {
        self.stamp.publish();
    }
}

/// The sizes of a connection.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{Config, Uring};
///
/// let config = Config::new(64, 64, 1 << 20);
/// let size = Uring::required_size(&config).unwrap();
/// assert!(size > 1 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Submission ring capacity (a power of two).
    pub sq_entries: usize,
    /// Completion ring capacity (a power of two): the client's credits.
    pub cq_entries: usize,
    /// Bytes of payload area (less than 4 GiB).
    pub payload_bytes: usize,
    /// How many pops the server's submission-ring consumer may leave
    /// unpublished (1 to `sq_entries`, default 1): the largest `K` of
    /// [`Uring::into_deferred_server`].
    pub sq_release_every: usize,
    /// How many pops the client's completion-ring consumer may leave
    /// unpublished (1 to `cq_entries`, default 1): the largest `K` of
    /// [`Uring::into_deferred_client`].
    pub cq_release_every: usize,
    /// How both sides sleep and wake (default [`NotifierKind::Word`]);
    /// [`Uring::attach_with`] refuses another.
    pub notifier: NotifierKind,
}

impl Config {
    /// A configuration whose consumers publish on every pop.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = uring_queue::uring::Config::new(8, 16, 4096);
    /// assert_eq!((c.sq_entries, c.cq_entries, c.payload_bytes), (8, 16, 4096));
    /// assert_eq!((c.sq_release_every, c.cq_release_every), (1, 1));
    /// ```
    pub const fn new(sq_entries: usize, cq_entries: usize, payload_bytes: usize) -> Self {
        Self {
            sq_entries,
            cq_entries,
            payload_bytes,
            sq_release_every: 1,
            cq_release_every: 1,
            notifier: NotifierKind::Word,
        }
    }

    /// The same configuration with the sides waking through `kind` (for
    /// `EventFd`, feature `std`: [`NotifierKind::EventFd`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, NotifierKind};
    ///
    /// let c = Config::new(8, 8, 0).with_notifier(NotifierKind::EventFd);
    /// assert_eq!(c.notifier, NotifierKind::EventFd);
    /// assert_eq!(Config::new(8, 8, 0).notifier, NotifierKind::Word);
    /// ```
    #[must_use]
    pub const fn with_notifier(mut self, kind: NotifierKind) -> Self {
        self.notifier = kind;
        self
    }

    /// The same configuration with the rings' release intervals: the
    /// server's consumer of the submission ring may publish its head only
    /// every `sq` pops, the client's consumer of the completion ring every
    /// `cq` pops (see [`Consumer`](crate::Consumer), "Release modes").
    /// [`Uring::init`] records them in the rings' headers; a side then takes
    /// its role with [`Uring::into_deferred_server`] or
    /// [`Uring::into_deferred_client`]. Credits stay exact: each side
    /// publishes its inbound ring before every push to its outbound ring
    /// and before it parks.
    ///
    /// Each interval must lie in `1..=` its ring's capacity, or
    /// [`Uring::init`] and [`Uring::required_size`] refuse the configuration
    /// with [`RegionError::ReleaseInterval`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::RegionError;
    ///
    /// let c = Config::new(8, 16, 4096).with_release_every(4, 16);
    /// assert_eq!((c.sq_release_every, c.cq_release_every), (4, 16));
    /// assert_eq!(
    ///     Uring::required_size(&Config::new(8, 16, 0).with_release_every(9, 1)),
    ///     Err(RegionError::ReleaseInterval { found: 9, max: 8 })
    /// );
    /// ```
    #[must_use]
    pub const fn with_release_every(mut self, sq: usize, cq: usize) -> Self {
        self.sq_release_every = sq;
        self.cq_release_every = cq;
        self
    }
}

/// Where the parts are, as offsets from the region's start: `(offset,
/// size)` of each.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub(super) sq: (usize, usize),
    pub(super) cq: (usize, usize),
    pub(super) payload: (usize, usize),
    /// The recorded [`NotifierKind`]'s word.
    pub(super) notifier: u32,
}

impl Layout {
    /// The layout `init` writes for `config`.
    ///
    /// # Errors
    ///
    /// The rings' [`RegionError::Capacity`], [`RegionError::ReleaseInterval`],
    /// and [`CapacityError::TooLarge`] for a payload area of 4 GiB or more,
    /// rings that together end beyond 4 GiB, or (32-bit targets) a payload
    /// area that would end past `usize::MAX`.
    pub(super) fn canonical(config: &Config) -> Result<Self, RegionError> {
        let sq_size = SharedRing::<Sqe>::required_size(config.sq_entries)?;
        let cq_size = SharedRing::<Cqe>::required_size(config.cq_entries)?;
        layout::check_release_interval(config.sq_release_every, config.sq_entries)?;
        layout::check_release_interval(config.cq_release_every, config.cq_entries)?;
        let max = u32::MAX as usize;
        if config.payload_bytes > max {
            return Err(CapacityError::TooLarge {
                capacity: config.payload_bytes,
                max,
            }
            .into());
        }
        let sq_end = RINGS_OFFSET.checked_add(sq_size);
        let cq_offset = sq_end.and_then(|e| e.checked_next_multiple_of(RING_ALIGN));
        let payload_offset = cq_offset
            .and_then(|o| o.checked_add(cq_size))
            .and_then(|e| e.checked_next_multiple_of(PAYLOAD_ALIGN))
            .filter(|&o| o <= max);
        let (Some(cq_offset), Some(payload_offset)) = (cq_offset, payload_offset) else {
            // The rings alone reach past 32-bit offsets.
            return Err(CapacityError::TooLarge {
                capacity: sq_size.saturating_add(cq_size),
                max,
            }
            .into());
        };
        // With a 32-bit `usize`, a payload area near 4 GiB after the rings
        // would end past `usize::MAX`, and `total` would wrap.
        if payload_offset.checked_add(config.payload_bytes).is_none() {
            return Err(CapacityError::TooLarge {
                capacity: config.payload_bytes,
                max: usize::MAX - payload_offset,
            }
            .into());
        }
        Ok(Self {
            sq: (RINGS_OFFSET, sq_size),
            cq: (cq_offset, cq_size),
            payload: (payload_offset, config.payload_bytes),
            notifier: config.notifier as u32,
        })
    }

    /// Bytes the layout covers (`canonical` checked that the sum fits).
    pub(super) fn total(&self) -> usize {
        self.payload.0 + self.payload.1
    }

    /// Writes the layout into `h`, stamped but not yet published.
    pub(super) fn write(&self, h: &Header) {
        h.stamp.begin(ID);
        layout::store_word(&h.sq_offset, self.sq.0);
        layout::store_word(&h.sq_size, self.sq.1);
        layout::store_word(&h.cq_offset, self.cq.0);
        layout::store_word(&h.cq_size, self.cq.1);
        layout::store_word(&h.payload_offset, self.payload.0);
        layout::store_word(&h.payload_size, self.payload.1);
        h.notifier.store(self.notifier, Ordering::Relaxed);
        for word in &h.reserved {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Reads the layout a peer published in `h`, checking it against a
    /// region of `len` bytes: the parts aligned, apart from each other and
    /// from the header and link, and inside the region.
    ///
    /// # Errors
    ///
    /// The stamp's errors, [`RegionError::BadOffsets`], then
    /// [`RegionError::TooSmall`].
    pub(super) fn read(h: &Header, len: usize) -> Result<Self, RegionError> {
        h.stamp.check(ID)?;
        let word = |w: &AtomicU32| w.load(Ordering::Relaxed) as usize;
        let layout = Self {
            sq: (word(&h.sq_offset), word(&h.sq_size)),
            cq: (word(&h.cq_offset), word(&h.cq_size)),
            payload: (word(&h.payload_offset), word(&h.payload_size)),
            notifier: h.notifier.load(Ordering::Relaxed),
        };
        let part = |(start, len), align| Part { start, len, align };
        let end = layout::check_parts(&[
            part((0, RINGS_OFFSET), 1),
            part(layout.sq, RING_ALIGN),
            part(layout.cq, RING_ALIGN),
            part(layout.payload, BLOCK_ALIGN),
        ])?;
        layout::check_region_len(end, len)?;
        Ok(layout)
    }
}
