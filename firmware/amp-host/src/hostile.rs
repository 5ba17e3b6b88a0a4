//! The hostile run, against the firmware server. The host scribbles over
//! the region while the firmware serves (a forged submission tail, a forged
//! request naming a body outside the payload area, random words over the
//! headers, lines and rings while requests run): the firmware must report
//! the forgeries as errors, take no fault (its fault handler ends the run
//! with a failure), and serve a fresh connection correctly afterwards. Then
//! the firmware scribbles over the completion ring (a forged tail, a forged
//! completion, random words) while the host calls: the host must get
//! errors (`Corrupted` for both forgeries), never a crash.

use super::{Result, Shared, calls, submit, wait_for};
use amp_proto::{Command, ECHO, IN_FLIGHT};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use uring_queue::uring::{Client, Error, Spin};

/// Offsets of a ring's words, from the region's header.
pub(crate) struct Ring {
    start: usize,
    capacity: u32,
    data: usize,
}

impl Ring {
    /// The ring whose offset the header holds at byte `at` (12: the
    /// submission ring; 20: the completion ring).
    pub(crate) fn of(shared: &Shared, at: usize) -> Self {
        let start = shared.word(at).load(Ordering::Acquire) as usize;
        Self {
            start,
            capacity: shared.word(start + 20).load(Ordering::Acquire),
            data: start + shared.word(start + 32).load(Ordering::Acquire) as usize,
        }
    }
    pub(crate) fn tail(&self) -> usize {
        self.start + 128
    }
    pub(crate) fn head(&self) -> usize {
        self.start + 256
    }
}

struct Harness<'a> {
    shared: &'a Shared,
    seq: u32,
    next: u32,
}

impl Harness<'_> {
    /// Posts `command` and waits until the firmware has carried it out.
    fn command(&mut self, command: Command) -> Result<()> {
        self.seq += 1;
        let control = self.shared.control();
        control.post(self.seq, command);
        wait_for(
            || control.last_done() == self.seq,
            "the firmware carries out a command",
        )
    }

    /// A client on a connection no earlier client used: the firmware
    /// abandons a connection whose client closed, and lays out the next.
    fn client(&self) -> Result<Client<'static, IN_FLIGHT, Spin>> {
        Ok(self.shared.attach_fresh()?.0)
    }

    /// `count` echo requests, every byte checked.
    fn calls(&mut self, client: &Client<'_, IN_FLIGHT, Spin>, count: u32) -> Result<()> {
        calls(client, self.next, count)?;
        self.next += count;
        Ok(())
    }
}

pub fn run(shared: &Shared) -> Result<()> {
    let mut h = Harness {
        shared,
        seq: 0,
        next: 0,
    };
    h.command(Command::Hostile)?;
    for kind in 0..3 {
        host_scribbles(&mut h, kind)?;
    }
    for kind in 0..3 {
        firmware_scribbles(&mut h, kind)?;
    }
    let client = h.client()?;
    h.calls(&client, 20)?;
    drop(client);
    let (errors, connections) = shared.control().counts();
    h.command(Command::Finish)?;
    println!(
        "amp-host hostile: the firmware reported {errors} errors over {connections} connections, \
         took no fault, and served every fresh connection correctly; the host got errors, no crash"
    );
    Ok(())
}

/// Host scribble `kind` while the firmware serves; the firmware must
/// report forgeries 0 and 1, and serves a fresh connection afterwards.
fn host_scribbles(h: &mut Harness<'_>, kind: u32) -> Result<()> {
    let client = h.client()?;
    h.calls(&client, 20)?;
    let (errors, _) = h.shared.control().counts();
    let sq = Ring::of(h.shared, 12);
    let tail = h.shared.word(sq.tail()).load(Ordering::Acquire);
    let head = h.shared.word(sq.head()).load(Ordering::Acquire);
    match kind {
        0 => h
            .shared
            .word(sq.tail())
            .store(head + sq.capacity + 5, Ordering::Release),
        1 => {
            let slot = sq.data + (tail & (sq.capacity - 1)) as usize * 40;
            // user_data, opcode ECHO, flags, a body at 0xffff_0000 (far
            // outside the payload area), 100 bytes, no response.
            let words = [0, 0, ECHO, 0, 0xffff_0000, 0, 100, 0, 0, 0];
            for (k, w) in words.into_iter().enumerate() {
                h.shared.word(slot + 4 * k).store(w, Ordering::Relaxed);
            }
            h.shared.word(sq.tail()).store(tail + 1, Ordering::Release);
        }
        _ => random_while_calling(h, &client),
    }
    if kind < 2 {
        wait_for(
            || h.shared.control().counts().0 > errors,
            "the firmware reports the forgery as an error",
        )?;
    }
    drop(client);
    h.command(Command::Reset)?;
    let client = h.client()?;
    h.calls(&client, 20)
}

