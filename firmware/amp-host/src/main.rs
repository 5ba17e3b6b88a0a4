//! The Linux side of the amp scenario (docs/amp.md): maps the file that
//! QEMU backs the firmware's shared memory with, attaches the `uring`
//! region at the offset the firmware laid it out at (validated as any
//! region of another process is), and talks to the firmware through it.
//!
//! Usage: `amp-host client <file> <requests> [<offset>]`: sends
//! `<requests>` echo requests (4 B to 8 KiB each, every byte checked on
//! both sides), then `STOP`; `amp-host server <file> <requests> [<offset>]`:
//! answers a firmware client, telling it to send `<requests>`. Both then
//! stream both ways through the two `SharedRing`s. `amp-host hostile ...`
//! and `amp-host restart ...`: the hostile and restart runs against the
//! firmware server (`hostile.rs`, `restart.rs`); `amp-host host-first ...`
//! and `amp-host host-second ...`: the host killed and started again while
//! the firmware serves (`rehost.rs`); `amp-host bell ...`: the
//! doorbell run and the latency comparison against `amp_bell` (`bell.rs`). `<offset>`: where in the
//! file the firmware's shared memory starts (bytes, a multiple of the page
//! size; 0 by default). Exit code 0 when every check held.

mod bell;
mod hostile;
mod peer;
mod rehost;
mod restart;

use amp_proto::{
    CONTROL_OFFSET, Control, DOWN_OFFSET, ECHO, HELLO, IN_FLIGHT, RING_LEN, SERVER_PID, SHARED_LEN,
    STOP, UP_OFFSET, URING_LEN, URING_OFFSET,
};
use rustix::mm::{MapFlags, ProtFlags, mmap};
use std::collections::VecDeque;
use std::error::Error;
use std::fs::OpenOptions;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use uring_queue::uring::{Client, Request, Server, Spin, Ticket, Uring};
use uring_queue::{Region, RegionError, SharedRing};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// How long the firmware may take to boot and lay the region out.
const BOOT: Duration = Duration::from_secs(60);

/// How long the firmware may take to lay out a connection or carry out a
/// command.
const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `done` until it holds, for at most `PATIENCE`.
pub(crate) fn wait_for(mut done: impl FnMut() -> bool, what: &str) -> Result<()> {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("timed out: {what}").into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let outcome = match args.as_slice() {
        [_, role, file, n] => parse(n).and_then(|n| run(role, file, n, 0)),
        [_, role, file, n, offset] => {
            parse(n).and_then(|n| run(role, file, n, parse(offset)? as u64))
        }
        _ => Err("usage: amp-host client|server <file> <requests> [<offset>]".into()),
    };
    if let Err(e) = outcome {
        eprintln!("amp-host: FAILED: {e}");
        std::process::exit(1);
    }
}

fn parse(n: &str) -> Result<u32> {
    Ok(n.parse::<u32>().map_err(|e| format!("{n}: {e}"))?)
}

fn run(role: &str, file: &str, requests: u32, offset: u64) -> Result<()> {
    let shared = Shared::map(file, offset)?;
    match role {
        "hostile" => return hostile::run(&shared),
        "restart" => return restart::run(&shared, file, requests),
        "bell" => return bell::run(&shared, file, requests),
        "host-first" => return rehost::first(&shared, requests),
        "host-second" => return rehost::second(&shared, requests),
        _ => {}
    }
    let uring = shared.attach_uring()?;
    match role {
        "client" => call(uring.into_client::<IN_FLIGHT, _>(Spin), requests)?,
        "server" => serve(uring.into_server(Spin), requests)?,
        _ => return Err(format!("no role {role}").into()),
    }
    println!("amp-host {role}: {requests} requests, every byte checked");
    let (up, down) = shared.streams()?;
    amp_proto::stream(&mut down.into_producer(), &mut up.into_consumer(), false)?;
    println!(
        "amp-host {role}: {} stream values each way, every value checked",
        amp_proto::STREAM_VALUES
    );
    Ok(())
}

/// The shared memory: `SHARED_LEN` bytes of the file from the offset the
/// firmware sees its `AMP` memory at, mapped shared for the life of the
/// process.
pub struct Shared {
    base: NonNull<u8>,
}

// SAFETY: `Shared` hands out only atomic words and `Region`s of the mapping
// (never unmapped); the library keeps each `Region`'s non-atomic accesses
// to the side that owns them, and the hostile run's scribbling thread uses
// atomic stores only.
unsafe impl Sync for Shared {}

