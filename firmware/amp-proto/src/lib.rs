//! The amp scenario's contract between the firmware and the Linux process:
//! the region's layout (a `uring` connection, then two `SharedRing`s), the
//! opcodes, and the bytes every request and response carries, so that each
//! side checks every byte the other wrote. One home for both sides: the
//! firmware (`firmware/amp`) and the host program (`firmware/amp-host`)
//! both build on it.
//!
//! No formatting, no indexing: the firmware links it with the panic-never
//! handler.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};
use uring_queue::uring::Config;
use uring_queue::{Consumer, Producer};

/// Offset of the region in the memory both sides share: the start of the
/// file QEMU backs the machine's RAM with, which the firmware sees at the
/// linker-fixed address of its `AMP` memory (`board/memory/`).
pub const URING_OFFSET: usize = 0;

/// Bytes reserved for the `uring` connection (its `Config` needs less).
pub const URING_LEN: usize = 1 << 20;

/// Offset of the ring that carries a stream from the firmware to the host.
pub const UP_OFFSET: usize = URING_LEN;

/// Offset of the ring that carries a stream from the host to the firmware.
pub const DOWN_OFFSET: usize = URING_LEN + RING_LEN;

/// Bytes reserved for each stream ring.
pub const RING_LEN: usize = 64 << 10;

/// Elements each stream ring holds.
pub const RING_CAPACITY: usize = 1024;

/// Offset, in the `uring` region, of the `pid` word of the server's line
/// (docs/uring-queue.md), where the firmware publishes its connection id.
pub const SERVER_PID: usize = 384 + 12;

/// Offset, in the `uring` region, of the `pid` word of the client's line.
pub const CLIENT_PID: usize = 128 + 12;

/// Offset of the test harness's control words (see [`Control`]).
pub const CONTROL_OFFSET: usize = URING_LEN + 2 * RING_LEN;

/// Bytes of the shared memory the scenario uses, from its start.
pub const SHARED_LEN: usize = CONTROL_OFFSET + 4096;

/// Requests in flight at most (the client's table).
pub const IN_FLIGHT: usize = 4;

/// The largest request body and response: 8 KiB.
pub const MAX_BODY: usize = 8 << 10;

/// The connection: four submission and completion entries, and a payload
/// area for a body and a response block of `MAX_BODY` for every request in
/// flight, twice over (the allocator is next-fit).
pub const fn config() -> Config {
    Config::new(IN_FLIGHT, IN_FLIGHT, 4 * IN_FLIGHT * MAX_BODY)
}

/// Opcode of the request the firmware, as the client, sends first: the
/// server answers with the number of echo requests to send (a
/// little-endian `u32` response).
pub const HELLO: u32 = 1;

/// Opcode of an echo request: its `flags` word is the request's number
/// `i`; the body is [`body_len`]`(i)` bytes of [`body_byte`]; the server
/// answers with [`response_len`]`(i)` bytes of [`response_byte`] and a
/// result of 0 when every body byte was right (else the count of wrong
/// bytes, or -1 for a body of the wrong length).
pub const ECHO: u32 = 2;

/// Opcode of the client's last request: the server answers it, and then
/// both sides stream (see [`stream_value`]).
pub const STOP: u32 = 3;

/// Opcode of the latency run's request: the server copies the body into
/// the response (64 bytes in the run).
pub const PING: u32 = 4;

/// The byte each side sends on the doorbell UART before the latency
/// baseline's messages, so that doorbell bytes still in flight are told
/// from them: the host first, once its `STOP` call returned (so its
/// notifier reads the socket no more), then the firmware in answer (its
/// receive interrupt is off since before it completed `STOP`, so no
/// handler takes the host's).
pub const UART_START: u8 = 0xff;

/// The number of the first echo request of the host started in place of a
/// killed one (the host-restart run), so that the firmware's report tells
/// the two hosts' requests apart.
pub const SECOND_HOST_FIRST: u32 = 1 << 24;

