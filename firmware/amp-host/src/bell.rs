//! The doorbell run, against `amp_bell` on `mps2-an386`, whose UART0 QEMU
//! wires to a Unix socket (`<file>.bell`). Both sides park instead of
//! polling: the host sleeps in `poll` on the socket until the firmware's
//! doorbell byte, the firmware in `WFI` until the host's raises its receive
//! interrupt. The run makes `<requests>` echo requests (every byte checked
//! on both sides), both sides parking as soon as they find nothing to do,
//! and checks that doorbells woke the host; the firmware checks that they
//! woke it.
//!
//! Then the latency comparison: `ROUNDS` 64-byte round trips as `PING`
//! requests through the region with doorbells, then as many 64-byte
//! messages echoed over the UART alone; prints both means and their ratio.
//! Under QEMU absolute times mean nothing and a loaded machine skews both;
//! no check depends on them.

use super::peer::Firmware;
use super::{Result, Shared, calls};
use amp_proto::{IN_FLIGHT, PING, STOP, UART_START};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use uring_queue::uring::{Client, Options, Request};

/// Round trips each way of the latency comparison (the UART's take
/// milliseconds each under QEMU).
const ROUNDS: u32 = 200;

pub fn run(shared: &Shared, file: &str, requests: u32) -> Result<()> {
    let socket = connect(&format!("{file}.bell"))?;
    socket.set_nonblocking(true)?;
    let id = wait_for_connection(shared)?;
    let woken = Arc::new(AtomicU32::new(0));
    let mut client: Client<'_, IN_FLIGHT, Firmware> =
        shared.attach_uring()?.into_client(Firmware {
            id,
            emulator: None,
            bell: Some(socket.try_clone()?),
            woken: Arc::clone(&woken),
        });
    // Park at once while the checked requests run, so doorbells wake both
    // sides; the latency run below spins first, as by default.
    client.set_options(Options {
        spin: 0,
        min_spin: 0,
        ..Options::default()
    });
    calls(&client, 0, requests)?;
    client.set_options(Options::default());
    let woken = woken.load(Ordering::Relaxed);
    if woken == 0 {
        return Err("no doorbell of the firmware woke the host".into());
    }
    println!(
        "amp-host bell: {requests} requests, every byte checked; {woken} doorbells woke the host"
    );
    let ring = pings(&client, ROUNDS)?;
    client.call(Request::new(STOP).with_flags(ROUNDS))?;
    socket.set_nonblocking(false)?;
    let uart = uart_echoes(&socket, ROUNDS)?;
    println!(
        "amp-host bell: 64-byte round trip, mean of {ROUNDS}: region with doorbells {:.1} us, \
         UART alone {:.1} us, ratio {:.3} (QEMU, a shared machine: relative only)",
        ring.as_secs_f64() * 1e6,
        uart.as_secs_f64() * 1e6,
        ring.as_secs_f64() / uart.as_secs_f64()
    );
    Ok(())
}

/// Connects to QEMU's socket once it is there.
fn connect(path: &str) -> Result<UnixStream> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return Ok(s),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("{path}: {e}").into()),
        }
    }
}

/// The firmware's connection id, once it has laid the region out.
fn wait_for_connection(shared: &Shared) -> Result<u32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let id = shared.word(amp_proto::SERVER_PID).load(Ordering::Acquire);
        if id != 0 {
            return Ok(id);
        }
        if Instant::now() > deadline {
            return Err("timed out waiting for the firmware's connection".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Mean time of `count` 64-byte `PING` round trips, each response checked.
fn pings(client: &Client<'_, IN_FLIGHT, Firmware>, count: u32) -> Result<Duration> {
    let start = Instant::now();
    for i in 0..count {
        let mut body = client.alloc(64)?;
        let message = [i as u8; 64];
        client.bytes_mut(&mut body)?.copy_from_slice(&message);
        let out = client.alloc(64)?;
        let reply = client.call(Request::new(PING).with_payload(body).with_response(out))?;
        let same = client.response(&reply)? == message;
        client.free_reply(reply);
        if !same {
            return Err(format!("ping {i}: the response is not the body").into());
        }
    }
    Ok(start.elapsed() / count.max(1))
}

/// Mean time of `count` 64-byte messages echoed over the UART alone, each
/// checked.
fn uart_echoes(mut socket: &UnixStream, count: u32) -> Result<Duration> {
    // This side first: the `STOP` call has returned, so no park of the
    // notifier reads the socket and could take the firmware's answer for a
    // doorbell. Doorbell bytes still in flight come before that answer.
    socket.write_all(&[UART_START])?;
    let mut byte = [0u8; 1];
    while byte[0] != UART_START {
        socket.read_exact(&mut byte)?;
    }
    let start = Instant::now();
    for i in 0..count {
        let message = [i as u8 ^ 0x5a; 64];
        socket.write_all(&message)?;
        let mut back = [0u8; 64];
        socket.read_exact(&mut back)?;
        if back != message {
            return Err(format!("UART message {i} came back changed").into());
        }
    }
    Ok(start.elapsed() / count.max(1))
}
