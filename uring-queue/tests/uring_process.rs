//! The request/response layer across two real processes over a memfd: a
//! million requests of random sizes, every response checked; and a peer
//! killed with SIGKILL mid-run, noticed by the survivor as `PeerGone`.
//!
//! The child is this test binary, re-executed with the role and the
//! descriptor number in its environment. `URING_TEST_REQUESTS` overrides
//! the number of requests of the long run (default 1,000,000).

#![cfg(target_os = "linux")]

extern crate alloc;

use alloc::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use uring_queue::SharedMemory;
use uring_queue::uring::{Client, Config, Error, Futex, Incoming, Request, Server, Uring};

mod common;
use common::XorShift;

const ROLE: &str = "URING_TEST_ROLE";
const PEER_FD: &str = "URING_TEST_FD";
const SLOTS: usize = 64;
const DEPTH: usize = 16;
const CONFIG: Config = Config::new(64, 64, 4 << 20);

fn requests() -> u64 {
    std::env::var("URING_TEST_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

impl XorShift {
    /// Mostly small bodies (0 to 256 bytes), 3% up to 8 KiB, 0.2% up to
    /// 64 KiB.
    fn size(&mut self) -> usize {
        let r = self.next();
        let bound = match r % 1000 {
            0..=1 => 64 << 10,
            2..=30 => 8 << 10,
            _ => 256,
        };
        ((r >> 8) % (bound + 1)) as usize
    }
}

fn body_byte(seq: u64, k: usize) -> u8 {
    (seq as usize).wrapping_mul(131).wrapping_add(k * 7) as u8
}

/// The server's work: the body reversed, every byte plus one; the result
/// ties the opcode to the length.
fn echo(incoming: &Incoming, body: &[u8], out: &mut [u8]) -> (i32, usize) {
    for (o, b) in out.iter_mut().zip(body.iter().rev()) {
        *o = b.wrapping_add(1);
    }
    let result = (incoming.opcode() ^ body.len() as u32) as i32;
    (result, body.len().min(out.len()))
}

fn check(
    client: &Client<'_, SLOTS, Futex>,
    seq: u64,
    len: usize,
    reply: uring_queue::uring::Reply,
) {
    assert_eq!(
        reply.result,
        (seq as u32 ^ len as u32) as i32,
        "request {seq}"
    );
    let got = client.response(&reply).unwrap();
    assert_eq!(got.len(), len, "request {seq}");
    let bad = got
        .iter()
        .enumerate()
        .position(|(k, &b)| b != body_byte(seq, len - 1 - k).wrapping_add(1));
    assert_eq!(bad, None, "request {seq}: first wrong byte");
    client.free_reply(reply);
}

/// Submits request `seq` with a body of `len` bytes.
fn submit(
    client: &Client<'_, SLOTS, Futex>,
    seq: u64,
    len: usize,
) -> Result<uring_queue::uring::Ticket, Error> {
    let mut body = client.alloc(len)?;
    for (k, b) in client.bytes_mut(&mut body)?.iter_mut().enumerate() {
        *b = body_byte(seq, k);
    }
    let response = client.alloc(len)?;
    client.submit(
        Request::new(seq as u32)
            .with_payload(body)
            .with_response(response),
    )
}

/// Creates the region, starts `test` again as the peer with `role`.
fn spawn_peer(test: &str, role: &str) -> (SharedMemory, Child) {
    let size = Uring::required_size(&CONFIG).unwrap();
    let mut shm = SharedMemory::create("uring-test", size).unwrap();
    Uring::init(shm.region(), CONFIG).unwrap();
    shm.set_inheritable(true).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PEER_FD, shm.fd().as_raw_fd().to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    shm.set_inheritable(false).unwrap();
    (shm, child)
}

/// In the child: maps the parent's region.
fn peer_memory() -> SharedMemory {
    let fd: i32 = std::env::var(PEER_FD).unwrap().parse().unwrap();
    // SAFETY: the parent made this descriptor inheritable for us; nothing
    // else in this process owns it.
    SharedMemory::open(unsafe { OwnedFd::from_raw_fd(fd) }).unwrap()
}

/// Serves until the client goes away; exits the process (0 on PeerGone).
fn serve(shm: &mut SharedMemory) -> ! {
    let mut server: Server<'_, Futex> = Uring::attach(shm.region())
        .unwrap()
        .into_server(Futex::new());
    loop {
        match server.handle(echo) {
            Ok(()) => {}
            Err(Error::PeerGone) => std::process::exit(0),
            Err(e) => panic!("server: {e}"),
        }
    }
}

/// Runs requests through `client` until `stop` says so or an error comes.
fn run_client(client: &Client<'_, SLOTS, Futex>, requests: u64) -> Result<u64, Error> {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut pending = VecDeque::new();
    for seq in 0..requests {
        if pending.len() == DEPTH {
            let (seq, len, ticket) = pending.pop_front().unwrap();
            check(client, seq, len, client.wait(ticket)?);
        }
        let len = rng.size();
        pending.push_back((seq, len, submit(client, seq, len)?));
    }
    for (seq, len, ticket) in pending {
        check(client, seq, len, client.wait(ticket)?);
    }
    Ok(requests)
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn two_processes_a_million_requests_of_random_sizes() {
    const TEST: &str = "two_processes_a_million_requests_of_random_sizes";
    if std::env::var(ROLE).is_ok() {
        serve(&mut peer_memory());
    }
    let (mut shm, mut child) = spawn_peer(TEST, "server");
    let client = Uring::attach(shm.region())
        .unwrap()
        .into_client::<SLOTS, _>(Futex::new());
    let n = requests();
    assert_eq!(run_client(&client, n), Ok(n));
    assert_eq!(client.in_flight(), 0);
    assert_eq!(client.blocks_in_use(), 0);
    drop(client);
    let status = child.wait().unwrap();
    assert!(status.success(), "server failed: {status}");
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn a_killed_server_is_peer_gone_for_the_client() {
    const TEST: &str = "a_killed_server_is_peer_gone_for_the_client";
    if std::env::var(ROLE).is_ok() {
        serve(&mut peer_memory());
    }
    let (mut shm, mut child) = spawn_peer(TEST, "server");
    let client = Uring::attach(shm.region())
        .unwrap()
        .into_client::<SLOTS, _>(Futex::new());
    assert_eq!(run_client(&client, 1000), Ok(1000));
    // In flight when the server dies.
    let tickets: Vec<_> = (0..DEPTH as u64)
        .map(|seq| submit(&client, seq, 100).unwrap())
        .collect();
    child.kill().unwrap();
    // Not reaped yet: the server is a zombie, which a pid probe would
    // still find; the pidfd says it exited.
    let mut outcome = Ok(0);
    for ticket in tickets {
        if let Err(e) = client.wait(ticket) {
            outcome = Err(e);
            break;
        }
    }
    if outcome.is_ok() {
        // It answered everything before dying: the next request finds it gone.
        outcome = run_client(&client, 1_000_000);
    }
    assert_eq!(outcome, Err(Error::PeerGone));
    child.wait().unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn a_killed_client_is_noticed_by_the_server() {
    const TEST: &str = "a_killed_client_is_noticed_by_the_server";
    if std::env::var(ROLE).is_ok() {
        let mut shm = peer_memory();
        let client = Uring::attach(shm.region())
            .unwrap()
            .into_client::<SLOTS, _>(Futex::new());
        // Runs until killed.
        let _ = run_client(&client, u64::MAX);
        std::process::exit(1);
    }
    let (mut shm, mut child) = spawn_peer(TEST, "client");
    let mut server = Uring::attach(shm.region())
        .unwrap()
        .into_server(Futex::new());
    for _ in 0..1000 {
        server.handle(echo).unwrap();
    }
    child.kill().unwrap();
    // What the client had in flight is still served; then the server learns
    // the client is gone, through the pidfd (the client never set its close
    // flag).
    let outcome = loop {
        if let Err(e) = server.handle(echo) {
            break e;
        }
    };
    assert_eq!(outcome, Error::PeerGone);
    child.wait().unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn a_server_restarted_before_the_clients_first_check_is_peer_gone() {
    const TEST: &str = "a_server_restarted_before_the_clients_first_check_is_peer_gone";
    match std::env::var(ROLE).as_deref() {
        Ok("take_one") => {
            // The first instance takes the request and dies without an
            // answer (and without its close flag: no destructor runs).
            let mut shm = peer_memory();
            let mut server: Server<'_, Futex> = Uring::attach(shm.region())
                .unwrap()
                .into_server(Futex::new());
            let incoming = server.recv().unwrap();
            assert_eq!(incoming.opcode(), 7);
            std::process::exit(0);
        }
        Ok(_) => {
            // The second instance says it is attached, then serves.
            let mut shm = peer_memory();
            let mut server: Server<'_, Futex> = Uring::attach(shm.region())
                .unwrap()
                .into_server(Futex::new());
            println!("attached");
            loop {
                match server.handle(echo) {
                    Ok(()) => {}
                    Err(Error::PeerGone) => std::process::exit(0),
                    Err(e) => panic!("server: {e}"),
                }
            }
        }
        Err(_) => {}
    }
    // The client attaches before any server has.
    let size = Uring::required_size(&CONFIG).unwrap();
    let mut shm = SharedMemory::create("uring-test", size).unwrap();
    Uring::init(shm.region(), CONFIG).unwrap();
    // Inherited by both servers (and nothing else this test starts).
    shm.set_inheritable(true).unwrap();
    let fd = shm.fd().as_raw_fd().to_string();
    let client = Uring::attach(shm.region())
        .unwrap()
        .into_client::<SLOTS, _>(Futex::new());
    let ticket = client.try_submit(Request::new(7)).unwrap();
    let start = |role: &str| {
        Command::new(std::env::current_exe().unwrap())
            .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE, role)
            .env(PEER_FD, &fd)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let status = start("take_one").wait().unwrap();
    assert!(status.success(), "first server failed: {status}");
    let mut second = start("serve");
    let mut line = String::new();
    let mut out = std::io::BufReader::new(second.stdout.take().unwrap());
    while !line.contains("attached") {
        line.clear();
        assert_ne!(
            std::io::BufRead::read_line(&mut out, &mut line).unwrap(),
            0,
            "the second server ended before it attached"
        );
    }
    // Only now does the client look at the link: the request the first
    // instance took will never be answered, and the client is told so.
    assert_eq!(client.wait(ticket).unwrap_err(), Error::PeerGone);
    drop(client);
    let status = second.wait().unwrap();
    assert!(status.success(), "second server failed: {status}");
}
