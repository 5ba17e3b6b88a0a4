//! The message being written, and the bookkeeping of one pool's producer.
//!
//! Both pool types wrap a [`Producer`]: it owns the pending message and the
//! [`Layout`], and reads the shared slot map only when a message needs a new
//! place. Appending to a message that still has room is a compare and a
//! pointer bump: no atomic, no call.
//!
//! The producer is split in two. The cursor and the limit of the pending
//! message sit in the pool value itself ([`Producer`]); everything else
//! ([`State`]) sits in memory of its own (a box, or the static storage), and
//! the out-of-line slow paths get only a pointer to that. So the pool's own
//! address never escapes the caller's function, and the compiler can see that
//! the bytes an append returns never overlap the cursor: a loop of appends
//! then keeps the cursor in a register instead of reloading it from memory
//! after every write to the returned bytes (measured on the `pool` suite's
//! single-thread pattern, docs/benchmarks.md).

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

/// Copies `len` bytes from `src` to `dst`, front to back, one byte at a
/// time. A move within pool memory needs no more than that (see
/// [`State::move_to`]); it happens only when a message outgrows its place,
/// and a byte loop keeps both `memmove` and `memcpy` out of firmware images
/// (on thumbv7em `memcpy` alone is about 740 bytes of flash).
///
/// # Safety
///
/// Both ranges are valid for `len` bytes, and `dst <= src` or the two
/// ranges are disjoint.
// Out of line, so that the two pointers are opaque to the loop: inlined into
// `move_to`, both derive from the pool's base, a case the optimiser may turn
// back into a call to `memmove`.
#[inline(never)]
unsafe fn copy_forward(src: *const u8, dst: *mut u8, len: usize) {
    for i in 0..len {
        // SAFETY: `i < len`, in both ranges. Front to back, byte `i` of the
        // source is read before any write at or above `dst + i`; with
        // `dst <= src` (or disjoint ranges, the caller's guarantee) no byte
        // is overwritten before it is read.
        unsafe { dst.add(i).write(src.add(i).read()) };
    }
}

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

/// The writing side of a pool: the fast path's two pointers, and where the
/// rest of the producer's state is.
#[derive(Debug)]
pub(crate) struct Producer<M: SlotMap> {
    /// Where the next appended byte goes: in pool memory, or in `heap`'s
    /// buffer for a message in system memory. `base` when idle.
    cursor: *mut u8,
    /// The end of the message's region (`heap`'s initialised length for a
    /// message in system memory). `base` when idle, so that `limit - cursor`
    /// (the room left in place) is 0 and every non-empty append takes the
    /// slow path.
    limit: *mut u8,
    /// The rest, in memory the pool's owner provides (see [`Producer::new`]);
    /// only this producer uses it.
    state: NonNull<State<M>>,
}

/// Memory for a producer's [`State`], provided by the pool's owner.
pub(crate) type StateSlot<M> = core::mem::MaybeUninit<State<M>>;

