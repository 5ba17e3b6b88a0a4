//! Loom models of the async reader's queue, flush and wake logic.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p ncio-batch-reader --release
//! --test loom`. The reader's shared state is a loom `UnsafeCell` there, so
//! every access is checked, and the executors are loom's `block_on`, whose
//! waker is built on loom's atomics. Under a plain `cargo test` each model
//! runs once, on `std`'s threads and an ordinary executor.
//!
//! The reader is not `Sync` and every future borrowing it is therefore not
//! `Send`: one reader's queue is only ever touched by one thread at a time.
//! What can cross threads is the reader itself between uses (its `Send`
//! impl), and the task's waker, which other threads may fire at any time.
//! The models cover those, plus the single-threaded flush and wake paths
//! under loom's checks.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use batch_reader::backends::MemoryBackend;
use batch_reader::{AsyncReader, Geometry, ReadErrorKind};
use embassy_futures::join::join3;

use self::loom::future::block_on;
use self::loom::sync::{Arc, Mutex};
use self::loom::{model, thread};

/// The models' view of loom: loom itself under `cfg(loom)`, and otherwise
/// stand-ins of the same shape that run each model once.
mod loom {
    #[cfg(loom)]
    pub use ::loom::{future, model, sync, thread};

    #[cfg(not(loom))]
    pub use std::{sync, thread};

    /// Runs the model once.
    #[cfg(not(loom))]
    pub fn model<F: Fn() + Sync + Send + 'static>(f: F) {
        f();
    }

    #[cfg(not(loom))]
    pub mod future {
        pub use embassy_futures::block_on;
    }
}

type R<'m> = AsyncReader<MemoryBackend<'m>, [u8; 0], 4, 64>;

/// 256 bytes in which the word at `8 * i` holds `8 * (i + 1)`: a
/// `static`, so that a reader over it can move to another thread.
static LINKED: [u8; 256] = {
    let mut mem = [0u8; 256];
    let mut i = 0;
    while i < 32 {
        let next = ((i as u64) + 1) * 8;
        let bytes = next.to_ne_bytes();
        let mut k = 0;
        while k < 8 {
            mem[i * 8 + k] = bytes[k];
            k += 1;
        }
        i += 1;
    }
    mem
};

fn reader(mem: &[u8]) -> R<'_> {
    AsyncReader::new(
        MemoryBackend::new(mem, Geometry::new(None, 256, 16).expect("geometry")),
        [],
    )
}

/// Chains of 1, 2 and 3 dependent reads, joined.
async fn chains(r: &R<'_>) -> (Result<u64, ReadErrorKind>, u64, u64) {
    let chain = |start: u64, steps: usize| async move {
        let mut p = start;
        for _ in 0..steps {
            p = r.read_val::<u64>(p).await?;
        }
        Ok::<u64, ReadErrorKind>(p)
    };
    let (a, b, c) = join3(chain(0, 1), chain(64, 2), chain(128, 3)).await;
    (a, b.unwrap_or(0), c.unwrap_or(0))
}

const EXPECTED: (Result<u64, ReadErrorKind>, u64, u64) = (Ok(8), 80, 152);

#[test]
fn run_flushes_once_per_step() {
    model(|| {
        let mem = &LINKED;
        let mut r = reader(mem);
        assert_eq!(block_on(r.run(chains)), EXPECTED);
        assert_eq!(r.counters().backend_calls, 3);
    });
}

#[test]
fn self_woken_tasks_flush_once_per_step() {
    model(|| {
        let mem = &LINKED;
        let r = reader(mem);
        assert_eq!(block_on(chains(&r)), EXPECTED);
        assert_eq!(r.counters().backend_calls, 3);
    });
}

/// Hands the task's waker to `slot` on every poll, then polls `inner`.
struct ShareWaker<F> {
    slot: Arc<Mutex<Option<Waker>>>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for ShareWaker<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        *self.slot.lock().expect("lock") = Some(cx.waker().clone());
        self.inner.as_mut().poll(cx)
    }
}

#[test]
fn wakes_from_another_thread_lose_nothing() {
    model(|| {
        let mem = &LINKED;
        let r = reader(mem);
        let slot: Arc<Mutex<Option<Waker>>> = Arc::new(Mutex::new(None));
        let other = {
            let slot = Arc::clone(&slot);
            // A timer or interrupt firing the task's waker at any moment.
            thread::spawn(move || {
                if let Some(w) = slot.lock().expect("lock").take() {
                    w.wake();
                }
            })
        };
        let got = block_on(ShareWaker {
            slot,
            inner: Box::pin(chains(&r)),
        });
        other.join().expect("waker thread");
        assert_eq!(got, EXPECTED);
        // A spurious wake can make a queued read flush before its siblings
        // are queued: never fewer calls than steps, never more than reads.
        let calls = r.counters().backend_calls;
        assert!((3..=6).contains(&calls), "{calls} calls");
        assert_eq!(r.counters().ops, 6);
    });
}

#[test]
fn a_reader_moves_between_threads_between_uses() {
    model(|| {
        let mem: &'static [u8] = &LINKED;
        let mut r = reader(mem);
        assert_eq!(block_on(r.read_val::<u64>(0)), Ok(8));
        let handle = thread::spawn(move || {
            assert_eq!(block_on(r.run(chains)), EXPECTED);
            r
        });
        let r = handle.join().expect("reader thread");
        assert_eq!(block_on(r.read_val::<u64>(8)), Ok(16));
        assert_eq!(r.counters().backend_calls, 5);
    });
}
