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
//! copied once and compared once, as in `memcpy_checked`. The server uses
//! the blocking calls; the client one connection two ways, the blocking
//! calls (`uring_queue`) and the async ones (`uring_queue_async`). Default
//! spin-then-park options and the futex notifier on both sides. The same
//! connection carries the busy-polling regimes (see
//! [`regimes`](super::regimes)).

use super::Transport;
use super::peer::{self, Peer};
use super::wire::{self, IpcError, MAX_BODY, Patterns};
use std::future::{Future, poll_fn};
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use uring_queue::SharedMemory;
use uring_queue::uring::{
    self as uq, Config, Futex, Notifier, Options, Reply, Request, Ticket, Uring,
};

/// In-flight table slots, ring entries and credits: the suite's deepest
/// pipeline.
pub(crate) const SLOTS: usize = 64;

/// The connection's sizes when at most `SLOTS` requests with bodies of up
/// to `deep_max` bytes, or two with bodies of up to `MAX_BODY`, are in
/// flight: a request block and a response block each.
pub(crate) fn config(deep_max: usize) -> Config {
    let payload = (2 * SLOTS * deep_max).max(2 * MAX_BODY);
    Config::new(SLOTS, SLOTS, payload)
}

pub(crate) fn err(e: uq::Error) -> IpcError {
    IpcError::Transport(format!("uring_queue: {e}"))
}

/// The shared memory for [`Connection::spawn`] with the same `deep_max`: made
/// by the caller, so the client can borrow it.
pub fn memory(deep_max: usize) -> Result<SharedMemory, IpcError> {
    let size = Uring::required_size(&config(deep_max)).map_err(|e| err(e.into()))?;
    Ok(SharedMemory::create("compare-ipc", size)?)
}

/// Maps every page of `shm` into this process now, so that no timed request
/// takes a page fault the first time it lands on a part of the payload
/// area (each side has its own page tables; the memfd's pages themselves
/// are shared).
pub(crate) fn populate(shm: &mut SharedMemory) {
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

/// How both ends of a [`Connection`] wait for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waits {
    /// The default options: spin, then park on the futex.
    SpinThenPark,
    /// Park on the futex at once, never spin: the way a side waits when
    /// many processes share the CPUs (the `service` suite's floor).
    Park,
}

impl Waits {
    /// The server role that waits this way.
    fn role(self) -> &'static str {
        match self {
            Self::SpinThenPark => "uring_queue",
            Self::Park => PARKED_ROLE,
        }
    }
}

/// The server role whose server parks at once ([`Waits::Park`]).
pub(crate) const PARKED_ROLE: &str = "uring_queue_parked";

/// Options that never spin: each wait arms the wake flag and parks.
pub(crate) fn parking() -> Options {
    Options {
        spin: 0,
        min_spin: 0,
        ..Options::default()
    }
}

/// The client end of the connection, with its server process. Both the
/// blocking and the async variant drive it (never at the same time).
#[derive(Debug)]
pub struct Connection<'m, 'p> {
    pub(super) client: uq::Client<'m, SLOTS, Futex>,
    pub(super) patterns: &'p Patterns,
    peer: Peer,
}

impl<'m, 'p> Connection<'m, 'p> {
    /// Sets up the connection in `shm` (from [`memory`] with the same
    /// `deep_max`) and starts a server process (on `cpu` if given) attached
    /// to it.
    pub fn spawn(
        shm: &'m mut SharedMemory,
        deep_max: usize,
        patterns: &'p Patterns,
        cpu: Option<usize>,
    ) -> Result<Self, IpcError> {
        Self::spawn_waiting(shm, (deep_max, patterns), cpu, Waits::SpinThenPark)
    }

    /// [`spawn`](Self::spawn) with both ends waiting as `waits` says.
    pub fn spawn_waiting(
        shm: &'m mut SharedMemory,
        (deep_max, patterns): (usize, &'p Patterns),
        cpu: Option<usize>,
        waits: Waits,
    ) -> Result<Self, IpcError> {
        let fd = shm.fd().try_clone_to_owned()?;
        populate(shm);
        let mut client = Uring::init(shm.region(), config(deep_max))
            .map_err(err)?
            .into_client::<SLOTS, _>(Futex::new());
        if waits == Waits::Park {
            client.set_options(parking());
        }
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
        let peer = Peer::spawn(waits.role(), &[fd.as_fd()], cpu)?;
        Ok(Self {
            client,
            patterns,
            peer,
        })
    }

    /// The client end, for a suite that drives it its own way.
    pub(crate) fn client(&self) -> &uq::Client<'m, SLOTS, Futex> {
        &self.client
    }

