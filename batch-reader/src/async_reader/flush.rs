//! Flushing: the queue goes to the backend in one call, and the futures it
//! read are told.

use core::mem;
use core::task::Waker;

use super::AsyncReader;
use super::queue::{BROKEN, Inner, Slot, SlotState};
use super::solo::Solo;
use super::staging::unplaced;
use crate::{PartialRead, ReadBackend, ReadOp};

/// Carves the buffers of a flush's ops off staging, one after the other,
/// in queue order.
struct Carver<'s> {
    rest: &'s mut [u8],
    /// Where `rest` starts in staging.
    at: usize,
}

impl<'s> Carver<'s> {
    /// Marks a queued slot read and adds its op, tagged `idx`, to `ops`.
    #[inline(always)]
    fn place<const N: usize>(
        &mut self,
        slot: &mut Slot,
        idx: usize,
        ops: &mut crate::stack::Stack<ReadOp<'s>, N>,
    ) {
        slot.state = SlotState::Done;
        let len = slot.len;
        match mem::take(&mut self.rest).split_at_mut_checked(len) {
            Some((buf, tail)) => {
                self.rest = tail;
                slot.off = self.at;
                slot.failure = None;
                self.at += len;
                // Cannot fail: at most N queued.
                let _ = ops.push(ReadOp::new(slot.addr, buf, idx));
            }
            // Not reachable: `placement` leaves room for the queued ops.
            None => unplaced(slot),
        }
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> Inner<B, S, N, A> {
    /// The flush of a queue holding exactly one op, still queued: one
    /// `read_buf` into its staging (the same `read_many` on a batch of one,
    /// which the compiler specializes for that length). Returns the waker to
    /// wake, or `None` (having done nothing) for any other queue.
    pub(super) fn flush_single(&mut self) -> Option<Option<Waker>> {
        let [idx] = self.queue[..] else {
            return None;
        };
        if self.slots.get(idx)?.state != SlotState::Queued {
            return None;
        }
        let at = self.staging.placement(&mut self.slots);
        if self.solo == Solo::Joined {
            self.solo = Solo::Empty;
        }
        let Inner {
            reader,
            staging,
            slots,
            queue,
            ..
        } = self;
        let slot = slots.get_mut(idx)?;
        slot.state = SlotState::Done;
        staging.queued = 0;
        queue.clear();
        match staging.bytes.get_mut(at..at + slot.len) {
            Some(buf) => {
                slot.off = at;
                staging.bump = at + slot.len;
                staging.held += slot.len;
                slot.failure = reader.read_buf(slot.addr, buf).first_error();
            }
            // Not reachable: `placement` leaves room for the queued ops.
            None => unplaced(slot),
        }
        Some(slot.waker.take())
    }

    /// Sends every queued op to the backend in one `read_many`, marks them
    /// read, frees cancelled ones, and moves the wakers to wake into
    /// `wakers`. Returns whether any op was sent.
    ///
    /// One pass over the queue does all of it before the read: nothing can
    /// look at a slot until the flush is over (the reader is busy), so a
    /// slot marked read before its bytes arrive is never seen as such.
    pub(super) fn flush_all(&mut self, wakers: &mut crate::stack::Stack<Waker, N>) -> bool {
        let start = self.staging.placement(&mut self.slots);
        if self.queue.len() > 1 && self.solo == Solo::Empty {
            self.solo = Solo::Joined;
        }
        let stirred = mem::take(&mut self.stirred);
        let Inner {
            reader,
            staging,
            slots,
            free,
            queue,
            ..
        } = self;
        let mut ops: crate::stack::Stack<ReadOp<'_>, N> = crate::stack::Stack::new();
        let rest = staging.bytes.get_mut(start..).unwrap_or_default();
        let mut carver = Carver { rest, at: start };
        // With `small`, every flush takes the full pass: one loop, not two.
        if stirred || cfg!(feature = "small") {
            place_stirred(queue, slots, free, &mut carver, &mut ops, wakers);
        } else {
            // Every slot in the queue is queued, without a waker.
            for &idx in queue.iter() {
                if let Some(slot) = slots.get_mut(idx) {
                    if slot.state == SlotState::Queued {
                        carver.place(slot, idx, &mut ops);
                    }
                }
            }
        }
        staging.held += carver.at - start;
        staging.bump = carver.at;
        staging.queued = 0;
        queue.clear();
        let sent = !ops.is_empty();
        if sent {
            // Only failures are looked up: a read slot without one was
            // marked so above. The first failure of an op completed in
            // parts counts.
            reader.read_many(&mut ops, |done| {
                if let Some(failure) = done.first_error() {
                    if let Some(slot) = slots.get_mut(done.tag()) {
                        slot.failure.get_or_insert(failure);
                    }
                }
            });
        }
        sent
    }
}

/// [`flush_all`](Inner::flush_all)'s pass over a queue that may hold wakers
/// and cancelled slots: places the queued ones, takes their wakers, and
/// frees the cancelled ones.
fn place_stirred<'s, const N: usize>(
    queue: &[usize],
    slots: &mut [Slot; N],
    free: &mut crate::stack::Stack<usize, N>,
    carver: &mut Carver<'s>,
    ops: &mut crate::stack::Stack<ReadOp<'s>, N>,
    wakers: &mut crate::stack::Stack<Waker, N>,
) {
    for &idx in queue {
        let Some(slot) = slots.get_mut(idx) else {
            continue;
        };
        match slot.state {
            SlotState::Queued => {
                carver.place(slot, idx, ops);
                if let Some(w) = slot.waker.take() {
                    // Cannot fail: at most N queued.
                    let _ = wakers.push(w);
                }
            }
            SlotState::Cancelled => {
                slot.state = SlotState::Free;
                // Cannot fail: a slot is freed once per use.
                let _ = free.push(idx);
            }
            SlotState::Free | SlotState::Done => {}
        }
    }
}

impl<B: ReadBackend, S: AsMut<[u8]>, const N: usize, const A: usize> AsyncReader<B, S, N, A> {
    /// Sends every queued op to the backend in one call (as far as its
    /// geometry allows) and wakes the futures that asked to be woken.
    /// Returns whether any op was sent.
    pub(super) fn flush(&self) -> bool {
        if cfg!(feature = "small") {
            // One flush path: there is no solo op, and a queue of one op
            // goes the way of many (the same backend call, by `read_many`).
            return self.flush_many();
        }
        match self.busy_with(|inner| inner.flush_solo()) {
            Some(true) => true,
            Some(false) => self.flush_queue(),
            None => false,
        }
    }

