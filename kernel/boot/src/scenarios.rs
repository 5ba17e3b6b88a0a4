//! The stories: what a kernel does with each crate.

use crate::story::{Outcome, copy, ensure};
use batch_reader::backends::MemoryBackend;
use batch_reader::{Geometry, ReadErrorKind, Reader};
use buffer_pool::{Buffer, PoolStorage};
use uring_queue::uring::{Config, Request, Spin, Uring};
use uring_queue::{Consumer, CopyError, Fault, Producer, Region, Ring};

/// A copy between "user memory" and a run of the ring that faults once
/// `*left` elements were moved: `copy_from_user` and `copy_to_user` as a
/// fault part-way leaves them. Moves `src` to `dst` from `*pos` on.
fn user_copy(dst: &mut [u8], src: &[u8], left: &mut usize) -> Result<usize, Fault<()>> {
    let n = dst.len().min(src.len());
    let ok = n.min(*left);
    for (d, &s) in dst.iter_mut().zip(src).take(ok) {
        *d = s;
    }
    *left -= ok;
    if ok < n {
        Err(Fault::new(ok, ()))
    } else {
        Ok(n)
    }
}

/// How many elements a pipe call moved, fault or not.
fn moved(r: Result<usize, CopyError<()>>) -> Result<usize, &'static str> {
    match r {
        Ok(n) | Err(CopyError::Fault(Fault { copied: n, .. })) => Ok(n),
        Err(CopyError::Ring(_)) => Err("the ring is sound"),
    }
}

/// write(2): copies `user[*sent..]` into the pipe, the copy faulting after
/// `fault_after` bytes; `*sent` counts what it moved, which it returns.
fn write(
    tx: &mut Producer<'_, u8>,
    user: &[u8],
    sent: &mut usize,
    mut fault_after: usize,
) -> Result<usize, &'static str> {
    moved(tx.push_with(|dst| {
        let r = user_copy(dst, user.get(*sent..).unwrap_or_default(), &mut fault_after);
        *sent += r.unwrap_or_else(|f| f.copied);
        r
    }))
}

/// read(2): copies from the pipe into `user[*got..]`, the copy faulting
/// after `fault_after` bytes; `*got` counts what it moved, which it returns.
fn read(
    rx: &mut Consumer<'_, u8>,
    user: &mut [u8],
    got: &mut usize,
    mut fault_after: usize,
) -> Result<usize, &'static str> {
    moved(rx.pop_with(|src| {
        let r = user_copy(
            user.get_mut(*got..).unwrap_or_default(),
            src,
            &mut fault_after,
        );
        *got += r.unwrap_or_else(|f| f.copied);
        r
    }))
}

/// 40 bytes through a 32-byte pipe: a write whose copy faults after 5, a
/// read whose copy faults after 3, then writes and reads that wrap around
/// the ring, every third copy faulting part-way.
pub fn pipe() -> Outcome {
    let mut ring = Ring::<u8, 32>::new();
    let (mut tx, mut rx) = ring.split();
    let user: [u8; 40] = core::array::from_fn(|i| i as u8);
    let mut out = [0u8; 40];
    let (mut sent, mut got) = (0, 0);
    let n = write(&mut tx, &user, &mut sent, 5)?;
    ensure(
        n == 5 && sent == 5 && rx.len() == 5,
        "the faulting write moved 5",
    )?;
    let n = read(&mut rx, &mut out, &mut got, 3)?;
    ensure(
        n == 3 && got == 3 && rx.len() == 2,
        "the faulting read moved 3",
    )?;
    for round in 0..64usize {
        if got == user.len() {
            break;
        }
        let fault_after = if round % 3 == 0 {
            round % 7
        } else {
            usize::MAX
        };
        let before = sent;
        let n = write(&mut tx, &user, &mut sent, fault_after)?;
        ensure(sent == before + n, "a write commits what it copied")?;
        let before = got;
        let n = read(&mut rx, &mut out, &mut got, fault_after)?;
        ensure(got == before + n, "a read releases what it copied")?;
        ensure(rx.len() == sent - got, "the pipe holds what is in flight")?;
    }
    ensure(
        out == user && sent == 40,
        "every byte arrived once, in order",
    )
}

