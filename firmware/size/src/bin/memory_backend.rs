//! A floor for the reader: `MemoryBackend` called directly with the
//! reader's three ops and its one value, no reader in between.
#![no_std]
#![no_main]

use batch_reader::backends::MemoryBackend;
use batch_reader::{Geometry, ReadBackend, ReadOp};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let Ok(geometry) = Geometry::new(Some(64), 64, 8) else {
        size::done(0u32)
    };
    let mut backend = MemoryBackend::new(size::memory(), geometry);
    let (mut a, mut b, mut c, mut v) = ([0u8; 4], [0u8; 4], [0u8; 8], [0u8; 4]);
    let base = size::input(0);
    let mut ops = [
        ReadOp::new(base, &mut a, 0),
        ReadOp::new(base + 4, &mut b, 1),
        ReadOp::new(base + 124, &mut c, 2),
    ];
    let mut ok = 0usize;
    backend.read_batch(&mut ops, |r| ok += r.valid);
    backend.read_batch(&mut [ReadOp::new(size::input(8), &mut v, 0)], |r| {
        ok += r.valid
    });
    size::done((ok, a[0], b[0], c[0], u32::from_ne_bytes(v)))
}