    /// Closes the connection and waits for the server to exit cleanly.
    pub fn finish(self) -> Result<(), IpcError> {
        drop(self.client);
        self.peer.finish()
    }

    fn request(&self, len: usize) -> Result<Request, IpcError> {
        request(&self.client, self.patterns, len)
    }

    fn check(&self, reply: Result<Reply, uq::Error>, len: usize) -> Result<(), IpcError> {
        check(&self.client, self.patterns, reply, len)
    }
}

/// A request with a `len`-byte body, copied into a fresh block of
/// `client`'s, and a response block as large.
pub(crate) fn request<W: Notifier>(
    client: &uq::Client<'_, SLOTS, W>,
    patterns: &Patterns,
    len: usize,
) -> Result<Request, IpcError> {
    let mut body = client.alloc(len).map_err(err)?;
    client
        .bytes_mut(&mut body)
        .map_err(err)?
        .copy_from_slice(&patterns.request[..len]);
    let response = client.alloc(len).map_err(err)?;
    Ok(Request::new(wire::request_header(len) as u32)
        .with_payload(body)
        .with_response(response))
}

/// Checks the reply to a `len`-byte request in place and frees its blocks.
pub(crate) fn check<W: Notifier>(
    client: &uq::Client<'_, SLOTS, W>,
    patterns: &Patterns,
    reply: Result<Reply, uq::Error>,
    len: usize,
) -> Result<(), IpcError> {
    let reply = reply.map_err(err)?;
    wire::check_reply_header(reply.result, len)?;
    let body = client.response(&reply).map_err(err)?;
    wire::check_body("reply", body, &patterns.reply[..len])?;
    client.free_reply(reply);
    Ok(())
}

/// The blocking calls: `submit`, then `wait` per ticket.
#[derive(Debug)]
pub struct Blocking<'c, 'm, 'p> {
    conn: &'c Connection<'m, 'p>,
    tickets: Vec<Ticket>,
}

impl<'c, 'm, 'p> Blocking<'c, 'm, 'p> {
    /// The blocking variant over `conn`.
    pub fn new(conn: &'c Connection<'m, 'p>) -> Self {
        Self {
            conn,
            tickets: Vec::with_capacity(SLOTS),
        }
    }
}

impl Transport for Blocking<'_, '_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let (conn, tickets) = (self.conn, &mut self.tickets);
        let client = &conn.client;
        let depth = depth.clamp(1, SLOTS);
        tickets.clear();
        let start = Instant::now();
        let mut left = count;
        while left > 0 {
            let k = left.min(depth);
            for _ in 0..k {
                let ticket = client.submit(conn.request(len)?).map_err(err)?;
                tickets.push(ticket);
            }
            for ticket in tickets.drain(..) {
                conn.check(client.wait(ticket), len)?;
            }
            left -= k;
        }
        Ok(start.elapsed())
    }
}

/// The async calls: `submit(request).await`, on the client's own
/// `block_on`; 64 in flight are 64 `submit` futures, each started as it is
/// made, then finished together.
#[derive(Debug)]
pub struct Async<'c, 'm, 'p> {
    conn: &'c Connection<'m, 'p>,
}

impl<'c, 'm, 'p> Async<'c, 'm, 'p> {
    /// The async variant over `conn`.
    pub fn new(conn: &'c Connection<'m, 'p>) -> Self {
        Self { conn }
    }
}

impl Transport for Async<'_, '_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        let conn = self.conn;
        let client = &conn.client;
        let depth = depth.clamp(1, SLOTS);
        let mut batch = Batch::with_capacity(depth);
        client.block_on(async {
            let start = Instant::now();
            let mut left = count;
            while left > 0 {
                let k = left.min(depth);
                if k == 1 {
                    conn.check(client.call_async(conn.request(len)?).await, len)?;
                } else {
                    for _ in 0..k {
                        batch.start(client.call_async(conn.request(len)?)).await;
                    }
                    // Each reply checked as soon as it and those before it
                    // are in, as the blocking loop checks each as it waits.
                    batch.finish(|reply| conn.check(reply, len)).await?;
                }
                left -= k;
            }
            Ok(start.elapsed())
        })
    }
}

/// Futures started as they are added (polled once at once, so a `submit`
/// future hands its request to the server before the next one is built,
/// as the blocking loop does), then finished together, each output handed
/// on in order as soon as it and those before it are ready.
pub(super) struct Batch<F: Future> {
    futures: Vec<F>,
    outputs: Vec<Option<F::Output>>,
}