/// Random words over the region's headers, lines and rings, from a thread
/// of their own, while this one makes 200 requests that it abandons when
/// no reply comes.
fn random_while_calling(h: &mut Harness<'_>, client: &Client<'_, IN_FLIGHT, Spin>) {
    let end = h.shared.word(28).load(Ordering::Acquire).clamp(4, 1 << 16) as usize;
    let stop = AtomicBool::new(false);
    let shared = h.shared;
    let mut outcomes = [0u32; 3];
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = 0x9e37_79b9u32;
            while !stop.load(Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                shared
                    .word((x as usize % end) & !3)
                    .store(x, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(50));
            }
        });
        for _ in 0..200 {
            outcomes[polled_call(client, h.next) as usize] += 1;
            h.next += 1;
        }
        stop.store(true, Ordering::Relaxed);
    });
    println!(
        "amp-host hostile: under random scribbles, {} requests answered right, {} errors, {} abandoned",
        outcomes[0], outcomes[1], outcomes[2]
    );
}

/// How a polled call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Polled {
    Ok = 0,
    Err = 1,
    Abandoned = 2,
}

/// Echo request `i`, polled for a bounded number of rounds.
fn polled_call(client: &Client<'_, IN_FLIGHT, Spin>, i: u32) -> Polled {
    polled_result(client, i).unwrap_or_else(|e| {
        if matches!(e.downcast_ref::<Error>(), Some(Error::NotReady)) {
            Polled::Abandoned
        } else {
            Polled::Err
        }
    })
}

fn polled_result(client: &Client<'_, IN_FLIGHT, Spin>, i: u32) -> Result<Polled> {
    let Some(mut ticket) = submit(client, i)? else {
        return Ok(Polled::Err);
    };
    for _ in 0..100_000 {
        match client.try_wait(ticket) {
            Ok(reply) => {
                let ok = reply.result == 0;
                client.free_reply(reply);
                return Ok(if ok { Polled::Ok } else { Polled::Err });
            }
            Err(rejected) if rejected.error == Error::NotReady => ticket = rejected.value,
            Err(rejected) => return Err(rejected.error.into()),
        }
        std::thread::yield_now();
    }
    let _ = client.cancel(ticket);
    Ok(Polled::Abandoned)
}

/// Firmware scribble `kind` while the host calls: forgeries 0 and 1 must
/// give the host `Corrupted`.
fn firmware_scribbles(h: &mut Harness<'_>, kind: u32) -> Result<()> {
    let client = h.client()?;
    h.calls(&client, 5)?;
    h.command(Command::Scribble(kind))?;
    let got = polled_call_error(&client, h.next);
    h.next += 1;
    println!("amp-host hostile: firmware scribble {kind}: the host got {got:?}");
    if kind < 2 && got != Some(Error::Corrupted) {
        return Err(format!("firmware scribble {kind}: {got:?}, not Corrupted").into());
    }
    drop(client);
    h.command(Command::Reset)?;
    let client = h.client()?;
    h.calls(&client, 5)
}

/// The error a polled echo request `i` ends with, if any.
fn polled_call_error(client: &Client<'_, IN_FLIGHT, Spin>, i: u32) -> Option<Error> {
    match polled_result(client, i) {
        Ok(_) => None,
        Err(e) => e.downcast_ref::<Error>().copied(),
    }
}
