//! A pool over caller-provided `'static` storage: no allocator needed.

use crate::control::Control;
use crate::layout::PoolMode;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::producer::{Producer, StateSlot};
use crate::slice::Slice;
use crate::slot_map::SlotMap;
use core::fmt;
use core::ptr::NonNull;
use io_traits::{Buffer, BufferError};

/// `N` bytes of pool memory and the slot map for them, to be declared in a
/// `static` and turned into a [`StaticBufferPool`] with
/// [`pool`](Self::pool).
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferError, PoolStorage};
///
/// static STORAGE: PoolStorage<16> = PoolStorage::new();
///
/// let mut pool = STORAGE.pool().expect("claimed once");
/// pool.try_get_writable(10)?.copy_from_slice(b"0123456789");
/// let first = pool.get_data_owned();
/// // 6 bytes are left: a full pool is an error, not a heap allocation.
/// assert!(pool.try_get_writable(7).is_err());
/// drop(first);
/// assert!(pool.try_get_writable(16).is_ok());
/// # Ok::<(), BufferError>(())
/// ```
pub struct PoolStorage<const N: usize, M: SlotMap = u8> {
    control: Control<M>,
    claimed: AtomicBool,
    /// The claimant's producer state: written by `pool`, dropped by the
    /// pool's `drop`, used by that pool only.
    state: UnsafeCell<StateSlot<M>>,
    bytes: UnsafeCell<[u8; N]>,
}

// SAFETY: the bytes are written only by the one producer that holds the claim
// (`claimed`, taken with `Acquire`, given back with `Release`) and by slices
// on disjoint spans, which hand them back through the atomic slot map; every
// other field is atomic.
unsafe impl<const N: usize, M: SlotMap> Sync for PoolStorage<N, M> {}

impl<const N: usize, M: SlotMap> PoolStorage<N, M> {
    /// Zeroed storage with every slot free.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferError, PoolStorage};
    ///
    /// // `new` is `const`, so the storage can be declared in a `static`.
    /// static STORAGE: PoolStorage<64> = PoolStorage::new();
    /// let mut pool = STORAGE.pool().unwrap();
    /// assert_eq!(pool.capacity(), 64);
    /// assert_eq!(pool.try_get_writable(8)?, &[0; 8]);
    /// # Ok::<(), BufferError>(())
    /// ```
    pub const fn new() -> Self {
        Self {
            control: Control::new_static(),
            claimed: AtomicBool::new(false),
            state: UnsafeCell::new(StateSlot::<M>::uninit()),
            bytes: UnsafeCell::new([0; N]),
        }
    }

    /// The pool over this storage, or [`StorageInUse`] while another pool
    /// over it is alive.
    ///
    /// Slices lent by an earlier pool stay valid; their space is reused once
    /// they are dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::PoolStorage;
    ///
    /// static STORAGE: PoolStorage<64> = PoolStorage::new();
    /// let pool = STORAGE.pool().unwrap();
    /// assert!(STORAGE.pool().is_err());
    /// drop(pool);
    /// assert!(STORAGE.pool().is_ok());
    /// ```
    pub fn pool(&'static self) -> Result<StaticBufferPool<M>, StorageInUse> {
        // Acquire: the previous pool's writes to the memory happen before
        // this pool's.
        if self.claimed.swap(true, Ordering::Acquire) {
            return Err(StorageInUse);
        }
        let lent = self.control.lent_acquire();
        let base = self.bytes.with_mut(|bytes| NonNull::new(bytes.cast::<u8>()));
        let base = base.unwrap_or(NonNull::dangling());
        let slot = self.state.with_mut(NonNull::new).unwrap_or(NonNull::dangling());
        // SAFETY: the storage is `'static`; the claim makes this the only
        // producer; `lent` is what the slot map holds now (only a producer
        // sets bits, and there is no other). The claim also makes `slot` this
        // producer's alone until the pool's `drop` drops the state in it and
        // gives the claim back.
        let producer =
            unsafe { Producer::new(slot, NonNull::from(&self.control), base, N, lent, false) };
        Ok(StaticBufferPool {
            producer,
            claimed: &self.claimed,
        })
    }
}

impl<const N: usize, M: SlotMap> Default for PoolStorage<N, M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, M: SlotMap> fmt::Debug for PoolStorage<N, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolStorage")
            .field("capacity", &N)
            .finish_non_exhaustive()
    }
}

/// [`PoolStorage::pool`] failed: a pool over that storage is alive.
///
/// # Examples
///
/// ```
/// use buffer_pool::{PoolStorage, StorageInUse};
///
/// static STORAGE: PoolStorage<8> = PoolStorage::new();
/// let _pool = STORAGE.pool().unwrap();
/// assert_eq!(STORAGE.pool().err(), Some(StorageInUse));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StorageInUse;

impl fmt::Display for StorageInUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pool over this storage is already alive")
    }
}

impl core::error::Error for StorageInUse {}

