//! The zero-copy anchor: iceoryx2 0.10 request/response between the two
//! processes (feature `iceoryx2`).
//!
//! One service per payload size (a *lane*), each sized for its bodies: slices
//! of `u8` with a static allocation of exactly that length, an `i32` user
//! header on requests and on responses (the suite's headers), one client
//! and one server, and 64 active requests per client where the size is sent
//! 64 at a time (one elsewhere). Per request the client loans a request,
//! copies the body in (`write_from_slice`), sends it and busy-polls its
//! `PendingResponse`; the server busy-polls `receive`, checks the request in
//! place, loans a response, copies the reply body in and sends it; the
//! client checks the response in place. So each body is copied once and
//! compared once, as in `uring_queue` and `memcpy_checked`.
//!
//! Busy polling on both sides is iceoryx2's fastest configuration and the
//! one its own request/response benchmark uses: request/response has no
//! blocking receive, and waking a waiting side takes an event service and
//! a system call per message. A busy-polling server would take the server
//! CPU from every other variant's server, so it polls only while its client
//! is measuring: before each sample the client names the lane on a Unix
//! socket and waits for the server's answer (untimed), and after the sample
//! it sends a `PARK` request, after which the server blocks on the socket
//! again. During the timed part the server is awake and polling one lane.
//!
//! [`SignalOnly`] drives the same lanes in iceoryx2's own benchmark's
//! regime: requests and responses loaned at full length and sent without a
//! payload byte written or read on either side (headers and lengths are
//! still checked). The wake byte tells the server which work a sample asks
//! for.
//!
//! A poll loop yields the CPU after [`SPIN`] empty polls in a row, so that
//! a side sharing its CPU with its peer (`COMPARE_IPC_CPUS=shared`) lets it
//! run; with each side on a CPU of its own a reply comes well within that.

use super::SIZES;
use super::Transport;
use super::peer::{self, Peer};
use super::wire::{self, IpcError, Patterns};
use iceoryx2::active_request::ActiveRequest;
use iceoryx2::pending_response::PendingResponse;
use iceoryx2::port::client::Client as IceClient;
use iceoryx2::port::server::Server as IceServer;
use iceoryx2::prelude::*;
use iceoryx2::service::port_factory::request_response::PortFactory;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

pub(crate) type Svc = ipc::Service;
pub(crate) type Factory = PortFactory<Svc, [u8], i32, [u8], i32>;
pub(crate) type Pending = PendingResponse<Svc, [u8], i32, [u8], i32>;
pub(crate) type Requester = IceClient<Svc, [u8], i32, [u8], i32>;
pub(crate) type Active = ActiveRequest<Svc, [u8], i32, [u8], i32>;

/// The request header that ends a sample: the server answers it and goes
/// back to waiting on the socket.
const PARK: i32 = i32::MIN;

/// Empty polls in a row before a poll loop starts yielding the CPU.
pub(crate) const SPIN: u32 = 1 << 12;

/// Most requests in flight on a lane that is sent 64 at a time.
const DEEP: usize = 64;

/// What a sample asks of both sides, sent in the wake byte's high bits
/// (the lane index in its low four).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// Each body written once and read once (the suite's own work).
    WriteOnce = 0,
    /// No payload byte touched: iceoryx2's own benchmark's regime.
    SignalOnly = 1,
}

impl Work {
    fn from_wake(byte: u8) -> Result<(usize, Self), IpcError> {
        let work = match byte >> 4 {
            0 => Self::WriteOnce,
            1 => Self::SignalOnly,
            _ => return Err(err("woken for work it does not know", byte)),
        };
        Ok((usize::from(byte & 0x0f), work))
    }
}

pub(crate) fn err(what: &str, e: impl std::fmt::Display) -> IpcError {
    IpcError::Transport(format!("iceoryx2: {what}: {e}"))
}

/// Lane `i`'s service name: unique to the client process.
fn service_name(client_pid: u32, i: usize) -> Result<ServiceName, IpcError> {
    ServiceName::new(&format!("compare-ipc/{client_pid}/lane{i}"))
        .map_err(|e| err("service name", e))
}

