//! Clients that break the rules, served by a [`Hub`] beside honest ones:
//! clients that die before they attach (at every step of the handshake),
//! clients that scribble random words over their region, and clients that
//! hand descriptors of their own back over the socket. In each case the
//! server goes on, the honest clients' replies stay correct, the rule
//! breaker is dropped, and the server's descriptors and mappings are back
//! to their baseline once it is gone.
//!
//! The tests count this process's descriptors and mappings, so they run
//! one at a time (`SERIAL`). `SERVICE_SCRIBBLERS` sets how many clients
//! scribble (6 by default; the deep run's 1,000). Processes and sockets:
//! not under Miri.
#![cfg(target_os = "linux")]

mod common;

extern crate alloc;

use alloc::collections::VecDeque;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::time::Duration;
use rustix::fd::{AsFd, OwnedFd};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::collections::HashMap;
use std::io::{BufRead, IoSlice, IoSliceMut, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};
use std::time::Instant;
use uring_queue::SharedMemory;
use uring_queue::uring::service::{BindOptions, ClientConfig, Hub, Service, connect};
use uring_queue::uring::{Config, Error, Incoming, Request};

/// The tests of this binary count the process's descriptors: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A name no other test (or run) uses.
fn unique(what: &str) -> String {
    format!("ncio-test-hostile-{what}-{}", std::process::id())
}

/// A small region, so that a scribbler's random words land on every
/// header, ring index and entry many times over.
fn small() -> BindOptions {
    BindOptions {
        config: Config::new(8, 8, 4096),
        ..BindOptions::default()
    }
}

/// What this process's descriptors are (sorted), so that a failure says
/// which one is left.
fn open_fds() -> Vec<String> {
    let mut fds: Vec<_> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .collect();
    fds.sort();
    fds
}

/// Mappings of service regions in this process (server's and client's).
fn region_maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:uring-service"))
        .count()
}

/// Waits for `cond`. The deadline only keeps a broken run from hanging: a
/// healthy one meets the condition in milliseconds.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---- The rule breakers: this binary again, in a role (see `child_entry`). ----

/// A child in a role, and the thread reading its `@` lines.
struct Kid {
    child: Child,
    lines: Receiver<String>,
    reader: std::thread::JoinHandle<()>,
}

/// Starts this binary as a child in `role`.
fn spawn(role: &str, name: &str, seed: u64) -> Kid {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("HOSTILE_ROLE", role)
        .env("HOSTILE_NAME", name)
        .env("HOSTILE_SEED", seed.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = channel();
    let reader = std::thread::spawn(move || {
        for line in out.lines() {
            let Ok(line) = line else { return };
            // The runner may print "test child_entry ... " before it.
            if let Some(at) = line.find('@') {
                let _ = tx.send(line[at + 1..].trim().to_owned());
            }
        }
    });
    Kid {
        child,
        lines,
        reader,
    }
}

impl Kid {
    /// The child's next `@` line.
    fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the child said nothing")
    }

    /// Kills it (if it still runs) and waits until its pipe is closed.
    fn kill(mut self) {
        let _ = self.child.kill();
        self.child.wait().unwrap();
        self.reader.join().unwrap();
    }
}

fn say(what: &str) {
    println!("@{what}");
    std::io::stdout().flush().unwrap();
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// The client's half of the handshake by hand: the socket, and the
/// descriptors of the server's answer (region, client's eventfd, server's
/// eventfd).
fn raw_connect(name: &str) -> UnixStream {
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    UnixStream::connect_addr(&addr).unwrap()
}

fn raw_offer(socket: &UnixStream) -> Vec<OwnedFd> {
    let mut bytes = [0u8; 64];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut bytes)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .unwrap();
    assert_eq!(got.bytes, 32, "the server's answer");
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    assert_eq!(fds.len(), 3, "the server's descriptors");
    fds
}

