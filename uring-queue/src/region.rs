//! A region of bytes that shared-memory layouts are built in: memory this
//! process owns, or a mapping shared with another process.

use crate::RegionError;
#[cfg(doc)]
use crate::{Consumer, Producer, SharedRing};
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

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

    /// The `len` bytes from `start`, as a region of their own.
    ///
    /// # Safety
    ///
    /// `start + len <= self.len()`, and no other region handed out from this
    /// one (or from another view of the same bytes in this process) overlaps
    /// the part while it builds a ring half: the caller passes on this
    /// region's contract to the part.
    pub(crate) unsafe fn part(&self, start: usize, len: usize) -> Region<'a> {
        // SAFETY: in bounds (the caller's guarantee), so the pointer stays
        // inside the region (or one past it) and is not null.
        let ptr = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(start)) };
        Region {
            ptr,
            len,
            _borrow: PhantomData,
        }
    }
}
