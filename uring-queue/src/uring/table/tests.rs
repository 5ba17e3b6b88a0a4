//! The table on its own: credits, the free list, generations, and every
//! transition a completion, a poll and a cancel make, without rings.

use super::*;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::{RawWaker, RawWakerVTable};

/// The client whose blocks the tables hold.
const OWNER: Owner = Owner { area: 0, epoch: 0 };

/// The wakers of the tests' tasks: one `static` table, so that
/// `Waker::will_wake` tells tasks apart by their data alone, under Miri too
/// (which may give a table built per call a new address each time).
static TASK: RawWakerVTable = RawWakerVTable::new(clone_task, wake_task, wake_task, drop_task);

fn clone_task(data: *const ()) -> RawWaker {
    RawWaker::new(data, &TASK)
}

fn wake_task(data: *const ()) {
    // SAFETY: `data` is the counter `task` was given, which outlives every
    // waker made from it (see `task`).
    unsafe { &*data.cast::<AtomicUsize>() }.fetch_add(1, Ordering::Relaxed);
}

fn drop_task(_: *const ()) {}

/// A waker of a task of its own, counting its wake-ups in `woken`. Each
/// test declares its counters before its table, so they outlive the
/// wakers the table keeps.
fn task(woken: &AtomicUsize) -> Waker {
    let data = core::ptr::from_ref(woken).cast::<()>();
    // SAFETY: the table's functions keep the `RawWaker` contract: `data`
    // stays valid while the waker and its clones live (above), waking only
    // counts, and clones share `data`.
    unsafe { Waker::from_raw(RawWaker::new(data, &TASK)) }
}

/// Submits one request with no blocks.
fn submit<const N: usize>(table: &mut Table<N>, waker: Option<Waker>) -> Tag {
    let vacancy = table.vacancy().unwrap();
    table.occupy(vacancy, waker, Span::default(), Span::default());
    vacancy.tag
}

fn complete<const N: usize>(table: &mut Table<N>, tag: Tag, result: i32) -> Completed {
    table.complete(tag.user_data(), result, 0, 0).unwrap()
}

#[test]
fn the_smaller_of_slots_and_ring_credits_bounds_submissions() {
    let mut table = Table::<4>::new(2, OWNER);
    let a = submit(&mut table, None);
    let b = submit(&mut table, None);
    assert_ne!(a, b);
    assert_eq!(table.vacancy().map(|v| v.tag), Err(Error::Busy));
    assert!(!table.has_credit());
    // A completion gives the ring credit back, though its reply still holds
    // its slot.
    let _ = complete(&mut table, a, 1);
    assert_eq!((table.outstanding(), table.in_flight()), (1, 2));
    assert!(table.has_credit());

    let mut table = Table::<2>::new(4, OWNER);
    for tag in [submit(&mut table, None), submit(&mut table, None)] {
        let _ = complete(&mut table, tag, 0);
    }
    // Every slot holds an untaken reply: no credit, whatever the rings say.
    assert_eq!(table.outstanding(), 0);
    assert_eq!(table.vacancy().map(|v| v.tag), Err(Error::Busy));
}

#[test]
fn a_taken_reply_frees_its_slot_under_a_new_generation() {
    let mut table = Table::<1>::new(1, OWNER);
    let tag = submit(&mut table, None);
    let _ = complete(&mut table, tag, 42);
    let Ok(Polled::Reply(reply)) = table.poll(tag, None, &mut None) else {
        panic!("the reply is there");
    };
    assert_eq!(reply.result, 42);
    assert_eq!(table.in_flight(), 0);
    // The slot is reused, under a new generation: the old tag names nothing.
    let next = table.vacancy().unwrap().tag;
    assert_eq!(
        (next.index, next.generation),
        (tag.index, tag.generation + 1)
    );
    assert_eq!(
        table.poll(tag, None, &mut None).unwrap_err(),
        Error::Foreign
    );
    assert_eq!(
        table.complete(tag.user_data(), 0, 0, 0).unwrap_err(),
        Error::Corrupted
    );
}

#[test]
fn the_free_list_hands_out_the_slot_freed_last() {
    let mut table = Table::<3>::new(3, OWNER);
    let tags = [0; 3].map(|_| submit(&mut table, None));
    assert_eq!(tags.map(|t| t.index), [0, 1, 2]);
    for tag in [tags[2], tags[0]] {
        let _ = complete(&mut table, tag, 0);
        let _ = table.poll(tag, None, &mut None).unwrap();
    }
    assert_eq!(table.vacancy().unwrap().tag.index, 0);
    let _ = submit(&mut table, None);
    assert_eq!(table.vacancy().unwrap().tag.index, 2);
}

#[test]
fn completions_the_peer_cannot_make_are_refused() {
    let mut table = Table::<2>::new(2, OWNER);
    let tag = submit(&mut table, None);
    // A slot never submitted, an index out of range, a stale generation.
    let free = Tag { index: 1, ..tag };
    let out_of_range = Tag { index: 7, ..tag };
    let stale = Tag {
        generation: 9,
        ..tag
    };
    for bad in [free, out_of_range, stale] {
        assert_eq!(
            table.complete(bad.user_data(), 0, 0, 0).unwrap_err(),
            Error::Corrupted
        );
    }
    // A response longer than the block (none here).
    assert_eq!(
        table.complete(tag.user_data(), 0, 0, 1).unwrap_err(),
        Error::Corrupted
    );
    // Refusals leave the table as it was: the real completion still lands,
    // once.
    assert_eq!(table.outstanding(), 1);
    let _ = complete(&mut table, tag, 5);
    assert_eq!(
        table.complete(tag.user_data(), 5, 0, 0).unwrap_err(),
        Error::Corrupted
    );
}

