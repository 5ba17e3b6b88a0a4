//! [`Slice`]: a finished message, owned.

use crate::control::Control;
use crate::slot_map::SlotMap;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use core::fmt;
use core::ptr::NonNull;

/// A finished message handed out by a pool: owned, `Send`, and readable and
/// writable as bytes.
///
/// A pooled slice lends one slot of its pool; dropping it, on any thread,
/// returns the slot. It may outlive the pool: the pool memory is freed when
/// the last of the pool and its slices goes. A slice is not `Clone`, so two
/// owners can never share one slot.
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferPool};
///
/// let mut pool = BufferPool::new(64);
/// pool.get_writable(5).copy_from_slice(b"hello");
/// let message = pool.get_data_owned();
/// assert_eq!(message.len(), 5);
/// assert!(message.is_pooled());
/// let on_other_thread = std::thread::spawn(move || message.as_ref().to_vec());
/// assert_eq!(on_other_thread.join().unwrap(), b"hello");
/// ```
///
/// A slice cannot be cloned:
///
/// ```compile_fail
/// use buffer_pool::{Buffer, BufferPool};
///
/// let mut pool = BufferPool::new(64);
/// pool.get_writable(1);
/// let message = pool.get_data_owned();
/// let copy = message.clone();
/// ```
pub struct Slice<M: SlotMap = u8> {
    inner: Inner<M>,
}

enum Inner<M: SlotMap> {
    /// An empty message: no slot, no memory.
    Empty,
    /// `len` bytes at `ptr` in the memory of the pool whose control block is
    /// `control`, lent under slot `bit`.
    Pooled {
        ptr: NonNull<u8>,
        len: usize,
        bit: u64,
        control: NonNull<Control<M>>,
    },
    /// A message in system memory.
    #[cfg(feature = "alloc")]
    Heap(Vec<u8>),
}

// SAFETY: a pooled slice is the only handle to its bytes (slots are lent to
// one slice at a time and `Slice` is not `Clone`), and it returns its slot
// through an atomic with `Release`, so moving it to another thread and
// dropping it there is sound. `Vec<u8>` is `Send`.
unsafe impl<M: SlotMap> Send for Slice<M> {}

// SAFETY: `&Slice` only gives `&[u8]` (reads) and `len`/`is_pooled`; no
// shared-reference method touches the slot map or the owner count.
unsafe impl<M: SlotMap> Sync for Slice<M> {}

impl<M: SlotMap> Slice<M> {
    /// An empty slice, lending nothing.
    pub(crate) const fn empty() -> Self {
        Self {
            inner: Inner::Empty,
        }
    }

    /// A slice of pool memory.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` is initialised pool memory of `control`'s pool that
    /// nothing else accesses while slot `bit` is lent; the slot has just been
    /// marked lent and an ownership of `control` taken for this slice.
    pub(crate) unsafe fn pooled(
        ptr: NonNull<u8>,
        len: usize,
        bit: u64,
        control: NonNull<Control<M>>,
    ) -> Self {
        Self {
            inner: Inner::Pooled {
                ptr,
                len,
                bit,
                control,
            },
        }
    }

    /// A slice that owns `bytes` of system memory.
    #[cfg(feature = "alloc")]
    pub(crate) fn heap(bytes: Vec<u8>) -> Self {
        Self {
            inner: Inner::Heap(bytes),
        }
    }

    /// Number of bytes in the message.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool};
    ///
    /// let mut pool = BufferPool::new(8);
    /// pool.get_writable(3);
    /// assert_eq!(pool.get_data_owned().len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Empty => 0,
            Inner::Pooled { len, .. } => *len,
            #[cfg(feature = "alloc")]
            Inner::Heap(v) => v.len(),
        }
    }

    /// Whether the message has no bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool};
    ///
    /// let mut pool = BufferPool::new(8);
    /// assert!(pool.get_data_owned().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the bytes live in pool memory (rather than system memory, or
    /// nowhere for an empty message).
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool};
    ///
    /// let mut pool = BufferPool::new(4);
    /// pool.get_writable(4);
    /// assert!(pool.get_data_owned().is_pooled());
    /// pool.get_writable(5); // longer than the pool
    /// assert!(!pool.get_data_owned().is_pooled());
    /// ```
    #[inline]
    pub fn is_pooled(&self) -> bool {
        matches!(self.inner, Inner::Pooled { .. })
    }
}

/// A message in system memory, as `buffer_sv2`'s `Slice` converts from a
/// vector (but with `len()` the vector's length).
///
/// # Examples
///
/// ```
/// use buffer_pool::Slice;
///
/// let message: Slice = b"abc".to_vec().into();
/// assert_eq!((message.len(), message.is_pooled()), (3, false));
/// assert_eq!(message.as_ref(), b"abc");
/// ```
#[cfg(feature = "alloc")]
impl<M: SlotMap> From<Vec<u8>> for Slice<M> {
    fn from(bytes: Vec<u8>) -> Self {
        Self::heap(bytes)
    }
}

impl<M: SlotMap> AsRef<[u8]> for Slice<M> {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        match &self.inner {
            Inner::Empty => &[],
            Inner::Pooled {
                ptr, len, control, ..
            } => {
                // SAFETY: a pooled slice's control block outlives it.
                unsafe { control.as_ref() }.touch(ptr.as_ptr(), *len, false);
                // SAFETY: `ptr..ptr + len` is initialised and accessed only
                // through this slice while it lives (invariant of `pooled`);
                // `&self` makes this a shared borrow of it.
                unsafe { core::slice::from_raw_parts(ptr.as_ptr(), *len) }
            }
            #[cfg(feature = "alloc")]
            Inner::Heap(v) => v,
        }
    }
}

impl<M: SlotMap> AsMut<[u8]> for Slice<M> {
    #[inline]
    fn as_mut(&mut self) -> &mut [u8] {
        match &mut self.inner {
            Inner::Empty => &mut [],
            Inner::Pooled {
                ptr, len, control, ..
            } => {
                // SAFETY: a pooled slice's control block outlives it.
                unsafe { control.as_ref() }.touch(ptr.as_ptr(), *len, true);
                // SAFETY: as in `as_ref`; `&mut self` makes the borrow unique.
                unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), *len) }
            }
            #[cfg(feature = "alloc")]
            Inner::Heap(v) => v,
        }
    }
}

impl<M: SlotMap> core::ops::Deref for Slice<M> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

impl<M: SlotMap> core::ops::DerefMut for Slice<M> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut()
    }
}

impl<M: SlotMap> Drop for Slice<M> {
    fn drop(&mut self) {
        if let Inner::Pooled { bit, control, .. } = self.inner {
            // SAFETY: this slice owns slot `bit` and one ownership of
            // `control` (invariant of `pooled`), and never uses either again.
            unsafe { Control::return_slot(control, bit) };
        }
    }
}

impl<M: SlotMap> fmt::Debug for Slice<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slice")
            .field("len", &self.len())
            .field("pooled", &self.is_pooled())
            .finish_non_exhaustive()
    }
}
