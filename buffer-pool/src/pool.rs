//! [`BufferPool`]: a pool over heap memory that falls back to system memory.

use crate::control::{Control, alloc_bytes};
use crate::layout::PoolMode;
use crate::producer::{Producer, StateSlot};
use crate::slice::Slice;
use crate::slot_map::SlotMap;
use alloc::boxed::Box;
use core::marker::PhantomData;
use core::ptr::NonNull;
use io_traits::{Buffer, BufferError, BufferFromSystemMemory};

/// Where a [`BufferPool`] puts a message that fits in no free slot or pool
/// space: its first type parameter.
///
/// `buffer_sv2` names the fallback buffer there
/// (`BufferPool<BufferFromSystemMemory>`), so code written for it names the
/// same type here. System memory is the one fallback: such a message is a
/// `Vec<u8>` that the [`Slice`] owns. The trait is sealed.
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferFromSystemMemory, BufferPool};
///
/// // `buffer_sv2`'s spelling of the default pool.
/// let mut pool: BufferPool<BufferFromSystemMemory> = BufferPool::new(4);
/// pool.get_writable(5).copy_from_slice(b"large");
/// let message = pool.get_data_owned();
/// assert!(!message.is_pooled()); // five bytes fit in no pool space
/// assert_eq!(message.as_ref(), b"large");
/// ```
pub trait Fallback: sealed::Sealed {}

impl Fallback for BufferFromSystemMemory {}

mod sealed {
    pub trait Sealed: Send + Sync + 'static {}
    impl Sealed for io_traits::BufferFromSystemMemory {}
}

/// A message buffer that preallocates `capacity` bytes and lends finished
/// messages out of them as [`Slice`]s, up to one per slot of `M` at a time
/// (8 for the default `u8`; see [`SlotMap`]).
///
/// `F` is the [`Fallback`] for messages that fit in no pool space, as the
/// first parameter of `buffer_sv2::BufferPool` is: `BufferFromSystemMemory`,
/// the default. A pool with a wider slot map is a
/// `BufferPool<BufferFromSystemMemory, u64>`, built with
/// `BufferPool::<_, u64>::with_slot_map`.
///
/// Messages go after every lent slice ([`PoolMode::Back`]), else into space
/// freed before the oldest lent slices ([`PoolMode::Front`]), else — when no
/// slot or no pool space is free, or the message is longer than the pool —
/// into system memory ([`PoolMode::Alloc`]). Once every slice has been
/// dropped, the next message that fits is served from pool memory in Back
/// mode again. Slices may be dropped in any order, on any thread, and may
/// outlive the pool.
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferPool, Slice};
///
/// let mut pool = BufferPool::new(1024);
/// let header = pool.get_writable(2);
/// header.copy_from_slice(&[0xab, 0xcd]);
/// pool.get_writable(3).copy_from_slice(b"xyz");
/// let message: Slice = pool.get_data_owned();
/// assert_eq!(message.as_ref(), &[0xab, 0xcd, b'x', b'y', b'z']);
/// assert!(message.is_pooled() && pool.is_back_mode());
/// ```
#[derive(Debug)]
pub struct BufferPool<F: Fallback = BufferFromSystemMemory, M: SlotMap = u8> {
    producer: Producer<M>,
    fallback: PhantomData<fn() -> F>,
}

// SAFETY: the pool is the only producer of its memory; everything it shares
// with slices (the control block) is accessed through atomics, and the
// memory it hands out is disjoint from what it writes. Moving the producer to
// another thread moves all of its private state with it.
unsafe impl<F: Fallback, M: SlotMap> Send for BufferPool<F, M> {}

impl BufferPool {
    /// A pool of `capacity` bytes (zeroed once, here) lending up to 8 slices
    /// at once. For more, see [`with_slot_map`](Self::with_slot_map).
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds `isize::MAX`; aborts if the allocator fails, as
    /// `Vec` does. [`try_new`](Self::try_new) returns an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::BufferPool;
    ///
    /// let pool = BufferPool::new(327_680);
    /// assert_eq!(pool.capacity(), 327_680);
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self::with_slot_map(capacity)
    }

    /// A pool of `capacity` bytes lending up to 8 slices at once, or
    /// [`BufferError::OutOfMemory`] if the bytes cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{BufferError, BufferPool};
    ///
    /// assert!(BufferPool::try_new(64).is_ok());
    /// assert_eq!(BufferPool::try_new(usize::MAX).err(), Some(BufferError::OutOfMemory));
    /// ```
    pub fn try_new(capacity: usize) -> Result<Self, BufferError> {
        Self::try_with_slot_map(capacity)
    }
}

impl<M: SlotMap> BufferPool<BufferFromSystemMemory, M> {
    /// A pool of `capacity` bytes lending up to one slice per bit of `M` at
    /// once.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds `isize::MAX`; aborts if the allocator fails, as
    /// `Vec` does. [`try_with_slot_map`](Self::try_with_slot_map) returns an
    /// error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::BufferPool;
    ///
    /// let pool = BufferPool::<_, u64>::with_slot_map(1 << 16);
    /// assert_eq!(pool.capacity(), 1 << 16);
    /// ```
    pub fn with_slot_map(capacity: usize) -> Self {
        match Self::try_with_slot_map(capacity) {
            Ok(pool) => pool,
            Err(_) => match core::alloc::Layout::array::<u8>(capacity) {
                Ok(layout) => alloc::alloc::handle_alloc_error(layout),
                Err(_) => panic!("BufferPool: capacity {capacity} exceeds isize::MAX"),
            },
        }
    }

