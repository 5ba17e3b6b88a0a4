//! The queue: the slots reads wait in until a flush reads them, and the
//! life of a slot from queued to read to taken.

use core::task::{Context, Waker};

use super::solo::{SOLO_BUF, Solo};
use super::staging::{Staging, copy_small};
use crate::{DEFAULT_WINDOW, PartialRead, ReadErrorKind, Reader};

/// What a read that never reached the backend fails with: the reader was
/// busy or broken, or its slot was not what it should have been.
pub(super) const BROKEN: PartialRead = PartialRead {
    valid: 0,
    kind: ReadErrorKind::Other,
};

/// Where a queued op is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotState {
    /// Not in use.
    Free,
    /// Waiting for the next flush; it holds no staging yet.
    Queued,
    /// Its future was dropped while it was queued: the next flush skips it
    /// and frees it.
    Cancelled,
    /// Read; its bytes wait in staging until its future is polled or dropped.
    Done,
}

/// One queued op.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) state: SlotState,
    pub(super) addr: u64,
    /// Where its bytes are in staging, once the flush that reads it has
    /// placed them.
    pub(super) off: usize,
    pub(super) len: usize,
    /// Where it first failed, once read.
    pub(super) failure: Option<PartialRead>,
    /// Whom to wake when it is read; `None` when the flush is made by the
    /// run that polls it, which re-polls without being woken.
    pub(super) waker: Option<Waker>,
}

impl Slot {
    const FREE: Slot = Slot {
        state: SlotState::Free,
        addr: 0,
        off: 0,
        len: 0,
        failure: None,
        waker: None,
    };
}

/// Everything the futures share, behind the reader's one cell.
pub(super) struct Inner<B, S, const N: usize, const A: usize> {
    pub(super) reader: Reader<B, S, DEFAULT_WINDOW, N>,
    pub(super) solo: Solo,
    /// Where the solo op's bytes land.
    pub(super) solo_buf: [u8; SOLO_BUF],
    pub(super) staging: Staging<A>,
    pub(super) slots: [Slot; N],
    /// Indices of free slots.
    pub(super) free: crate::stack::Stack<usize, N>,
    /// Indices of queued (and cancelled) slots, in queue order.
    pub(super) queue: crate::stack::Stack<usize, N>,
    /// A queued slot may hold a waker or have been cancelled since the last
    /// flush: that flush must look for both. (Reads queued under a run
    /// store no waker and are seldom dropped, so most flushes need not.)
    pub(super) stirred: bool,
}

/// What a first poll got.
pub(super) enum Enqueued {
    /// Became the solo op.
    Solo,
    /// Queued in slot `idx`; `full` if that filled the queue.
    Slot { idx: usize, full: bool },
    /// No room (slots or staging): read at once, alone.
    Direct,
}

/// What polling a queued op found.
pub(super) enum Status {
    /// Read; the copy to the caller is made.
    Ready(Option<PartialRead>, Option<Waker>),
    /// Still queued.
    Queued {
        /// Its stored waker does not wake this context.
        stale_waker: bool,
    },
}

impl<B, S, const N: usize, const A: usize> Inner<B, S, N, A> {
    pub(super) fn new(reader: Reader<B, S, DEFAULT_WINDOW, N>) -> Self {
        let mut free = crate::stack::Stack::new();
        for i in (0..N).rev() {
            // Cannot fail: N indices into a vector of capacity N.
            let _ = free.push(i);
        }
        Self {
            reader,
            solo: Solo::Empty,
            solo_buf: [0; SOLO_BUF],
            staging: Staging::new(),
            slots: [const { Slot::FREE }; N],
            free,
            queue: crate::stack::Stack::new(),
            stirred: false,
        }
    }

    /// Takes slot `idx` away from its dropped future: it leaves the next
    /// batch, or, if read, is freed with its staging. Returns its waker.
    pub(super) fn cancel_slot(&mut self, idx: usize) -> Option<Waker> {
        let slot = self.slots.get_mut(idx)?;
        let waker = slot.waker.take();
        match slot.state {
            SlotState::Queued => {
                slot.state = SlotState::Cancelled;
                self.staging.queued -= slot.len;
                self.stirred = true;
                self.drop_cancelled();
            }
            SlotState::Done => self.release(idx),
            SlotState::Free | SlotState::Cancelled => {}
        }
        waker
    }

    /// Frees a read slot and its staging.
    #[inline]
    fn release(&mut self, idx: usize) {
        let Some(slot) = self.slots.get_mut(idx) else {
            return;
        };
        // `failure` and `off` are set when the slot is next read.
        slot.state = SlotState::Free;
        // Cannot fail: a slot is freed once per use.
        let _ = self.free.push(idx);
        self.staging.release(slot.len);
    }

