//! An owned, zeroed heap buffer aligned for a connection or a shared ring:
//! the memory a [`Region`] needs when both sides live in one process.

use crate::uring::{Config, URING_ALIGN, Uring};
use crate::{Region, RegionError, SHARED_RING_ALIGN};
use alloc::alloc::{alloc_zeroed, dealloc};
use core::alloc::Layout;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

// The one alignment serves a `SharedRing` as well as a connection.
const _: () = assert!(AlignedBuf::ALIGN >= SHARED_RING_ALIGN);
const _: () = assert!(AlignedBuf::ALIGN % SHARED_RING_ALIGN == 0);

/// Zeroed heap memory whose first byte sits on an [`AlignedBuf::ALIGN`]
/// boundary: what [`Uring::init`] and
/// [`SharedRing::init`](crate::SharedRing::init) (for elements aligned to at
/// most that much) need, without an aligned struct of one's own. Freed on
/// drop.
///
/// There is no owning `Uring`: the client and server borrow their region
/// (`Client<'a>`, `Server<'a>`), so a connection that owned its buffer would
/// borrow from itself. Keep the buffer beside them, in a scope that outlives
/// both.
///
/// It dereferences to its bytes, so a part of it (`&mut buf[..n]`) can back a
/// [`Region`] too. Across processes, map a `SharedMemory` instead (`std`,
/// Linux): a mapping is page aligned already.
///
/// # Examples
///
/// ```
/// use uring_queue::AlignedBuf;
/// use uring_queue::uring::{Config, Spin, Uring};
///
/// let config = Config::new(4, 4, 1024);
/// let mut mem = AlignedBuf::for_uring(&config).unwrap();
/// let uring = Uring::init(mem.region(), config).unwrap();
/// let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
/// # let _ = (client, &mut server);
/// ```
pub struct AlignedBuf {
    /// From `alloc_zeroed` with `layout`, freed in `Drop`; never null.
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer owns its bytes exclusively, as a `Box<[u8]>` does; `&`
// gives only shared reads of them and `&mut` exclusive access.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above: `&AlignedBuf` reads the bytes, which nothing writes meanwhile.
unsafe impl Sync for AlignedBuf {}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("ptr", &self.ptr)
            .field("len", &self.layout.size())
            .field("align", &self.layout.align())
            .finish()
    }
}

impl AlignedBuf {
    /// Alignment of the first byte: [`URING_ALIGN`], which is also a
    /// multiple of [`SHARED_RING_ALIGN`].
    pub const ALIGN: usize = URING_ALIGN;

    /// `len` zeroed bytes starting on an [`ALIGN`](Self::ALIGN) boundary.
    ///
    /// # Errors
    ///
    /// [`AlignedBufError::Empty`] for `len == 0`,
    /// [`AlignedBufError::TooLarge`] when `len` rounded up to the alignment
    /// exceeds `isize::MAX`, and [`AlignedBufError::OutOfMemory`] when the
    /// allocator refuses.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{AlignedBuf, AlignedBufError, Region, SharedRing};
    ///
    /// let mut mem = AlignedBuf::zeroed(1024).unwrap();
    /// assert_eq!(mem.len(), 1024);
    /// assert!(mem.iter().all(|&b| b == 0));
    /// assert_eq!(mem.as_ptr().align_offset(AlignedBuf::ALIGN), 0);
    /// let (mut tx, mut rx) = SharedRing::<u32>::init(mem.region(), 16).unwrap().split();
    /// tx.push(7).unwrap();
    /// assert_eq!(rx.pop(), Ok(7));
    ///
    /// assert_eq!(AlignedBuf::zeroed(0).unwrap_err(), AlignedBufError::Empty);
    /// assert_eq!(
    ///     AlignedBuf::zeroed(usize::MAX).unwrap_err(),
    ///     AlignedBufError::TooLarge { len: usize::MAX }
    /// );
    /// ```
    pub fn zeroed(len: usize) -> Result<Self, AlignedBufError> {
        if len == 0 {
            return Err(AlignedBufError::Empty);
        }
        let layout = Layout::from_size_align(len, Self::ALIGN)
            .map_err(|_| AlignedBufError::TooLarge { len })?;
        // SAFETY: `layout` has a non-zero size (`len > 0`, checked above).
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(AlignedBufError::OutOfMemory { len })?;
        Ok(Self { ptr, layout })
    }

