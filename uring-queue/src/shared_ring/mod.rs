//! A ring inside a caller-provided [`Region`] of bytes, such as memory
//! shared with another process.
//!
//! The peer is not trusted: everything read from the region is validated
//! before it is used to compute an address (`layout`), and the layout is
//! read once, at attach time, into this process's own memory.

mod layout;

pub use layout::{SHARED_RING_MAGIC, SHARED_RING_VERSION};

use crate::loom::cell::AccessTracker;
use crate::loom::sync::atomic::Ordering;
use crate::raw::{IndexLine, RawRing};
use crate::{Consumer, Producer, Region, RegionError};
use core::fmt;
use core::marker::PhantomData;
use core::mem::align_of;
use core::ptr::NonNull;
use layout::{HEADER_SIZE, Header, Layout};
use zerocopy::{FromBytes, IntoBytes};

/// Alignment a shared ring's region needs at its start, at least (more if
/// the element needs it).
///
/// # Examples
///
/// ```
/// use uring_queue::{Region, RegionError, SHARED_RING_ALIGN, SharedRing};
///
/// let mut mem = [0u64; 64];
/// let bytes = zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]);
/// // One byte past an 8-byte boundary is misaligned, even for `u8` elements.
/// assert_eq!(
///     SharedRing::<u8>::init(Region::new(&mut bytes[1..]), 16).unwrap_err(),
///     RegionError::Misaligned { align: SHARED_RING_ALIGN }
/// );
/// assert!(SharedRing::<u8>::init(Region::new(bytes), 16).is_ok());
/// ```
pub const SHARED_RING_ALIGN: usize = 8;

/// The alignment a region for `T` needs at its start.
const fn region_align<T>() -> usize {
    if align_of::<T>() > SHARED_RING_ALIGN {
        align_of::<T>()
    } else {
        SHARED_RING_ALIGN
    }
}

/// A ring set up in (or attached to) a [`Region`]; take one half, or both.
///
/// Elements are plain old data (`Copy + FromBytes + IntoBytes`): a peer can
/// write any bytes into the slots, and every byte pattern must be a valid
/// `T`. Types that own resources go through [`Ring`](crate::Ring) and
/// `HeapRing` only; the bound says so at compile time:
///
/// ```compile_fail
/// let mut mem = [0u64; 64];
/// let region = uring_queue::Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
/// let ring = uring_queue::SharedRing::<Box<u32>>::init(region, 4);
/// ```
///
/// # Examples
///
/// One side initialises, the other attaches: here both in one process, each
/// through its own view of the memory.
///
/// ```
/// use core::ptr::NonNull;
/// use uring_queue::{Region, SharedRing};
///
/// let mut mem = vec![0u64; 256];
/// let bytes = zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]);
/// let (ptr, len) = (NonNull::from(&mut *bytes).cast::<u8>(), bytes.len());
/// // SAFETY: `mem` outlives both views and is not otherwise used meanwhile;
/// // the two views build one producer and one consumer.
/// let (a, b) = unsafe { (Region::from_raw_parts(ptr, len), Region::from_raw_parts(ptr, len)) };
/// let mut tx = SharedRing::<u64>::init(a, 64).unwrap().into_producer();
/// let mut rx = SharedRing::<u64>::attach(b).unwrap().into_consumer();
/// tx.push(1).unwrap();
/// assert_eq!(rx.pop(), Ok(1));
/// ```
pub struct SharedRing<'a, T> {
    raw: RawRing<T>,
    /// The release interval from the header, validated.
    release_every: u32,
    producer_line: NonNull<IndexLine>,
    consumer_line: NonNull<IndexLine>,
    _region: PhantomData<Region<'a>>,
}

impl<T> fmt::Debug for SharedRing<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRing")
            .field("capacity", &self.raw.capacity())
            .field("release_every", &self.release_every)
            .finish_non_exhaustive()
    }
}