    /// Empties the queue if every op in it was cancelled, so that their
    /// slots come back without waiting for a flush.
    fn drop_cancelled(&mut self) {
        let slots = &mut self.slots;
        let cancelled = |i: &usize| {
            slots
                .get(*i)
                .is_some_and(|s| s.state == SlotState::Cancelled)
        };
        if self.queue.iter().all(cancelled) {
            while let Some(i) = self.queue.pop() {
                if let Some(slot) = slots.get_mut(i) {
                    slot.state = SlotState::Free;
                }
                // Cannot fail: a slot is freed once per use.
                let _ = self.free.push(i);
            }
        }
    }

    /// Queues a read of `len` (non-zero) bytes at `addr`: as the solo op if
    /// `solo` (polled under its run), nothing else is queued and the last
    /// flush was not of several ops ([`Solo::Joined`]), else in a slot.
    #[inline]
    pub(super) fn enqueue(&mut self, addr: u64, len: usize, solo: bool) -> Enqueued {
        match self.enqueue_solo(addr, len, solo) {
            Some(queued) => queued,
            None => self.enqueue_slot(addr, len),
        }
    }

    /// Queues a read of `len` (non-zero) bytes at `addr` in a slot. Its
    /// staging is placed by the flush that reads it; here it is only
    /// counted, so that the ops queued always fit.
    #[inline]
    pub(super) fn enqueue_slot(&mut self, addr: u64, len: usize) -> Enqueued {
        if self.queue.is_full() || !self.staging.fits(len) {
            return Enqueued::Direct;
        }
        match self.push_slot(addr, len) {
            Some(idx) => Enqueued::Slot {
                idx,
                full: self.queue.is_full(),
            },
            None => Enqueued::Direct,
        }
    }

    /// Takes a free slot for a read of `len` bytes at `addr` and queues it,
    /// the queue having room; `None` if no slot is free.
    #[inline(always)]
    pub(super) fn push_slot(&mut self, addr: u64, len: usize) -> Option<usize> {
        let idx = self.free.pop()?;
        let Some(slot) = self.slots.get_mut(idx) else {
            // Not reachable: free indices are below N.
            return None;
        };
        slot.state = SlotState::Queued;
        slot.addr = addr;
        slot.len = len;
        self.staging.queued += len;
        // Cannot fail: the caller checked.
        let _ = self.queue.push(idx);
        Some(idx)
    }

    /// If slot `idx` is read and holds no waker (a flush takes the wakers
    /// of the ops it reads), copies its valid prefix into `out` (the buffer
    /// of the op it was queued for, so `out.len()` is its length), frees it,
    /// and returns its failure.
    #[inline(always)]
    pub(super) fn take_slot(&mut self, idx: usize, out: &mut [u8]) -> Option<Option<PartialRead>> {
        let slot = self.slots.get(idx)?;
        if slot.state != SlotState::Done || slot.waker.is_some() {
            return None;
        }
        Some(self.copy_out(idx, out))
    }

    /// Copies the valid prefix of read slot `idx` into `out` (as
    /// [`take_slot`](Self::take_slot)), frees it, and returns its failure.
    #[inline(always)]
    fn copy_out(&mut self, idx: usize, out: &mut [u8]) -> Option<PartialRead> {
        let Some(slot) = self.slots.get(idx) else {
            return Some(BROKEN);
        };
        let failure = slot.failure;
        let to = match failure {
            None => Some(out),
            Some(failed) => out.get_mut(..failed.valid.min(out.len())),
        };
        if let Some(to) = to {
            let staged = self.staging.bytes.get(slot.off..);
            if let Some(from) = staged.and_then(|s| s.get(..to.len())) {
                copy_small(to, from);
            }
        }
        self.release(idx);
        failure
    }

    /// Where a queued op stands; if read, copies its valid prefix into `out`
    /// and frees it.
    #[inline]
    pub(super) fn status(&mut self, idx: usize, out: &mut [u8], cx: &Context<'_>) -> Status {
        let Some(slot) = self.slots.get_mut(idx) else {
            return Status::Ready(Some(BROKEN), None);
        };
        match slot.state {
            SlotState::Done => {
                // Woken or dropped by the caller, outside this borrow.
                let waker = slot.waker.take();
                Status::Ready(self.copy_out(idx, out), waker)
            }
            SlotState::Queued => Status::Queued {
                stale_waker: !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())),
            },
            // Not reachable for a live future's slot.
            SlotState::Free | SlotState::Cancelled => Status::Ready(Some(BROKEN), None),
        }
    }

    /// Stores `waker` in queued slot `idx`, to be woken by the flush that
    /// reads it; returns the one it replaces.
    pub(super) fn store_waker(&mut self, idx: usize, waker: Waker) -> Option<Waker> {
        self.stirred = true;
        self.slots.get_mut(idx)?.waker.replace(waker)
    }
}
