//! uring-queue as firmware: a `Ring` fed by an interrupt handler and drained
//! by `main`; a `SharedRing` in a static byte region that refuses a corrupted
//! header; and the `uring` client and server in one static region, the
//! server polled from an interrupt handler.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};
use firmware::{IrqCell, Outcome, ensure, irq, singleton};
use uring_queue::uring::{Config, Error as UringError, Request, Server, Spin, Uring};
use uring_queue::{Error, MAGIC, Producer, Region, RegionError, Ring, SharedRing};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "uring_queue",
        &[
            (
                "10,000 values from a timer interrupt arrive in order",
                ring_from_irq,
            ),
            (
                "a SharedRing in a static region refuses corrupted headers",
                shared_ring,
            ),
            (
                "a uring server polled from interrupts answers the client",
                uring_in_irq,
            ),
        ],
    )
}

// ---- A Ring: producer in the timer interrupt, consumer in `main`. ----

const VALUES: u32 = 10_000;
static PRODUCER: IrqCell<(Producer<'static, u32>, u32)> = IrqCell::new();
static PUSHED_IN_IRQ: AtomicU32 = AtomicU32::new(0);

/// The timer handler: pushes the next values until the ring is full.
fn produce() {
    PRODUCER.with(|(tx, next)| {
        while *next < VALUES && tx.push(*next).is_ok() {
            *next += 1;
            PUSHED_IN_IRQ.store(*next, Ordering::Relaxed);
        }
    });
}

fn ring_from_irq() -> Outcome {
    let ring = singleton!(Ring<u32, 16> = Ring::new()).ok_or("the ring is fresh")?;
    let (tx, mut rx) = ring.split();
    ensure(
        PRODUCER.put((tx, 0)).is_none(),
        "the producer cell was empty",
    )?;
    irq::set_handler(produce);
    irq::start_ticks();
    let drained = drain(&mut rx);
    irq::stop_ticks();
    drained?;
    ensure(
        PUSHED_IN_IRQ.load(Ordering::Relaxed) == VALUES,
        "the handler pushed every value",
    )?;
    ensure(
        irq::runs() >= VALUES / 16,
        "the handler ran once per ring-full at least",
    )?;
    drop(PRODUCER.take());
    ensure(rx.is_abandoned(), "the consumer sees the producer gone")?;
    ensure(rx.pop() == Err(Error::Empty), "nothing is left")
}

/// Pops `VALUES` values, checking each is the next one; fails if the
/// handler runs twice with the ring left empty (the producer stalled).
fn drain(rx: &mut uring_queue::Consumer<'_, u32>) -> Outcome {
    let mut expected = 0;
    let mut runs_at_last_value = irq::runs();
    while expected < VALUES {
        match rx.pop() {
            Ok(v) => {
                ensure(v == expected, "values arrive in order, none lost")?;
                expected += 1;
                runs_at_last_value = irq::runs();
            }
            Err(Error::Empty) => {
                let idle_runs = irq::runs().wrapping_sub(runs_at_last_value);
                ensure(idle_runs < 3, "the producer in the handler keeps up")?;
            }
            Err(_) => return Err("pop fails only when empty"),
        }
    }
    Ok(())
}

// ---- A SharedRing in a static byte region. ----

/// Header, two index lines and 16 `u32` slots: 448 bytes.
#[repr(C, align(8))]
struct SharedBytes([u8; 448]);

fn shared_ring() -> Outcome {
    let mem = &mut singleton!(SharedBytes = SharedBytes([0; 448]))
        .ok_or("the region is fresh")?
        .0;
    ensure(
        SharedRing::<u32>::required_size(16) == Ok(448),
        "16 slots need 448 bytes",
    )?;
    {
        let (mut tx, _rx) = SharedRing::<u32>::init(Region::new(mem), 16)
            .map_err(|_| "init lays out a ring")?
            .split();
        ensure(tx.push_slice(&[1, 2, 3]) == Ok(3), "three values go in")?;
    }
    // Another side attaches to the same bytes and reads them.
    {
        let (_tx, mut rx) = SharedRing::<u32>::attach(Region::new(mem))
            .map_err(|_| "a fresh header is accepted")?
            .split();
        let mut out = [0u32; 4];
        ensure(
            rx.pop_slice(&mut out) == Ok(3),
            "the attached side reads three values",
        )?;
        ensure(out == [1, 2, 3, 0], "the values come out as they went in")?;
    }
    refuses(mem, 0, 0, RegionError::BadMagic { found: 0 })?;
    // Capacity (word 5) 3: not a power of two.
    refuses(
        mem,
        20,
        3,
        RegionError::CapacityNotPowerOfTwo { capacity: 3 },
    )?;
    // Data offset (word 8) past the end of the region.
    refuses(mem, 32, 4096, RegionError::BadOffsets)?;
    ensure(
        mem.get(..4) == Some(&MAGIC.to_ne_bytes()[..]),
        "attach wrote nothing",
    )
}

/// Writes `value` over the header word at `offset`, checks that attaching
/// fails with `expected`, and puts the word back.
fn refuses(mem: &mut [u8], offset: usize, value: u32, expected: RegionError) -> Outcome {
    let word = mem
        .get_mut(offset..offset + 4)
        .ok_or("the word is in the header")?;
    let mut saved = [0u8; 4];
    saved.copy_from_slice(word);
    word.copy_from_slice(&value.to_ne_bytes());
    let attached = SharedRing::<u32>::attach(Region::new(mem)).map(|_| ());
    ensure(
        attached == Err(expected),
        "a corrupted header is refused with its cause",
    )?;
    let word = mem
        .get_mut(offset..offset + 4)
        .ok_or("the word is in the header")?;
    word.copy_from_slice(&saved);
    Ok(())
}

// ---- The uring pair: client in `main`, server in interrupt handlers. ----

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
            let (result, len) = match (incoming.opcode(), response.get_mut(..4)) {
                (SUM, Some(out)) => {
                    out.copy_from_slice(&sum.to_le_bytes());
                    (sum as i32, 4)
                }
                _ => (-1, 0),
            };
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
        client
            .bytes_mut(&mut body)
            .map_err(|_| "the block is this client's")?
            .copy_from_slice(&[byte; 3]);
        let out = client.alloc(4).map_err(|_| "4 bytes of response fit")?;
        let request = Request::new(SUM).with_payload(body).with_response(out);
        *slot = Some(client.try_submit(request).map_err(|_| "a credit is free")?);
    }
    let refused = client.try_submit(Request::new(SUM)).map(|_| ());
    ensure(
        refused.map_err(|r| r.error) == Err(UringError::Busy),
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
        orphan == Err(UringError::PeerGone),
        "a dropped server is noticed",
    )
}

/// Twenty blocking calls, served by the timer interrupt.
fn calls<const N: usize>(client: &uring_queue::uring::Client<'_, N, Spin>) -> Outcome {
    for round in 0..20u8 {
        let mut body = client.alloc(2).map_err(|_| "2 bytes of payload fit")?;
        client
            .bytes_mut(&mut body)
            .map_err(|_| "the block is this client's")?
            .copy_from_slice(&[round, 1]);
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