/// A node that leaves the process's signal handling alone. iceoryx2's own
/// log shows errors only (`IOX2_LOG_LEVEL` overrides): at its default level
/// every process says that it found no config file and uses the defaults.
pub(crate) fn node() -> Result<Node<Svc>, IpcError> {
    set_log_level_from_env_or(LogLevel::Error);
    NodeBuilder::new()
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<Svc>()
        .map_err(|e| err("node", e))
}

/// One size's service and client port, or why it has none.
enum Lane {
    Ready {
        len: usize,
        depth: usize,
        client: Requester,
        // Kept open for the client's lifetime; dropped after it.
        _service: Factory,
    },
    Failed(String),
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ready { len, depth, .. } => write!(f, "Ready({len} B, {depth} in flight)"),
            Self::Failed(why) => write!(f, "Failed({why})"),
        }
    }
}

fn lane(node: &Node<Svc>, i: usize, len: usize, depth: usize) -> Result<Lane, IpcError> {
    let service = create_service(node, &service_name(std::process::id(), i)?, 1, depth)?;
    let client = client_port(&service, len)?;
    Ok(Lane::Ready {
        len,
        depth,
        client,
        _service: service,
    })
}

/// Creates a request/response service of `u8` slices with `i32` headers
/// each way, for `clients` clients and one server, `depth` active requests
/// per client, one response buffered per request, nothing ever dropped.
pub(crate) fn create_service(
    node: &Node<Svc>,
    name: &ServiceName,
    clients: usize,
    depth: usize,
) -> Result<Factory, IpcError> {
    node.service_builder(name)
        .request_response::<[u8], [u8]>()
        .request_user_header::<i32>()
        .response_user_header::<i32>()
        .max_clients(clients)
        .max_servers(1)
        .max_nodes(clients + 1)
        .max_active_requests_per_client(depth)
        .max_response_buffer_size(1)
        .max_loaned_requests(1)
        // Nothing is dropped: a full queue would be a bug, not a loss.
        .enable_safe_overflow_for_requests(false)
        .enable_safe_overflow_for_responses(false)
        .create()
        .map_err(|e| err("service", e))
}

/// Opens the service `name`, made by [`create_service`] in another process.
pub(crate) fn open_service(node: &Node<Svc>, name: &ServiceName) -> Result<Factory, IpcError> {
    node.service_builder(name)
        .request_response::<[u8], [u8]>()
        .request_user_header::<i32>()
        .response_user_header::<i32>()
        .open()
        .map_err(|e| err("open the service", e))
}

/// A client port whose requests are allocated for `len`-byte bodies.
pub(crate) fn client_port(service: &Factory, len: usize) -> Result<Requester, IpcError> {
    service
        .client_builder()
        .initial_max_slice_len(len)
        .allocation_strategy(AllocationStrategy::Static)
        .create()
        .map_err(|e| err("client port", e))
}

/// A server port whose responses are allocated for `len`-byte bodies.
pub(crate) fn server_port(service: &Factory, len: usize) -> Result<Server, IpcError> {
    service
        .server_builder()
        .initial_max_slice_len(len)
        .allocation_strategy(AllocationStrategy::Static)
        .create()
        .map_err(|e| err("server port", e))
}

/// Answers `request`: loans a response, copies `body` in, sets `header`,
/// sends it.
pub(crate) fn respond(request: Active, header: i32, body: &[u8]) -> Result<(), IpcError> {
    let response = request
        .loan_slice_uninit(body.len())
        .map_err(|e| err("loan a response", e))?;
    let mut response = response.write_from_slice(body);
    *response.user_header_mut() = header;
    response.send().map_err(|e| err("respond", e))
}

/// The client end, with its server process.
#[derive(Debug)]
pub struct Client<'p> {
    lanes: Vec<Lane>,
    pending: Vec<Pending>,
    control: UnixStream,
    patterns: &'p Patterns,
    peer: Peer,
    // Dropped last: every port and service above was made through it.
    _node: Node<Svc>,
}