/// Everything about the pending message and the pool but the cursor and the
/// limit, which the [`Producer`] keeps and passes in where they are needed.
#[derive(Debug)]
pub(crate) struct State<M: SlotMap> {
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
    /// Its state is written to `slot`.
    ///
    /// # Safety
    ///
    /// `base..base + cap` is initialised memory that only this producer and
    /// slices lent through `control` access, `control` stays alive while the
    /// producer lives, and `lent` holds the bits set in `control`'s slot map.
    /// `slot` is valid for writes, used by nothing else, and stays so until
    /// the owner calls [`drop_state`](Self::drop_state), after which the
    /// producer is not used again.
    pub(crate) unsafe fn new(
        slot: NonNull<StateSlot<M>>,
        control: NonNull<Control<M>>,
        base: NonNull<u8>,
        cap: usize,
        lent: u64,
        fallback: bool,
    ) -> Self {
        #[cfg(not(feature = "alloc"))]
        let _ = fallback;
        let state = State {
            location: Location::Idle,
            base,
            cap,
            control,
            layout: Layout::new(),
            mode: PoolMode::Back,
            hint: 0,
            view: 0,
            #[cfg(feature = "alloc")]
            heap: Vec::new(),
            #[cfg(feature = "alloc")]
            fallback,
        };
        // SAFETY: `slot` is valid for writes and unused (the caller's
        // guarantee); `MaybeUninit` has the layout of the `State` it holds.
        let mut state = unsafe {
            (*slot.as_ptr()).write(state);
            slot.cast::<State<M>>()
        };
        // Marked in place, after the write: a state built whole on the stack
        // and then copied would cost a `memcpy` of it in every firmware image.
        // SAFETY: just written; nothing else refers to it yet.
        unsafe { state.as_mut() }.layout.lend_unknown(lent, cap);
        Self {
            cursor: base.as_ptr(),
            limit: base.as_ptr(),
            state,
        }
    }

    /// Drops the state in its slot, which the owner may then free.
    ///
    /// # Safety
    ///
    /// Called once, last: the producer is not used afterwards.
    pub(crate) unsafe fn drop_state(&mut self) {
        // SAFETY: the state was written in `new` and not dropped since (the
        // caller's guarantee).
        unsafe { core::ptr::drop_in_place(self.state.as_ptr()) };
    }

    /// The slot the state lives in, for the owner to free after
    /// [`drop_state`](Self::drop_state).
    #[cfg(feature = "alloc")]
    pub(crate) fn state_slot(&self) -> NonNull<StateSlot<M>> {
        self.state.cast()
    }

    #[inline]
    fn state(&self) -> &State<M> {
        // SAFETY: the state is valid from `new` to `drop_state` and only this
        // producer uses it; the borrow of `self` keeps the borrows apart.
        unsafe { self.state.as_ref() }
    }

    #[inline]
    fn state_mut(&mut self) -> &mut State<M> {
        // SAFETY: as in `state`, and `&mut self` makes this the only borrow.
        unsafe { self.state.as_mut() }
    }

    #[cfg(feature = "alloc")]
    pub(crate) fn control(&self) -> NonNull<Control<M>> {
        self.state().control
    }

    pub(crate) fn capacity(&self) -> usize {
        self.state().cap
    }

    pub(crate) fn mode(&self) -> PoolMode {
        self.state().mode
    }

    /// Bytes in the pending message.
    pub(crate) fn len(&self) -> usize {
        self.state().len(self.cursor)
    }

    /// Appends `n` bytes to the pending message and returns them.
    #[inline]
    pub(crate) fn try_get_writable(&mut self, n: usize) -> Result<&mut [u8], BufferError> {
        if n > self.limit as usize - self.cursor as usize {
            let cursor = self.cursor;
            (self.cursor, self.limit) = self.state_mut().grow(cursor, n)?;
        }
        let at = self.cursor;
        // SAFETY: `n` is at most the room left (checked, or made by `grow`),
        // and `cursor..limit` lies inside the pending message's region, so
        // the addition stays in bounds.
        self.cursor = unsafe { at.add(n) };
        self.state().touch(at, n, true);
        // SAFETY: `at..at + n` is initialised memory of the pending message's
        // region: pool memory no lent slice overlaps (layout invariant "Free
        // regions"), or `heap`'s initialised buffer, which only the producer
        // touches. The borrow of `self` keeps it unique until the next call.
        Ok(unsafe { core::slice::from_raw_parts_mut(at, n) })
    }

    /// Hands the pending message out and starts an empty one.
    #[inline]
    pub(crate) fn get_data_owned(&mut self) -> Slice<M> {
        let cursor = self.cursor;
        let (slice, base) = self.state_mut().finish(cursor);
        self.cursor = base;
        self.limit = base;
        slice
    }

