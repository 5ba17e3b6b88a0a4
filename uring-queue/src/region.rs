//! A ring inside a caller-provided byte region, such as memory shared with
//! another process.
//!
//! Layout (all offsets from the region's start, all numbers native-endian
//! `u32`s; see `docs/uring-queue.md`):
//!
//! | offset | size | what |
//! |---|---|---|
//! | 0 | 64 | [`Header`]: magic, version, init state, element layout, capacity, offsets, total size, release interval |
//! | 128 | 8 | producer line: tail, closed flag |
//! | 256 | 8 | consumer line: head, closed flag |
//! | 384, rounded up to the element alignment | capacity × element size | slots |
//!
//! The peer is not trusted: everything read from the region is validated
//! before it is used to compute an address, and the layout is read once, at
//! attach time, into this process's own memory.

use crate::loom::cell::AccessTracker;
use crate::loom::sync::atomic::{AtomicU32, Ordering};
use crate::raw::{IndexLine, MAX_CAPACITY, RawRing};
use crate::{Consumer, Producer, RegionError};
use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, offset_of, size_of};
use core::ptr::NonNull;
use zerocopy::{FromBytes, IntoBytes};

/// First word of every region: `"URQR"` in memory order.
///
/// # Examples
///
/// ```
/// use uring_queue::{MAGIC, Region, SharedRing};
/// use zerocopy::IntoBytes;
///
/// assert_eq!(&MAGIC.to_ne_bytes(), b"URQR");
/// let mut mem = [0u64; 64];
/// SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16).unwrap();
/// // The header opens with it.
/// assert_eq!(mem.as_bytes()[..4], MAGIC.to_ne_bytes());
/// ```
pub const MAGIC: u32 = u32::from_ne_bytes(*b"URQR");
/// Version of the layout described in this module.
///
/// # Examples
///
/// ```
/// use uring_queue::{Region, RegionError, SharedRing, VERSION};
/// use zerocopy::IntoBytes;
///
/// let mut mem = [0u64; 64];
/// SharedRing::<u32>::init(Region::new(mem.as_mut_bytes()), 16).unwrap();
/// // The version is the header's second word; another one is refused.
/// mem.as_mut_bytes()[4..8].copy_from_slice(&(VERSION + 1).to_ne_bytes());
/// assert_eq!(
///     SharedRing::<u32>::attach(Region::new(mem.as_mut_bytes())).unwrap_err(),
///     RegionError::BadVersion { found: VERSION + 1 }
/// );
/// ```
// 2: the release interval in the word after `total_size` (reserved, zero, in 1).
pub const VERSION: u32 = 2;
/// Alignment the region's start needs at least (more if the element needs it).
///
/// # Examples
///
/// ```
/// use uring_queue::{REGION_ALIGN, Region, RegionError, SharedRing};
///
/// let mut mem = [0u64; 64];
/// let bytes = zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]);
/// // One byte past an 8-byte boundary is misaligned, even for `u8` elements.
/// assert_eq!(
///     SharedRing::<u8>::init(Region::new(&mut bytes[1..]), 16).unwrap_err(),
///     RegionError::Misaligned { align: REGION_ALIGN }
/// );
/// assert!(SharedRing::<u8>::init(Region::new(bytes), 16).is_ok());
/// ```
pub const REGION_ALIGN: usize = 8;

const STATE_INITIALISING: u32 = 1;
const STATE_READY: u32 = 2;

const HEADER_SIZE: usize = size_of::<Header>();
const PRODUCER_OFFSET: usize = 128;
const CONSUMER_OFFSET: usize = 256;
const DATA_OFFSET: usize = 384;

