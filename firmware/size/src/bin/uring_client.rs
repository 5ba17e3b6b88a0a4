//! The `uring` client half alone, as an AMP firmware holds it: lays the
//! connection out in memory at a fixed address (the shared region, outside
//! the firmware's RAM), keeps the client (four requests in flight) in a
//! `static` (its RAM is counted), and makes one request: a body written in
//! place, a response block, submitted, its reply taken and read, freed.
//! `Spin`: the firmware polls.
#![no_std]
#![no_main]

use core::ptr::NonNull;
use uring_queue::Region;
use uring_queue::uring::{Client, Config, Request, Spin, Uring};

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
    let client =
        size::statik!(Option<Client<'static, 4, Spin>> = None).insert(uring.into_client(Spin));
    let (Ok(mut body), Ok(out)) = (client.alloc(size::input(16)), client.alloc(size::input(16)))
    else {
        size::done(2u32)
    };
    if let Ok(bytes) = client.bytes_mut(&mut body) {
        bytes.fill(size::input(7));
    }
    let request = Request::new(size::input(1))
        .with_payload(body)
        .with_response(out);
    let Ok(ticket) = client.try_submit(request) else {
        size::done(3u32)
    };
    let Ok(reply) = client.try_wait(ticket) else {
        size::done(4u32)
    };
    let first = client
        .response(&reply)
        .ok()
        .and_then(|r| r.first().copied());
    client.free_reply(reply);
    size::done(first)
}
