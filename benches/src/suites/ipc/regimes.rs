//! The pair in the regimes it is compared with iceoryx2 in, both sides
//! busy-polling as iceoryx2's do (docs/benchmarks.md, "Regimes against
//! iceoryx2"):
//! - [`Regime::Signal`]: blocks allocated and sent, not a payload byte
//!   written or read on either side, only headers and lengths checked
//!   (iceoryx2's own benchmark's regime);
//! - [`Regime::Busy`]: the suite's write-once/read-once work (see
//!   [`uring`]) with both sides polling, never parking;
//! - [`Regime::InPlace`]: write-once/read-once with the server checking the
//!   request in place, writing its reply over it and completing with the
//!   request's own block (`Server::complete_in_place`): one block per
//!   request, not two.
//!
//! Polling uses the non-blocking calls, `try_submit` and `try_wait` on the
//! client, `try_recv` on the server, in a loop that yields the CPU after
//! [`SPIN`] empty polls in a row, the policy of the iceoryx2 variant. The
//! server shares its process with the blocking variants' server: it polls
//! only between a [`POLL_ON`] and a [`POLL_OFF`] request, which the client
//! sends untimed around each sample, and otherwise waits in `recv` (a
//! polling server would take its CPU from every other variant's server).

use super::Transport;
use super::uring::{self, Connection, SLOTS, err};
use super::wire::{self, IpcError, Patterns};
use std::time::{Duration, Instant};
use uring_queue::uring::{self as uq, Futex, Notifier, Rejected, Reply, Request, Ticket};

/// Empty polls in a row before a poll loop starts yielding the CPU: the
/// iceoryx2 variant's figure.
const SPIN: u32 = 1 << 12;

/// Request flags: the regime of a request, or a control request.
const SIGNAL: u32 = 1;
const IN_PLACE: u32 = 2;
/// Control: the server polls from now on.
const POLL_ON: u32 = 4;
/// Control: the server waits in `recv` again.
const POLL_OFF: u32 = 8;

/// What a request asks of the two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// No payload byte touched.
    Signal,
    /// Written once, read once, both sides polling.
    Busy,
    /// As `Busy`, the reply written over the request in its block.
    InPlace,
}

impl Regime {
    /// The regime's part of a test name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Signal => "signal",
            Self::Busy => "busy",
            Self::InPlace => "inplace",
        }
    }

    fn flags(self) -> u32 {
        match self {
            Self::Signal => SIGNAL,
            Self::Busy => 0,
            Self::InPlace => IN_PLACE,
        }
    }
}

/// The client side of one regime over the blocking variant's connection.
#[derive(Debug)]
pub struct Polling<'c, 'm, 'p> {
    conn: &'c Connection<'m, 'p>,
    regime: Regime,
    tickets: Vec<Ticket>,
}

impl<'c, 'm, 'p> Polling<'c, 'm, 'p> {
    /// `regime` over `conn`.
    pub fn new(conn: &'c Connection<'m, 'p>, regime: Regime) -> Self {
        Self {
            conn,
            regime,
            tickets: Vec::with_capacity(SLOTS),
        }
    }

    /// The timed part: `count` requests of `len` bytes, `depth` at a time.
    fn requests(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let (client, patterns) = (&self.conn.client, self.conn.patterns);
        let depth = depth.clamp(1, SLOTS);
        let start = Instant::now();
        let mut left = count;
        while left > 0 {
            let k = left.min(depth);
            for _ in 0..k {
                let request = request(client, patterns, self.regime, len)?;
                self.tickets.push(spin_submit(client, request)?);
            }
            for ticket in self.tickets.drain(..) {
                check(
                    client,
                    patterns,
                    self.regime,
                    spin_wait(client, ticket),
                    len,
                )?;
            }
            left -= k;
        }
        Ok(start.elapsed())
    }
}

impl Transport for Polling<'_, '_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let client = &self.conn.client;
        control(client, POLL_ON)?;
        let timed = self.requests(len, count, depth);
        // Back to waiting even after an error, so the server stops polling.
        let parked = control(client, POLL_OFF);
        let elapsed = timed?;
        parked?;
        Ok(elapsed)
    }
}