impl<'p> Client<'p> {
    /// Sets up a lane per size (64 in flight up to `deep_max` bytes, one
    /// above), starts a server process (on `cpu` if given) that opens them,
    /// and sends every lane a few batches untimed, so that the chunks the
    /// timed rounds use are mapped in both processes.
    pub fn spawn(
        patterns: &'p Patterns,
        cpu: Option<usize>,
        deep_max: usize,
    ) -> Result<Self, IpcError> {
        let node = node()?;
        let lanes = SIZES
            .iter()
            .enumerate()
            .map(|(i, &(size, len))| {
                let depth = if len <= deep_max { DEEP } else { 1 };
                lane(&node, i, len, depth)
                    .unwrap_or_else(|e| Lane::Failed(format!("no {size} service: {e}")))
            })
            .collect();
        let (control, theirs) = UnixStream::pair()?;
        let peer = Peer::spawn("iceoryx2", &[theirs.as_fd()], cpu)?;
        drop(theirs);
        let mut client = Self {
            lanes,
            pending: Vec::with_capacity(DEEP),
            control,
            patterns,
            peer,
            _node: node,
        };
        client.await_server()?;
        client.warm_up()?;
        Ok(client)
    }

    /// Reads which lanes the server opened; the others fail with a reason.
    fn await_server(&mut self) -> Result<(), IpcError> {
        let mut opened = [0_u8];
        self.control.read_exact(&mut opened).map_err(|e| {
            err(
                "the server did not start (its message is above)",
                e.to_string(),
            )
        })?;
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            if matches!(lane, Lane::Ready { .. }) && opened[0] & (1 << i) == 0 {
                *lane = Lane::Failed("the server could not open it (its message is above)".into());
            }
        }
        Ok(())
    }

    fn warm_up(&mut self) -> Result<(), IpcError> {
        let ready: Vec<(usize, usize)> = self
            .lanes
            .iter()
            .filter_map(|l| match l {
                Lane::Ready { len, depth, .. } => Some((*len, *depth)),
                Lane::Failed(_) => None,
            })
            .collect();
        for (len, depth) in ready {
            self.exchange(len, 2 * (depth + 2), depth)?;
        }
        Ok(())
    }

    /// Hangs up and waits for the server to exit cleanly.
    pub fn finish(self) -> Result<(), IpcError> {
        let Self {
            lanes,
            pending,
            control,
            peer,
            _node,
            ..
        } = self;
        drop((pending, lanes, control));
        peer.finish()
    }
}

/// The lane of `len`-byte bodies, ready to use, and its index.
fn ready(lanes: &[Lane], len: usize) -> Result<(usize, &Requester), IpcError> {
    let i = SIZES
        .iter()
        .position(|&(_, l)| l == len)
        .ok_or_else(|| err("no lane for this size", len))?;
    match &lanes[i] {
        Lane::Ready { client, .. } => Ok((i, client)),
        Lane::Failed(why) => Err(err("lane", why)),
    }
}

/// Wakes the server on lane `i` for `work` and waits until it polls.
fn wake(control: &UnixStream, i: usize, work: Work) -> Result<(), IpcError> {
    let lane = u8::try_from(i)
        .ok()
        .filter(|&i| i < 0x10)
        .ok_or_else(|| err("lane index", i))?
        | (work as u8) << 4;
    let mut control = control;
    control.write_all(&[lane])?;
    let mut ack = [0_u8];
    control.read_exact(&mut ack)?;
    if ack[0] != lane {
        return Err(err("the server woke on another lane", ack[0]));
    }
    Ok(())
}

impl Client<'_> {
    /// One sample of `work`: wakes the server, times the requests, parks it.
    fn sample(
        &mut self,
        work: Work,
        (len, count, depth): (usize, usize, usize),
    ) -> Result<Duration, IpcError> {
        let Self {
            lanes,
            pending,
            patterns,
            control,
            ..
        } = self;
        let (i, client) = ready(lanes, len)?;
        wake(control, i, work)?;
        let sides = Sides {
            client,
            patterns,
            control,
            work,
        };
        let timed = requests(&sides, pending, (len, count, depth));
        pending.clear();
        // Parked even after an error, so that the server stops polling.
        let parked = park(client, control);
        let elapsed = timed?;
        parked?;
        Ok(elapsed)
    }
}

impl Transport for Client<'_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        self.sample(Work::WriteOnce, (len, count, depth))
    }

    fn unsupported(&self, len: usize, depth: usize) -> Option<String> {
        match ready(&self.lanes, len) {
            Err(e) => Some(e.to_string()),
            Ok((i, _)) => match &self.lanes[i] {
                Lane::Ready { depth: d, .. } if *d < depth => Some(format!(
                    "its service for this size was set up for {d} request(s) in flight"
                )),
                _ => None,
            },
        }
    }
}

