//! Loom models of the slot protocol. Pool memory is mirrored by loom-tracked
//! cells (see `control.rs`), so besides the assertions here loom checks that
//! every reuse of a byte is ordered after the last access of its previous
//! owner, and that the pool's control block is freed exactly once.
//!
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p ncio-buffer-pool --release --all-features --test loom
//! ```
//!
//! Without `--cfg loom` (a plain `cargo test`) each model runs once, on real
//! threads, through the same facade the crate uses.
#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "tests use std"
)]

extern crate alloc;

#[path = "../src/loom.rs"]
mod facade;

use buffer_pool::{Buffer, BufferPool, PoolMode};
use facade::{model, thread};
use std::sync::Mutex;

/// Records which outcomes the explored executions reached (outside loom's
/// view, so it does not add interleavings): a model that never reaches both
/// sides of its race proves nothing.
struct Seen(Mutex<Vec<PoolMode>>);

impl Seen {
    const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    fn add(&self, mode: PoolMode) {
        let mut seen = self.0.lock().unwrap();
        if !seen.contains(&mode) {
            seen.push(mode);
        }
    }

    /// Under loom, that the explored executions reached every one of
    /// `modes`; a single run reaches only one of them.
    fn assert_all(&self, modes: &[PoolMode]) {
        if !facade::EXHAUSTIVE {
            return;
        }
        let seen = self.0.lock().unwrap();
        for m in modes {
            assert!(seen.contains(m), "no execution reached {m:?}: {seen:?}");
        }
    }
}

/// A slot freed on another thread while the producer reuses memory: the new
/// message lands in the returned bytes only if the return is visible, and
/// the consumer's reads are ordered before the producer's writes.
#[test]
fn slot_freed_on_another_thread_while_producer_reuses() {
    static SEEN: Seen = Seen::new();
    model(|| {
        let mut pool = BufferPool::new(4);
        pool.get_writable(4).copy_from_slice(&[1; 4]);
        let a = pool.get_data_owned();
        let consumer = thread::spawn(move || {
            assert_eq!(a.as_ref(), &[1; 4]);
            drop(a);
        });
        pool.get_writable(4).copy_from_slice(&[2; 4]);
        let b = pool.get_data_owned();
        assert_eq!(b.is_pooled(), pool.mode() == PoolMode::Back);
        SEEN.add(pool.mode());
        assert_eq!(b.as_ref(), &[2; 4]);
        consumer.join().unwrap();
        drop(b);
        // Everything is back: the next message is pooled in Back mode.
        pool.get_writable(4).copy_from_slice(&[3; 4]);
        assert!(pool.is_back_mode());
        assert!(pool.get_data_owned().is_pooled());
    });
    SEEN.assert_all(&[PoolMode::Back, PoolMode::Alloc]);
}

/// Several slices dropped at once on different threads, racing with the
/// pool's own drop: every slice reads its own bytes, and whoever goes last
/// frees the memory (loom fails the model on a leak or a double free).
#[test]
fn concurrent_drops_of_several_slices() {
    model(|| {
        let mut pool = BufferPool::new(3);
        let mut slices = Vec::new();
        for b in 0..3u8 {
            pool.get_writable(1)[0] = b;
            slices.push(pool.get_data_owned());
        }
        let c = slices.pop().unwrap();
        let handles: Vec<_> = slices
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                thread::spawn(move || {
                    assert_eq!(s.as_ref(), &[i as u8]);
                })
            })
            .collect();
        drop(pool);
        assert_eq!(c.as_ref(), &[2]);
        drop(c);
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// Drops of the newest and the oldest slice race with the choice between
/// Back and Front mode: whichever the producer sees, the message goes to
/// bytes nobody else is using.
#[test]
fn front_back_switch_racing_with_drops() {
    static SEEN: Seen = Seen::new();
    model(|| {
        let mut pool = BufferPool::new(6);
        let mut slices = Vec::new();
        for b in 0..3u8 {
            pool.get_writable(2).copy_from_slice(&[b; 2]);
            slices.push(pool.get_data_owned());
        }
        let newest = slices.pop().unwrap();
        let middle = slices.pop().unwrap();
        let oldest = slices.pop().unwrap();
        let t1 = thread::spawn(move || assert_eq!(newest.as_ref(), &[2; 2]));
        let t2 = thread::spawn(move || assert_eq!(oldest.as_ref(), &[0; 2]));
        pool.get_writable(2).copy_from_slice(&[9; 2]);
        let mode = pool.mode();
        SEEN.add(mode);
        let m = pool.get_data_owned();
        assert_eq!(m.is_pooled(), mode != PoolMode::Alloc);
        assert_eq!((m.as_ref(), middle.as_ref()), (&[9; 2][..], &[1; 2][..]));
        t1.join().unwrap();
        t2.join().unwrap();
    });
    SEEN.assert_all(&[PoolMode::Back, PoolMode::Front, PoolMode::Alloc]);
}
