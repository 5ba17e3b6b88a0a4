//! The client's in-flight table: `N` slots, one per request in flight, and
//! the credits that bound how many completions are still to come.
//!
//! A pure state machine, in the client's own memory (the peer cannot touch
//! it), with no rings, locks or wake-ups: the client drives it under its
//! lock and decides whom to wake from what it returns. Each slot moves
//!
//! ```text
//! Free --occupy--> Pending --complete--> Done --take--> Free (generation + 1)
//!                     |                                   ^
//!                     +--cancel--> Abandoned --complete---+
//! ```
//!
//! and a tag (slot index and generation) names a slot only while the
//! generation matches, so a completion or ticket of an earlier occupant
//! never reaches a later one.

use super::Error;
use super::payload::{Block, Owner, Span};
use super::request::{Reply, Tag};
use core::task::Waker;

#[cfg(test)]
mod tests;

/// Where a slot is in its request's life.
#[derive(Debug)]
enum State {
    /// On the free list; `next` is the following free slot.
    Free { next: Option<u32> },
    /// Submitted; the submitter may be waiting (its task's waker, if any).
    Pending { waker: Option<Waker> },
    /// Submitted, then given up: the completion is discarded on arrival.
    Abandoned,
    /// Completed, reply not yet taken.
    Done {
        result: i32,
        flags: u32,
        response_len: u32,
        place: Place,
    },
}

/// One entry of the table.
#[derive(Debug)]
pub(crate) struct Slot {
    generation: u32,
    state: State,
    payload: Span,
    response: Span,
    /// A thread blocks on this slot's reply, parked on the slot's own flag:
    /// whoever routes the reply wakes it.
    pub(crate) parked: bool,
}

impl Slot {
    /// Whether the slot's request is in flight with no reply yet (a waiter
    /// for it must keep waiting).
    pub(crate) fn is_pending(&self) -> bool {
        matches!(self.state, State::Pending { .. })
    }

    /// Takes the reply out, if the slot holds one (the caller then frees
    /// the slot).
    fn take_reply(&mut self, owner: Owner) -> Option<Reply> {
        let State::Done {
            result,
            flags,
            response_len,
            place,
        } = self.state
        else {
            return None;
        };
        Some(Reply {
            result,
            flags,
            payload: Block::of(owner, core::mem::take(&mut self.payload)),
            response: Block::of(owner, core::mem::take(&mut self.response)),
            response_len,
            in_place: place == Place::RequestBlock,
        })
    }
}

/// A free slot, found by [`Table::vacancy`] and taken by [`Table::occupy`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vacancy {
    /// The tag the request in it will carry.
    pub(crate) tag: Tag,
    /// The free slot after it.
    next: Option<u32>,
}

/// Where a completion says its response bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// In the request's response block (the usual case).
    ResponseBlock,
    /// Over the request body, in the request's own block
    /// ([`CQE_IN_PLACE`](super::CQE_IN_PLACE)).
    RequestBlock,
}

/// What a completion did to the table.
#[derive(Debug)]
#[must_use]
pub(crate) enum Completed {
    /// The reply is in its slot, to be taken; wake its submitter: the task
    /// (if it left a waker) and the thread parked on the slot (if any).
    Reply {
        index: u32,
        task: Option<Waker>,
        parked: bool,
    },
    /// The request had been cancelled: its slot is free again, and these
    /// blocks go back to the allocator.
    Discarded { payload: Span, response: Span },
}

/// What a ticket finds when it looks at its slot.
#[derive(Debug)]
#[must_use]
pub(crate) enum Polled {
    /// The reply, taken: the slot is free again.
    Reply(Reply),
    /// Not yet. The waker the slot held before, if the poll replaced it
    /// (to drop outside the caller's lock).
    Pending { replaced: Option<Waker> },
    /// Not yet, and the slot holds no waker that wakes the polling task:
    /// poll again with a clone of it, made outside the caller's lock (a
    /// clone is a call out to the executor).
    NeedsWaker,
}

/// What cancelling left to do.
#[derive(Debug)]
#[must_use]
pub(crate) enum Cancelled {
    /// The request is still in flight: its completion will be discarded.
    /// The waker the slot held, to drop outside the caller's lock.
    Abandoned { waker: Option<Waker> },
    /// The reply had arrived: the slot is free again, and these blocks go
    /// back to the allocator.
    Released { payload: Span, response: Span },
}