/// The client in iceoryx2's own benchmark's regime: no payload byte
/// touched (see the module docs).
#[derive(Debug)]
pub struct SignalOnly<'c, 'p>(pub &'c mut Client<'p>);

impl Transport for SignalOnly<'_, '_> {
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError> {
        self.0.sample(Work::SignalOnly, (len, count, depth))
    }

    fn unsupported(&self, len: usize, depth: usize) -> Option<String> {
        self.0.unsupported(len, depth)
    }
}

/// What the timed part works with.
struct Sides<'a> {
    client: &'a Requester,
    patterns: &'a Patterns,
    control: &'a UnixStream,
    work: Work,
}

/// The timed part: `count` requests of `len` bytes, `depth` at a time.
fn requests(
    sides: &Sides<'_>,
    pending: &mut Vec<Pending>,
    (len, count, depth): (usize, usize, usize),
) -> Result<Duration, IpcError> {
    let Sides {
        client,
        patterns,
        control,
        work,
    } = *sides;
    let depth = depth.clamp(1, DEEP);
    let start = Instant::now();
    let mut left = count;
    while left > 0 {
        let k = left.min(depth);
        for _ in 0..k {
            let header = wire::request_header(len);
            pending.push(match work {
                Work::WriteOnce => send(client, header, &patterns.request[..len])?,
                Work::SignalOnly => send_untouched(client, header, len)?,
            });
        }
        for request in pending.drain(..) {
            let response =
                poll_until(|| request.receive().map_err(|e| err("receive", e)), control)?;
            wire::check_reply_header(*response.user_header(), len)?;
            match work {
                Work::WriteOnce => {
                    wire::check_body("reply", response.payload(), &patterns.reply[..len])?;
                }
                Work::SignalOnly => check_len("reply", response.payload(), len)?,
            }
        }
        left -= k;
    }
    Ok(start.elapsed())
}

/// Loans a request, copies `body` in and sends it.
pub(crate) fn send(client: &Requester, header: i32, body: &[u8]) -> Result<Pending, IpcError> {
    let request = client
        .loan_slice_uninit(body.len())
        .map_err(|e| err("loan a request", e))?;
    let mut request = request.write_from_slice(body);
    *request.user_header_mut() = header;
    let pending = request.send().map_err(|e| err("send", e))?;
    if pending.number_of_server_connections() == 0 {
        return Err(err("send", "no server is connected"));
    }
    Ok(pending)
}

/// Loans a `len`-byte request and sends it without writing its payload.
fn send_untouched(client: &Requester, header: i32, len: usize) -> Result<Pending, IpcError> {
    let request = client
        .loan_slice_uninit(len)
        .map_err(|e| err("loan a request", e))?;
    // SAFETY: the chunk is `u8`s in a shared-memory mapping, which the
    // kernel zero-filled and earlier samples wrote: its bytes hold values,
    // `MaybeUninit` is only the loan's type. Nobody reads them in this
    // regime; the server checks the length alone.
    let mut request = unsafe { request.assume_init() };
    *request.user_header_mut() = header;
    let pending = request.send().map_err(|e| err("send", e))?;
    if pending.number_of_server_connections() == 0 {
        return Err(err("send", "no server is connected"));
    }
    Ok(pending)
}

/// Answers with a `len`-byte response without writing its payload.
fn respond_untouched(request: Active, header: i32, len: usize) -> Result<(), IpcError> {
    let response = request
        .loan_slice_uninit(len)
        .map_err(|e| err("loan a response", e))?;
    // SAFETY: as in `send_untouched`: bytes of a shared-memory mapping,
    // which the client does not read in this regime.
    let mut response = unsafe { response.assume_init() };
    *response.user_header_mut() = header;
    response.send().map_err(|e| err("respond", e))
}

/// Checks a body's length, where the regime leaves its bytes alone.
fn check_len(what: &str, body: &[u8], len: usize) -> Result<(), IpcError> {
    if body.len() == len {
        Ok(())
    } else {
        Err(err(what, format!("{} bytes, expected {len}", body.len())))
    }
}