    /// [`flush`](Self::flush) of the queue (no solo op). Out of line, so
    /// that the flush of a solo op carries none of it.
    #[inline(never)]
    fn flush_queue(&self) -> bool {
        match self.busy_with(|inner| inner.flush_single()) {
            Some(Some(waker)) => {
                if let Some(w) = waker {
                    w.wake();
                }
                true
            }
            Some(None) => self.flush_many(),
            None => false,
        }
    }

    /// [`flush`](Self::flush) of any number of queued ops. Kept out of line:
    /// its batch and waker lists are large, and a task awaiting one read at
    /// a time should not carry them on its stack.
    #[inline(never)]
    fn flush_many(&self) -> bool {
        let mut wakers: crate::stack::Stack<Waker, N> = crate::stack::Stack::new();
        let sent = self.busy_with(|inner| inner.flush_all(&mut wakers));
        // Popped, not iterated by value: moving the vector out would copy
        // all of its capacity.
        while let Some(w) = wakers.pop() {
            w.wake();
        }
        sent.unwrap_or(false)
    }

    /// Reads `buf` at `addr` at once, alone (no room in the queue).
    pub(super) fn read_now(&self, addr: u64, buf: &mut [u8]) -> Option<PartialRead> {
        self.busy_with(|inner| {
            if !cfg!(feature = "small") {
                return inner.reader.read_buf(addr, buf).first_error();
            }
            // With `small`, the batch of one that `read_buf` sums up (the
            // same backend call, counters and first failure), read by the
            // route the flushes take, so that no copy of `read_buf` for
            // this reader's table is linked.
            let mut first = None;
            inner
                .reader
                .read_many(&mut [ReadOp::new(addr, buf, 0)], |done| {
                    first = first.or(done.first_error());
                });
            first
        })
        .unwrap_or(Some(BROKEN))
    }
}