    /// The pending message.
    pub(crate) fn pending(&self) -> &[u8] {
        self.state().pending(self.cursor)
    }

    /// The pending message, writable.
    pub(crate) fn pending_mut(&mut self) -> &mut [u8] {
        let cursor = self.cursor;
        self.state_mut().pending_mut(cursor)
    }

    pub(crate) fn set_view(&mut self, index: usize) {
        self.state_mut().view = index;
    }

    /// Shortens the view (the pending message from the start set by
    /// `set_view` on) to `len` bytes; a longer `len` changes nothing.
    #[cfg(feature = "aead")]
    pub(crate) fn truncate_view(&mut self, len: usize) {
        let keep = self.state().view.saturating_add(len);
        let old = self.len();
        if keep < old {
            // SAFETY: `old - keep <= old`, the bytes between the message's
            // start and the cursor, so the result stays in the message.
            self.cursor = unsafe { self.cursor.sub(old - keep) };
        }
    }

    pub(crate) fn view(&self) -> &[u8] {
        let view = self.state().view;
        self.pending().get(view..).unwrap_or_default()
    }

    pub(crate) fn view_mut(&mut self) -> &mut [u8] {
        let view = self.state().view;
        self.pending_mut().get_mut(view..).unwrap_or_default()
    }
}

impl<M: SlotMap> State<M> {
    /// Bytes in the pending message, which ends at `cursor`.
    fn len(&self, cursor: *mut u8) -> usize {
        match self.location {
            Location::Idle => 0,
            Location::Pool { start, .. } => cursor as usize - (self.base.as_ptr() as usize + start),
            #[cfg(feature = "alloc")]
            Location::Heap => cursor as usize - self.heap.as_ptr() as usize,
        }
    }

    /// Where a message that needs `need` bytes can go: a region with room
    /// for the hint if there is one, else one with room for `need`.
    fn place(&self, need: usize) -> Option<Placement> {
        let want = need.max(self.hint);
        self.layout
            .place(want, self.cap)
            .or_else(|| self.layout.place(need, self.cap))
    }

    /// The slow path of [`Producer::try_get_writable`]: the message ending at
    /// `cursor` has no place yet, or its place has less than `n` bytes of
    /// room. Returns the new cursor (the end of the message, now wherever it
    /// lives) and limit, with at least `n` bytes of room between them.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, cursor: *mut u8, n: usize) -> Result<(*mut u8, *mut u8), BufferError> {
        let old = self.len(cursor);
        let Some(new_len) = old.checked_add(n) else {
            return Err(BufferError::OutOfMemory);
        };
        #[cfg(feature = "alloc")]
        if self.location == Location::Heap {
            return self.grow_heap(old, new_len);
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
        let Some(slot) = slot else {
            return self.no_pool_room(cursor, new_len, BufferError::NoFreeSlot);
        };
        if let Some(place) = self.place(new_len) {
            return Ok(self.move_to(place, slot, old));
        }
        let available = self.layout.largest_region(self.cap).saturating_sub(old);
        let full = BufferError::CapacityExceeded {
            requested: n,
            available,
        };
        self.no_pool_room(cursor, new_len, full)
    }

    /// Moves the pending message, `old` bytes, to `place` (which holds more
    /// than `old` bytes), to be lent under `slot`; returns its cursor and
    /// limit there.
    fn move_to(&mut self, place: Placement, slot: u32, old: usize) -> (*mut u8, *mut u8) {
        // SAFETY: `place.start + old < place.limit <= cap`.
        let dst = unsafe { self.base.as_ptr().add(place.start) };
        if let Location::Pool { start, .. } = self.location {
            // SAFETY: `start` lies within the pool memory.
            let src = unsafe { self.base.as_ptr().add(start) };
            self.touch(src, old, false);
            self.touch(dst, old, true);
            // SAFETY: the old bytes `src..src + old` and the new region are
            // pool memory no lent slice overlaps. Where they overlap, `dst`
            // is below `src`: a message only moves to a region that was free
            // when it was placed, or to where slices were returned since, and
            // both lie before it or after its region's end (docs/buffer-pool.md,
            // "Placement").
            unsafe { copy_forward(src, dst, old) };
        }
        self.location = Location::Pool {
            slot,
            start: place.start,
        };
        self.mode = place.mode;
        // SAFETY: `old < place.limit - place.start`, and `place.limit <= cap`:
        // both in bounds.
        unsafe { (dst.add(old), self.base.as_ptr().add(place.limit)) }
    }

