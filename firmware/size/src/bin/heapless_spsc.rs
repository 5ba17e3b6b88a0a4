//! The ring's work with `heapless::spsc::Queue<u32, 16>`.
#![no_std]
#![no_main]

use heapless::spsc::Queue;

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let queue = size::statik!(Queue<u32, 16> = Queue::new());
    let (mut tx, mut rx) = queue.split();
    let pushed = tx.enqueue(size::input(7)).is_ok();
    size::done((pushed, rx.dequeue()))
}
