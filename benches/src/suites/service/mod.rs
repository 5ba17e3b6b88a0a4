//! `service`: many client processes on one server, connected by name
//! (`uring_queue::uring::service`).
//!
//! Every process is this binary started again (the `ipc` suite's
//! [`peer`](crate::suites::ipc::peer)), once for the whole suite, and
//! driven over a socket of its own ([`control`]): the servers, and each
//! client a process of its own. Bodies are 4 B, requests and replies are
//! the `ipc` suite's ([`wire`](crate::suites::ipc::wire)), and every byte
//! of every request and reply is checked; a wrong one stops the run.
//!
//! Tests, each in shuffled rounds with its anchors:
//! - `idle200.4B`: this process's 4 B round trip (one in flight, blocking
//!   calls, default spin-then-park options) on a server that 200 other
//!   client processes are connected to, each idle after one checked call
//!   (`service`), against the same on a server with no other client
//!   (`one`). Both servers are the crate's blocking [`Hub`] loop, one
//!   thread each; by default this process is pinned to one CPU and both
//!   servers to another, as in the `ipc` suite (`COMPARE_IPC_CPUS`).
//! - `active16`: the aggregate rate of 16 client processes, each keeping
//!   16 requests in flight (a new one as each reply is checked), on one
//!   hub (`service`); the anchors, in the same rounds, are one client (this
//!   process) keeping 16 in flight on one plain pair over a memfd with its
//!   server process (`pair`, the `ipc` suite's pair and server, default
//!   spin-then-park waits), the same on a second pair whose two ends park
//!   at once and never spin, as the service's clients and hub do
//!   (`pair_parked`: one client's floor when nothing spins), the same
//!   16 processes over Unix sockets to a tokio server with a task per
//!   connection on one thread (`unix`), and, with the `iceoryx2` feature,
//!   over iceoryx2 request/response, 16 clients on one service
//!   (`iceoryx2`). A sample is the wall time from the first client's start
//!   to the last one's end; each client does the same number of requests
//!   per sample, the pair as many as all of them together. Nothing is
//!   pinned: 17 processes share the CPUs. The service's clients park on
//!   their eventfd at once rather than spin (see [`clients::active_config`]).
//! - `connect`: connecting to the hub by name, mapping the region and the
//!   first checked 4 B call, then hanging up (`service`), against
//!   connecting to the tokio server and the first checked 4 B exchange
//!   (`unix`); a sample is several in a row.
//!
//! Rows: `<test>.<variant>.median` (µs per round trip or per connection;
//! requests per second for `active16`), `<test>.<variant>.t_vs_<anchor>` or
//! `rate_vs_<anchor>`, and `<test>.<variant>.spread` for every variant but
//! the anchor; and the service's rate against the other anchors,
//! `active16.service.rate_vs_pair_parked`, `active16.service.rate_vs_unix`
//! and `active16.service.rate_vs_iceoryx2` (`NaN` without the feature);
//! and `active16.pair.rate_vs_unix`, the pair's own rate against the socket
//! server: the ceiling of the service's, since 16 clients and a hub on the
//! same CPUs do at least the pair's work per request.
//! The targets read `idle200.4B.service.t_vs_one` and the
//! `active16.service.rate_vs_*` rows; `connect.service.t_vs_unix` is reported, with no target.
//!
//! Knobs (environment): `COMPARE_SERVICE_IDLE` (idle clients, 200),
//! `COMPARE_SERVICE_ACTIVE` (active clients, 16), `COMPARE_SERVICE_REQUESTS`
//! (requests per active client per sample, and round trips per idle-test
//! sample; 1000, 100 with `--quick`), `COMPARE_SERVICE_ROUNDS` (11, 9 with
//! `--quick`). Other counts name other rows (`idle50.4B...`), which no
//! target reads.
//!
//! [`Hub`]: uring_queue::uring::service::Hub

mod active;
mod clients;
mod connect;
mod control;
mod flight;
mod hub;
#[cfg(feature = "iceoryx2")]
mod iceoryx;
mod idle;
mod processes;
mod rounds;
mod unix;