/// Ends a sample: the server answers `PARK` and stops polling.
fn park(client: &Requester, control: &UnixStream) -> Result<(), IpcError> {
    let request = send(client, PARK, &[])?;
    let response = poll_until(|| request.receive().map_err(|e| err("receive", e)), control)?;
    if *response.user_header() != !PARK {
        return Err(err("park", "the server did not confirm"));
    }
    Ok(())
}

/// Polls `f` until it gives a value: busy, then yielding the CPU after
/// [`SPIN`] empty polls in a row. Once yielding, every [`SPIN`] polls it
/// checks that the other process still holds its end of `control`.
pub(crate) fn poll_until<T>(
    mut f: impl FnMut() -> Result<Option<T>, IpcError>,
    control: &UnixStream,
) -> Result<T, IpcError> {
    let mut idle = 0_u32;
    loop {
        if let Some(v) = f()? {
            return Ok(v);
        }
        idle = idle.wrapping_add(1);
        if idle >= SPIN {
            if idle.is_multiple_of(SPIN) && hung_up(control) {
                return Err(err("poll", "the other process is gone"));
            }
            std::thread::yield_now();
        }
    }
}

/// Whether the other end of `sock` is closed: its process has exited.
fn hung_up(sock: &UnixStream) -> bool {
    let mut byte = 0_u8;
    // SAFETY: recv writes at most one byte into `byte`, which lives across
    // the call; MSG_PEEK leaves any data queued, MSG_DONTWAIT never blocks.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            (&raw mut byte).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n == 0
}

pub(crate) type Server = IceServer<Svc, [u8], i32, [u8], i32>;

/// Opens lane `i` of the client process `client_pid` and a server port on it.
fn open_lane(
    node: &Node<Svc>,
    client_pid: u32,
    i: usize,
    len: usize,
) -> Result<(Factory, Server), IpcError> {
    let service = open_service(node, &service_name(client_pid, i)?)?;
    let server = server_port(&service, len)?;
    Ok((service, server))
}

/// The server: opens every lane, says which it could, then serves the lane
/// the client names until it parks, until the client hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let control = UnixStream::from(peer::one_fd(fds, "socket")?);
    let node = node()?;
    let client_pid = std::os::unix::process::parent_id();
    let lanes: Vec<Option<(Factory, Server)>> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &(size, len))| {
            open_lane(&node, client_pid, i, len)
                .map_err(|e| eprintln!("ipc iceoryx2 server: lane {size}: {e}"))
                .ok()
        })
        .collect();
    let opened = lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_some())
        .fold(0_u8, |m, (i, _)| m | 1 << i);
    (&control).write_all(&[opened])?;
    let patterns = Patterns::new();
    loop {
        let mut wake = [0_u8];
        if (&control).read(&mut wake)? == 0 {
            return Ok(()); // the client hung up
        }
        let (lane, work) = Work::from_wake(wake[0])?;
        let (_, server) = lanes
            .get(lane)
            .and_then(Option::as_ref)
            .ok_or_else(|| err("woken on a lane it does not serve", lane))?;
        (&control).write_all(&wake)?;
        serve_lane(server, &patterns, &control, work)?;
    }
}

/// Answers requests on one lane, doing `work`, until a `PARK` request.
fn serve_lane(
    server: &Server,
    patterns: &Patterns,
    control: &UnixStream,
    work: Work,
) -> Result<(), IpcError> {
    loop {
        let request = poll_until(|| server.receive().map_err(|e| err("receive", e)), control)?;
        let header = *request.user_header();
        let (reply, len) = if header == PARK {
            (!PARK, 0)
        } else {
            let len = wire::request_len(header)?;
            match work {
                Work::WriteOnce => {
                    wire::check_body("request", request.payload(), &patterns.request[..len])?;
                }
                Work::SignalOnly => check_len("request", request.payload(), len)?,
            }
            (wire::reply_header(len), len)
        };
        match work {
            Work::WriteOnce => respond(request, reply, &patterns.reply[..len])?,
            Work::SignalOnly => respond_untouched(request, reply, len)?,
        }
        if header == PARK {
            return Ok(());
        }
    }
}