/// The region's header. Every field is an atomic word, so a peer writing it
/// concurrently is a race on values, never on memory safety.
#[repr(C)]
#[derive(Debug)]
struct Header {
    magic: AtomicU32,
    version: AtomicU32,
    /// 0 (zeroed memory): uninitialised; `STATE_INITIALISING`; `STATE_READY`,
    /// stored with Release once everything else is written.
    state: AtomicU32,
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

const _: () = assert!(HEADER_SIZE == 64 && HEADER_SIZE <= PRODUCER_OFFSET);
const _: () = assert!(offset_of!(Header, total_size) == 36);
const _: () = assert!(offset_of!(Header, release_every) == 40);
const _: () = assert!(size_of::<IndexLine>() == 8 && align_of::<IndexLine>() == 4);

/// A byte region a ring can be built in: borrowed memory, or memory shared
/// with another process.
///
/// # Examples
///
/// ```
/// use uring_queue::{Region, SharedRing};
///
/// let mut mem = vec![0u64; 128];
/// let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
/// let (mut tx, mut rx) = SharedRing::<u32>::init(region, 16).unwrap().split();
/// tx.push(9).unwrap();
/// assert_eq!(rx.pop(), Ok(9));
/// ```
pub struct Region<'a> {
    ptr: NonNull<u8>,
    len: usize,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl fmt::Debug for Region<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl<'a> Region<'a> {
    /// A region in memory this process owns exclusively.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, SharedRing};
    ///
    /// // 512 bytes, aligned to 8 bytes by the `u64` elements.
    /// let mut mem = [0u64; 64];
    /// let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
    /// assert_eq!(region.len(), 512);
    /// let ring = SharedRing::<u32>::init(region, 16).unwrap();
    /// assert_eq!(ring.capacity(), 16);
    /// ```
    pub fn new(mem: &'a mut [u8]) -> Self {
        Self {
            // A slice's pointer is never null.
            ptr: NonNull::from(&mut *mem).cast(),
            len: mem.len(),
            _borrow: PhantomData,
        }
    }

    /// A region at `ptr`, typically a shared mapping.
    ///
    /// # Safety
    ///
    /// - `ptr` is valid for reads and writes of `len` initialised bytes for
    ///   `'a`, and no Rust reference to those bytes is used meanwhile;
    /// - within this process, all regions overlapping this one together build
    ///   at most one [`Producer`] and one [`Consumer`] (for example: one side
    ///   calls [`SharedRing::init`] then [`SharedRing::into_producer`], the
    ///   other [`SharedRing::attach`] then [`SharedRing::into_consumer`]).
    ///
    /// Other processes may write anything to the bytes at any time: that is
    /// the threat model the ring is built for (see the crate docs), not a
    /// violation of this contract.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::ptr::NonNull;
    /// use uring_queue::{Region, SharedRing};
    ///
    /// let mut mem = [0u64; 64];
    /// let ptr = NonNull::from(&mut mem).cast::<u8>();
    /// // SAFETY: `mem` outlives the region and is not used otherwise meanwhile;
    /// // one producer and one consumer are built on it.
    /// let region = unsafe { Region::from_raw_parts(ptr, 512) };
    /// assert_eq!(region.as_ptr(), ptr.as_ptr());
    /// let (mut tx, mut rx) = SharedRing::<u64>::init(region, 8).unwrap().split();
    /// tx.push(1).unwrap();
    /// assert_eq!(rx.pop(), Ok(1));
    /// ```
    pub unsafe fn from_raw_parts(ptr: NonNull<u8>, len: usize) -> Self {
        Self {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }

    /// Length in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut mem = [0u8; 100];
    /// assert_eq!(uring_queue::Region::new(&mut mem).len(), 100);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut mem = [0u8; 16];
    /// let (all, rest) = uring_queue::Region::new(&mut mem).split_at(16).unwrap();
    /// assert!(!all.is_empty());
    /// assert!(rest.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's first byte.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut mem = [0u8; 64];
    /// let start = mem.as_mut_ptr();
    /// let (a, b) = uring_queue::Region::new(&mut mem).split_at(16).unwrap();
    /// assert_eq!(a.as_ptr(), start);
    /// assert_eq!(b.as_ptr(), start.wrapping_add(16));
    /// ```
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Cuts the region in two at `mid`, for example to hold one ring per
    /// direction. Keep `mid` a multiple of the alignment the second ring needs.
    ///
    /// # Errors
    ///
    /// [`RegionError::TooSmall`] when `mid > len`.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{Region, RegionError, SharedRing};
    ///
    /// let mut mem = [0u64; 128];
    /// let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
    /// // One ring per direction, each in its own half.
    /// let (a, b) = region.split_at(512).unwrap();
    /// assert_eq!((a.len(), b.len()), (512, 512));
    /// let (mut tx, rx) = SharedRing::<u32>::init(a, 16).unwrap().split();
    /// let (_, replies) = SharedRing::<u32>::init(b, 16).unwrap().split();
    /// tx.push(1).unwrap();
    /// // The rings do not overlap: the element shows in one only.
    /// assert_eq!(rx.len(), 1);
    /// assert!(replies.is_empty());
    ///
    /// let mut small = [0u8; 8];
    /// assert_eq!(
    ///     Region::new(&mut small).split_at(9).unwrap_err(),
    ///     RegionError::TooSmall { needed: 9, actual: 8 }
    /// );
    /// ```
    pub fn split_at(self, mid: usize) -> Result<(Region<'a>, Region<'a>), RegionError> {
        if mid > self.len {
            return Err(RegionError::TooSmall {
                needed: mid,
                actual: self.len,
            });
        }
        // SAFETY: `mid <= len`, so the second part starts inside (or one past)
        // the region and is non-null.
        let second = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(mid)) };
        Ok((
            Region {
                ptr: self.ptr,
                len: mid,
                _borrow: PhantomData,
            },
            Region {
                ptr: second,
                len: self.len - mid,
                _borrow: PhantomData,
            },
        ))
    }