/// Values each side streams through its ring after `STOP`.
pub const STREAM_VALUES: u32 = 100_000;

/// A step of a 32-bit xorshift: the pseudo-random sequence both sides
/// derive lengths and bytes from.
const fn mix(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

/// Body length of request `i`: 4 bytes to 8 KiB.
pub const fn body_len(i: u32) -> usize {
    4 + (mix(i.wrapping_mul(2_654_435_761) | 1) as usize % (MAX_BODY - 3))
}

/// Response length of request `i`: 4 bytes to 8 KiB, independent of the
/// body's.
pub const fn response_len(i: u32) -> usize {
    4 + (mix(i.wrapping_mul(40_503) ^ 0x9e37_79b9) as usize % (MAX_BODY - 3))
}

/// Byte `j` of request `i`'s body.
pub const fn body_byte(i: u32, j: usize) -> u8 {
    (mix(i ^ 0x5bd1_e995).wrapping_add(j as u32 * 31) >> 3) as u8
}

/// Byte `j` of request `i`'s response.
pub const fn response_byte(i: u32, j: usize) -> u8 {
    (mix(i ^ 0x1b87_3593).wrapping_add(j as u32 * 17) >> 5) as u8
}

/// Fills `out` with request `i`'s body, or its response (`response`).
pub fn fill(out: &mut [u8], i: u32, response: bool) {
    for (j, b) in out.iter_mut().enumerate() {
        *b = if response {
            response_byte(i, j)
        } else {
            body_byte(i, j)
        };
    }
}

/// How many bytes of `got` differ from request `i`'s body (or response),
/// or `None` when its length is not the one request `i` has.
pub fn wrong_bytes(got: &[u8], i: u32, response: bool) -> Option<u32> {
    let len = if response {
        response_len(i)
    } else {
        body_len(i)
    };
    if got.len() != len {
        return None;
    }
    let mut wrong = 0u32;
    for (j, &b) in got.iter().enumerate() {
        let want = if response {
            response_byte(i, j)
        } else {
            body_byte(i, j)
        };
        wrong = wrong.saturating_add(u32::from(b != want));
    }
    Some(wrong)
}

/// The `k`th value of a stream; `up` for the firmware's.
pub const fn stream_value(k: u32, up: bool) -> u32 {
    mix(k.wrapping_add(if up { 0x0100_0000 } else { 0x0200_0000 }) | 1)
}

/// The server's half of an echo request `i`, one home for both servers:
/// checks `body`, writes the response into the start of `response`, and
/// returns the completion's result and response length: `(0, len)` when
/// every body byte was right; else the count of wrong bytes (or -1 for a
/// body of the wrong length, -3 for a response block too small) and no
/// response.
pub fn answer_echo(i: u32, body: &[u8], response: &mut [u8]) -> (i32, usize) {
    let len = response_len(i);
    let Some(out) = response.get_mut(..len) else {
        return (-3, 0);
    };
    match wrong_bytes(body, i, false) {
        Some(0) => {
            fill(out, i, true);
            (0, len)
        }
        Some(n) => (i32::try_from(n).unwrap_or(i32::MAX), 0),
        None => (-1, 0),
    }
}

/// Why a stream failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamError {
    /// Value `at` of the peer's stream was not the one expected.
    WrongValue {
        /// Its position in the stream.
        at: u32,
    },
    /// The inbound ring's indices broke (a hostile or corrupted peer).
    Ring(uring_queue::RingError),
}

impl core::fmt::Display for StreamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::WrongValue { at } => write!(f, "stream value {at} is wrong"),
            Self::Ring(e) => write!(f, "the inbound stream ring: {e}"),
        }
    }
}

impl core::error::Error for StreamError {}

