//! The crate: `uring_queue::uring` over a memfd shared with the server
//! process.
//!
//! The header travels in the submission entry (`opcode`, the `i32` bits)
//! and the reply header in the completion (`result`); the bodies travel in
//! blocks of the region's payload area. Per request the client allocates a
//! request block and a response block, copies the request body into the
//! first, submits, and after the completion checks the response block in
//! place and frees both; the server checks the request block in place and
//! writes its reply body straight into the response block. So each body is
//! copied once and compared once, as in `memcpy_checked`. Both sides use
//! the blocking calls with the crate's default spin-then-park options and
//! the futex notifier.

use super::Transport;
use super::peer::Peer;
use super::wire::{self, IpcError, MAX_BODY, Patterns};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};
use uring_queue::SharedMemory;
use uring_queue::uring::{self as uq, Config, Futex, Request, Ticket, Uring};

/// In-flight table slots, ring entries and credits: the suite's deepest
/// pipeline.
const SLOTS: usize = 64;

/// The connection's sizes when at most `SLOTS` requests with bodies of up
/// to `deep_max` bytes, or two with bodies of up to `MAX_BODY`, are in
/// flight: a request block and a response block each.
fn config(deep_max: usize) -> Config {
    let payload = (2 * SLOTS * deep_max).max(2 * MAX_BODY);
    Config::new(SLOTS, SLOTS, payload)
}

fn err(e: uq::Error) -> IpcError {
    IpcError::Transport(format!("uring_queue: {e}"))
}

/// The shared memory for [`Client::spawn`] with the same `deep_max`: made
/// by the caller, so the client can borrow it.
pub fn memory(deep_max: usize) -> Result<SharedMemory, IpcError> {
    let size = Uring::required_size(&config(deep_max)).map_err(|e| err(e.into()))?;
    Ok(SharedMemory::create("compare-ipc", size)?)
}

/// Maps every page of `shm` into this process now, so that no timed request
/// takes a page fault the first time it lands on a part of the payload
/// area (each side has its own page tables; the memfd's pages themselves
/// are shared).
fn populate(shm: &mut SharedMemory) {
    let region = shm.region();
    // SAFETY: the range is the whole of a live shared mapping (page-aligned
    // start); MADV_POPULATE_WRITE fills its page tables as a write fault
    // would, without changing a byte, so no Rust-visible access happens.
    let rc = unsafe {
        libc::madvise(
            region.as_ptr().cast(),
            region.len(),
            libc::MADV_POPULATE_WRITE,
        )
    };
    if rc != 0 {
        // Before Linux 5.14: the warm-up round takes the faults instead.
        eprintln!(
            "  uring_queue: cannot populate the shared memory ({}); \
             first touches fault in the warm-up round",
            std::io::Error::last_os_error()
        );
    }
}

/// The client end, with its server process.
#[derive(Debug)]
pub struct Client<'m, 'p> {
    client: uq::Client<'m, SLOTS, Futex>,
    patterns: &'p Patterns,
    tickets: Vec<Ticket>,
    peer: Peer,
}

impl<'m, 'p> Client<'m, 'p> {
    /// Sets up the connection in `shm` (from [`memory`] with the same
    /// `deep_max`) and starts a server process (on `cpu` if given) attached
    /// to it.
    pub fn spawn(
        shm: &'m mut SharedMemory,
        deep_max: usize,
        patterns: &'p Patterns,
        cpu: Option<usize>,
    ) -> Result<Self, IpcError> {
        let fd = shm.fd().try_clone_to_owned()?;
        populate(shm);
        let client = Uring::init(shm.region(), config(deep_max))
            .map_err(err)?
            .into_client::<SLOTS, _>(Futex::new());
        // Room for the deepest pipeline of the largest bodies it carries.
        for (len, needed) in [(deep_max, 2 * SLOTS), (MAX_BODY, 2)] {
            let mut blocks = Vec::new();
            while let Ok(block) = client.alloc(len) {
                blocks.push(block);
            }
            if blocks.len() < needed {
                return Err(IpcError::Transport(format!(
                    "uring_queue: room for {} blocks of {len} bytes, {needed} needed",
                    blocks.len(),
                )));
            }
            for block in blocks {
                client.free(block);
            }
        }
        let peer = Peer::spawn("uring_queue", &[fd.as_fd()], cpu)?;
        Ok(Self {
            client,
            patterns,
            tickets: Vec::with_capacity(SLOTS),
            peer,
        })
    }

    /// Closes the connection and waits for the server to exit cleanly.
    pub fn finish(self) -> Result<(), IpcError> {
        drop(self.client);
        self.peer.finish()
    }

    fn submit(&self, len: usize) -> Result<Ticket, IpcError> {
        let client = &self.client;
        let mut body = client.alloc(len).map_err(err)?;
        client
            .bytes_mut(&mut body)
            .map_err(err)?
            .copy_from_slice(&self.patterns.request[..len]);
        let response = client.alloc(len).map_err(err)?;
        let request = Request::new(wire::request_header(len) as u32)
            .with_payload(body)
            .with_response(response);
        client.submit_waiting(request).map_err(err)
    }

    fn complete(&self, ticket: Ticket, len: usize) -> Result<(), IpcError> {
        let client = &self.client;
        let reply = client.wait(ticket).map_err(err)?;
        wire::check_reply_header(reply.result, len)?;
        let body = client.response(&reply).map_err(err)?;
        wire::check_body("reply", body, &self.patterns.reply[..len])?;
        client.free_reply(reply);
        Ok(())
    }
}

impl Transport for Client<'_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let depth = depth.clamp(1, SLOTS);
        let mut tickets = std::mem::take(&mut self.tickets);
        let start = Instant::now();
        let mut left = count;
        let result = (|| {
            while left > 0 {
                let k = left.min(depth);
                for _ in 0..k {
                    tickets.push(self.submit(len)?);
                }
                for ticket in tickets.drain(..) {
                    self.complete(ticket, len)?;
                }
                left -= k;
            }
            Ok(start.elapsed())
        })();
        self.tickets = tickets;
        result
    }
}

/// The server: answers requests until the client closes its end.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let [fd]: [OwnedFd; 1] = fds
        .try_into()
        .map_err(|_| IpcError::Transport("expected one memfd".into()))?;
    let mut shm = SharedMemory::open(fd)?;
    populate(&mut shm);
    let mut server = Uring::attach(shm.region())
        .map_err(err)?
        .into_server(Futex::new());
    let patterns = Patterns::new();
    loop {
        let incoming = match server.recv() {
            Ok(incoming) => incoming,
            Err(uq::Error::PeerGone) => return Ok(()),
            Err(e) => return Err(err(e)),
        };
        let len = wire::request_len(incoming.opcode() as i32)?;
        let (body, response) = server.buffers(&incoming).map_err(err)?;
        wire::check_body("request", body, &patterns.request[..len])?;
        let response = response.get_mut(..len).ok_or_else(|| {
            IpcError::Transport(format!(
                "response block of {} bytes for a {len}-byte reply",
                incoming.response_capacity()
            ))
        })?;
        response.copy_from_slice(&patterns.reply[..len]);
        server
            .complete(incoming, wire::reply_header(len), len)
            .map_err(|r| err(r.error))?;
    }
}