/// Sends one byte with `fds` attached: descriptors the protocol never asks
/// a client for.
fn send_fds(socket: &UnixStream, fds: &[rustix::fd::BorrowedFd<'_>]) {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
    let sent = rustix::net::sendmsg(
        socket,
        &[IoSlice::new(b"!")],
        &mut control,
        SendFlags::empty(),
    )
    .unwrap();
    assert_eq!(sent, 1);
}

/// Whether the server closed its end (without this process going).
fn closed_by_server(socket: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    match (&*socket).read(&mut byte) {
        Ok(0) => true,
        Ok(_) => panic!("the server sent more than its answer"),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        Err(e) => panic!("{e}"),
    }
}

/// A word a scribbler writes: random, small (a plausible index, offset or
/// length), a pair of small ones, or all zeros or ones.
fn scribble_word(rng: &mut common::XorShift, len: u64) -> u64 {
    let r = rng.next();
    match r % 4 {
        0 => rng.next(),
        1 => rng.next() % (len + 64),
        2 => ((rng.next() % 64) << 32) | (rng.next() % 64),
        _ => [0, u64::MAX][(r >> 8) as usize % 2],
    }
}

/// Writes random words at random places of its region (through its own
/// file description of the memfd, as any holder of the file can) and
/// rings the server's eventfd after each, until the server hangs up.
fn scribble(name: &str, seed: u64) -> ! {
    let socket = raw_connect(name);
    let [memfd, _own, server_wake]: [OwnedFd; 3] = raw_offer(&socket).try_into().unwrap();
    let len = rustix::fs::fstat(&memfd).unwrap().st_size as u64;
    socket.set_nonblocking(true).unwrap();
    let mut rng = common::XorShift(seed);
    for i in 0..1_000_000u64 {
        let at = rng.next() % (len / 8) * 8;
        let word = scribble_word(&mut rng, len);
        rustix::io::pwrite(&memfd, &word.to_ne_bytes(), at).unwrap();
        let _ = rustix::io::write(&server_wake, &1u64.to_ne_bytes());
        if closed_by_server(&socket) {
            say(&format!("DROPPED after {i} words"));
            park_forever();
        }
    }
    say("KEPT");
    park_forever();
}

/// Hands descriptors back: before it reads the server's answer
/// (`first`), or after.
fn foreign_fds(name: &str, first: bool) -> ! {
    let socket = raw_connect(name);
    if first {
        let null = std::fs::File::open("/dev/null").unwrap();
        let own = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap();
        // Its own socket too: a reference cycle only the server's close
        // can break.
        send_fds(&socket, &[null.as_fd(), own.as_fd(), socket.as_fd()]);
    } else {
        // The server's own descriptors, handed back.
        let offer = raw_offer(&socket);
        let back: Vec<_> = offer.iter().map(|fd| fd.as_fd()).collect();
        send_fds(&socket, &back);
    }
    say("SENT");
    wait_for_close(&socket);
    say("DROPPED");
    park_forever();
}

/// Reads (and closes whatever descriptors come) until the server closes
/// its end: the end of the stream, or a reset (the server closed with our
/// bytes unread).
fn wait_for_close(socket: &UnixStream) {
    loop {
        let mut bytes = [0u8; 64];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        match rustix::net::recvmsg(
            socket,
            &mut [IoSliceMut::new(&mut bytes)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(got) if got.bytes == 0 => return,
            Ok(_) => drop(control),
            Err(rustix::io::Errno::CONNRESET) => return,
            Err(e) => panic!("{e}"),
        }
    }
}

/// The child processes' side: not a test of its own (it returns at once
/// unless started by `spawn`).
#[test]
fn child_entry() {
    let (Ok(role), Ok(name), Ok(seed)) = (
        std::env::var("HOSTILE_ROLE"),
        std::env::var("HOSTILE_NAME"),
        std::env::var("HOSTILE_SEED"),
    ) else {
        return;
    };
    let seed: u64 = seed.parse().unwrap();
    match role.as_str() {
        // Connects and goes before the answer.
        "close" => drop(raw_connect(&name)),
        // Takes the answer and its descriptors, maps nothing.
        "take" => {
            let socket = raw_connect(&name);
            let fds = raw_offer(&socket);
            say("TAKEN");
            let _keep = (socket, fds);
            park_forever();
        }
        // Maps the region, never attaches.
        "map" => {
            let socket = raw_connect(&name);
            let mut fds = raw_offer(&socket);
            let shm = SharedMemory::open(fds.remove(0)).unwrap();
            say("MAPPED");
            let _keep = (socket, fds, shm);
            park_forever();
        }
        // Connects properly; killed at a random moment of it.
        "connect" => {
            let c = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
            say("CONNECTED");
            let _keep = c;
            park_forever();
        }
        "honest" => honest(&name, seed),
        "flood" => flood(&name),
        "tight-server" => tight_server(&name),
        "scribble" => scribble(&name, seed),
        "fds-first" => foreign_fds(&name, true),
        "fds-after" => foreign_fds(&name, false),
        other => panic!("unknown role {other}"),
    }
}

// ---- The server, and the honest clients beside the rule breakers. ----

/// What the hub thread publishes after every turn.
#[derive(Default)]
struct Board {
    stop: AtomicBool,
    clients: AtomicUsize,
    dropped: AtomicUsize,
    /// Requests served, by the client's process id.
    served: Mutex<HashMap<u32, u64>>,
}

impl Board {
    fn served(&self, pid: u32) -> u64 {
        let served = self.served.lock().unwrap();
        served.get(&pid).copied().unwrap_or(0)
    }
}

/// The hub's batch: the most requests of one client served per turn
/// (fewer than a flooder keeps in flight).
const BATCH: usize = 4;

/// The service's answer: the opcode inverted, the body echoed.
fn echo(incoming: &Incoming, body: &[u8], out: &mut [u8]) -> (i32, usize) {
    let n = body.len().min(out.len());
    out[..n].copy_from_slice(&body[..n]);
    (!incoming.opcode() as i32, n)
}

/// Turns the hub until told to stop; every turn must succeed, and serve
/// no client more than the batch.
fn serve(mut hub: Hub, board: &Board) {
    hub.set_batch(BATCH);
    let mut this_turn = HashMap::new();
    while !board.stop.load(Ordering::Relaxed) {
        this_turn.clear();
        let turn = hub
            .turn(
                Some(Duration::from_millis(1)),
                &mut |peer, inc, body, out| {
                    *this_turn.entry(peer.pid).or_insert(0usize) += 1;
                    echo(inc, body, out)
                },
            )
            .unwrap();
        board.clients.store(hub.clients(), Ordering::Relaxed);
        board.dropped.fetch_add(turn.dropped, Ordering::Relaxed);
        let mut served = board.served.lock().unwrap();
        for (&pid, &n) in &this_turn {
            assert!(n <= BATCH, "{n} requests of pid {pid} in one turn");
            *served.entry(pid).or_insert(0) += n as u64;
        }
    }
}

/// An honest client: calls with bodies of varying length until its stdin
/// closes, checking every reply (a wrong one panics, and the child fails);
/// then says how many calls it made.
fn honest(name: &str, seed: u64) {
    let client = connect::<4>(name, ClientConfig::default()).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            stop.store(true, Ordering::Relaxed);
        });
        let mut rng = common::XorShift(seed);
        let mut calls = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let len = 1 + (rng.next() % 256) as usize;
            let op = rng.next() as u32;
            let mut body = client.alloc(len).unwrap();
            for b in client.bytes_mut(&mut body).unwrap() {
                *b = rng.next() as u8;
            }
            let out = client.alloc(len).unwrap();
            let request = Request::new(op).with_payload(body).with_response(out);
            let reply = client.call(request).unwrap();
            assert_eq!(reply.result, !op as i32);
            assert_eq!(
                client.response(&reply).unwrap(),
                client.bytes(&reply.payload).unwrap()
            );
            client.free_reply(reply);
            calls += 1;
        }
        say(&format!("CALLS {calls}"));
    });
}