    /// No pool memory can take the message ending at `cursor` at `new_len`
    /// bytes: it moves to system memory if the pool falls back there, else
    /// the append fails with `err`.
    fn no_pool_room(
        &mut self,
        cursor: *mut u8,
        new_len: usize,
        err: BufferError,
    ) -> Result<(*mut u8, *mut u8), BufferError> {
        #[cfg(feature = "alloc")]
        if self.fallback {
            return self.move_to_heap(cursor, new_len);
        }
        let _ = (cursor, new_len);
        Err(err)
    }

    /// Grows a message of `old` bytes in system memory to `new_len`.
    #[cfg(feature = "alloc")]
    fn grow_heap(&mut self, old: usize, new_len: usize) -> Result<(*mut u8, *mut u8), BufferError> {
        if self.heap.capacity() < new_len {
            let room = new_len.max(self.heap.capacity().saturating_mul(2));
            if self.heap.try_reserve_exact(room - self.heap.len()).is_err() {
                self.heap
                    .try_reserve_exact(new_len - self.heap.len())
                    .map_err(|_| BufferError::OutOfMemory)?;
            }
        }
        self.zero_heap_to(new_len);
        Ok(self.heap_bounds(old))
    }

    /// Moves the message ending at `cursor` to system memory, with room for
    /// `new_len` bytes.
    #[cfg(feature = "alloc")]
    fn move_to_heap(
        &mut self,
        cursor: *mut u8,
        new_len: usize,
    ) -> Result<(*mut u8, *mut u8), BufferError> {
        let mut heap = Vec::new();
        if heap.try_reserve_exact(new_len.max(self.hint)).is_err() {
            heap.try_reserve_exact(new_len)
                .map_err(|_| BufferError::OutOfMemory)?;
        }
        let pending = self.pending(cursor);
        let old = pending.len();
        heap.extend_from_slice(pending);
        self.heap = heap;
        self.zero_heap_to(new_len);
        self.location = Location::Heap;
        self.mode = PoolMode::Alloc;
        Ok(self.heap_bounds(old))
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

    /// The cursor and limit of a message of `old` bytes in `heap` (which
    /// holds at least that many initialised bytes): its end, and the end of
    /// the initialised bytes.
    #[cfg(feature = "alloc")]
    fn heap_bounds(&mut self, old: usize) -> (*mut u8, *mut u8) {
        let buffer = self.heap.as_mut_ptr();
        // SAFETY: `old <= heap.len()`: every caller sized `heap` so; the
        // second is one past the initialised bytes.
        unsafe { (buffer.add(old), buffer.add(self.heap.len())) }
    }

    /// Hands the message ending at `cursor` out and starts an empty one.
    /// Returns it and the pool memory's base, where an idle cursor points.
    #[inline(never)]
    fn finish(&mut self, cursor: *mut u8) -> (Slice<M>, *mut u8) {
        let len = self.len(cursor);
        let location = core::mem::replace(&mut self.location, Location::Idle);
        self.view = 0;
        let slice = match location {
            // A message emptied by `truncate` lends nothing.
            _ if len == 0 => Slice::empty(),
            Location::Idle => Slice::empty(),
            Location::Pool { slot, start } => self.lend(slot, start, len),
            #[cfg(feature = "alloc")]
            Location::Heap => {
                let mut heap = core::mem::take(&mut self.heap);
                heap.truncate(len);
                Slice::heap(heap)
            }
        };
        if len > 0 {
            self.hint = len;
        }
        (slice, self.base.as_ptr())
    }

    /// Lends the `len` bytes (at least one) from `start` of pool memory,
    /// the pending message placed under `slot`, as a slice.
    fn lend(&mut self, slot: u32, start: usize, len: usize) -> Slice<M> {
        let bit = 1u64 << slot;
        // SAFETY: `control` is alive while the producer is.
        unsafe { self.control.as_ref() }.lend(bit);
        self.layout
            .lend(slot, start, start.wrapping_add(len), self.mode);
        // SAFETY: `start..start + len` was the pending message: pool memory,
        // initialised, overlapping no lent span; from now on the layout
        // records it as slot `slot`'s, so the producer does not touch it
        // until it sees the slot returned. `lend` marked the slot and took an
        // ownership for the slice.
        unsafe {
            Slice::pooled(
                NonNull::new_unchecked(self.base.as_ptr().add(start)),
                len,
                bit,
                self.control,
            )
        }
    }

    /// Records an access to pool bytes `at..at + len` for loom (nothing
    /// without loom).
    #[inline(always)]
    fn touch(&self, at: *const u8, len: usize, write: bool) {
        // SAFETY: `control` is alive while the producer is.
        unsafe { self.control.as_ref() }.touch(at, len, write);
    }

    /// The pending message, ending at `cursor`.
    fn pending(&self, cursor: *mut u8) -> &[u8] {
        match self.location {
            Location::Idle => &[],
            Location::Pool { start, .. } => {
                // SAFETY: `start` lies within the pool memory.
                let at = unsafe { self.base.as_ptr().add(start) };
                let len = self.len(cursor);
                self.touch(at, len, false);
                // SAFETY: `at..cursor` is the pending message: initialised
                // pool memory no lent slice overlaps, borrowed through `&self`.
                unsafe { core::slice::from_raw_parts(at, len) }
            }
            #[cfg(feature = "alloc")]
            Location::Heap => self.heap.get(..self.len(cursor)).unwrap_or_default(),
        }
    }

    /// The pending message, ending at `cursor`, writable.
    fn pending_mut(&mut self, cursor: *mut u8) -> &mut [u8] {
        match self.location {
            Location::Idle => &mut [],
            Location::Pool { start, .. } => {
                // SAFETY: `start` lies within the pool memory.
                let at = unsafe { self.base.as_ptr().add(start) };
                let len = self.len(cursor);
                self.touch(at, len, true);
                // SAFETY: as in `pending`, borrowed uniquely through `&mut self`.
                unsafe { core::slice::from_raw_parts_mut(at, len) }
            }
            #[cfg(feature = "alloc")]
            Location::Heap => {
                let len = self.len(cursor);
                self.heap.get_mut(..len).unwrap_or_default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_forward;

    /// `copy_forward` of `len` bytes from offset `from` to offset `to` of
    /// 0, 1, 2, ... against `copy_within` (a `memmove`).
    fn check(from: usize, to: usize, len: usize) {
        let mut got: [u8; 32] = core::array::from_fn(|i| i as u8);
        let mut want = got;
        want.copy_within(from..from + len, to);
        let base = got.as_mut_ptr();
        // SAFETY: both ranges lie in `got`; every caller has `to <= from`
        // or disjoint ranges.
        unsafe { copy_forward(base.add(from), base.add(to), len) };
        assert_eq!(got, want, "from {from} to {to}, {len} bytes");
    }

    #[test]
    fn copies_down_over_its_own_source_and_between_disjoint_ranges() {
        for len in [0, 1, 5, 16, 24] {
            for shift in [0, 1, 3, 8] {
                check(shift, 0, len);
            }
        }
        check(0, 16, 16);
        check(20, 2, 10);
    }
}