    /// A buffer of exactly [`Uring::required_size`] bytes for `config`.
    ///
    /// # Errors
    ///
    /// [`AlignedBufError::Config`] when `config` is invalid (the error
    /// [`Uring::required_size`] gives), and those of
    /// [`zeroed`](Self::zeroed).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::uring::{Config, Uring};
    /// use uring_queue::{AlignedBuf, AlignedBufError, CapacityError, RegionError};
    ///
    /// let config = Config::new(4, 4, 1024);
    /// let mut mem = AlignedBuf::for_uring(&config).unwrap();
    /// assert_eq!(mem.len(), 5120);
    /// assert_eq!(Uring::init(mem.region(), config).unwrap().payload_len(), 1024);
    ///
    /// assert_eq!(
    ///     AlignedBuf::for_uring(&Config::new(3, 4, 0)).unwrap_err(),
    ///     AlignedBufError::Config(RegionError::Capacity(CapacityError::NotPowerOfTwo {
    ///         capacity: 3
    ///     }))
    /// );
    /// ```
    pub fn for_uring(config: &Config) -> Result<Self, AlignedBufError> {
        let len = Uring::required_size(config).map_err(AlignedBufError::Config)?;
        Self::zeroed(len)
    }

    /// The whole buffer as a [`Region`], borrowed for as long as the region
    /// (and whatever is built in it) lives.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut mem = uring_queue::AlignedBuf::zeroed(256).unwrap();
    /// let start = mem.as_ptr();
    /// let region = mem.region();
    /// assert_eq!((region.as_ptr().cast_const(), region.len()), (start, 256));
    /// ```
    ///
    /// One region at a time, so safe code builds one layout over the bytes:
    ///
    /// ```compile_fail,E0499
    /// let mut mem = uring_queue::AlignedBuf::zeroed(256).unwrap();
    /// let a = mem.region();
    /// let b = mem.region();
    /// drop((a, b));
    /// ```
    ///
    /// and no region outlives its buffer:
    ///
    /// ```compile_fail,E0597
    /// let region = {
    ///     let mut mem = uring_queue::AlignedBuf::zeroed(256).unwrap();
    ///     mem.region()
    /// };
    /// drop(region);
    /// ```
    pub fn region(&mut self) -> Region<'_> {
        Region::new(self)
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `layout.size()` bytes this buffer owns,
        // initialised (zeroed) at allocation; `&self` lends them shared.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    /// Frees the bytes.
    ///
    /// # Safety
    ///
    /// Sound because `ptr` came from `alloc_zeroed(layout)` in
    /// [`AlignedBuf::zeroed`] and is freed only here, once: no region
    /// borrowed from the buffer outlives it (`region` ties it to `&mut self`).
    fn drop(&mut self) {
        // SAFETY: see the `# Safety` section above: allocated with this
        // very layout by the global allocator, not freed before.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Why an [`AlignedBuf`] was not made.
///
/// # Examples
///
/// ```
/// use uring_queue::{AlignedBuf, AlignedBufError};
///
/// let err = AlignedBuf::zeroed(0).unwrap_err();
/// assert_eq!(err, AlignedBufError::Empty);
/// assert_eq!(err.to_string(), "an aligned buffer of 0 bytes was asked for");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AlignedBufError {
    /// A length of 0: there is nothing to lay a ring out in.
    Empty,
    /// The length, rounded up to [`AlignedBuf::ALIGN`], exceeds `isize::MAX`.
    TooLarge {
        /// The length asked for.
        len: usize,
    },
    /// The allocator had no memory for the buffer.
    OutOfMemory {
        /// The length asked for.
        len: usize,
    },
    /// The configuration the buffer was to be sized for is invalid.
    Config(RegionError),
}

impl fmt::Display for AlignedBufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("an aligned buffer of 0 bytes was asked for"),
            Self::TooLarge { len } => {
                write!(f, "an aligned buffer of {len} bytes exceeds isize::MAX")
            }
            Self::OutOfMemory { len } => {
                write!(f, "the allocator refused an aligned buffer of {len} bytes")
            }
            Self::Config(e) => write!(f, "no buffer size for an invalid configuration: {e}"),
        }
    }
}

