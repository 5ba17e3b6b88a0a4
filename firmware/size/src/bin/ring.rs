//! `Ring<u32, 16>` in a static: split, one push, one pop.
#![no_std]
#![no_main]

use uring_queue::Ring;

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let ring = size::statik!(Ring<u32, 16> = Ring::new());
    let (mut tx, mut rx) = ring.split();
    let pushed = tx.push(size::input(7)).is_ok();
    size::done((pushed, rx.pop()))
}
