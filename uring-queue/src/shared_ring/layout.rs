//! The wire layout of a shared ring: its header and where its parts sit.
//!
//! All offsets are from the region's start, all numbers native-endian
//! `u32`s (see `docs/uring-queue.md`):
//!
//! | offset | size | what |
//! |---|---|---|
//! | 0 | 64 | header: magic, version, init state, element layout, capacity, offsets, total size, release interval |
//! | 128 | 8 | producer line: tail, closed flag |
//! | 256 | 8 | consumer line: head, closed flag |
//! | 384, rounded up to the element alignment | capacity × element size | slots |

use crate::layout::{self, LayoutId, Part, Stamp};
use crate::loom::sync::atomic::{AtomicU32, Ordering};
use crate::raw::{IndexLine, MAX_CAPACITY, check_capacity};
use crate::{CapacityError, RegionError};
use core::mem::{align_of, offset_of, size_of};

/// First word of a shared ring's region: `"URQR"` in memory order.
///
/// # Examples
///
/// ```
/// use uring_queue::{Region, SHARED_RING_MAGIC, SharedRing};
/// use zerocopy::IntoBytes;
///
/// assert_eq!(&SHARED_RING_MAGIC.to_ne_bytes(), b"URQR");
/// let mut mem = [0u64; 64];
/// SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16).unwrap();
/// // The header opens with it.
/// assert_eq!(mem.as_bytes()[..4], SHARED_RING_MAGIC.to_ne_bytes());
/// ```
pub const SHARED_RING_MAGIC: u32 = u32::from_ne_bytes(*b"URQR");

/// Version of the shared ring's layout.
///
/// # Examples
///
/// ```
/// use uring_queue::{Region, RegionError, SHARED_RING_VERSION, SharedRing};
/// use zerocopy::IntoBytes;
///
/// let mut mem = [0u64; 64];
/// SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16).unwrap();
/// // The version is the header's second word; another one is refused.
/// mem.as_mut_bytes()[4..8].copy_from_slice(&(SHARED_RING_VERSION + 1).to_ne_bytes());
/// assert_eq!(
///     SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes())).unwrap_err(),
///     RegionError::BadVersion { found: SHARED_RING_VERSION + 1 }
/// );
/// ```
// 2: the release interval in the word after `total_size` (reserved, zero, in 1).
pub const SHARED_RING_VERSION: u32 = 2;

const ID: LayoutId = LayoutId::new(SHARED_RING_MAGIC, SHARED_RING_VERSION);

pub(super) const HEADER_SIZE: usize = size_of::<Header>();
const PRODUCER_OFFSET: usize = 128;
const CONSUMER_OFFSET: usize = 256;
const DATA_OFFSET: usize = 384;

/// The region's header. Every field is an atomic word, so a peer writing it
/// concurrently is a race on values, never on memory safety.
#[repr(C)]
#[derive(Debug)]
pub(super) struct Header {
    stamp: Stamp,
    elem_size: AtomicU32,
    elem_align: AtomicU32,
    capacity: AtomicU32,
    producer_offset: AtomicU32,
    consumer_offset: AtomicU32,
    data_offset: AtomicU32,
    total_size: AtomicU32,
    /// How many pops the consumer may leave unpublished (1: none), in
    /// `1..=capacity`: what the producer can rely on (see `Consumer`).
    release_every: AtomicU32,
    reserved: [AtomicU32; 5],
}

// SAFETY: the stamp and every other field are atomic words.
unsafe impl layout::Header for Header {}

impl Header {
    /// Publishes the layout written by [`Layout::write`] (see
    /// [`Stamp::publish`]).
    pub(super) fn publish(&self) {
        self.stamp.publish();
    }
}

const _: () = assert!(HEADER_SIZE == 64 && HEADER_SIZE <= PRODUCER_OFFSET);
const _: () = assert!(offset_of!(Header, elem_size) == 12);
const _: () = assert!(offset_of!(Header, total_size) == 36);
const _: () = assert!(offset_of!(Header, release_every) == 40);
const _: () = assert!(size_of::<IndexLine>() == 8 && align_of::<IndexLine>() == 4);

/// Where the parts of a ring sit in a region, as offsets, with its capacity
/// and release interval.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub(super) capacity: u32,
    pub(super) producer: usize,
    pub(super) consumer: usize,
    pub(super) data: usize,
    pub(super) total: usize,
    pub(super) release_every: u32,
}

