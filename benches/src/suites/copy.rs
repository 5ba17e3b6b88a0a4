//! `copy`: the memcpy ceiling every byte-moving figure is read against.
//!
//! Each sample moves the same total volume in copies of 4 KiB, 64 KiB, 1 MiB
//! and 16 MiB; the rate ratio is against the 4 KiB copies.

use crate::harness::{Compare, Ctx};
use std::hint::black_box;
use std::time::Instant;

const SIZES: &[(&str, usize)] = &[
    ("4KiB", 4 << 10),
    ("64KiB", 64 << 10),
    ("1MiB", 1 << 20),
    ("16MiB", 16 << 20),
];

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let total: usize = ctx.pick(256 << 20, 32 << 20);
    let src = vec![0x5au8; 16 << 20];
    let mut c = Compare::new("copy", "memcpy", "4KiB");
    for &(name, size) in SIZES {
        let src = &src;
        // Each variant owns its destination, faulted in before timing starts.
        let mut dst = vec![1u8; size];
        c.variant(name, move || {
            let t = Instant::now();
            for _ in 0..total / size {
                dst.copy_from_slice(black_box(&src[..size]));
                black_box(&mut dst);
            }
            t.elapsed()
        });
    }
    let r = c.run(ctx.rounds(15, 3));
    r.emit_rate_ratio(total as f64 / 1e9, "GB/s");
}
