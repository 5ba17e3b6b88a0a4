//! The message being written, and the bookkeeping of one pool's producer.
//!
//! Both pool types wrap a [`Producer`]: it owns the pending message and the
//! [`Layout`], and reads the shared slot map only when a message needs a new
//! place. Appending to a message that still has room touches no atomic.

use crate::control::Control;
use crate::layout::{Layout, PoolMode};
use crate::slice::Slice;
use crate::slot_map::SlotMap;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use core::ptr::NonNull;
use io_traits::BufferError;

/// Where the pending message lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Location {
    /// No bytes yet, no place chosen.
    Idle,
    /// In pool memory at `start`, to be lent under `slot`.
    Pool { slot: u32, start: usize },
    /// In system memory (`Producer::heap`).
    #[cfg(feature = "alloc")]
    Heap,
}

/// The writing side of a pool.
#[derive(Debug)]
pub(crate) struct Producer<M: SlotMap> {
    control: NonNull<Control<M>>,
    /// Pool memory: `cap` initialised bytes, accessed only by raw pointer.
    base: NonNull<u8>,
    cap: usize,
    layout: Layout<M>,
    location: Location,
    /// Mode of the pending message, or of the last one if none is pending.
    mode: PoolMode,
    /// Pool mode: where the next appended byte goes. Otherwise `base`.
    cursor: *mut u8,
    /// Pool mode: bytes that may still be appended in place. Otherwise 0, so
    /// every non-empty append takes the slow path.
    room: usize,
    /// Bytes in the pending message.
    len: usize,
    /// Start of the `AsRef`/`AsMut` view (`danger_set_start`).
    view: usize,
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
            control,
            base,
            cap,
            layout: if lent == 0 {
                Layout::new()
            } else {
                Layout::with_unknown(lent, cap)
            },
            location: Location::Idle,
            mode: PoolMode::Back,
            cursor: base.as_ptr(),
            room: 0,
            len: 0,
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

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `n` bytes to the pending message and returns them.
    #[inline]
    pub(crate) fn try_get_writable(&mut self, n: usize) -> Result<&mut [u8], BufferError> {
        if n <= self.room {
            let at = self.cursor;
            self.room -= n;
            self.len += n;
            // SAFETY: `n <= room`, and `cursor..cursor + room` lies inside the
            // pending message's free region of pool memory (set by
            // `relocate`), so the addition stays in bounds.
            self.cursor = unsafe { at.add(n) };
            #[cfg(all(loom, feature = "alloc"))]
            self.touch(at, n, true);
            // SAFETY: `at..at + n` is initialised pool memory of the pending
            // message's region, which no lent slice overlaps (layout
            // invariant "Free regions"); the borrow of `self` keeps it unique
            // until the next call.
            return Ok(unsafe { core::slice::from_raw_parts_mut(at, n) });
        }
        self.grow(n)
    }

    /// The slow path of [`try_get_writable`](Self::try_get_writable): the
    /// message has no place yet, or its place is too small.
    #[cold]
    fn grow(&mut self, n: usize) -> Result<&mut [u8], BufferError> {
        let old = self.len;
        let Some(new_len) = old.checked_add(n) else {
            return Err(BufferError::OutOfMemory);
        };
        #[cfg(feature = "alloc")]
        if self.location == Location::Heap {
            self.heap
                .try_reserve(n)
                .map_err(|_| BufferError::OutOfMemory)?;
            self.heap.resize(new_len, 0);
            self.len = new_len;
            return Ok(&mut self.heap[old..]);
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
            if let Some(place) = self.layout.place(new_len, self.cap) {
                // SAFETY: `place.start + new_len <= place.limit <= cap`.
                let dst = unsafe { self.base.as_ptr().add(place.start) };
                #[cfg(all(loom, feature = "alloc"))]
                {
                    if let Location::Pool { start, .. } = self.location {
                        // SAFETY: `start` lies within the pool memory.
                        self.touch(unsafe { self.base.as_ptr().add(start) }, old, false);
                    }
                    self.touch(dst, new_len, true);
                }
                if let Location::Pool { start, .. } = self.location {
                    // SAFETY: the old bytes `start..start + old` and the new
                    // region are pool memory no lent slice overlaps; they may
                    // overlap each other, which `copy` allows.
                    unsafe { core::ptr::copy(self.base.as_ptr().add(start), dst, old) };
                }
                self.location = Location::Pool {
                    slot,
                    start: place.start,
                };
                self.mode = place.mode;
                self.len = new_len;
                self.room = place.limit - place.start - new_len;
                // SAFETY: in bounds, as `dst` is.
                self.cursor = unsafe { dst.add(new_len) };
                // SAFETY: `dst + old..dst + new_len` is initialised pool
                // memory in a free region (layout invariant "Free regions"),
                // borrowed uniquely through `self`.
                return Ok(unsafe { core::slice::from_raw_parts_mut(dst.add(old), n) });
            }
        }
        #[cfg(feature = "alloc")]
        if self.fallback {
            let mut heap = Vec::new();
            heap.try_reserve_exact(new_len)
                .map_err(|_| BufferError::OutOfMemory)?;
            heap.extend_from_slice(self.pending());
            heap.resize(new_len, 0);
            self.heap = heap;
            self.location = Location::Heap;
            self.mode = PoolMode::Alloc;
            self.room = 0;
            self.cursor = self.base.as_ptr();
            self.len = new_len;
            return Ok(&mut self.heap[old..]);
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

    /// Hands the pending message out and starts an empty one.
    pub(crate) fn get_data_owned(&mut self) -> Slice<M> {
        let len = core::mem::replace(&mut self.len, 0);
        let location = core::mem::replace(&mut self.location, Location::Idle);
        self.room = 0;
        self.cursor = self.base.as_ptr();
        self.view = 0;
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
            Location::Heap => Slice::heap(core::mem::take(&mut self.heap)),
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
            // SAFETY: `start..start + len` is the pending message: initialised
            // pool memory no lent slice overlaps, borrowed through `&self`.
            Location::Pool { start, .. } => unsafe {
                let at = self.base.as_ptr().add(start);
                #[cfg(all(loom, feature = "alloc"))]
                self.touch(at, self.len, false);
                core::slice::from_raw_parts(at, self.len)
            },
            #[cfg(feature = "alloc")]
            Location::Heap => &self.heap,
        }
    }

    /// The pending message, writable.
    pub(crate) fn pending_mut(&mut self) -> &mut [u8] {
        match self.location {
            Location::Idle => &mut [],
            // SAFETY: as in `pending`, borrowed uniquely through `&mut self`.
            Location::Pool { start, .. } => unsafe {
                let at = self.base.as_ptr().add(start);
                #[cfg(all(loom, feature = "alloc"))]
                self.touch(at, self.len, true);
                core::slice::from_raw_parts_mut(at, self.len)
            },
            #[cfg(feature = "alloc")]
            Location::Heap => &mut self.heap,
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