impl Layout {
    /// The layout `init` writes.
    ///
    /// # Errors
    ///
    /// [`RegionError::Capacity`], then [`RegionError::ReleaseInterval`].
    pub(super) fn canonical<T>(capacity: usize, release_every: usize) -> Result<Self, RegionError> {
        let cap = check_capacity(capacity)?;
        let data = DATA_OFFSET.next_multiple_of(align_of::<T>());
        let total = size_of::<T>()
            .checked_mul(capacity)
            .and_then(|d| d.checked_add(data))
            .filter(|&t| u32::try_from(t).is_ok())
            .ok_or(CapacityError::TooLarge {
                capacity,
                max: largest_capacity(size_of::<T>(), data),
            })?;
        layout::check_release_interval(release_every, capacity)?;
        Ok(Self {
            capacity: cap,
            producer: PRODUCER_OFFSET,
            consumer: CONSUMER_OFFSET,
            data,
            total,
            // At most the capacity, which fits.
            release_every: release_every as u32,
        })
    }

    /// Writes the layout into `h`, stamped but not yet published (the
    /// creator publishes once the index lines are reset too).
    pub(super) fn write<T>(&self, h: &Header) {
        self.write_elements(h, size_of::<T>(), align_of::<T>());
    }

    /// [`write`](Self::write) for elements of `size` and `align` bytes: one
    /// copy of the code for every element type (kept out of line so that
    /// the rings of two element types share it).
    #[inline(never)]
    fn write_elements(&self, h: &Header, size: usize, align: usize) {
        h.stamp.begin(ID);
        // `canonical` checked that the size fits; the alignment is no larger.
        layout::store_word(&h.elem_size, size);
        layout::store_word(&h.elem_align, align);
        h.capacity.store(self.capacity, Ordering::Relaxed);
        layout::store_word(&h.producer_offset, self.producer);
        layout::store_word(&h.consumer_offset, self.consumer);
        layout::store_word(&h.data_offset, self.data);
        layout::store_word(&h.total_size, self.total);
        h.release_every.store(self.release_every, Ordering::Relaxed);
        for r in &h.reserved {
            r.store(0, Ordering::Relaxed);
        }
    }

    /// Reads the layout a peer published in `h`, checking it against a
    /// region of `len` bytes and this `T`.
    ///
    /// # Errors
    ///
    /// One [`RegionError`] variant per mismatch, in the order of the header:
    /// the stamp, the element layout, the capacity, the region's size, the
    /// parts, the release interval.
    pub(super) fn read<T>(h: &Header, len: usize) -> Result<Self, RegionError> {
        h.stamp.check(ID)?;
        let word = |w: &AtomicU32| w.load(Ordering::Relaxed);
        let (size, align) = (word(&h.elem_size), word(&h.elem_align));
        if size as usize != size_of::<T>() || align as usize != align_of::<T>() {
            return Err(RegionError::ElementLayout { size, align });
        }
        let capacity = check_capacity(word(&h.capacity) as usize)?;
        let layout = Self {
            capacity,
            producer: word(&h.producer_offset) as usize,
            consumer: word(&h.consumer_offset) as usize,
            data: word(&h.data_offset) as usize,
            total: word(&h.total_size) as usize,
            release_every: word(&h.release_every),
        };
        layout.check::<T>(len)?;
        layout::check_release_interval(layout.release_every as usize, capacity as usize)?;
        Ok(layout)
    }

    /// Checks a layout read from a header against `len` bytes: every part
    /// inside the total, which fits the region, aligned, and apart from
    /// every other.
    fn check<T>(&self, len: usize) -> Result<(), RegionError> {
        layout::check_region_len(self.total, len)?;
        let line = size_of::<IndexLine>();
        let line_align = align_of::<IndexLine>();
        let data_len = size_of::<T>()
            .checked_mul(self.capacity as usize)
            .ok_or(RegionError::BadOffsets)?;
        let end = layout::check_parts(&[
            Part {
                start: 0,
                len: HEADER_SIZE,
                align: 1,
            },
            Part {
                start: self.producer,
                len: line,
                align: line_align,
            },
            Part {
                start: self.consumer,
                len: line,
                align: line_align,
            },
            Part {
                start: self.data,
                len: data_len,
                align: align_of::<T>(),
            },
        ])?;
        if end > self.total {
            return Err(RegionError::BadOffsets);
        }
        Ok(())
    }
}

/// The largest capacity whose slots of `elem` bytes, from offset `data`,
/// keep the ring's total within 32-bit offsets.
fn largest_capacity(elem: usize, data: usize) -> usize {
    let room = (u32::MAX as usize).saturating_sub(data) / elem.max(1);
    if room == 0 {
        0
    } else {
        (1usize << room.ilog2()).min(MAX_CAPACITY)
    }
}