use crate::harness::Ctx;
use crate::suites::ipc::peer::{Placement, Serve};
use crate::suites::ipc::uring as pair;
use crate::suites::ipc::wire::{IpcError, Patterns};
use processes::Processes;

/// Bytes of every body.
pub const SIZE: usize = 4;
/// The longest body the suite's servers and clients are set up for.
pub const SMALL: usize = 64;
/// Requests each active client keeps in flight.
pub const DEPTH: usize = 16;

const HUB: &str = "service_hub";
const IDLE: &str = "service_idle";
const ACTIVE: &str = "service_active";
const UNIX: &str = "service_unix";
#[cfg(feature = "iceoryx2")]
const ICEORYX2: &str = "service_iceoryx2";

/// The roles this suite starts this binary in; `suites::peer_main` serves
/// them.
pub(crate) const ROLES: &[(&str, Serve)] = &[
    (HUB, hub::serve),
    (IDLE, clients::idle),
    (ACTIVE, clients::active),
    (UNIX, unix::serve),
    #[cfg(feature = "iceoryx2")]
    (ICEORYX2, iceoryx::serve),
];

/// The suite's sizes, from the environment.
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    idle: usize,
    active: usize,
    requests: usize,
    rounds: usize,
}

impl Knobs {
    fn from_env(ctx: &Ctx) -> Self {
        Self {
            idle: knob("COMPARE_SERVICE_IDLE", 200),
            active: knob("COMPARE_SERVICE_ACTIVE", 16).max(1),
            requests: knob("COMPARE_SERVICE_REQUESTS", ctx.pick(1000, 100)).max(1),
            rounds: knob("COMPARE_SERVICE_ROUNDS", ctx.rounds(11, 9)).max(1),
        }
    }

    /// Connections per `connect` sample.
    fn connects(&self) -> usize {
        (self.requests / 50).clamp(4, 40)
    }
}

/// # Panics
///
/// On a value that is not a whole number: a typo should not run the
/// default silently.
fn knob(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: expected a whole number")),
        Err(_) => default,
    }
}

fn started<T>(what: &str, r: Result<T, IpcError>) -> T {
    r.unwrap_or_else(|e| panic!("service: starting {what}: {e}"))
}

/// The names this run's servers bind: unique to this process.
fn name(what: &str) -> String {
    format!("compare-service-{}-{what}", std::process::id())
}

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let knobs = Knobs::from_env(ctx);
    // Two sockets per process started: more than a soft limit of 1024
    // allows once the knobs ask for 500 idle clients.
    hub::allow_many_descriptors();
    eprintln!(
        "  {} idle and {} active client processes, {} requests per client per sample, {} rounds",
        knobs.idle, knobs.active, knobs.requests, knobs.rounds
    );
    // Where the idle test's servers go. Every process is started from an
    // unpinned thread, so that those not told where to run may run anywhere.
    let server_cpu = {
        let placement = Placement::pin_client();
        eprintln!("  idle test placement {}", placement.describe);
        placement.server_cpu()
    };
    let patterns = Patterns::upto(SMALL);
    let mut processes = started("the processes", Processes::start(&knobs, server_cpu));
    // Both memories before both pairs: the pairs borrow them.
    let mut shm = started("the pair", pair::memory(SMALL));
    let mut parked_shm = started("the parked pair", pair::memory(SMALL));
    let pair = started(
        "the pair",
        pair::Connection::spawn(&mut shm, SMALL, &patterns, None),
    );
    let parked = started(
        "the parked pair",
        pair::Connection::spawn_waiting(
            &mut parked_shm,
            (SMALL, &patterns),
            None,
            pair::Waits::Park,
        ),
    );
    {
        let _placement = Placement::pin_client();
        idle::measure(&knobs, &patterns);
    }
    active::measure(&knobs, &patterns, &mut processes, [&pair, &parked]);
    connect::measure(&knobs, &patterns);
    let finish = |what: &str, r: Result<(), IpcError>| {
        r.unwrap_or_else(|e| panic!("service: shutting down {what}: {e}"))
    };
    finish("the pair", pair.finish());
    finish("the parked pair", parked.finish());
    finish("the processes", processes.finish());
}
