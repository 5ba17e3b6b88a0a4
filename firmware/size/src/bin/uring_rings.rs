//! A floor for `uring`: its two rings alone (`SharedRing`s of `Sqe` and
//! `Cqe` in one static region), one entry through each.
#![no_std]
#![no_main]

use uring_queue::uring::{Cqe, Sqe};
use uring_queue::{Region, SharedRing};
use zerocopy::FromZeros;

#[repr(C, align(128))]
struct Bytes([u8; 2048]);

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let mem = &mut size::statik!(Bytes = Bytes([0; 2048])).0;
    let Ok((sq, cq)) = Region::new(mem).split_at(1024) else {
        size::done(0u32)
    };
    let (Ok(sq), Ok(cq)) = (
        SharedRing::<Sqe>::init(sq, 4),
        SharedRing::<Cqe>::init(cq, 4),
    ) else {
        size::done(1u32)
    };
    let ((mut sq_tx, mut sq_rx), (mut cq_tx, mut cq_rx)) = (sq.split(), cq.split());
    let mut sqe = Sqe::new_zeroed();
    sqe.opcode = size::input(1);
    let _ = sq_tx.push(sqe);
    if let Ok(sqe) = sq_rx.pop() {
        let mut cqe = Cqe::new_zeroed();
        cqe.user_data = sqe.user_data;
        cqe.result = sqe.opcode as i32 + 1;
        let _ = cq_tx.push(cqe);
    }
    size::done(cq_rx.pop().map(|cqe| cqe.result).ok())
}