impl Shared {
    /// Maps the file once QEMU has created it at its full size.
    fn map(path: &str, offset: u64) -> Result<Self> {
        let end = offset + SHARED_LEN as u64;
        let deadline = Instant::now() + BOOT;
        let file = loop {
            match OpenOptions::new().read(true).write(true).open(path) {
                Ok(f) if f.metadata()?.len() >= end => break f,
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Ok(_) => return Err(format!("{path} is shorter than {end} bytes").into()),
                Err(e) => return Err(format!("{path}: {e}").into()),
            }
        };
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint),
        // overlapping nothing in this process; never unmapped, so every
        // `Region` cut from it lives as long as the process.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                SHARED_LEN,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &file,
                offset,
            )?
        };
        let base = NonNull::new(ptr.cast::<u8>()).ok_or("mmap returned null")?;
        Ok(Self { base })
    }

    /// The part `offset..offset + len` of the mapping.
    ///
    /// # Safety
    ///
    /// At most one `Region` of each part at a time.
    unsafe fn part(&self, offset: usize, len: usize) -> Region<'static> {
        assert!(
            offset + len <= SHARED_LEN,
            "the parts are inside the mapping"
        );
        // SAFETY: inside the mapping (asserted), which is never unmapped.
        let ptr = unsafe { self.base.add(offset) };
        // SAFETY: the mapping lives as long as the process; the caller makes
        // one region per part. The firmware, the other writer, is a peer the
        // library validates against.
        unsafe { Region::from_raw_parts(ptr, len) }
    }

    /// The word at byte `offset` of the `uring` region.
    pub(crate) fn word(&self, offset: usize) -> &AtomicU32 {
        assert!(
            offset.is_multiple_of(4) && offset + 4 <= URING_LEN,
            "a word of the region"
        );
        // SAFETY: inside the mapping (asserted), aligned (the mapping is page
        // aligned), never unmapped; every word of the region is accessed
        // atomically by both sides.
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(URING_OFFSET + offset)
                .cast::<AtomicU32>()
        }
    }

    /// The test harness's control words.
    pub(crate) fn control(&self) -> &Control {
        // SAFETY: inside the mapping (`SHARED_LEN` covers them), page
        // aligned, never unmapped; `Control` is atomics only.
        unsafe { &*self.base.as_ptr().add(CONTROL_OFFSET).cast::<Control>() }
    }

    /// Attaches the `uring` region once the firmware has published it.
    pub(crate) fn attach_uring(&self) -> Result<Uring<'static>> {
        let deadline = Instant::now() + BOOT;
        loop {
            // SAFETY: a failed attach drops its region before the next.
            let region = unsafe { self.part(URING_OFFSET, URING_LEN) };
            match Uring::attach(region) {
                Ok(uring) => return Ok(uring),
                Err(uring_queue::uring::Error::Region(RegionError::NotReady { .. }))
                    if Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => return Err(format!("attaching the uring region: {e}").into()),
            }
        }
    }

    /// A client on a connection no earlier client used (its epoch is 1),
    /// with the epoch it found on a used one first, if any. On a used
    /// connection it submits nothing: it drops the client (its attach has
    /// told the firmware, whose `check_peer` saw the new epoch) and waits
    /// for the firmware's next connection id. A connection id that changed
    /// while it attached means the firmware laid the region out again
    /// under it (it was abandoning the connection the id named): it drops
    /// that client too, and attaches again.
    pub(crate) fn attach_fresh(&self) -> Result<(Client<'static, IN_FLIGHT, Spin>, Option<u32>)> {
        let mut used = None;
        loop {
            let id = self.connection_id(0)?;
            let client = self.attach_uring()?.into_client::<IN_FLIGHT, _>(Spin);
            let epoch = client.epoch();
            let same = self.word(SERVER_PID).load(Ordering::Acquire) == id;
            if epoch == 1 && same {
                return Ok((client, used));
            }
            drop(client);
            if epoch != 1 {
                used = Some(epoch);
                self.connection_id(id)?;
            }
        }
    }

    /// The firmware's connection id once it is neither 0 (being laid out)
    /// nor `old`.
    fn connection_id(&self, old: u32) -> Result<u32> {
        let word = self.word(SERVER_PID);
        let mut id = 0;
        wait_for(
            || {
                id = word.load(Ordering::Acquire);
                id != 0 && id != old
            },
            "the firmware lays out a new connection",
        )?;
        Ok(id)
    }

    /// The two stream rings, which the firmware laid out before the
    /// `uring` region.
    pub(crate) fn streams(&self) -> Result<(SharedRing<'static, u32>, SharedRing<'static, u32>)> {
        // SAFETY: each part is made once.
        let up = SharedRing::attach(unsafe { self.part(UP_OFFSET, RING_LEN) })?;
        // SAFETY: as above.
        let down = SharedRing::attach(unsafe { self.part(DOWN_OFFSET, RING_LEN) })?;
        Ok((up, down))
    }
}