/// Keeps every one of its 16 slots full, for ever: each reply is
/// followed at once by another request.
fn flood(name: &str) -> ! {
    let client = connect::<16>(name, ClientConfig::default()).unwrap();
    say("FLOODING");
    let mut in_flight = VecDeque::new();
    loop {
        while let Ok(ticket) = client.try_submit(Request::new(1)) {
            in_flight.push_back(ticket);
        }
        let Some(ticket) = in_flight.pop_front() else {
            continue;
        };
        client.wait(ticket).unwrap();
    }
}

/// A hub in a process allowed 64 descriptors: a few clients' worth.
fn tight_server(name: &str) -> ! {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let limit = Rlimit {
        current: Some(64),
        maximum: Some(64),
    };
    setrlimit(Resource::Nofile, limit).unwrap();
    let mut hub = Hub::new(Service::bind(name, BindOptions::default()).unwrap()).unwrap();
    say("BOUND");
    loop {
        hub.turn(None, &mut |_, inc, body, out| echo(inc, body, out))
            .unwrap();
    }
}

/// The verdict word of the server's answer on `socket` (0 admitted, 4
/// unavailable), whatever descriptors came with it closed.
fn raw_verdict(socket: &UnixStream) -> u32 {
    let mut bytes = [0u8; 64];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut bytes)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .unwrap();
    assert_eq!(got.bytes, 32, "the server's answer");
    drop(control);
    u32::from_ne_bytes(bytes[8..12].try_into().unwrap())
}