/// 256 bytes and 8 slots, claimed from a `static`.
static STORAGE: PoolStorage<256> = PoolStorage::new();

/// Messages lent from a pool in a `static`, dropped, lent again.
pub fn pool() -> Outcome {
    let mut pool = STORAGE.pool().map_err(|_| "the storage is free to claim")?;
    for round in 0..3u8 {
        let mut held = [const { None }; 8];
        for (byte, slot) in (round..).zip(held.iter_mut()) {
            pool.try_get_writable(32)
                .map_err(|_| "the message fits")?
                .fill(byte);
            *slot = Some(pool.get_data_owned());
        }
        ensure(pool.try_get_writable(32).is_err(), "a full pool says so")?;
        let intact = (round..).zip(&held).all(|(byte, slot)| {
            slot.as_ref()
                .is_some_and(|s| s.len() == 32 && s.iter().all(|&b| b == byte))
        });
        ensure(intact, "each message kept its bytes")?;
    }
    Ok(())
}

/// 512 bytes of "kernel memory", byte `i` holding `i % 256`.
static MEM: [u8; 512] = {
    let mut mem = [0u8; 512];
    let mut i = 0;
    while i < mem.len() {
        mem[i] = i as u8;
        i += 1;
    }
    mem
};

/// Values read from memory through the batch reader, and one past its end.
pub fn batch_reader() -> Outcome {
    let geometry = Geometry::new(Some(64), 64, 8).map_err(|_| "the geometry is valid")?;
    let mut reader =
        Reader::<_, _, 8, 16>::with_window(MemoryBackend::new(&MEM, geometry), [0u8; 128]);
    ensure(
        reader.read_val::<u32>(62) == Ok(u32::from_le_bytes([62, 63, 64, 65])),
        "a value across a boundary unit",
    )?;
    ensure(
        reader.read_val::<u64>(508) == Err(ReadErrorKind::OutOfBounds),
        "past the end",
    )?;
    ensure(
        reader.counters().read_amplification_per_mille() >= 1000,
        "the read amplification, in integers",
    )
}

/// A `Config::new(4, 4, 512)` connection: rings and control words in the
/// first 4 KiB, then 512 bytes of payload.
#[repr(C, align(128))]
struct UringBytes([u8; 4096 + 512]);

const SUM: u32 = 1;

/// A client and a server in one region, driven in turn: a request whose
/// payload the server sums.
pub fn uring() -> Outcome {
    let mut mem = UringBytes([0; 4096 + 512]);
    let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 512))
        .map_err(|_| "init lays it out")?;
    let (client, mut server) = uring.split::<4, _, _>(Spin, Spin);
    let mut body = client.alloc(3).map_err(|_| "3 bytes of payload fit")?;
    copy(
        client
            .bytes_mut(&mut body)
            .map_err(|_| "the block is the client's")?,
        &[1, 2, 3],
    )?;
    let out = client.alloc(4).map_err(|_| "4 bytes of response fit")?;
    let ticket = client
        .try_submit(Request::new(SUM).with_payload(body).with_response(out))
        .map_err(|_| "a credit is free")?;
    let incoming = server
        .try_recv()
        .map_err(|_| "the server receives")?
        .ok_or("a request is waiting")?;
    let (payload, response) = server.buffers(&incoming).map_err(|_| "its buffers")?;
    let sum: u32 = payload.iter().map(|&b| u32::from(b)).sum();
    copy(
        response.get_mut(..4).ok_or("4 bytes of response")?,
        &sum.to_le_bytes(),
    )?;
    server
        .complete(incoming, sum as i32, 4)
        .map_err(|_| "the server completes")?;
    let reply = client.try_wait(ticket).map_err(|_| "the reply is there")?;
    ensure(reply.result == 6, "the result is the payload's sum")?;
    let response = client
        .response(&reply)
        .map_err(|_| "the reply is the client's")?;
    ensure(response == 6u32.to_le_bytes(), "the response holds the sum")?;
    client.free_reply(reply);
    ensure(client.blocks_in_use() == 0, "every block came back")
}