/// Sends `requests` echo requests, up to `IN_FLIGHT` at a time, checking
/// every reply; then `STOP`.
fn call(client: Client<'_, IN_FLIGHT, Spin>, requests: u32) -> Result<()> {
    calls(&client, 0, requests)?;
    client.call(Request::new(STOP))?;
    Ok(())
}

/// Echo requests `first..first + count`, up to `IN_FLIGHT` at a time, each
/// reply checked.
pub(crate) fn calls<W: uring_queue::uring::Notifier>(
    client: &Client<'_, IN_FLIGHT, W>,
    first: u32,
    count: u32,
) -> Result<()> {
    let requests = first + count;
    let mut pending: VecDeque<(u32, Ticket)> = VecDeque::new();
    let mut next = first;
    while next < requests || !pending.is_empty() {
        if next < requests
            && pending.len() < IN_FLIGHT
            && let Some(ticket) = submit(client, next)?
        {
            pending.push_back((next, ticket));
            next += 1;
            continue;
        }
        let (i, ticket) = pending.pop_front().ok_or("a request is in flight")?;
        check_reply(client, i, ticket)?;
    }
    Ok(())
}

/// Submits echo request `i`, or `None` when the payload area or the
/// credits are short (the caller takes a reply first).
pub(crate) fn submit<W: uring_queue::uring::Notifier>(
    client: &Client<'_, IN_FLIGHT, W>,
    i: u32,
) -> Result<Option<Ticket>> {
    let Ok(mut body) = client.alloc(amp_proto::body_len(i)) else {
        return Ok(None);
    };
    let Ok(out) = client.alloc(amp_proto::response_len(i)) else {
        client.free(body);
        return Ok(None);
    };
    amp_proto::fill(client.bytes_mut(&mut body)?, i, false);
    let request = Request::new(ECHO)
        .with_flags(i)
        .with_payload(body)
        .with_response(out);
    match client.try_submit(request) {
        Ok(ticket) => Ok(Some(ticket)),
        Err(rejected) if rejected.error == uring_queue::uring::Error::Busy => {
            client.free(rejected.value.payload);
            client.free(rejected.value.response);
            Ok(None)
        }
        Err(rejected) => Err(rejected.error.into()),
    }
}

/// Waits for echo request `i`'s reply and checks every response byte.
pub(crate) fn check_reply<W: uring_queue::uring::Notifier>(
    client: &Client<'_, IN_FLIGHT, W>,
    i: u32,
    ticket: Ticket,
) -> Result<()> {
    let reply = client.wait(ticket)?;
    if reply.result != 0 {
        return Err(format!(
            "request {i}: the firmware found {} wrong bytes",
            reply.result
        )
        .into());
    }
    let wrong = amp_proto::wrong_bytes(client.response(&reply)?, i, true);
    client.free_reply(reply);
    match wrong {
        Some(0) => Ok(()),
        Some(n) => Err(format!("request {i}: {n} wrong response bytes").into()),
        None => Err(format!("request {i}: a response of the wrong length").into()),
    }
}

/// Answers a firmware client: `HELLO` with `requests`, echo requests
/// (checking every body byte) until `STOP`.
fn serve(mut server: Server<'_, Spin>, requests: u32) -> Result<()> {
    let mut answered = 0;
    loop {
        let incoming = server.recv()?;
        let opcode = incoming.opcode();
        let (result, len) = match opcode {
            HELLO => {
                let out = server.response_mut(&incoming)?;
                let out = out
                    .get_mut(..4)
                    .ok_or("HELLO's response block holds 4 bytes")?;
                out.copy_from_slice(&requests.to_le_bytes());
                (0, 4)
            }
            ECHO => {
                let (body, response) = server.buffers(&incoming)?;
                amp_proto::answer_echo(incoming.flags(), body, response)
            }
            _ => (0, 0),
        };
        server.complete(incoming, result, len)?;
        match (opcode, result) {
            (STOP, _) => break,
            (ECHO, 0) => answered += 1,
            (ECHO, r) => return Err(format!("echo request {answered}: result {r}").into()),
            _ => {}
        }
    }
    if answered == requests {
        Ok(())
    } else {
        Err(format!("{answered} echo requests answered of {requests}").into())
    }
}