impl<'a, T: Copy + FromBytes + IntoBytes> SharedRing<'a, T> {
    /// Bytes a region needs for a ring of `capacity` elements of `T`.
    ///
    /// # Errors
    ///
    /// The capacity errors of [`RegionError`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(uring_queue::SharedRing::<u64>::required_size(16), Ok(384 + 128));
    /// ```
    pub fn required_size(capacity: usize) -> Result<usize, RegionError> {
        Ok(Layout::canonical::<T>(capacity, 1)?.total)
    }

    /// Writes a fresh, empty ring of `capacity` elements into `region`,
    /// publishing it as ready last (Release).
    ///
    /// Anything in the region before is discarded: call this before the peer
    /// attaches, never while a peer uses the region.
    ///
    /// # Errors
    ///
    /// [`RegionError::TooSmall`], [`RegionError::Misaligned`],
    /// [`RegionError::Capacity`].
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, RegionError, SharedRing};
    ///
    /// let mut mem = [0u64; 64];
    /// let bytes = zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]);
    /// // 512 bytes hold the header and 16 `u32`s, but not 128.
    /// assert_eq!(
    ///     SharedRing::<u32>::init(Region::new(bytes), 128).unwrap_err(),
    ///     RegionError::TooSmall { needed: 384 + 512, actual: 512 }
    /// );
    /// let (_tx, rx) = SharedRing::<u32>::init(Region::new(bytes), 16).unwrap().split();
    /// assert_eq!(rx.capacity(), 16);
    /// assert!(rx.is_empty());
    /// ```
    pub fn init(region: Region<'a>, capacity: usize) -> Result<Self, RegionError> {
        Self::init_deferred(region, capacity, 1)
    }

    /// As [`init`](Self::init), recording in the header that the consumer may
    /// leave up to `release_every - 1` pops unpublished (see [`Consumer`],
    /// "Release modes"), so a producer in another process knows what to
    /// expect: `push` never fails while fewer than
    /// `capacity - release_every + 1` elements are queued.
    ///
    /// # Errors
    ///
    /// As for [`init`](Self::init), and [`RegionError::ReleaseInterval`]
    /// unless `1 <= release_every <= capacity`.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, RegionError, SharedRing};
    /// use zerocopy::IntoBytes;
    ///
    /// let mut mem = [0u64; 128];
    /// assert_eq!(
    ///     SharedRing::<u32>::init_deferred(Region::new(mem.as_mut_bytes()), 16, 17).unwrap_err(),
    ///     RegionError::ReleaseInterval { found: 17, max: 16 }
    /// );
    /// SharedRing::<u32>::init_deferred(Region::new(mem.as_mut_bytes()), 16, 8).unwrap();
    /// // The peer reads the interval from the header.
    /// let ring = SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes())).unwrap();
    /// assert_eq!(ring.release_every(), 8);
    /// let mut rx = ring.into_deferred_consumer::<8>().unwrap();
    /// assert!(rx.pop().is_err());
    /// ```
    pub fn init_deferred(
        region: Region<'a>,
        capacity: usize,
        release_every: usize,
    ) -> Result<Self, RegionError> {
        let layout = Layout::canonical::<T>(capacity, release_every)?;
        let h = crate::layout::header::<Header>(&region, layout.total, region_align::<T>())?;
        layout.write::<T>(h);
        let ring = Self::build(&region, layout);
        for line in [ring.producer_line, ring.consumer_line] {
            // SAFETY: `build` derived the line pointers from a validated layout.
            let line = unsafe { line.as_ref() };
            line.index.store(0, Ordering::Relaxed);
            line.closed.store(0, Ordering::Relaxed);
        }
        h.publish();
        Ok(ring)
    }

    /// Attaches to a ring another party initialised in `region`, validating
    /// everything the header says against this region and this `T`.
    ///
    /// # Errors
    ///
    /// One [`RegionError`] variant per mismatch; [`RegionError::NotReady`] is
    /// worth retrying while the creator may still be initialising.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, RegionError, SharedRing};
    /// use zerocopy::IntoBytes;
    ///
    /// let mut mem = [0u64; 64];
    /// let mut tx = SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16)
    ///     .unwrap()
    ///     .into_producer();
    /// tx.push(7).unwrap();
    /// drop(tx);
    /// // The header records the element layout: a `u64` view is refused.
    /// assert_eq!(
    ///     SharedRing::<u64>::attach(Region::new(mem.as_mut_bytes())).unwrap_err(),
    ///     RegionError::ElementLayout { size: 4, align: 4 }
    /// );
    /// let mut rx = SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes()))
    ///     .unwrap()
    ///     .into_consumer();
    /// assert_eq!(rx.pop(), Ok(7));
    /// ```
    pub fn attach(region: Region<'a>) -> Result<Self, RegionError> {
        let h = crate::layout::header::<Header>(&region, HEADER_SIZE, region_align::<T>())?;
        let layout = Layout::read::<T>(h, region.len())?;
        let ring = Self::build(&region, layout);
        let tail = ring.raw.producer().index.load(Ordering::Acquire);
        let head = ring.raw.consumer().index.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > layout.capacity {
            return Err(RegionError::Corrupted);
        }
        Ok(ring)
    }

    /// Builds the view of a layout validated against `region`.
    fn build(region: &Region<'a>, layout: Layout) -> Self {
        let base = region.as_ptr();
        // SAFETY: the layout lies inside the region, each part aligned for its
        // type (checked by `canonical`/`validate` and the alignment of the
        // region's start), so the offsets are in bounds and non-null.
        let (producer, consumer, data) = unsafe {
            (
                NonNull::new_unchecked(base.add(layout.producer).cast::<IndexLine>()),
                NonNull::new_unchecked(base.add(layout.consumer).cast::<IndexLine>()),
                NonNull::new_unchecked(base.add(layout.data).cast::<T>()),
            )
        };
        // SAFETY: as above, and the region's contract: the bytes stay valid for
        // `'a`, are initialised (so valid `T`s, `T: FromBytes`), and this
        // process builds at most one producer and one consumer on them.
        // `AccessTracker` is zero-sized outside loom, so a dangling pointer
        // serves.
        let raw = unsafe {
            RawRing::new(
                producer,
                consumer,
                data,
                NonNull::<AccessTracker>::dangling(),
                layout.capacity,
            )
        };
        Self {
            raw,
            release_every: layout.release_every,
            producer_line: producer,
            consumer_line: consumer,
            _region: PhantomData,
        }
    }

    /// Number of slots.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, SharedRing};
    /// use zerocopy::IntoBytes;
    ///
    /// let mut mem = [0u64; 64];
    /// SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16).unwrap();
    /// // An attached ring takes its capacity from the header.
    /// let ring = SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes())).unwrap();
    /// assert_eq!(ring.capacity(), 16);
    /// ```
    pub fn capacity(&self) -> usize {
        self.raw.capacity() as usize
    }

    /// The release interval recorded in the header: the consumer may leave up
    /// to this many pops, minus one, unpublished. 1 for rings made by
    /// [`init`](Self::init).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, SharedRing};
    /// use zerocopy::IntoBytes;
    ///
    /// let mut mem = [0u64; 64];
    /// let ring = SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16).unwrap();
    /// assert_eq!(ring.release_every(), 1);
    /// ```
    pub fn release_every(&self) -> usize {
        self.release_every as usize
    }

    /// Reads both indices, validated.
    fn indices(&self) -> (u32, u32) {
        let tail = self.raw.producer().index.load(Ordering::Acquire);
        let head = self.raw.consumer().index.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > self.raw.capacity() {
            // Corrupted since attach: start from a state that makes the
            // opposite half's first refresh report it.
            return (head, head);
        }
        (tail, head)
    }

    /// Takes the producer role (marking it open again).
    ///
    /// # Examples
    ///
    /// ```
    /// use core::ptr::NonNull;
    /// use uring_queue::{Region, SharedRing};
    ///
    /// let mut mem = [0u64; 64];
    /// let ptr = NonNull::from(&mut mem).cast::<u8>();
    /// // SAFETY: `mem` outlives both views and is not otherwise used meanwhile;
    /// // the two views build one producer and one consumer.
    /// let (a, b) = unsafe { (Region::from_raw_parts(ptr, 512), Region::from_raw_parts(ptr, 512)) };
    /// let mut rx = SharedRing::<u64>::init(a, 8).unwrap().into_consumer();
    /// let mut tx = SharedRing::<u64>::attach(b).unwrap().into_producer();
    /// tx.push(5).unwrap();
    /// assert_eq!(rx.pop(), Ok(5));
    /// assert!(!rx.is_abandoned());
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// ```
    pub fn into_producer(self) -> Producer<'a, T> {
        let (tail, head) = self.indices();
        self.raw.producer().closed.store(0, Ordering::Relaxed);
        // SAFETY: the region's contract makes this the only producer built on
        // it in this process, valid for `'a`; indices validated just above.
        unsafe { Producer::new(self.raw, tail, head, None) }
    }

    /// Takes the consumer role (marking it open again).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, SharedRing};
    /// use zerocopy::IntoBytes;
    ///
    /// let mut mem = [0u64; 64];
    /// let mut tx = SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16)
    ///     .unwrap()
    ///     .into_producer();
    /// tx.push_slice(&[1, 2]).unwrap();
    /// drop(tx);
    /// // A consumer that attaches later finds what was published before.
    /// let mut rx = SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes()))
    ///     .unwrap()
    ///     .into_consumer();
    /// assert!(rx.is_abandoned());
    /// assert_eq!(rx.pop_slice(&mut [0; 4]), Ok(2));
    /// ```
    pub fn into_consumer(self) -> Consumer<'a, T> {
        let (tail, head) = self.indices();
        self.raw.consumer().closed.store(0, Ordering::Relaxed);
        // SAFETY: as in `into_producer`, for the consumer.
        unsafe { Consumer::new(self.raw, head, tail, None) }
    }

    /// Takes the consumer role as a deferred-release consumer publishing every
    /// `K` pops (see [`Consumer`], "Release modes"). `K` may not exceed the
    /// interval recorded in the header ([`release_every`](Self::release_every)):
    /// that is what the producer was promised.
    ///
    /// # Errors
    ///
    /// [`RegionError::ReleaseInterval`] when `K` exceeds the recorded interval.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, RegionError, SharedRing};
    /// use zerocopy::IntoBytes;
    ///
    /// let mut mem = [0u64; 128];
    /// let region = Region::new(mem.as_mut_bytes());
    /// let ring = SharedRing::<u32>::init_deferred(region, 32, 4).unwrap();
    /// assert_eq!(
    ///     ring.into_deferred_consumer::<8>().unwrap_err(),
    ///     RegionError::ReleaseInterval { found: 8, max: 4 }
    /// );
    /// let ring = SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes())).unwrap();
    /// assert_eq!(ring.into_deferred_consumer::<4>().unwrap().release_every(), 4);
    /// ```
    pub fn into_deferred_consumer<const K: usize>(self) -> Result<Consumer<'a, T, K>, RegionError> {
        crate::layout::check_release_interval(K, self.release_every as usize)?;
        let (tail, head) = self.indices();
        self.raw.consumer().closed.store(0, Ordering::Relaxed);
        // SAFETY: as in `into_producer`, for the consumer.
        Ok(unsafe { Consumer::new(self.raw, head, tail, None) })
    }

    /// Takes both roles, for a ring used within one process.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, SharedRing};
    ///
    /// let mut mem = [0u64; 64];
    /// let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
    /// let (mut tx, mut rx) = SharedRing::<u32>::init(region, 16).unwrap().split();
    /// tx.push_slice(&[1, 2, 3]).unwrap();
    /// assert_eq!(rx.len(), 3);
    /// assert_eq!(rx.pop(), Ok(1));
    /// ```
    pub fn split(self) -> (Producer<'a, T>, Consumer<'a, T>) {
        let (tail, head) = self.indices();
        self.raw.producer().closed.store(0, Ordering::Relaxed);
        self.raw.consumer().closed.store(0, Ordering::Relaxed);
        // SAFETY: as in `into_producer`, for both roles.
        unsafe {
            (
                Producer::new(self.raw, tail, head, None),
                Consumer::new(self.raw, head, tail, None),
            )
        }
    }
}