    fn header(&self) -> &Header {
        // SAFETY: callers checked `len >= HEADER_SIZE` and alignment; the
        // header holds only atomics, and the bytes are valid for `'a`.
        unsafe { &*self.ptr.as_ptr().cast::<Header>() }
    }

    fn check_size_and_alignment<T>(&self, needed: usize) -> Result<(), RegionError> {
        if self.len < needed {
            return Err(RegionError::TooSmall {
                needed,
                actual: self.len,
            });
        }
        let align = REGION_ALIGN.max(align_of::<T>());
        if !(self.ptr.as_ptr() as usize).is_multiple_of(align) {
            return Err(RegionError::Misaligned { align });
        }
        Ok(())
    }
}

/// Where the parts of a ring sit in a region, as offsets.
#[derive(Debug, Clone, Copy)]
struct Layout {
    capacity: u32,
    producer: usize,
    consumer: usize,
    data: usize,
    total: usize,
}

impl Layout {
    /// The layout `init` writes.
    fn canonical<T>(capacity: usize) -> Result<Self, RegionError> {
        let cap = check_capacity(capacity)?;
        let data = DATA_OFFSET.next_multiple_of(align_of::<T>());
        let total = size_of::<T>()
            .checked_mul(capacity)
            .and_then(|d| d.checked_add(data))
            .filter(|&t| u32::try_from(t).is_ok())
            .ok_or(RegionError::CapacityTooLarge { capacity })?;
        Ok(Self {
            capacity: cap,
            producer: PRODUCER_OFFSET,
            consumer: CONSUMER_OFFSET,
            data,
            total,
        })
    }

    /// Checks a layout read from a header against `len` bytes: every part in
    /// bounds, aligned, and not overlapping another.
    fn validate<T>(self, len: usize) -> Result<Self, RegionError> {
        if self.total > len {
            return Err(RegionError::TooSmall {
                needed: self.total,
                actual: len,
            });
        }
        let line = size_of::<IndexLine>();
        let data_len = size_of::<T>()
            .checked_mul(self.capacity as usize)
            .ok_or(RegionError::BadOffsets)?;
        let parts = [
            (0, HEADER_SIZE),
            (self.producer, line),
            (self.consumer, line),
            (self.data, data_len),
        ];
        let mut ranges = [(0usize, 0usize); 4];
        for (k, &(start, size)) in parts.iter().enumerate() {
            let end = start.checked_add(size).ok_or(RegionError::BadOffsets)?;
            if end > self.total {
                return Err(RegionError::BadOffsets);
            }
            ranges[k] = (start, end);
        }
        for a in 0..ranges.len() {
            for b in a + 1..ranges.len() {
                let (s1, e1) = ranges[a];
                let (s2, e2) = ranges[b];
                if s1 < e2 && s2 < e1 {
                    return Err(RegionError::BadOffsets);
                }
            }
        }
        if !self.producer.is_multiple_of(align_of::<IndexLine>())
            || !self.consumer.is_multiple_of(align_of::<IndexLine>())
            || !self.data.is_multiple_of(align_of::<T>())
        {
            return Err(RegionError::BadOffsets);
        }
        Ok(self)
    }
}

fn check_capacity(capacity: usize) -> Result<u32, RegionError> {
    if !capacity.is_power_of_two() {
        return Err(RegionError::CapacityNotPowerOfTwo { capacity });
    }
    if capacity > MAX_CAPACITY {
        return Err(RegionError::CapacityTooLarge { capacity });
    }
    Ok(capacity as u32)
}

