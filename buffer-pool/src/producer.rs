//! The message being written, and the bookkeeping of one pool's producer.
//!
//! Both pool types wrap a [`Producer`]: it owns the pending message and the
//! [`Layout`], and reads the shared slot map only when a message needs a new
//! place. Appending to a message that still has room is a compare and a
//! pointer bump: no atomic, no call.

use crate::control::Control;
use crate::layout::{Layout, Placement, PoolMode};
use crate::slice::Slice;
use crate::slot_map::SlotMap;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use core::ptr::NonNull;
use io_traits::BufferError;

/// Bytes of system memory zero-filled at a time ahead of the writes: enough
/// that a message of a few kibibytes takes the slow path once or twice, not
/// once per kibibyte (each trip costs about as much as a hundred appends),
/// and few enough that the zeroed bytes are still in the cache when they are
/// written.
#[cfg(feature = "alloc")]
const HEAP_STEP: usize = 16 * 1024;

/// Where the pending message lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Location {
    /// No bytes yet, no place chosen.
    Idle,
    /// In pool memory from `start`, to be lent under `slot`.
    Pool { slot: u32, start: usize },
    /// In system memory (`Producer::heap`).
    #[cfg(feature = "alloc")]
    Heap,
}

/// The writing side of a pool.
///
/// `repr(C)` with the two fields of the fast path first, on a cache line of
/// their own start, so every pool's hot loop sees the same layout.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Producer<M: SlotMap> {
    /// Where the next appended byte goes: in pool memory, or in `heap`'s
    /// buffer for a message in system memory. `base` when idle.
    cursor: *mut u8,
    /// The end of the message's region (`heap`'s initialised length for a
    /// message in system memory). `base` when idle, so that `limit - cursor`
    /// (the room left in place) is 0 and every non-empty append takes the
    /// slow path.
    limit: *mut u8,
    location: Location,
    /// Pool memory: `cap` initialised bytes, accessed only by raw pointer.
    base: NonNull<u8>,
    cap: usize,
    control: NonNull<Control<M>>,
    layout: Layout<M>,
    /// Mode of the pending message, or of the last one if none is pending.
    mode: PoolMode,
    /// Length of the last non-empty message: new messages are placed where
    /// this much fits if there is such a place, so a run of similar messages
    /// is not started in a gap too small for it and moved later.
    hint: usize,
    /// Start of the `AsRef`/`AsMut` view (`danger_set_start`).
    view: usize,
    /// A message in system memory: its bytes are `heap[..len]`, and the rest
    /// of `heap` (zeroed) is room to grow into, so appends take the same fast
    /// path as in pool memory; the capacity beyond is reserved up front.
    #[cfg(feature = "alloc")]
    heap: Vec<u8>,
    /// Whether a message that finds no slot or space goes to system memory.
    #[cfg(feature = "alloc")]
    fallback: bool,
}

impl<M: SlotMap> Producer<M> {
    /// A producer over `cap` initialised bytes at `base`, shared with slices
    /// through `control`; `lent` are slots still lent by an earlier producer.
    ///
    /// # Safety
    ///
    /// `base..base + cap` is initialised memory that only this producer and
    /// slices lent through `control` access, `control` stays alive while the
    /// producer lives, and `lent` holds the bits set in `control`'s slot map.
    pub(crate) unsafe fn new(
        control: NonNull<Control<M>>,
        base: NonNull<u8>,
        cap: usize,
        lent: u64,
        fallback: bool,
    ) -> Self {
        #[cfg(not(feature = "alloc"))]
        let _ = fallback;
        Self {
            cursor: base.as_ptr(),
            limit: base.as_ptr(),
            location: Location::Idle,
            base,
            cap,
            control,
            layout: if lent == 0 {
                Layout::new()
            } else {
                Layout::with_unknown(lent, cap)
            },
            mode: PoolMode::Back,
            hint: 0,
            view: 0,
            #[cfg(feature = "alloc")]
            heap: Vec::new(),
            #[cfg(feature = "alloc")]
            fallback,
        }
    }

