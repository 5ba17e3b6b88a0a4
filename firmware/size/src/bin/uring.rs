//! The `uring` client and server with `Spin` in one static region: one
//! request submitted, received, completed and its reply taken.
#![no_std]
#![no_main]

use uring_queue::Region;
use uring_queue::uring::{Config, Request, Spin, Uring};

#[repr(C, align(128))]
struct Bytes([u8; 4096]);

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let mem = &mut size::statik!(Bytes = Bytes([0; 4096])).0;
    let Ok(uring) = Uring::init(Region::new(mem), Config::new(4, 4, 0)) else {
        size::done(0u32)
    };
    let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    let Ok(ticket) = client.try_submit(Request::new(size::input(1))) else {
        size::done(1u32)
    };
    if let Ok(Some(incoming)) = server.try_recv() {
        let result = incoming.opcode() as i32 + 1;
        let _ = server.complete(incoming, result, 0);
    }
    size::done(client.try_wait(ticket).map(|reply| reply.result).ok())
}
