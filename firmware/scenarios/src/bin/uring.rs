//! uring-queue's `uring` as firmware: the client and the server in one
//! static region with the `Spin` notifier, the client in `main`, the server
//! polled from interrupt handlers (pended, then the timer); a refusal
//! logged with defmt.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};
use firmware::{IrqCell, Outcome, copy, ensure, irq, singleton};
use uring_queue::Region;
use uring_queue::uring::{Client, Config, Error, Request, Server, Spin, Uring};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "uring",
        &[(
            "a uring server polled from interrupts answers the client",
            uring_in_irq,
        )],
    )
}

/// A `Config::new(4, 4, 512)` connection: rings and control words in the
/// first 4 KiB, then 512 bytes of payload: eight 64-byte blocks,
/// a payload and a response block for each of four requests.
#[repr(C, align(128))]
struct UringBytes([u8; 4096 + 512]);

static SERVER: IrqCell<Server<'static, Spin>> = IrqCell::new();
static SERVED: AtomicU32 = AtomicU32::new(0);
const SUM: u32 = 1;

/// The interrupt handler: answers every request waiting. Opcode `SUM`
/// answers with the sum of the payload bytes, as a result and as a
/// little-endian `u32` response; any other opcode with -1.
fn serve() {
    SERVER.with(|server| {
        while let Ok(Some(incoming)) = server.try_recv() {
            let Ok((payload, response)) = server.buffers(&incoming) else {
                return;
            };
            let sum: u32 = payload.iter().map(|&b| u32::from(b)).sum();
            let answered = match (incoming.opcode(), response.get_mut(..4)) {
                (SUM, Some(out)) => copy(out, &sum.to_le_bytes()).is_ok(),
                _ => false,
            };
            let (result, len) = if answered { (sum as i32, 4) } else { (-1, 0) };
            if server.complete(incoming, result, len).is_ok() {
                SERVED.store(SERVED.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            }
        }
    });
}

fn uring_in_irq() -> Outcome {
    let mem = &mut singleton!(UringBytes = UringBytes([0; 4096 + 512]))
        .ok_or("the region is fresh")?
        .0;
    let config = Config::new(4, 4, 512);
    ensure(
        Uring::required_size(&config) == Ok(mem.len()),
        "the region fits exactly",
    )?;
    let uring = Uring::init(Region::new(mem), config).map_err(|_| "init lays it out")?;
    let (client, server) = uring.split::<4, _, _>(Spin, Spin);
    ensure(SERVER.put(server).is_none(), "the server cell was empty")?;
    irq::set_handler(serve);

    // Four requests fill the credits; the fifth is refused until the server
    // (one pended interrupt) answers them.
    let mut tickets = [const { None }; 4];
    for (byte, slot) in (1u8..).zip(tickets.iter_mut()) {
        let mut body = client.alloc(3).map_err(|_| "3 bytes of payload fit")?;
        copy(
            client
                .bytes_mut(&mut body)
                .map_err(|_| "the block is this client's")?,
            &[byte; 3],
        )?;
        let out = client.alloc(4).map_err(|_| "4 bytes of response fit")?;
        let request = Request::new(SUM).with_payload(body).with_response(out);
        *slot = Some(client.try_submit(request).map_err(|_| "a credit is free")?);
    }
    let refused = client.try_submit(Request::new(SUM)).map(|_| ());
    // What a firmware logs here, through uring-queue's `defmt` feature.
    let logged = firmware::log::logged_bytes();
    if let Err(rejected) = &refused {
        defmt::println!("fifth request: {}", rejected);
    }
    ensure(
        firmware::log::logged_bytes() > logged,
        "defmt formats the refusal",
    )?;
    ensure(
        refused.map_err(|r| r.error) == Err(Error::Busy),
        "no fifth credit",
    )?;
    let served = SERVED.load(Ordering::Relaxed);
    irq::pend();
    ensure(
        SERVED.load(Ordering::Relaxed) == served + 4,
        "one interrupt served all four",
    )?;
    for (byte, slot) in (1u32..).zip(tickets.iter_mut()) {
        let ticket = slot.take().ok_or("each request has its ticket")?;
        let reply = client.try_wait(ticket).map_err(|_| "the reply is there")?;
        ensure(
            reply.result == 3 * byte as i32,
            "the result is the payload's sum",
        )?;
        let response = client
            .response(&reply)
            .map_err(|_| "the reply is this client's")?;
        ensure(
            response == (3 * byte).to_le_bytes(),
            "the response holds the sum",
        )?;
        client.free_reply(reply);
    }

    // Blocking calls while the timer interrupt polls the server.
    irq::start_ticks();
    let called = calls(&client);
    irq::stop_ticks();
    called?;
    ensure(client.blocks_in_use() == 0, "every block came back")?;
    ensure(client.in_flight() == 0, "nothing is left in flight")?;
    drop(SERVER.take());
    let orphan = client.call(Request::new(SUM)).map(|_| ());
    ensure(
        orphan == Err(Error::PeerGone),
        "a dropped server is noticed",
    )
}

/// Twenty blocking calls, served by the timer interrupt.
fn calls<const N: usize>(client: &Client<'_, N, Spin>) -> Outcome {
    for round in 0..20u8 {
        let mut body = client.alloc(2).map_err(|_| "2 bytes of payload fit")?;
        copy(
            client
                .bytes_mut(&mut body)
                .map_err(|_| "the block is this client's")?,
            &[round, 1],
        )?;
        let out = client.alloc(4).map_err(|_| "4 bytes of response fit")?;
        let request = Request::new(SUM).with_payload(body).with_response(out);
        let reply = client.call(request).map_err(|_| "the server answers")?;
        ensure(
            reply.result == i32::from(round) + 1,
            "the call's result is the sum",
        )?;
        client.free_reply(reply);
    }
    Ok(())
}