/// Streams [`STREAM_VALUES`] values each way at once, one home for both
/// sides: pushes this side's (`up` for the firmware) while `tx` has room,
/// pops the peer's while `rx` has any, and checks every value received.
/// Polls: returns once both streams are complete.
pub fn stream(
    tx: &mut Producer<'_, u32>,
    rx: &mut Consumer<'_, u32>,
    up: bool,
) -> Result<(), StreamError> {
    let (mut sent, mut received) = (0u32, 0u32);
    while sent < STREAM_VALUES || received < STREAM_VALUES {
        if sent < STREAM_VALUES && tx.push(stream_value(sent, up)).is_ok() {
            sent += 1;
        }
        match rx.pop() {
            Ok(v) if v == stream_value(received, !up) => received += 1,
            Ok(_) => return Err(StreamError::WrongValue { at: received }),
            Err(uring_queue::RingError::Empty) => {}
            Err(e) => return Err(StreamError::Ring(e)),
        }
    }
    Ok(())
}

/// What the host asks of the firmware through [`Control`], in the restart
/// and hostile runs (the test harness, not the protocol under test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Errors are expected from now on: count them, do not end the run.
    Hostile,
    /// Lay the region out afresh (a new connection) and serve again.
    Reset,
    /// As the hostile peer: corrupt the completion ring in the way numbered
    /// (see `amp_server`), then stop serving until `Reset`.
    Scribble(u32),
    /// Take no more requests on this connection (the host-restart run:
    /// requests of the old host stay in the submission ring); the liveness
    /// checks go on, and the next connection is served.
    Hold,
    /// End the run.
    Finish,
}

impl Command {
    fn encode(self) -> u32 {
        match self {
            Self::Hostile => 1,
            Self::Reset => 2,
            Self::Scribble(kind) => 3 | (kind & 0xff) << 4,
            Self::Finish => 4,
            Self::Hold => 5,
        }
    }

    fn decode(word: u32) -> Option<Self> {
        match word & 0xf {
            1 => Some(Self::Hostile),
            2 => Some(Self::Reset),
            3 => Some(Self::Scribble(word >> 4 & 0xff)),
            4 => Some(Self::Finish),
            5 => Some(Self::Hold),
            _ => None,
        }
    }
}

/// The harness's four words at [`CONTROL_OFFSET`], each with one writer:
/// the host writes `command` (a sequence number in the high 20 bits, the
/// [`Command`] below); the firmware writes `done` (the sequence number of
/// the last command it carried out), `errors` (errors its side of the
/// protocol reported) and `connections` (times it laid the region out).
/// Plain atomic loads and stores, no read-modify-write across the line.
#[repr(C)]
#[derive(Debug)]
pub struct Control {
    command: AtomicU32,
    done: AtomicU32,
    errors: AtomicU32,
    connections: AtomicU32,
}

impl Control {
    /// Host: posts command number `seq` (from 1; 20 bits).
    pub fn post(&self, seq: u32, command: Command) {
        self.command
            .store(seq << 12 | command.encode(), Ordering::Release);
    }

    /// Firmware: the command posted, with its number, if it is newer than
    /// `after`.
    pub fn pending(&self, after: u32) -> Option<(u32, Command)> {
        let word = self.command.load(Ordering::Acquire);
        let seq = word >> 12;
        if seq == after {
            return None;
        }
        Command::decode(word).map(|c| (seq, c))
    }

    /// Firmware: command `seq` is carried out; publishes its counts first.
    pub fn done(&self, seq: u32, errors: u32, connections: u32) {
        self.errors.store(errors, Ordering::Relaxed);
        self.connections.store(connections, Ordering::Relaxed);
        self.done.store(seq, Ordering::Release);
    }

    /// Firmware: publishes its counts.
    pub fn count(&self, errors: u32, connections: u32) {
        self.errors.store(errors, Ordering::Relaxed);
        self.connections.store(connections, Ordering::Release);
    }

    /// Host: the number of the last command carried out.
    pub fn last_done(&self) -> u32 {
        self.done.load(Ordering::Acquire)
    }

    /// Host: the firmware's error and connection counts.
    pub fn counts(&self) -> (u32, u32) {
        let connections = self.connections.load(Ordering::Acquire);
        (self.errors.load(Ordering::Relaxed), connections)
    }
}
