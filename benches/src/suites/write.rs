//! `write`: 10-byte writes into a byte slice through this workspace's
//! `Write for &mut [u8]`, embedded-io's and std's; ratios to std.

use crate::harness::{Compare, Ctx};
use std::hint::black_box;
use std::time::Instant;

const CHUNK: &[u8; 10] = b"0123456789";
const SINK: usize = 64 << 10;
const WRITES_PER_FILL: usize = SINK / CHUNK.len();

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let fills: usize = ctx.pick(200, 20);
    let mut c = Compare::new("write", "10B", "std");
    let mut storage = vec![0u8; SINK];
    c.variant("std", move || {
        let t = Instant::now();
        for _ in 0..fills {
            let mut sink: &mut [u8] = black_box(&mut storage[..]);
            for _ in 0..WRITES_PER_FILL {
                std::io::Write::write_all(&mut sink, black_box(CHUNK)).unwrap();
            }
            black_box(sink);
        }
        t.elapsed()
    });
    let mut storage = vec![0u8; SINK];
    c.variant("io_traits", move || {
        let t = Instant::now();
        for _ in 0..fills {
            let mut sink: &mut [u8] = black_box(&mut storage[..]);
            for _ in 0..WRITES_PER_FILL {
                io_traits::Write::write_all(&mut sink, black_box(CHUNK)).unwrap();
            }
            black_box(sink);
        }
        t.elapsed()
    });
    let mut storage = vec![0u8; SINK];
    c.variant("embedded_io", move || {
        let t = Instant::now();
        for _ in 0..fills {
            let mut sink: &mut [u8] = black_box(&mut storage[..]);
            for _ in 0..WRITES_PER_FILL {
                embedded_io::Write::write_all(&mut sink, black_box(CHUNK)).unwrap();
            }
            black_box(sink);
        }
        t.elapsed()
    });
    let r = c.run(ctx.rounds(21, 5));
    r.emit_rate_ratio((fills * WRITES_PER_FILL) as f64 / 1e6, "Mwrites/s");
}