/// Connects a probe, makes one call and leaves: once it has been served,
/// every connection made before it has been accepted (the backlog is
/// served in order), so what those need cleaning up is in the hub.
fn probe(name: &str) {
    let c = connect::<2>(name, ClientConfig::default()).unwrap();
    assert_eq!(c.call(Request::new(7)).unwrap().result, !7);
}

/// Runs `rounds` with a hub serving `name` in the background and two honest
/// clients calling throughout; `rounds` gets the baseline to check against.
fn with_hub_and_honest_clients(
    name: &str,
    options: BindOptions,
    rounds: impl FnOnce(&Board, Baseline, [u32; 2]),
) {
    let hub = Hub::new(Service::bind(name, options).unwrap()).unwrap();
    let board = Board::default();
    std::thread::scope(|s| {
        // Stops the hub when `rounds` returns or fails, so that a failure
        // is reported rather than the scope waiting forever.
        let _stop = StopOnDrop(&board.stop);
        let server = s.spawn(|| serve(hub, &board));
        // In processes of their own, so that their descriptors are not
        // counted as the server's.
        let clients: Vec<_> = (1..=2).map(|seed| spawn("honest", name, seed)).collect();
        until("the honest clients", || {
            board.clients.load(Ordering::Relaxed) == 2
        });
        let pids = [clients[0].child.id(), clients[1].child.id()];
        rounds(&board, Baseline::now(), pids);
        for mut c in clients {
            drop(c.child.stdin.take());
            let said = c.line();
            let calls: u64 = said.strip_prefix("CALLS ").unwrap().parse().unwrap();
            assert!(calls > 0, "an honest client made no call");
            assert!(c.child.wait().unwrap().success(), "an honest client failed");
            c.kill();
        }
        board.stop.store(true, Ordering::Relaxed);
        server.join().unwrap();
    });
}

/// Raises its flag when dropped (unwinding included).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The server process's descriptors and region mappings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Baseline {
    fds: Vec<String>,
    maps: usize,
}

impl Baseline {
    fn now() -> Self {
        Self {
            fds: open_fds(),
            maps: region_maps(),
        }
    }