/// The table (see the module docs).
#[derive(Debug)]
pub(crate) struct Table<const N: usize> {
    slots: [Slot; N],
    free_head: Option<u32>,
    /// Slots in use: submitted and not yet redeemed (or discarded).
    in_flight: u32,
    /// Requests whose completion has not come back yet: what the rings'
    /// capacity bounds.
    outstanding: u32,
    /// The bound on `outstanding`: the smaller ring capacity.
    ring_credits: u32,
    /// The client whose blocks the slots hold (replies hand them back).
    owner: Owner,
}

impl<const N: usize> Table<N> {
    /// An empty table of `owner`'s requests, whose requests in flight the
    /// rings bound to `ring_credits`.
    pub(crate) fn new(ring_credits: u32, owner: Owner) -> Self {
        Self {
            slots: core::array::from_fn(|i| Slot {
                generation: 0,
                state: State::Free {
                    next: u32::try_from(i + 1).ok().filter(|&n| (n as usize) < N),
                },
                payload: Span::default(),
                response: Span::default(),
                parked: false,
            }),
            free_head: if N == 0 { None } else { Some(0) },
            in_flight: 0,
            outstanding: 0,
            ring_credits,
            owner,
        }
    }

    /// The slot `tag` names, if it still does: the one lookup from a tag
    /// (a ticket's, or a completion's `user_data`) to a slot.
    #[inline]
    pub(crate) fn slot(&self, tag: Tag) -> Option<&Slot> {
        self.slots
            .get(tag.index as usize)
            .filter(|s| s.generation == tag.generation)
    }

    #[inline]
    fn slot_mut(&mut self, tag: Tag) -> Option<&mut Slot> {
        self.slots
            .get_mut(tag.index as usize)
            .filter(|s| s.generation == tag.generation)
    }

    /// The slot at `index` of whatever generation, for the parked flag.
    pub(crate) fn slot_at(&mut self, index: u32) -> Option<&mut Slot> {
        self.slots.get_mut(index as usize)
    }

    /// Slots in use (submitted and not yet redeemed or discarded).
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Requests whose completion is still to come.
    pub(crate) fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// The bound the rings put on [`outstanding`](Self::outstanding).
    pub(crate) fn ring_credits(&self) -> u32 {
        self.ring_credits
    }

    /// Whether a request can be submitted now: a ring credit and a free
    /// slot.
    #[inline]
    pub(crate) fn has_credit(&self) -> bool {
        self.outstanding < self.ring_credits && self.free_head.is_some()
    }

    /// The slot the next request will take, without taking it.
    ///
    /// # Errors
    ///
    /// [`Error::Busy`] without a credit; [`Error::Corrupted`] if the free
    /// list's head is not free (the table's own invariant broken, never the
    /// peer's doing), found before anything is published.
    #[inline]
    pub(crate) fn vacancy(&self) -> Result<Vacancy, Error> {
        let index = match self.free_head {
            Some(index) if self.outstanding < self.ring_credits => index,
            _ => return Err(Error::Busy),
        };
        match self.slots.get(index as usize) {
            Some(Slot {
                generation,
                state: State::Free { next },
                ..
            }) => Ok(Vacancy {
                tag: Tag {
                    index,
                    generation: *generation,
                },
                next: *next,
            }),
            _ => Err(Error::Corrupted),
        }
    }

    /// Takes the slot of `vacancy`, for a request whose submission entry is
    /// now published. The caller has held the table since
    /// [`vacancy`](Self::vacancy) found it.
    #[inline]
    pub(crate) fn occupy(
        &mut self,
        vacancy: Vacancy,
        waker: Option<Waker>,
        payload: Span,
        response: Span,
    ) {
        if let Some(slot) = self.slots.get_mut(vacancy.tag.index as usize) {
            slot.state = State::Pending { waker };
            slot.payload = payload;
            slot.response = response;
            self.free_head = vacancy.next;
            self.in_flight += 1;
            self.outstanding += 1;
        }
    }

    /// Applies a completion the peer posted for `user_data`, its response
    /// in the response block.
    ///
    /// # Errors
    ///
    /// As [`complete_in`](Self::complete_in).
    #[cfg(test)]
    pub(crate) fn complete(
        &mut self,
        user_data: u64,
        result: i32,
        flags: u32,
        response_len: u32,
    ) -> Result<Completed, Error> {
        let response = (response_len, Place::ResponseBlock);
        self.complete_in(user_data, result, flags, response)
    }