/// A pool over [`PoolStorage`]: like `BufferPool` (feature `alloc`) but
/// with no system-memory fallback, so
/// [`try_get_writable`](Buffer::try_get_writable) returns
/// [`BufferError::NoFreeSlot`] when every slot is lent and
/// [`BufferError::CapacityExceeded`] when no free region has room.
///
/// # Examples
///
/// ```
/// use buffer_pool::{Buffer, BufferError, PoolStorage};
///
/// static STORAGE: PoolStorage<16> = PoolStorage::new();
/// let mut pool = STORAGE.pool().unwrap();
/// let mut held = Vec::new();
/// for _ in 0..8 {
///     pool.try_get_writable(1)?;
///     held.push(pool.get_data_owned());
/// }
/// // Eight slices are out: 8 bytes are free, but there is no slot for a ninth.
/// assert_eq!(pool.try_get_writable(1), Err(BufferError::NoFreeSlot));
/// held.remove(0);
/// assert_eq!(
///     pool.try_get_writable(9),
///     Err(BufferError::CapacityExceeded { requested: 9, available: 8 })
/// );
/// # Ok::<(), BufferError>(())
/// ```
#[derive(Debug)]
pub struct StaticBufferPool<M: SlotMap = u8> {
    producer: Producer<M>,
    claimed: &'static AtomicBool,
}

// SAFETY: as for `BufferPool`: the producer's state moves with it, and what it
// shares with slices is atomic.
unsafe impl<M: SlotMap> Send for StaticBufferPool<M> {}

impl<M: SlotMap> StaticBufferPool<M> {
    /// Bytes of pool memory: `N` of the [`PoolStorage<N>`] it was claimed
    /// from.
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::PoolStorage;
    ///
    /// static STORAGE: PoolStorage<256> = PoolStorage::new();
    /// let pool = STORAGE.pool().unwrap();
    /// assert_eq!(pool.capacity(), 256);
    /// ```
    pub fn capacity(&self) -> usize {
        self.producer.capacity()
    }

    /// Where the pending message lives or, if none is pending, where the last
    /// one went; never [`PoolMode::Alloc`].
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, PoolMode, PoolStorage};
    ///
    /// static STORAGE: PoolStorage<4> = PoolStorage::new();
    /// let mut pool = STORAGE.pool().unwrap();
    /// assert_eq!(pool.capacity(), 4);
    /// pool.try_get_writable(4).unwrap();
    /// assert_eq!(pool.mode(), PoolMode::Back);
    /// ```
    pub fn mode(&self) -> PoolMode {
        self.producer.mode()
    }

    /// Whether [`mode`](Self::mode) is [`PoolMode::Back`].
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferError, PoolStorage};
    ///
    /// static STORAGE: PoolStorage<2> = PoolStorage::new();
    /// let mut pool = STORAGE.pool().unwrap();
    /// assert!(pool.is_back_mode()); // a new pool
    /// pool.try_get_writable(1)?;
    /// let _first = pool.get_data_owned();
    /// pool.try_get_writable(1)?; // goes after `first`
    /// assert!(pool.is_back_mode());
    /// # Ok::<(), BufferError>(())
    /// ```
    pub fn is_back_mode(&self) -> bool {
        self.mode() == PoolMode::Back
    }

    /// Whether [`mode`](Self::mode) is [`PoolMode::Front`].
    ///
    /// # Examples
    ///
    /// ```
    /// use buffer_pool::{Buffer, BufferError, PoolStorage};
    ///
    /// static STORAGE: PoolStorage<2> = PoolStorage::new();
    /// let mut pool = STORAGE.pool().unwrap();
    /// pool.try_get_writable(1)?;
    /// let first = pool.get_data_owned();
    /// pool.try_get_writable(1)?;
    /// let _second = pool.get_data_owned();
    /// drop(first);
    /// pool.try_get_writable(1)?; // the back is full; the byte `first` held is free
    /// assert!(pool.is_front_mode());
    /// # Ok::<(), BufferError>(())
    /// ```
    pub fn is_front_mode(&self) -> bool {
        self.mode() == PoolMode::Front
    }
}

impl<M: SlotMap> Buffer for StaticBufferPool<M> {
    type Slice = Slice<M>;

    /// Appends `len` bytes to the pending message; they hold whatever an
    /// earlier message left there.
    ///
    /// # Panics
    ///
    /// If no slot or not enough pool space is free (the message says which);
    /// [`try_get_writable`](Buffer::try_get_writable) returns an error instead.
    #[inline]
    fn get_writable(&mut self, len: usize) -> &mut [u8] {
        match self.producer.try_get_writable(len) {
            Ok(bytes) => bytes,
            Err(e) => panic!("StaticBufferPool::get_writable: {e}"),
        }
    }

    forward_buffer_methods!();

    /// Always true: the storage is `'static`.
    fn is_droppable(&self) -> bool {
        true
    }
}

forward_views!([M: SlotMap] StaticBufferPool<M>);

impl<M: SlotMap> Drop for StaticBufferPool<M> {
    fn drop(&mut self) {
        // SAFETY: the producer is not used after this.
        unsafe { self.producer.drop_state() };
        // Release: this pool's writes to the memory happen before the next
        // claimant's (which takes the claim with `Acquire`).
        self.claimed.store(false, Ordering::Release);
    }
}
