//! A pipe as a kernel writes one: `write(2)` copies from user memory into the
//! ring and `read(2)` copies from the ring to user memory, and either copy
//! can fault part-way (a page not yet mapped). The ring commits exactly what
//! each copy moved; the system call then returns that count, as a short
//! write or read, and the caller carries on from there.
//!
//! Here the writer and the reader are two threads, and each copy faults at a
//! random byte a fifth of the time. The reader checks that it got every byte
//! of the stream once, in order.
//!
//! Run: `cargo run -p ncio-uring-queue --example kernel_pipe`

use std::thread;
use uring_queue::{CopyError, Fault, Ring};

/// Bytes sent through the pipe.
const STREAM: usize = 1_000_000;

/// The error a faulting user copy reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Efault;

/// A seeded xorshift generator: where the copies fault.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Where a copy of `len` bytes faults: a fifth of the time, a random
    /// offset below `len`.
    fn fault_in(&mut self, len: usize) -> Option<usize> {
        let r = self.next();
        (len > 0 && r % 5 == 0).then(|| (r >> 8) as usize % len)
    }
}

/// A copy between user memory and a run of the ring that faults at
/// `fault`: like `copy_from_user`, it moves the bytes before the fault.
fn user_copy(dst: &mut [u8], src: &[u8], fault: Option<usize>) -> Result<usize, Fault<Efault>> {
    let n = dst.len().min(src.len());
    let ok = fault.map_or(n, |f| f.min(n));
    dst[..ok].copy_from_slice(&src[..ok]);
    if ok < n {
        Err(Fault::new(ok, Efault))
    } else {
        Ok(n)
    }
}

/// How many bytes a system call moved, fault or not: what it returns.
fn moved(r: Result<usize, CopyError<Efault>>) -> usize {
    match r {
        Ok(n) | Err(CopyError::Fault(Fault { copied: n, .. })) => n,
        Err(CopyError::Ring(e)) => panic!("pipe ring: {e}"),
    }
}

fn main() {
    let mut ring = Ring::<u8, 4096>::new();
    let (mut tx, mut rx) = ring.split();
    let user_out: Vec<u8> = (0..STREAM).map(|i| (i * 7 % 251) as u8).collect();
    let (mut faults_w, mut faults_r) = (0, 0);
    let user_in = thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
            let mut pos = 0;
            while pos < user_out.len() {
                // Called once per run of free bytes (twice when they wrap):
                // each call copies on from where the last one stopped.
                let start = pos;
                let r = tx.push_with(|dst| {
                    let r = user_copy(dst, &user_out[pos..], rng.fault_in(dst.len()));
                    pos += r.unwrap_or_else(|f| f.copied);
                    r
                });
                faults_w += usize::from(matches!(r, Err(CopyError::Fault(_))));
                let n = moved(r);
                assert_eq!(start + n, pos, "the ring committed what was copied");
                if n == 0 {
                    thread::yield_now();
                }
            }
        });
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        let mut user_in = vec![0u8; STREAM];
        let mut pos = 0;
        while pos < STREAM {
            let start = pos;
            let r = rx.pop_with(|src| {
                let r = user_copy(&mut user_in[pos..], src, rng.fault_in(src.len()));
                pos += r.unwrap_or_else(|f| f.copied);
                r
            });
            faults_r += usize::from(matches!(r, Err(CopyError::Fault(_))));
            let n = moved(r);
            assert_eq!(start + n, pos, "the ring released what was copied");
            if n == 0 {
                thread::yield_now();
            }
        }
        writer.join().unwrap();
        user_in
    });
    assert!(user_in == user_out, "the stream arrived changed");
    println!(
        "{STREAM} bytes through the pipe, intact; {faults_w} writes and {faults_r} reads faulted part-way"
    );
}