    /// Applies a completion the peer posted for `user_data`, whose
    /// `response_len` bytes of response are at `place`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupted`] for a tag naming no request in flight, or a
    /// response longer than the block it is in: the peer broke the
    /// protocol (the table is left as it was).
    pub(crate) fn complete_in(
        &mut self,
        user_data: u64,
        result: i32,
        flags: u32,
        (response_len, place): (u32, Place),
    ) -> Result<Completed, Error> {
        let tag = Tag::from_user_data(user_data);
        let slot = self.slot_mut(tag).ok_or(Error::Corrupted)?;
        let block = match place {
            Place::ResponseBlock => slot.response,
            Place::RequestBlock => slot.payload,
        };
        if response_len > block.len {
            return Err(Error::Corrupted);
        }
        let completed = match &mut slot.state {
            State::Pending { waker } => {
                let task = waker.take();
                slot.state = State::Done {
                    result,
                    flags,
                    response_len,
                    place,
                };
                Completed::Reply {
                    index: tag.index,
                    task,
                    parked: slot.parked,
                }
            }
            State::Abandoned => {
                let payload = core::mem::take(&mut slot.payload);
                let response = core::mem::take(&mut slot.response);
                self.release(tag.index);
                Completed::Discarded { payload, response }
            }
            State::Free { .. } | State::Done { .. } => return Err(Error::Corrupted),
        };
        self.outstanding -= 1;
        Ok(completed)
    }

    /// Looks at the slot of a ticket's `tag`: takes the reply if it is
    /// there, else makes sure the slot's waker wakes the task of `waker`
    /// (if given), storing `new` (a clone of it) where it does not.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] when the tag names no request of this table (any
    /// more), or one given up.
    pub(crate) fn poll(
        &mut self,
        tag: Tag,
        waker: Option<&Waker>,
        new: &mut Option<Waker>,
    ) -> Result<Polled, Error> {
        let owner = self.owner;
        let slot = self.slot_mut(tag).ok_or(Error::Foreign)?;
        if let Some(reply) = slot.take_reply(owner) {
            self.release(tag.index);
            return Ok(Polled::Reply(reply));
        }
        let State::Pending { waker: kept } = &mut slot.state else {
            return Err(Error::Foreign);
        };
        match waker {
            Some(w) if !kept.as_ref().is_some_and(|k| k.will_wake(w)) => match new.take() {
                Some(clone) => Ok(Polled::Pending {
                    replaced: kept.replace(clone),
                }),
                None => Ok(Polled::NeedsWaker),
            },
            _ => Ok(Polled::Pending { replaced: None }),
        }
    }

    /// Gives a request up.
    ///
    /// # Errors
    ///
    /// [`Error::Foreign`] when the tag names no request of this table (any
    /// more), or one already given up.
    pub(crate) fn cancel(&mut self, tag: Tag) -> Result<Cancelled, Error> {
        let owner = self.owner;
        let slot = self.slot_mut(tag).ok_or(Error::Foreign)?;
        if let Some(reply) = slot.take_reply(owner) {
            self.release(tag.index);
            return Ok(Cancelled::Released {
                payload: reply.payload.span,
                response: reply.response.span,
            });
        }
        let State::Pending { waker } = &mut slot.state else {
            return Err(Error::Foreign);
        };
        let waker = waker.take();
        slot.state = State::Abandoned;
        Ok(Cancelled::Abandoned { waker })
    }

    /// Takes the waker of the request pending in slot `index` (if any) and
    /// says whether a thread is parked on the slot: to wake them all when a
    /// failure is latched.
    pub(crate) fn take_waiter(&mut self, index: usize) -> (Option<Waker>, bool) {
        let Some(slot) = self.slots.get_mut(index) else {
            return (None, false);
        };
        let task = match &mut slot.state {
            State::Pending { waker } => waker.take(),
            _ => None,
        };
        (task, slot.parked)
    }

    /// Frees slot `index` for reuse: a new generation, so no old tag or
    /// ticket names it again, and a slot back.
    fn release(&mut self, index: u32) {
        if let Some(slot) = self.slots.get_mut(index as usize) {
            slot.generation = slot.generation.wrapping_add(1);
            slot.state = State::Free {
                next: self.free_head,
            };
            self.free_head = Some(index);
            self.in_flight -= 1;
        }
    }
}