    /// After a rule breaker went: the probe shows the hub has seen it, the
    /// hub is back to the two honest clients, and so are the counts.
    fn settle(&self, name: &str, board: &Board, what: &str) {
        probe(name);
        until("the hub to drop the rule breaker", || {
            board.clients.load(Ordering::Relaxed) == 2
        });
        assert_eq!(&Self::now(), self, "after {what}");
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn clients_that_die_before_they_attach_leave_nothing_in_the_server() {
    let _serial = serial();
    let name = unique("early");
    let mut rng = common::XorShift(0xdead_5eed);
    with_hub_and_honest_clients(&name, BindOptions::default(), |board, baseline, _| {
        // At each step of the handshake: before the answer, with the
        // answer's descriptors, with the region mapped.
        spawn("close", &name, 0).kill();
        baseline.settle(&name, board, "a client that hung up at once");
        for (role, said) in [("take", "TAKEN"), ("map", "MAPPED")] {
            let kid = spawn(role, &name, 0);
            assert_eq!(kid.line(), said);
            kid.kill();
            baseline.settle(&name, board, role);
        }
        // Killed at a random moment of a proper connect.
        for cycle in 0..10 {
            let kid = spawn("connect", &name, 0);
            std::thread::sleep(Duration::from_micros(rng.next() % 20_000));
            kid.kill();
            baseline.settle(&name, board, &format!("connect cycle {cycle}"));
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_session_whose_client_dies_before_attaching_ends_with_peer_gone() {
    let _serial = serial();
    let name = unique("early-session");
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    let baseline = Baseline::now();
    for (role, said) in [("take", "TAKEN"), ("map", "MAPPED")] {
        let kid = spawn(role, &name, 0);
        let mut session = service.accept().unwrap();
        assert_eq!(kid.line(), said);
        kid.kill();
        // The client never attached, so it published no process and no
        // epoch: only its socket tells that it is gone.
        let (tx, rx) = channel();
        let thread = std::thread::spawn(move || {
            let _ = tx.send(session.recv().map(|_| ()));
            drop(session);
        });
        let ended = rx.recv_timeout(Duration::from_secs(60));
        assert_eq!(ended, Ok(Err(Error::PeerGone)), "{role}");
        // The session is dropped on its thread after it answered: the
        // descriptors are compared once that drop is over.
        thread.join().unwrap();
        assert_eq!(service.clients(), 0, "after {role}");
        assert_eq!(Baseline::now(), baseline, "after {role}");
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn clients_that_scribble_over_their_regions_are_dropped_and_the_others_stay_correct() {
    let _serial = serial();
    let name = unique("scribble");
    let scribblers: u64 = std::env::var("SERVICE_SCRIBBLERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    with_hub_and_honest_clients(&name, small(), |board, baseline, _| {
        // Three at a time, each with its own seed.
        let seeds: Vec<u64> = (1..=scribblers).map(|i| 0x5c21_bb1e ^ (i << 20)).collect();
        for batch in seeds.chunks(3) {
            let dropped = board.dropped.load(Ordering::Relaxed);
            let children: Vec<_> = batch
                .iter()
                .map(|&seed| (seed, spawn("scribble", &name, seed)))
                .collect();
            for (seed, kid) in children {
                let said = kid.line();
                assert!(said.starts_with("DROPPED"), "seed {seed:#x}: {said}");
                kid.kill();
            }
            // A child sees its socket closed before the hub's turn ends
            // and the board counts it.
            until("the hub to count the scribblers dropped", || {
                board.dropped.load(Ordering::Relaxed) >= dropped + batch.len()
            });
            baseline.settle(&name, board, "scribblers");
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn descriptors_a_client_hands_back_are_never_taken_and_it_is_dropped() {
    let _serial = serial();
    let name = unique("fds");
    with_hub_and_honest_clients(&name, BindOptions::default(), |board, baseline, _| {
        for role in ["fds-first", "fds-after"] {
            let kid = spawn(role, &name, 0);
            assert_eq!(kid.line(), "SENT", "{role}");
            // The server closed its end while the client still lives.
            assert_eq!(kid.line(), "DROPPED", "{role}");
            kid.kill();
            baseline.settle(&name, board, role);
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn clients_that_flood_get_a_batch_per_turn_and_the_others_are_served() {
    let _serial = serial();
    let name = unique("flood");
    with_hub_and_honest_clients(&name, BindOptions::default(), |board, baseline, honest| {
        let flooders: Vec<_> = (0..2).map(|_| spawn("flood", &name, 0)).collect();
        for kid in &flooders {
            assert_eq!(kid.line(), "FLOODING");
        }
        // While both flood (every turn checked against the batch by
        // `serve`), the honest clients' calls go on being answered.
        let start = honest.map(|pid| board.served(pid));
        let floods = flooders.iter().map(|k| board.served(k.child.id()));
        let flood_start: Vec<_> = floods.collect();
        until("the honest clients' calls amid the flood", || {
            honest
                .iter()
                .zip(start)
                .all(|(&pid, from)| board.served(pid) >= from + 1000)
        });
        for (kid, from) in flooders.iter().zip(flood_start) {
            assert!(
                board.served(kid.child.id()) > from,
                "a flooder was not served"
            );
        }
        for kid in flooders {
            kid.kill();
        }
        baseline.settle(&name, board, "flooders");
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn clients_that_exhaust_the_servers_descriptors_are_refused_and_it_serves_on() {
    let _serial = serial();
    let name = unique("tight");
    let server = spawn("tight-server", &name, 0);
    assert_eq!(server.line(), "BOUND");
    let honest = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
    let call = |op: u32| assert_eq!(honest.call(Request::new(op)).unwrap().result, !op as i32);
    call(1);
    // One by one, each answer read (so the server has made or refused the
    // region before the next comes), and every connection kept open.
    let mut held = Vec::new();
    let mut unavailable = 0;
    for op in 0..40 {
        let socket = raw_connect(&name);
        socket
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        match raw_verdict(&socket) {
            0 => {}
            4 => unavailable += 1,
            other => panic!("verdict {other}"),
        }
        held.push(socket);
        call(op);
    }
    assert!(unavailable > 0, "the server never ran out of descriptors");
    // Once they go, there is room again.
    drop(held);
    let late = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
    assert_eq!(late.call(Request::new(5)).unwrap().result, !5);
    call(2);
    server.kill();
}