    /// Like [`with_slot_map`](Self::with_slot_map), but returns
    /// [`BufferError::OutOfMemory`] if the bytes cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{BufferError, BufferPool};
    ///
    /// assert!(BufferPool::<_, u16>::try_with_slot_map(64).is_ok());
    /// assert_eq!(
    ///     BufferPool::<_, u16>::try_with_slot_map(usize::MAX).err(),
    ///     Some(BufferError::OutOfMemory)
    /// );
    /// ```
    pub fn try_with_slot_map(capacity: usize) -> Result<Self, BufferError> {
        let bytes = alloc_bytes(capacity).ok_or(BufferError::OutOfMemory)?;
        let control = Control::new_heap(bytes, capacity);
        let slot = Box::into_raw(Box::new(StateSlot::<M>::uninit()));
        // SAFETY: `bytes` are `capacity` zeroed bytes owned by `control`,
        // which this pool owns one count of until it drops; no slot is lent;
        // the state's slot is a fresh box that `drop` frees after
        // `drop_state` (`Box::into_raw` is never null).
        let producer = unsafe {
            Producer::new(
                NonNull::new_unchecked(slot),
                control,
                bytes,
                capacity,
                0,
                true,
            )
        };
        Ok(Self {
            producer,
            fallback: PhantomData,
        })
    }
}

impl<F: Fallback, M: SlotMap> BufferPool<F, M> {
    /// Bytes of pool memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::BufferPool;
    ///
    /// assert_eq!(BufferPool::new(1024).capacity(), 1024);
    /// ```
    pub fn capacity(&self) -> usize {
        self.producer.capacity()
    }

    /// Where the pending message lives or, if none is pending, where the last
    /// one went (Back for a new pool).
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool, PoolMode};
    ///
    /// let mut pool = BufferPool::new(1);
    /// assert_eq!(pool.mode(), PoolMode::Back);
    /// pool.get_writable(2);
    /// assert_eq!(pool.mode(), PoolMode::Alloc);
    /// ```
    pub fn mode(&self) -> PoolMode {
        self.producer.mode()
    }

    /// Whether [`mode`](Self::mode) is [`PoolMode::Back`].
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool};
    ///
    /// let mut pool = BufferPool::new(2);
    /// pool.get_writable(1);
    /// let first = pool.get_data_owned();
    /// assert!(pool.is_back_mode());
    /// pool.get_writable(1);
    /// let _second = pool.get_data_owned();
    /// drop(first);
    /// pool.get_writable(1); // the back is full; the front is free again
    /// assert!(pool.is_front_mode());
    /// pool.get_writable(1); // two bytes fit nowhere
    /// assert!(pool.is_alloc_mode());
    /// ```
    pub fn is_back_mode(&self) -> bool {
        self.mode() == PoolMode::Back
    }

    /// Whether [`mode`](Self::mode) is [`PoolMode::Front`].
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool};
    ///
    /// let mut pool = BufferPool::new(2);
    /// pool.get_writable(1);
    /// let first = pool.get_data_owned();
    /// pool.get_writable(1);
    /// let _second = pool.get_data_owned();
    /// assert!(!pool.is_front_mode());
    /// drop(first);
    /// pool.get_writable(1); // the back is full; the byte `first` held is free
    /// assert!(pool.is_front_mode());
    /// ```
    pub fn is_front_mode(&self) -> bool {
        self.mode() == PoolMode::Front
    }

    /// Whether [`mode`](Self::mode) is [`PoolMode::Alloc`].
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferPool};
    ///
    /// let mut pool = BufferPool::new(4);
    /// pool.get_writable(2);
    /// assert!(!pool.is_alloc_mode());
    /// pool.get_writable(3); // five bytes do not fit in a pool of four
    /// assert!(pool.is_alloc_mode());
    /// assert!(!pool.get_data_owned().is_pooled());
    /// ```
    pub fn is_alloc_mode(&self) -> bool {
        self.mode() == PoolMode::Alloc
    }
}

impl<F: Fallback, M: SlotMap> Buffer for BufferPool<F, M> {
    type Slice = Slice<M>;

    /// Appends `len` bytes to the pending message. Bytes in pool memory hold
    /// whatever an earlier message left there; bytes in system memory are
    /// zeroed.
    ///
    /// # Panics
    ///
    /// If the message length overflows `usize` or system memory is exhausted;
    /// [`try_get_writable`](Buffer::try_get_writable) returns an error instead.
    #[inline]
    fn get_writable(&mut self, len: usize) -> &mut [u8] {
        match self.producer.try_get_writable(len) {
            Ok(bytes) => bytes,
            Err(e) => panic!("BufferPool::get_writable: {e}"),
        }
    }

    forward_buffer_methods!();

    /// Always true: lent slices keep the pool memory alive by themselves.
    fn is_droppable(&self) -> bool {
        true
    }
}

forward_views!([F: Fallback, M: SlotMap] BufferPool<F, M>);

impl<F: Fallback, M: SlotMap> Drop for BufferPool<F, M> {
    fn drop(&mut self) {
        let control = self.producer.control();
        let slot = self.producer.state_slot();
        // SAFETY: the producer is not used after this; its state's slot came
        // from `Box::into_raw` in `try_with_slot_map` and is freed only here,
        // after the state in it is dropped. The pool owns one count of its
        // control block (taken in `try_with_slot_map`) and uses neither it
        // nor the memory after this.
        unsafe {
            self.producer.drop_state();
            drop(Box::from_raw(slot.as_ptr()));
            Control::release_owner(control);
        }
    }
}