    #[cfg(feature = "alloc")]
    pub(crate) fn control(&self) -> NonNull<Control<M>> {
        self.control
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    pub(crate) fn mode(&self) -> PoolMode {
        self.mode
    }

    /// Bytes in the pending message.
    pub(crate) fn len(&self) -> usize {
        match self.location {
            Location::Idle => 0,
            Location::Pool { start, .. } => {
                self.cursor as usize - (self.base.as_ptr() as usize + start)
            }
            #[cfg(feature = "alloc")]
            Location::Heap => self.cursor as usize - self.heap.as_ptr() as usize,
        }
    }

    /// Appends `n` bytes to the pending message and returns them.
    #[inline]
    pub(crate) fn try_get_writable(&mut self, n: usize) -> Result<&mut [u8], BufferError> {
        let at = self.cursor;
        if n <= self.limit as usize - at as usize {
            // SAFETY: `n` is at most the room left, and `cursor..limit` lies
            // inside the pending message's region (set by `grow`), so the
            // addition stays in bounds.
            self.cursor = unsafe { at.add(n) };
            #[cfg(all(loom, feature = "alloc"))]
            self.touch(at, n, true);
            // SAFETY: `at..at + n` is initialised memory of the pending
            // message's region: pool memory no lent slice overlaps (layout
            // invariant "Free regions"), or `heap`'s initialised buffer, which
            // only the producer touches. The borrow of `self` keeps it unique
            // until the next call.
            return Ok(unsafe { core::slice::from_raw_parts_mut(at, n) });
        }
        self.grow(n)
    }

    /// Where a message that needs `need` bytes can go: a region with room
    /// for the hint if there is one, else one with room for `need`.
    fn place(&self, need: usize) -> Option<Placement> {
        let want = need.max(self.hint);
        self.layout
            .place(want, self.cap)
            .or_else(|| self.layout.place(need, self.cap))
    }

    /// The slow path of [`try_get_writable`](Self::try_get_writable): the
    /// message has no place yet, or its place is too small.
    #[cold]
    fn grow(&mut self, n: usize) -> Result<&mut [u8], BufferError> {
        let old = self.len();
        let Some(new_len) = old.checked_add(n) else {
            return Err(BufferError::OutOfMemory);
        };
        #[cfg(feature = "alloc")]
        if self.location == Location::Heap {
            if self.heap.capacity() < new_len {
                let room = new_len.max(self.heap.capacity().saturating_mul(2));
                if self.heap.try_reserve_exact(room - self.heap.len()).is_err() {
                    self.heap
                        .try_reserve_exact(new_len - self.heap.len())
                        .map_err(|_| BufferError::OutOfMemory)?;
                }
            }
            self.zero_heap_to(new_len);
            return Ok(self.enter_heap(old, n));
        }
        if self.layout.known() != 0 {
            // SAFETY: `control` is alive while the producer is (`new`).
            let lent = unsafe { self.control.as_ref() }.lent_acquire();
            self.layout.observe(lent);
        }
        let slot = match self.location {
            Location::Pool { slot, .. } => Some(slot),
            _ => self.layout.free_slot(),
        };
        if let Some(slot) = slot {
            if let Some(place) = self.place(new_len) {
                // SAFETY: `place.start + new_len <= place.limit <= cap`.
                let dst = unsafe { self.base.as_ptr().add(place.start) };
                if let Location::Pool { start, .. } = self.location {
                    // SAFETY: `start` lies within the pool memory.
                    let src = unsafe { self.base.as_ptr().add(start) };
                    #[cfg(all(loom, feature = "alloc"))]
                    {
                        self.touch(src, old, false);
                        self.touch(dst, old, true);
                    }
                    // SAFETY: the old bytes `src..src + old` and the new
                    // region are pool memory no lent slice overlaps; they may
                    // overlap each other, which `copy` allows.
                    unsafe { core::ptr::copy(src, dst, old) };
                }
                self.location = Location::Pool {
                    slot,
                    start: place.start,
                };
                self.mode = place.mode;
                // SAFETY: `new_len <= place.limit - place.start`: in bounds.
                let at = unsafe { dst.add(old) };
                // SAFETY: as above.
                self.cursor = unsafe { dst.add(new_len) };
                // SAFETY: `place.limit <= cap`.
                self.limit = unsafe { self.base.as_ptr().add(place.limit) };
                #[cfg(all(loom, feature = "alloc"))]
                self.touch(at, n, true);
                // SAFETY: `at..at + n` is initialised pool memory in a free
                // region (layout invariant "Free regions"), borrowed uniquely
                // through `self`.
                return Ok(unsafe { core::slice::from_raw_parts_mut(at, n) });
            }
        }
        #[cfg(feature = "alloc")]
        if self.fallback {
            let mut heap = Vec::new();
            if heap.try_reserve_exact(new_len.max(self.hint)).is_err() {
                heap.try_reserve_exact(new_len)
                    .map_err(|_| BufferError::OutOfMemory)?;
            }
            heap.extend_from_slice(self.pending());
            self.heap = heap;
            self.zero_heap_to(new_len);
            self.location = Location::Heap;
            self.mode = PoolMode::Alloc;
            return Ok(self.enter_heap(old, n));
        }
        let available = if slot.is_some() {
            self.layout.largest_region(self.cap).saturating_sub(old)
        } else {
            0
        };
        Err(BufferError::CapacityExceeded {
            requested: n,
            available,
        })
    }

    /// Zero-fills `heap` (whose capacity is at least `need`) to at least
    /// `need` bytes, and at most `HEAP_STEP` bytes past its length or up to
    /// its capacity: the bytes are initialised shortly before they are
    /// written, while they are still in the cache, and a large reservation is
    /// not zeroed more than one step past what the message uses.
    #[cfg(feature = "alloc")]
    fn zero_heap_to(&mut self, need: usize) {
        let step = self.heap.len().saturating_add(HEAP_STEP);
        let to = need.max(step.min(self.heap.capacity()));
        self.heap.resize(to, 0);
    }

    /// Points the cursor at byte `old + n` of `heap` (which holds at least
    /// that many initialised bytes) and returns bytes `old..old + n`.
    #[cfg(feature = "alloc")]
    fn enter_heap(&mut self, old: usize, n: usize) -> &mut [u8] {
        let buffer = self.heap.as_mut_ptr();
        // SAFETY: `old + n <= heap.len()`: every caller sized `heap` so.
        self.cursor = unsafe { buffer.add(old + n) };
        // SAFETY: one past the initialised bytes of `heap`.
        self.limit = unsafe { buffer.add(self.heap.len()) };
        // SAFETY: bytes `old..old + n` of `heap` are initialised, and
        // `heap` is borrowed through `&mut self`.
        unsafe { core::slice::from_raw_parts_mut(buffer.add(old), n) }
    }

    /// Hands the pending message out and starts an empty one.
    pub(crate) fn get_data_owned(&mut self) -> Slice<M> {
        let len = self.len();
        let location = core::mem::replace(&mut self.location, Location::Idle);
        self.cursor = self.base.as_ptr();
        self.limit = self.base.as_ptr();
        self.view = 0;
        if len > 0 {
            self.hint = len;
        }
        match location {
            Location::Idle => Slice::empty(),
            Location::Pool { slot, start } => {
                let bit = 1u64 << slot;
                // SAFETY: `control` is alive while the producer is.
                unsafe { self.control.as_ref() }.lend(bit);
                self.layout.lend(slot, start, start + len, self.mode);
                // SAFETY: `start..start + len` was the pending message: pool
                // memory, initialised, overlapping no lent span; from now on
                // the layout records it as slot `slot`'s, so the producer does
                // not touch it until it sees the slot returned. `lend` marked
                // the slot and took an ownership for the slice.
                unsafe {
                    Slice::pooled(
                        NonNull::new_unchecked(self.base.as_ptr().add(start)),
                        len,
                        bit,
                        self.control,
                    )
                }
            }
            #[cfg(feature = "alloc")]
            Location::Heap => {
                let mut heap = core::mem::take(&mut self.heap);
                heap.truncate(len);
                Slice::heap(heap)
            }
        }
    }

    /// Under loom: records an access to pool bytes `at..at + len`.
    #[cfg(all(loom, feature = "alloc"))]
    fn touch(&self, at: *const u8, len: usize, write: bool) {
        // SAFETY: `control` is alive while the producer is.
        unsafe { self.control.as_ref() }.touch(at, len, write);
    }

    /// The pending message.
    pub(crate) fn pending(&self) -> &[u8] {
        match self.location {
            Location::Idle => &[],
            Location::Pool { start, .. } => {
                // SAFETY: `start` lies within the pool memory.
                let at = unsafe { self.base.as_ptr().add(start) };
                #[cfg(all(loom, feature = "alloc"))]
                self.touch(at, self.len(), false);
                // SAFETY: `at..cursor` is the pending message: initialised
                // pool memory no lent slice overlaps, borrowed through `&self`.
                unsafe { core::slice::from_raw_parts(at, self.len()) }
            }
            #[cfg(feature = "alloc")]
            Location::Heap => &self.heap[..self.len()],
        }
    }

    /// The pending message, writable.
    pub(crate) fn pending_mut(&mut self) -> &mut [u8] {
        match self.location {
            Location::Idle => &mut [],
            Location::Pool { start, .. } => {
                // SAFETY: `start` lies within the pool memory.
                let at = unsafe { self.base.as_ptr().add(start) };
                #[cfg(all(loom, feature = "alloc"))]
                self.touch(at, self.len(), true);
                // SAFETY: as in `pending`, borrowed uniquely through `&mut self`.
                unsafe { core::slice::from_raw_parts_mut(at, self.len()) }
            }
            #[cfg(feature = "alloc")]
            Location::Heap => {
                let len = self.len();
                &mut self.heap[..len]
            }
        }
    }

    pub(crate) fn set_view(&mut self, index: usize) {
        self.view = index;
    }

    pub(crate) fn view(&self) -> &[u8] {
        self.pending().get(self.view..).unwrap_or_default()
    }

    pub(crate) fn view_mut(&mut self) -> &mut [u8] {
        let view = self.view;
        self.pending_mut().get_mut(view..).unwrap_or_default()
    }
}
