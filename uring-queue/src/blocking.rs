//! Blocking twins of [`Producer::push`] and [`Consumer::pop`] (feature
//! `std`): they wait out a full or empty ring instead of reporting it.
//!
//! The wait is a [`Backoff`]: a few rounds of spin-loop hints, then a
//! `yield_now` per look at the ring. Spinning alone is the wrong wait when
//! the two halves share a CPU, or when the machine runs more threads than
//! it has CPUs: the thread that would make room (or publish) cannot run
//! while this one spins. Handing the CPU back to the scheduler lets it run
//! at once, and costs next to nothing when there is nothing else to run.

use crate::loom::{hint, thread};
use crate::{Consumer, Producer, PushError, RingError};

/// How a blocked half waits between looks at the ring.
#[derive(Debug, Default)]
struct Backoff {
    step: u32,
}

impl Backoff {
    /// Rounds of spinning before every wait yields: `2^0 + 2^1`, three
    /// spin-loop hints in all, for a peer on another CPU that is about to
    /// publish. More spinning measured slower, not faster, on a loaded
    /// machine (docs/uring-queue.md, "Blocking push and pop").
    const SPIN_ROUNDS: u32 = 2;

    /// Waits a little longer than last time.
    fn snooze(&mut self) {
        if self.step < Self::SPIN_ROUNDS {
            for _ in 0..1u32 << self.step {
                hint::spin_loop();
            }
            self.step += 1;
        } else {
            thread::yield_now();
        }
    }
}

impl<T> Producer<'_, T> {
    /// Appends one element, waiting while the ring is full: spins briefly,
    /// then yields the CPU between looks (see the module docs of
    /// `blocking`), so it suits two halves that share CPUs too.
    ///
    /// Returns at once once there is room, also after the consumer was
    /// dropped (as [`push`](Self::push) does: the element is then never
    /// read).
    ///
    /// # Errors
    ///
    /// [`PushError::Full`] only when the consumer was dropped and the ring
    /// is full, so that no slot will ever come free;
    /// [`PushError::Corrupted`] as for [`push`](Self::push). Both hand the
    /// value back.
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::HeapRing;
    ///
    /// let (mut tx, mut rx) = HeapRing::<u32>::new(2).unwrap();
    /// let consumer = std::thread::spawn(move || {
    ///     let mut got = Vec::new();
    ///     while let Ok(v) = rx.pop_blocking() {
    ///         got.push(v);
    ///     }
    ///     got
    /// });
    /// // Far more than the ring holds: each push waits for room.
    /// for i in 0..1000 {
    ///     tx.push_blocking(i).unwrap();
    /// }
    /// drop(tx);
    /// assert_eq!(consumer.join().unwrap(), (0..1000).collect::<Vec<_>>());
    /// ```
    pub fn push_blocking(&mut self, value: T) -> Result<(), PushError<T>> {
        match self.push(value) {
            Err(PushError::Full(value)) => self.push_waiting(value),
            done => done,
        }
    }

    /// The waiting part of [`push_blocking`](Self::push_blocking), out of
    /// the fast path.
    #[cold]
    fn push_waiting(&mut self, mut value: T) -> Result<(), PushError<T>> {
        let mut backoff = Backoff::default();
        loop {
            // Looked at before the push: a consumer that closed after this
            // load has released its slots before it closed.
            let gone = self.is_abandoned();
            match self.push(value) {
                Err(PushError::Full(back)) if !gone => value = back,
                done => return done,
            }
            backoff.snooze();
        }
    }
}

impl<T, const K: usize> Consumer<'_, T, K> {
    /// Removes the oldest element, waiting while the ring is empty: spins
    /// briefly, then yields the CPU between looks (see the module docs of
    /// `blocking`).
    ///
    /// # Errors
    ///
    /// [`RingError::Empty`] only when the producer was dropped and every element
    /// it published has been popped, so that none will ever come;
    /// [`RingError::Corrupted`] as for [`pop`](Self::pop).
    ///
    /// # Examples
    ///
    /// ```
    /// use uring_queue::{RingError, Ring};
    ///
    /// let mut ring = Ring::<u64, 4>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// std::thread::scope(|s| {
    ///     s.spawn(move || {
    ///         for i in 0..100 {
    ///             tx.push_blocking(i).unwrap();
    ///         }
    ///     });
    ///     let sum: u64 = (0..100).map(|_| rx.pop_blocking().unwrap()).sum();
    ///     assert_eq!(sum, 4950);
    ///     // Waits until the producer is gone: then nothing will come.
    ///     assert_eq!(rx.pop_blocking(), Err(RingError::Empty));
    /// });
    /// ```
    pub fn pop_blocking(&mut self) -> Result<T, RingError> {
        match self.pop() {
            Err(RingError::Empty) => self.pop_waiting(),
            done => done,
        }
    }

    /// The waiting part of [`pop_blocking`](Self::pop_blocking), out of the
    /// fast path.
    #[cold]
    fn pop_waiting(&mut self) -> Result<T, RingError> {
        let mut backoff = Backoff::default();
        loop {
            // Looked at before the pop: everything the producer published
            // before it closed is visible to the pop that follows.
            let gone = self.is_abandoned();
            match self.pop() {
                Err(RingError::Empty) if !gone => {}
                done => return done,
            }
            backoff.snooze();
        }
    }
}