/// Sends a control request and waits for its answer (blocking, untimed).
fn control<W: Notifier>(client: &uq::Client<'_, SLOTS, W>, flags: u32) -> Result<(), IpcError> {
    let reply = client
        .call(Request::new(0).with_flags(flags))
        .map_err(err)?;
    if reply.result == 0 {
        Ok(())
    } else {
        Err(IpcError::Transport(format!(
            "uring_queue: control request {flags:#x} answered {}",
            reply.result
        )))
    }
}

/// A `len`-byte request of `regime`: its blocks, written only where the
/// regime writes.
fn request<W: Notifier>(
    client: &uq::Client<'_, SLOTS, W>,
    patterns: &Patterns,
    regime: Regime,
    len: usize,
) -> Result<Request, IpcError> {
    let request = match regime {
        Regime::Busy => return uring::request(client, patterns, len),
        Regime::Signal => {
            let body = client.alloc(len).map_err(err)?;
            let response = client.alloc(len).map_err(err)?;
            Request::new(0).with_payload(body).with_response(response)
        }
        Regime::InPlace => {
            let mut body = client.alloc(len).map_err(err)?;
            client
                .bytes_mut(&mut body)
                .map_err(err)?
                .copy_from_slice(&patterns.request[..len]);
            Request::new(0).with_payload(body)
        }
    };
    Ok(Request {
        opcode: wire::request_header(len) as u32,
        flags: regime.flags(),
        ..request
    })
}

/// Checks the reply to a `len`-byte request of `regime` (its header and
/// length always, its body where the regime writes one) and frees its
/// blocks.
fn check<W: Notifier>(
    client: &uq::Client<'_, SLOTS, W>,
    patterns: &Patterns,
    regime: Regime,
    reply: Result<Reply, uq::Error>,
    len: usize,
) -> Result<(), IpcError> {
    if regime == Regime::Busy {
        return uring::check(client, patterns, reply, len);
    }
    let reply = reply.map_err(err)?;
    wire::check_reply_header(reply.result, len)?;
    let expected_in_place = regime == Regime::InPlace;
    if reply.in_place() != expected_in_place || reply.response_len() != len {
        return Err(IpcError::Transport(format!(
            "uring_queue: {} reply of {} bytes (in place: {}) to a {len}-byte request",
            regime.name(),
            reply.response_len(),
            reply.in_place()
        )));
    }
    if regime == Regime::InPlace {
        let body = client.response(&reply).map_err(err)?;
        wire::check_body("reply", body, &patterns.reply[..len])?;
    }
    client.free_reply(reply);
    Ok(())
}

/// One poll's outcome: done, or the state to poll again with.
enum Step<T, S> {
    Done(T),
    Again(S),
}

/// Polls `f` until it is done or fails: busy, then yielding the CPU after
/// [`SPIN`] empty polls in a row.
fn poll_until<T, S>(
    mut state: S,
    mut f: impl FnMut(S) -> Result<Step<T, S>, uq::Error>,
) -> Result<T, uq::Error> {
    let mut idle = 0_u32;
    loop {
        match f(state)? {
            Step::Done(v) => return Ok(v),
            Step::Again(again) => state = again,
        }
        idle = idle.saturating_add(1);
        if idle >= SPIN {
            std::thread::yield_now();
        }
    }
}

/// Submits without ever parking (credits come back as replies are
/// polled; the suite never has more in flight than it has credits).
fn spin_submit<W: Notifier>(
    client: &uq::Client<'_, SLOTS, W>,
    request: Request,
) -> Result<Ticket, IpcError> {
    poll_until(request, |r| match client.try_submit(r) {
        Ok(ticket) => Ok(Step::Done(ticket)),
        Err(Rejected {
            error: uq::Error::Busy,
            value,
        }) => client.poll_completions().map(|_| Step::Again(value)),
        Err(r) => Err(r.error),
    })
    .map_err(err)
}

