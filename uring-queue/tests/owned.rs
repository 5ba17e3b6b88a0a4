//! Elements that own resources: moved in and out, and whatever is left in a
//! ring when it goes away is dropped exactly once. Run under Miri too, which
//! catches a double drop or a leak of a live element.

extern crate alloc;

use alloc::rc::Rc;
use alloc::sync::Arc;
use core::cell::RefCell;
use core::sync::atomic::{AtomicUsize, Ordering};
use uring_queue::{HeapRing, PushError, Ring, RingError};

/// Records its id in a shared log when dropped.
#[derive(Debug)]
struct Tracked {
    id: u32,
    log: Rc<RefCell<Vec<u32>>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.log.borrow_mut().push(self.id);
    }
}

fn tracked(log: &Rc<RefCell<Vec<u32>>>, id: u32) -> Tracked {
    Tracked {
        id,
        log: log.clone(),
    }
}

fn sorted(log: &Rc<RefCell<Vec<u32>>>) -> Vec<u32> {
    let mut v = log.borrow().clone();
    v.sort_unstable();
    v
}

#[test]
fn inline_ring_drops_what_is_left_once() {
    let log = Rc::new(RefCell::new(Vec::new()));
    {
        let mut ring = Ring::<Tracked, 4>::new();
        {
            let (mut tx, mut rx) = ring.split();
            for id in 0..4 {
                tx.push(tracked(&log, id)).unwrap();
            }
            // A full ring hands the value back instead of dropping it.
            let back = tx.push(tracked(&log, 99)).unwrap_err();
            assert_eq!(back.error(), RingError::Full);
            assert_eq!(back.into_inner().id, 99);
            assert_eq!(*log.borrow(), [99]);
            let first = rx.pop().unwrap();
            assert_eq!(first.id, 0);
            drop(first);
            // Wrap around the end of the storage.
            tx.push(tracked(&log, 4)).unwrap();
        }
        // Split again: the unread elements are still there.
        let (_tx, mut rx) = ring.split();
        assert_eq!(rx.pop().unwrap().id, 1);
        assert_eq!(sorted(&log), [0, 1, 99]);
    }
    assert_eq!(sorted(&log), [0, 1, 2, 3, 4, 99]);
}

#[test]
fn heap_ring_drops_what_is_left_once() {
    let log = Rc::new(RefCell::new(Vec::new()));
    // `Rc` is not `Send`, so this goes through the same-thread path only:
    // wrap it to satisfy `HeapRing`'s bound without sending it anywhere.
    struct SendAnyway(Tracked);
    // SAFETY: the value never leaves this thread (both halves stay here).
    unsafe impl Send for SendAnyway {}
    {
        let (mut tx, mut rx) = HeapRing::<SendAnyway>::new(8).unwrap();
        for id in 0..6 {
            assert!(tx.push(SendAnyway(tracked(&log, id))).is_ok());
        }
        assert_eq!(rx.pop().ok().map(|v| v.0.id), Some(0));
        drop(tx);
        assert_eq!(sorted(&log), [0]);
        // The consumer still holds the storage.
        assert_eq!(rx.pop().ok().map(|v| v.0.id), Some(1));
    }
    assert_eq!(sorted(&log), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn deferred_consumer_publishes_before_the_ring_drops_the_rest() {
    let log = Rc::new(RefCell::new(Vec::new()));
    {
        let mut ring = Ring::<Tracked, 8>::new();
        let (mut tx, mut rx) = ring.split_deferred::<4>();
        for id in 0..7 {
            tx.push(tracked(&log, id)).unwrap();
        }
        // Two popped, not yet published.
        drop(rx.pop().unwrap());
        drop(rx.pop().unwrap());
        assert_eq!(rx.pending(), 2);
        assert_eq!(tx.len(), 7);
        // Partly through a batch, then the batch and the consumer go.
        let mut batch = rx.batch().unwrap();
        assert_eq!(batch.len(), 5);
        drop(batch.next().unwrap());
        drop(batch);
        assert_eq!(tx.len(), 4);
        drop((tx, rx));
        assert_eq!(sorted(&log), [0, 1, 2]);
    }
    assert_eq!(sorted(&log), [0, 1, 2, 3, 4, 5, 6]);
}

#[test]
fn a_leaked_deferred_consumer_leaks_rather_than_drops_twice() {
    // Counts drops in a static (not on the heap: what leaks here must not
    // own an allocation, or Miri reports the leak this test provokes).
    static DROPPED: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
    struct Slot(usize);
    impl Drop for Slot {
        fn drop(&mut self) {
            DROPPED[self.0].fetch_add(1, Ordering::Relaxed);
        }
    }
    {
        let mut ring = Ring::<Slot, 4>::new();
        let (mut tx, mut rx) = ring.split_deferred::<4>();
        for id in 0..3 {
            assert!(tx.push(Slot(id)).is_ok());
        }
        // Moved out, unpublished, and the consumer never runs its drop.
        drop(rx.pop().ok());
        core::mem::forget(rx);
        drop(tx);
    }
    // Element 0 was dropped by its owner; 1 and 2 are leaked with the
    // consumer's state, never dropped a second time.
    let counts: Vec<usize> = DROPPED.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    assert_eq!(counts, [1, 0, 0]);
}

#[test]
fn boxes_strings_and_vecs_cross_threads() {
    let n: usize = if cfg!(miri) { 40 } else { 20_000 };
    let drops = Arc::new(AtomicUsize::new(0));
    struct Counted(Vec<u8>, Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
    }
    let (mut tx, mut rx) = HeapRing::<(Box<usize>, String, Counted)>::new(16).unwrap();
    let d = drops.clone();
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            let mut v = (
                Box::new(i),
                i.to_string(),
                Counted(vec![i as u8; i % 7], d.clone()),
            );
            loop {
                match tx.push(v) {
                    Ok(()) => break,
                    Err(PushError::Full(back)) => {
                        v = back;
                        std::thread::yield_now();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    });
    let mut next = 0;
    while next < n {
        match rx.pop() {
            Ok((b, s, c)) => {
                assert_eq!(*b, next);
                assert_eq!(s, next.to_string());
                assert_eq!(c.0, vec![next as u8; next % 7]);
                next += 1;
            }
            Err(RingError::Empty) => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
    producer.join().unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), n);
}

#[test]
fn copy_elements_keep_slices_and_peek() {
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Point {
        x: f32,
        ok: bool,
    }
    let mut ring = Ring::<Point, 4>::new();
    let (mut tx, mut rx) = ring.split();
    let p = |x| Point { x, ok: true };
    assert_eq!(tx.push_slice(&[p(1.0), p(2.0), p(3.0)]), Ok(3));
    assert_eq!(rx.peek(), Ok(&p(1.0)));
    let chunk = rx.read_chunk(2).unwrap();
    assert_eq!(chunk.as_slices().0, [p(1.0), p(2.0)]);
    chunk.commit(1);
    let mut out = [p(0.0); 4];
    assert_eq!(rx.pop_slice(&mut out), Ok(2));
    assert_eq!(out[..2], [p(2.0), p(3.0)]);
}