#[test]
fn a_response_fits_its_block() {
    let mut table = Table::<1>::new(1, OWNER);
    let vacancy = table.vacancy().unwrap();
    let tag = vacancy.tag;
    let response = Span { offset: 64, len: 8 };
    table.occupy(vacancy, None, Span::default(), response);
    assert_eq!(
        table.complete(tag.user_data(), 0, 0, 9).unwrap_err(),
        Error::Corrupted
    );
    let _ = table.complete(tag.user_data(), 0, 3, 8).unwrap();
    let Ok(Polled::Reply(reply)) = table.poll(tag, None, &mut None) else {
        panic!("the reply is there");
    };
    assert_eq!(
        (reply.flags, reply.response_len(), reply.response.len()),
        (3, 8, 8)
    );
}

#[test]
fn a_completion_names_the_task_and_the_parked_thread_to_wake() {
    let woken = AtomicUsize::new(0);
    let mut table = Table::<2>::new(2, OWNER);
    let tag = submit(&mut table, Some(task(&woken)));
    table.slot_at(tag.index).unwrap().parked = true;
    match complete(&mut table, tag, 0) {
        Completed::Reply {
            index,
            task: Some(task),
            parked: true,
        } => {
            assert_eq!(index, tag.index);
            task.wake();
            assert_eq!(woken.load(Ordering::Relaxed), 1);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_poll_keeps_one_waker_per_task() {
    let (first_woken, second_woken) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let mut table = Table::<1>::new(1, OWNER);
    let tag = submit(&mut table, None);
    let first = task(&first_woken);
    // No waker yet: the caller is asked for a clone.
    assert!(matches!(
        table.poll(tag, Some(&first), &mut None),
        Ok(Polled::NeedsWaker)
    ));
    let mut clone = Some(first.clone());
    assert!(matches!(
        table.poll(tag, Some(&first), &mut clone),
        Ok(Polled::Pending { replaced: None })
    ));
    assert!(clone.is_none());
    // The same task again: nothing to store.
    assert!(matches!(
        table.poll(tag, Some(&first), &mut None),
        Ok(Polled::Pending { replaced: None })
    ));
    // Another task takes over; the old waker comes back to be dropped.
    let second = task(&second_woken);
    let Ok(Polled::Pending {
        replaced: Some(old),
    }) = table.poll(tag, Some(&second), &mut Some(second.clone()))
    else {
        panic!("the first waker is replaced");
    };
    old.wake();
    assert_eq!(first_woken.load(Ordering::Relaxed), 1);
}

#[test]
fn a_cancelled_request_keeps_its_slot_until_its_completion() {
    let woken = AtomicUsize::new(0);
    let mut table = Table::<1>::new(1, OWNER);
    let vacancy = table.vacancy().unwrap();
    let tag = vacancy.tag;
    let payload = Span { offset: 0, len: 4 };
    table.occupy(vacancy, Some(task(&woken)), payload, Span::default());
    assert!(matches!(
        table.cancel(tag),
        Ok(Cancelled::Abandoned { waker: Some(_) })
    ));
    // Given up once only; its slot and credit stay taken.
    assert_eq!(table.cancel(tag).unwrap_err(), Error::Foreign);
    assert_eq!(
        table.poll(tag, None, &mut None).unwrap_err(),
        Error::Foreign
    );
    assert_eq!(table.vacancy().map(|v| v.tag), Err(Error::Busy));
    // The completion frees it and hands the blocks back.
    match complete(&mut table, tag, 0) {
        Completed::Discarded { payload, response } => {
            assert_eq!((payload.len, response.len), (4, 0));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((table.in_flight(), table.outstanding()), (0, 0));
    assert!(table.has_credit());
}

#[test]
fn cancelling_a_completed_request_frees_it_at_once() {
    let mut table = Table::<1>::new(1, OWNER);
    let tag = submit(&mut table, None);
    let _ = complete(&mut table, tag, 0);
    assert!(matches!(table.cancel(tag), Ok(Cancelled::Released { .. })));
    assert_eq!(table.in_flight(), 0);
    assert_eq!(table.cancel(tag).unwrap_err(), Error::Foreign);
}

#[test]
fn a_latched_failure_finds_every_waiter() {
    let woken = AtomicUsize::new(0);
    let mut table = Table::<3>::new(3, OWNER);
    let a = submit(&mut table, Some(task(&woken)));
    let b = submit(&mut table, None);
    table.slot_at(b.index).unwrap().parked = true;
    let (task_a, parked_a) = table.take_waiter(a.index as usize);
    let (task_b, parked_b) = table.take_waiter(b.index as usize);
    assert!(task_a.is_some() && !parked_a);
    assert!(task_b.is_none() && parked_b);
    // Taken once: the next failure finds no waker to wake again.
    assert!(table.take_waiter(a.index as usize).0.is_none());
    assert!(matches!(table.take_waiter(9), (None, false)));
}