/// Waits for a reply without ever parking.
fn spin_wait<W: Notifier>(
    client: &uq::Client<'_, SLOTS, W>,
    ticket: Ticket,
) -> Result<Reply, uq::Error> {
    poll_until(ticket, |t| match client.try_wait(t) {
        Ok(reply) => Ok(Step::Done(reply)),
        Err(Rejected {
            error: uq::Error::NotReady,
            value,
        }) => Ok(Step::Again(value)),
        Err(r) => Err(r.error),
    })
}

/// The server's loop: waits in `recv`, or polls between a [`POLL_ON`] and
/// a [`POLL_OFF`] request; answers each request as its flags say.
pub fn serve(server: &mut uq::Server<'_, Futex>, patterns: &Patterns) -> Result<(), IpcError> {
    let mut polling = false;
    loop {
        let next = if polling {
            poll_recv(server)
        } else {
            server.recv()
        };
        match next {
            Ok(incoming) => polling = answer(server, incoming, patterns, polling)?,
            Err(uq::Error::PeerGone) => return Ok(()),
            Err(e) => return Err(err(e)),
        }
    }
}

/// The next request, polled for; every [`SPIN`] empty polls the client's
/// close flag and epoch are checked (a client killed outright takes this
/// process with it: see [`peer`](super::peer)).
fn poll_recv<W: Notifier>(server: &mut uq::Server<'_, W>) -> Result<uq::Incoming, uq::Error> {
    let mut idle = 0_u32;
    loop {
        if let Some(incoming) = server.try_recv()? {
            return Ok(incoming);
        }
        idle = idle.wrapping_add(1);
        if idle.is_multiple_of(SPIN) {
            server.check_peer()?;
        }
        if idle >= SPIN {
            std::thread::yield_now();
        }
    }
}

/// Answers one request as its flags say; returns whether the server polls
/// for the next.
fn answer<W: Notifier>(
    server: &mut uq::Server<'_, W>,
    incoming: uq::Incoming,
    patterns: &Patterns,
    polling: bool,
) -> Result<bool, IpcError> {
    let flags = incoming.flags();
    match flags {
        0 => uring::answer(server, incoming, patterns)?,
        SIGNAL => signal(server, incoming)?,
        IN_PLACE => in_place(server, incoming, patterns)?,
        POLL_ON | POLL_OFF => {
            server.complete(incoming, 0, 0).map_err(|r| err(r.error))?;
            return Ok(flags == POLL_ON);
        }
        _ => {
            return Err(IpcError::Transport(format!(
                "uring_queue server: request flags {flags:#x}"
            )));
        }
    }
    Ok(polling)
}

/// Signal only: checks the lengths, touches no byte, answers with the
/// whole response block.
fn signal<W: Notifier>(
    server: &mut uq::Server<'_, W>,
    incoming: uq::Incoming,
) -> Result<(), IpcError> {
    let len = wire::request_len(incoming.opcode() as i32)?;
    if incoming.payload_len() != len || incoming.response_capacity() < len {
        return Err(IpcError::Transport(format!(
            "uring_queue server: signal request of {len} bytes with blocks of {} and {}",
            incoming.payload_len(),
            incoming.response_capacity()
        )));
    }
    server
        .complete(incoming, wire::reply_header(len), len)
        .map_err(|r| err(r.error))
}

/// In place: checks the request body in its block, writes the reply body
/// over it and completes with that block.
fn in_place<W: Notifier>(
    server: &mut uq::Server<'_, W>,
    incoming: uq::Incoming,
    patterns: &Patterns,
) -> Result<(), IpcError> {
    let len = wire::request_len(incoming.opcode() as i32)?;
    let body = server.payload_mut(&incoming).map_err(err)?;
    wire::check_body("request", body, &patterns.request[..len])?;
    body.copy_from_slice(&patterns.reply[..len]);
    server
        .complete_in_place(incoming, wire::reply_header(len), len)
        .map_err(|r| err(r.error))
}