impl core::error::Error for AlignedBufError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SharedRing;
    use crate::uring::{Request, Spin};
    use alloc::string::ToString;

    #[test]
    fn zeroed_is_zero_and_aligned() {
        for len in [1, 7, 128, 129, 5120] {
            let buf = AlignedBuf::zeroed(len).unwrap();
            assert_eq!(buf.len(), len);
            assert_eq!(buf.as_ptr() as usize % AlignedBuf::ALIGN, 0);
            assert!(buf.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn bad_lengths_are_typed_errors() {
        assert_eq!(AlignedBuf::zeroed(0).unwrap_err(), AlignedBufError::Empty);
        // Rounded up to the alignment, `isize::MAX` overflows it.
        let len = isize::MAX as usize;
        assert_eq!(
            AlignedBuf::zeroed(len).unwrap_err(),
            AlignedBufError::TooLarge { len }
        );
        assert_eq!(
            AlignedBuf::zeroed(usize::MAX).unwrap_err(),
            AlignedBufError::TooLarge { len: usize::MAX }
        );
    }

    // Miri stops at an allocation this large ("resource exhaustion")
    // instead of returning null.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn refused_allocation_is_a_typed_error() {
        // The largest length the layout accepts: no address space holds it.
        let len = isize::MAX as usize & !(AlignedBuf::ALIGN - 1);
        assert_eq!(
            AlignedBuf::zeroed(len).unwrap_err(),
            AlignedBufError::OutOfMemory { len }
        );
    }

    #[test]
    fn invalid_config_is_a_typed_error() {
        let err = AlignedBuf::for_uring(&Config::new(3, 4, 4096)).unwrap_err();
        assert!(matches!(err, AlignedBufError::Config(_)), "{err:?}");
        assert!(core::error::Error::source(&err).is_some());
        assert!(err.to_string().starts_with("no buffer size"));
    }

    #[test]
    fn writes_stay_and_reach_the_region() {
        let mut buf = AlignedBuf::zeroed(512).unwrap();
        buf[3] = 0xAB;
        let region = buf.region();
        // SAFETY: in bounds (512 bytes); nothing else uses the buffer while
        // `region` lives.
        assert_eq!(unsafe { region.as_ptr().add(3).read() }, 0xAB);
        // SAFETY: as above.
        unsafe { region.as_ptr().add(4).write(0xCD) };
        assert_eq!(buf[3..5], [0xAB, 0xCD]);
    }

    #[test]
    fn backs_a_shared_ring() {
        let mut buf = AlignedBuf::zeroed(1024).unwrap();
        let (mut tx, mut rx) = SharedRing::<u64>::init(buf.region(), 8).unwrap().split();
        for i in 0..20 {
            tx.push(i).unwrap();
            assert_eq!(rx.pop(), Ok(i));
        }
    }

    #[test]
    fn backs_a_connection_across_threads() {
        let config = Config::new(4, 4, 4096);
        let mut buf = AlignedBuf::for_uring(&config).unwrap();
        assert_eq!(Ok(buf.len()), Uring::required_size(&config));
        let uring = Uring::init(buf.region(), config).unwrap();
        let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
        std::thread::scope(|s| {
            s.spawn(move || {
                let inc = server.recv().unwrap();
                server.complete(inc, 5, 0).unwrap();
            });
            let reply = client.call(Request::new(1)).unwrap();
            assert_eq!(reply.result, 5);
        });
    }

    #[test]
    fn moves_to_another_thread_and_frees_there() {
        let mut buf = AlignedBuf::zeroed(300).unwrap();
        buf[299] = 1;
        let sum = std::thread::spawn(move || buf.iter().map(|&b| u32::from(b)).sum::<u32>())
            .join()
            .unwrap();
        assert_eq!(sum, 1);
    }
}