fn to_u32(v: usize) -> u32 {
    // Only called on offsets of a layout whose total fits in a `u32`.
    u32::try_from(v).unwrap_or(u32::MAX)
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
        Ok(Layout::canonical::<T>(capacity)?.total)
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
    /// [`RegionError::CapacityNotPowerOfTwo`], [`RegionError::CapacityTooLarge`].
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
        let layout = Layout::canonical::<T>(capacity)?;
        if release_every == 0 || release_every > capacity {
            return Err(RegionError::ReleaseInterval {
                found: release_every,
                max: capacity,
            });
        }
        region.check_size_and_alignment::<T>(layout.total)?;
        let h = region.header();
        h.state.store(STATE_INITIALISING, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Relaxed);
        h.version.store(VERSION, Ordering::Relaxed);
        h.elem_size.store(to_u32(size_of::<T>()), Ordering::Relaxed);
        h.elem_align
            .store(to_u32(align_of::<T>()), Ordering::Relaxed);
        h.capacity.store(layout.capacity, Ordering::Relaxed);
        h.producer_offset
            .store(to_u32(layout.producer), Ordering::Relaxed);
        h.consumer_offset
            .store(to_u32(layout.consumer), Ordering::Relaxed);
        h.data_offset.store(to_u32(layout.data), Ordering::Relaxed);
        h.total_size.store(to_u32(layout.total), Ordering::Relaxed);
        h.release_every
            .store(to_u32(release_every), Ordering::Relaxed);
        for r in &h.reserved {
            r.store(0, Ordering::Relaxed);
        }
        let ring = Self::build(&region, layout, to_u32(release_every));
        for line in [ring.producer_line, ring.consumer_line] {
            // SAFETY: `build` derived the line pointers from a validated layout.
            let line = unsafe { line.as_ref() };
            line.index.store(0, Ordering::Relaxed);
            line.closed.store(0, Ordering::Relaxed);
        }
        // Release: a peer that loads "ready" with Acquire sees every store above.
        h.state.store(STATE_READY, Ordering::Release);
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
        region.check_size_and_alignment::<T>(HEADER_SIZE)?;
        let h = region.header();
        // Acquire: pairs with `init`'s Release, so the fields below are the
        // creator's (unless a hostile peer rewrites them, which validation
        // below contains).
        let state = h.state.load(Ordering::Acquire);
        if state != STATE_READY {
            return Err(RegionError::NotReady { state });
        }
        let magic = h.magic.load(Ordering::Relaxed);
        if magic != MAGIC {
            return Err(RegionError::BadMagic { found: magic });
        }
        let version = h.version.load(Ordering::Relaxed);
        if version != VERSION {
            return Err(RegionError::BadVersion { found: version });
        }
        let size = h.elem_size.load(Ordering::Relaxed);
        let align = h.elem_align.load(Ordering::Relaxed);
        if size as usize != size_of::<T>() || align as usize != align_of::<T>() {
            return Err(RegionError::ElementLayout { size, align });
        }
        let capacity = check_capacity(h.capacity.load(Ordering::Relaxed) as usize)?;
        let layout = Layout {
            capacity,
            producer: h.producer_offset.load(Ordering::Relaxed) as usize,
            consumer: h.consumer_offset.load(Ordering::Relaxed) as usize,
            data: h.data_offset.load(Ordering::Relaxed) as usize,
            total: h.total_size.load(Ordering::Relaxed) as usize,
        }
        .validate::<T>(region.len)?;
        let release_every = h.release_every.load(Ordering::Relaxed);
        if release_every == 0 || release_every > capacity {
            return Err(RegionError::ReleaseInterval {
                found: release_every as usize,
                max: capacity as usize,
            });
        }
        let ring = Self::build(&region, layout, release_every);
        let tail = ring.raw.producer().index.load(Ordering::Acquire);
        let head = ring.raw.consumer().index.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > capacity {
            return Err(RegionError::Corrupted);
        }
        Ok(ring)
    }

    /// Builds the view of a layout validated against `region`.
    fn build(region: &Region<'a>, layout: Layout, release_every: u32) -> Self {
        let base = region.ptr.as_ptr();
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
            release_every,
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
        if K > self.release_every as usize {
            return Err(RegionError::ReleaseInterval {
                found: K,
                max: self.release_every as usize,
            });
        }
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
