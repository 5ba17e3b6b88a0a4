//! The zero-copy anchor of the active test: iceoryx2 0.10 request/response,
//! one service that the server process creates and every active client
//! opens (feature `iceoryx2`).
//!
//! As in the `ipc` suite's anchor (whose helpers this reuses): slices of
//! `u8` with `i32` user headers, static allocations sized for the suite's
//! bodies, one copy of each body in and one check in place on each side.
//! Each client keeps [`DEPTH`] requests in flight and busy-polls the oldest
//! one's `PendingResponse`, yielding the CPU after a spell of empty polls;
//! the server busy-polls `receive` the same way. Request/response has no
//! blocking receive, so busy polling is iceoryx2's only way short of an
//! event service and a system call per message. So that the polling
//! server does not take CPU time from the other variants, it polls only
//! while the suite has woken it for an iceoryx2 sample (`wake`, `park` on
//! its control socket) and sleeps otherwise.

use super::control::{Control, field};
use super::{DEPTH, SMALL};
use crate::suites::ipc::iceoryx::{
    Active, Factory, Pending, Requester, SPIN, Server, Svc, client_port, create_service, err, node,
    open_service, poll_until, respond, send, server_port,
};
use crate::suites::ipc::wire::{self, IpcError, Patterns};
use iceoryx2::prelude::*;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The server sleeps until woken.
const PARKED: u8 = 0;
/// The server polls for requests.
const POLLING: u8 = 1;
/// The suite hung up: the server exits.
const STOP: u8 = 2;

fn service_name(name: &str) -> Result<ServiceName, IpcError> {
    ServiceName::new(name).map_err(|e| err("service name", e))
}

/// Creates the service for `clients` clients with [`DEPTH`] requests in
/// flight each, and its server port.
fn create(node: &Node<Svc>, name: &str, clients: usize) -> Result<(Factory, Server), IpcError> {
    let service = create_service(node, &service_name(name)?, clients, DEPTH)?;
    let server = server_port(&service, SMALL)?;
    Ok((service, server))
}

/// The server role: creates the service named in its setup for the
/// number of clients it gives, answers `ok`, then polls while woken, until
/// the suite hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let mut control = Control::inherited(fds)?;
    let setup = control.setup()?;
    let node = node()?;
    let made = field(&setup, "clients")
        .and_then(|c| c.parse().map_err(|e| err("clients", e)))
        .and_then(|clients| create(&node, field(&setup, "name")?, clients));
    let (_service, server) = control.answer(made)?;
    let state = Arc::new(AtomicU8::new(PARKED));
    let watcher = {
        let (state, main) = (Arc::clone(&state), std::thread::current());
        std::thread::spawn(move || {
            let r = obey(&mut control, &state, &main);
            state.store(STOP, Ordering::Release);
            main.unpark();
            r
        })
    };
    let patterns = Patterns::upto(SMALL);
    let mut idle = 0_u32;
    let served = loop {
        match state.load(Ordering::Acquire) {
            POLLING => match server.receive().map_err(|e| err("receive", e)) {
                Ok(Some(request)) => {
                    idle = 0;
                    if let Err(e) = answer(request, &patterns) {
                        break Err(e);
                    }
                }
                Ok(None) => {
                    idle = idle.saturating_add(1);
                    if idle >= SPIN {
                        std::thread::yield_now();
                    }
                }
                Err(e) => break Err(e),
            },
            PARKED => std::thread::park(),
            _ => break Ok(()),
        }
    };
    watcher.join().expect("the control thread panicked")?;
    served
}

/// Follows `wake` and `park` until the suite hangs up.
fn obey(
    control: &mut Control,
    state: &AtomicU8,
    main: &std::thread::Thread,
) -> Result<(), IpcError> {
    while let Some(line) = control.next()? {
        let done = match line.as_str() {
            "wake" => {
                state.store(POLLING, Ordering::Release);
                main.unpark();
                Ok(())
            }
            "park" => {
                state.store(PARKED, Ordering::Release);
                Ok(())
            }
            other => Err(IpcError::Transport(format!("bad command {other:?}"))),
        };
        control.answer(done)?;
    }
    Ok(())
}

/// Checks a request in place and answers it.
fn answer(request: Active, patterns: &Patterns) -> Result<(), IpcError> {
    let len = wire::request_len(*request.user_header())?;
    let expected = patterns.request.get(..len).ok_or_else(|| {
        IpcError::Transport(format!("a {len}-byte request; this server takes {SMALL}"))
    })?;
    wire::check_body("request", request.payload(), expected)?;
    respond(request, wire::reply_header(len), &patterns.reply[..len])
}

/// An active client's port on the service.
#[derive(Debug)]
pub struct Client {
    // Dropped first: each borrows the port's state.
    pending: VecDeque<Pending>,
    client: Requester,
    /// The suite's socket: a client whose suite is gone stops polling.
    control: UnixStream,
    _service: Factory,
    // Dropped last: every port and service above was made through it.
    _node: Node<Svc>,
}

impl Client {
    /// Opens the service `name` (the server created it) and a client port.
    pub fn open(name: &str, control: UnixStream) -> Result<Self, IpcError> {
        let node = node()?;
        let service = open_service(&node, &service_name(name)?)?;
        let client = client_port(&service, SMALL)?;
        Ok(Self {
            pending: VecDeque::with_capacity(DEPTH),
            client,
            control,
            _service: service,
            _node: node,
        })
    }

    /// `count` requests of `len` bytes, `depth` kept in flight, every
    /// response checked in place.
    pub fn exchange(
        &mut self,
        patterns: &Patterns,
        (len, count, depth): (usize, usize, usize),
    ) -> Result<Duration, IpcError> {
        let Self {
            pending,
            client,
            control,
            ..
        } = self;
        let body = &patterns.request[..len];
        let header = wire::request_header(len);
        let start = Instant::now();
        let first = count.min(depth.clamp(1, DEPTH));
        for _ in 0..first {
            pending.push_back(send(client, header, body)?);
        }
        for sent in first..count + first {
            let request = pending.pop_front().expect("one per reply to come");
            let response =
                poll_until(|| request.receive().map_err(|e| err("receive", e)), control)?;
            wire::check_reply_header(*response.user_header(), len)?;
            wire::check_body("reply", response.payload(), &patterns.reply[..len])?;
            // The request counts as active until both are gone.
            drop((response, request));
            if sent < count {
                pending.push_back(send(client, header, body)?);
            }
        }
        Ok(start.elapsed())
    }
}