impl<F: Future + Unpin> Batch<F> {
    pub(super) fn with_capacity(n: usize) -> Self {
        Self {
            futures: Vec::with_capacity(n),
            outputs: Vec::with_capacity(n),
        }
    }

    /// Adds `future` and polls it once.
    pub(super) async fn start(&mut self, mut future: F) {
        let first = poll_fn(|cx| Poll::Ready(Pin::new(&mut future).poll(cx))).await;
        self.outputs.push(match first {
            Poll::Ready(v) => Some(v),
            Poll::Pending => None,
        });
        self.futures.push(future);
    }

    /// Polls every unfinished future to completion and hands each output,
    /// in order, to `each` as soon as it and those before it are ready.
    /// Polling resumes at the first unfinished future and stops at the next
    /// that is still pending, so replies that come back in order cost one
    /// poll each. Stops at the first error `each` returns.
    pub(super) async fn finish<E>(
        &mut self,
        mut each: impl FnMut(F::Output) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut next = 0;
        let result = poll_fn(|cx| {
            for (f, done) in self.futures.iter_mut().zip(&mut self.outputs).skip(next) {
                if done.is_some() {
                    continue;
                }
                match Pin::new(f).poll(cx) {
                    Poll::Ready(v) => *done = Some(v),
                    Poll::Pending => break,
                }
            }
            while let Some(v) = self.outputs.get_mut(next).and_then(Option::take) {
                next += 1;
                if let Err(e) = each(v) {
                    return Poll::Ready(Err(e));
                }
            }
            if next == self.outputs.len() {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        })
        .await;
        self.futures.clear();
        self.outputs.clear();
        result
    }
}

/// The server: answers requests until the client closes its end, the
/// blocking variants' and the regimes' (see [`regimes`](super::regimes)).
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    serve_waiting(fds, Waits::SpinThenPark)
}

/// The server that parks at once ([`Waits::Park`]).
pub fn serve_parked(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    serve_waiting(fds, Waits::Park)
}

fn serve_waiting(fds: Vec<OwnedFd>, waits: Waits) -> Result<(), IpcError> {
    let fd = peer::one_fd(fds, "memfd")?;
    let mut shm = SharedMemory::open(fd).map_err(std::io::Error::from)?;
    populate(&mut shm);
    let mut server = Uring::attach(shm.region())
        .map_err(err)?
        .into_server(Futex::new());
    if waits == Waits::Park {
        server.set_options(parking());
    }
    // The regimes' requests come over the same connection, told apart by
    // their flags.
    super::regimes::serve(&mut server, &Patterns::new())
}

/// The server's work on one request: checks its body in place, writes the
/// reply body straight into the response block, completes it.
pub(super) fn answer<W: Notifier>(
    server: &mut uq::Server<'_, W>,
    incoming: uq::Incoming,
    patterns: &Patterns,
) -> Result<(), IpcError> {
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
        .map_err(|r| err(r.error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::task::{Context, Waker};

    /// Ready with `value` on its `polls`-th poll.
    struct After {
        polls: u32,
        value: u32,
    }

    impl Future for After {
        type Output = u32;
        fn poll(mut self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<u32> {
            self.polls -= 1;
            if self.polls == 0 {
                Poll::Ready(self.value)
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn a_batch_finishes_every_future_and_keeps_their_order() {
        // Finishing at once, in order, in reverse, and mixed.
        for polls in [[1, 1, 1, 1], [2, 3, 4, 5], [5, 4, 3, 2], [2, 5, 1, 3]] {
            let mut batch = Batch::with_capacity(4);
            let mut out = vec![];
            let mut cx = Context::from_waker(Waker::noop());
            {
                let mut run = pin!(async {
                    for (i, &polls) in polls.iter().enumerate() {
                        let value = i as u32;
                        batch.start(After { polls, value }).await;
                    }
                    batch
                        .finish(|v| {
                            out.push(v);
                            Ok::<(), ()>(())
                        })
                        .await
                        .unwrap();
                });
                let mut rounds = 0;
                while run.as_mut().poll(&mut cx).is_pending() {
                    rounds += 1;
                    assert!(rounds < 100, "{polls:?} never finished");
                }
            }
            assert_eq!(out, [0, 1, 2, 3], "{polls:?}");
            assert!(batch.futures.is_empty() && batch.outputs.is_empty());
        }
    }
}
