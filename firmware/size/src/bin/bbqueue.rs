//! The ring's work with bbqueue (64 bytes, inline; compare-and-swap
//! coordination, or a critical section on targets without it): a `u32`
//! written through a grant and read back.
#![no_std]
#![no_main]

#[cfg(target_has_atomic = "ptr")]
use bbqueue::nicknames::Churrasco as Queue;
#[cfg(not(target_has_atomic = "ptr"))]
use bbqueue::nicknames::Jerk as Queue;
// Links the runtime crate's critical-section implementation.
#[cfg(all(target_arch = "arm", not(target_has_atomic = "ptr")))]
use cortex_m as _;
#[cfg(all(target_arch = "riscv32", not(target_has_atomic = "ptr")))]
use riscv as _;

static QUEUE: Queue<64> = Queue::new();

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let (tx, rx) = (QUEUE.stream_producer(), QUEUE.stream_consumer());
    let value = size::input(7u32).to_le_bytes();
    let pushed = match tx.grant_exact(4) {
        Ok(mut grant) => {
            grant.copy_from_slice(&value);
            grant.commit(4);
            true
        }
        Err(_) => false,
    };
    let popped = match rx.read() {
        Ok(grant) if grant.len() >= 4 => {
            let v = u32::from_le_bytes([grant[0], grant[1], grant[2], grant[3]]);
            grant.release(4);
            Some(v)
        }
        _ => None,
    };
    size::done((pushed, popped))
}
