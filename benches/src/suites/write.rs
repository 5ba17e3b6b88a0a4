//! `write`: 10-byte writes into a byte slice through this workspace's
//! `Write for &mut [u8]`, embedded-io's and std's; ratios to std.

use crate::harness::{Compare, Ctx};
use std::hint::black_box;
use std::time::{Duration, Instant};

const CHUNK: &[u8; 10] = b"0123456789";
const SINK: usize = 64 << 10;
const WRITES_PER_FILL: usize = SINK / CHUNK.len();

/// A sample: `fills` times, fill a fresh 64 KiB sink with 10-byte `write_all`s.
fn sample(
    storage: &mut [u8],
    fills: usize,
    write_all: fn(&mut &mut [u8], &[u8]) -> bool,
) -> Duration {
    let t = Instant::now();
    for _ in 0..fills {
        let mut sink: &mut [u8] = black_box(&mut *storage);
        for _ in 0..WRITES_PER_FILL {
            assert!(write_all(&mut sink, black_box(CHUNK)));
        }
        black_box(sink);
    }
    t.elapsed()
}

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let fills: usize = ctx.pick(200, 20);
    let mut c = Compare::new("write", "10B", "std");
    // One variant per writer; each call site is monomorphised and inlined.
    let [mut a, mut b, mut e] = [vec![0u8; SINK], vec![0u8; SINK], vec![0u8; SINK]];
    c.variant("std", move || {
        sample(&mut a, fills, |s, b| {
            std::io::Write::write_all(s, b).is_ok()
        })
    });
    c.variant("io_traits", move || {
        sample(&mut b, fills, |s, b| {
            io_traits::Write::write_all(s, b).is_ok()
        })
    });
    c.variant("embedded_io", move || {
        sample(&mut e, fills, |s, b| {
            embedded_io::Write::write_all(s, b).is_ok()
        })
    });
    let r = c.run(ctx.rounds(21, 5));
    r.emit_rate_ratio((fills * WRITES_PER_FILL) as f64 / 1e6, "Mwrites/s");
}
