//! The `uring` server half alone, as an AMP firmware holds it: lays the
//! connection out in memory at a fixed address (the shared region, outside
//! the firmware's RAM), keeps the server in a `static` (its RAM is
//! counted), and answers one request: receive, read the body and write the
//! response in place, complete. `Spin`: the firmware polls.
#![no_std]
#![no_main]

use core::ptr::NonNull;
use uring_queue::Region;
use uring_queue::uring::{Config, Server, Spin, Uring};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    // The shared region's address and length, as the linker would fix them.
    let Some(base) = NonNull::new(size::input(0x2100_0000usize) as *mut u8) else {
        size::done(0u32)
    };
    // SAFETY: never run; the address stands for memory only the two
    // sides of the connection use.
    let region = unsafe { Region::from_raw_parts(base, size::input(1 << 20)) };
    let Ok(uring) = Uring::init(region, Config::new(4, 4, 1 << 16)) else {
        size::done(1u32)
    };
    let server =
        size::statik!(Option<Server<'static, Spin>> = None).insert(uring.into_server(Spin));
    let Ok(Some(incoming)) = server.try_recv() else {
        size::done(2u32)
    };
    let len = match server.buffers(&incoming) {
        Ok((body, response)) => match (body.first(), response.first_mut()) {
            (Some(&b), Some(out)) => {
                *out = b;
                1
            }
            _ => 0,
        },
        Err(_) => 0,
    };
    size::done(server.complete(incoming, 0, len).is_ok())
}
