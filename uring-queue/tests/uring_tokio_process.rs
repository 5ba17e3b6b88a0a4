//! The reactor-driven pair (feature `tokio`) across two real processes,
//! each side a task on a `current_thread` runtime of its own: a million
//! requests through it, and either side killed with `SIGKILL` mid-stream,
//! noticed by the survivor's waiting futures as `PeerGone`.
//!
//! The child is this test binary, re-executed with its role and the numbers
//! of the descriptors it inherits (the region's memfd, its two eventfds) in
//! its environment. `URING_TEST_REQUESTS` overrides the number of requests
//! of the long run (default 1,000,000).

#![cfg(target_os = "linux")]

extern crate alloc;

use core::time::Duration;
use futures_util::future::join_all;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use uring_queue::SharedMemory;
use uring_queue::uring::tokio::{AsyncClient, AsyncServer};
use uring_queue::uring::{Config, Error, EventFd, NotifierKind, Request, Uring};

const ROLE: &str = "URING_TOKIO_TEST_ROLE";
const FDS: &str = "URING_TOKIO_TEST_FDS";
const SLOTS: usize = 64;
const DEPTH: usize = 16;
const CONFIG: Config = Config::new(64, 64, 1 << 16).with_notifier(NotifierKind::EventFd);

fn requests() -> u32 {
    std::env::var("URING_TEST_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Creates the region and the eventfds, starts `test` again as the peer
/// with `role`; returns this side's region and notifier.
fn spawn_peer(test: &str, role: &str) -> (SharedMemory, EventFd, Child) {
    let size = Uring::required_size(&CONFIG).unwrap();
    let mut shm = SharedMemory::create("uring-tokio-test", size).unwrap();
    Uring::init(shm.region(), CONFIG).unwrap();
    let (mine, theirs) = EventFd::pair().unwrap();
    shm.set_inheritable(true).unwrap();
    theirs.set_inheritable(true).unwrap();
    let (own, peer) = theirs.raw_fds();
    let child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(FDS, format!("{} {own} {peer}", shm.fd().as_raw_fd()))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    shm.set_inheritable(false).unwrap();
    // The child has its copies; ours would keep its eventfd alive here.
    drop(theirs);
    (shm, mine, child)
}

/// In the child: the parent's region and this side's notifier.
fn peer_ends() -> (SharedMemory, EventFd) {
    let fds: Vec<i32> = std::env::var(FDS)
        .unwrap()
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    let [shm, own, peer] = fds[..] else {
        panic!("three descriptors")
    };
    // SAFETY: the parent made these descriptors inheritable for us and
    // passed their numbers; nothing else in this process owns them.
    let owned = |fd| unsafe { OwnedFd::from_raw_fd(fd) };
    let shm = SharedMemory::open(owned(shm)).unwrap();
    (shm, EventFd::from_fds(owned(own), owned(peer)))
}

/// Serves (the opcode plus one) until the client goes away, then exits
/// the process (0 on `PeerGone`). After `answer` requests, receives but
/// answers no more.
fn serve(answer: u64) -> ! {
    let (mut shm, notifier) = peer_ends();
    let server = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .unwrap()
        .into_server(notifier);
    let code = runtime().block_on(async move {
        let mut server = AsyncServer::new(server).unwrap();
        let mut answered = 0;
        loop {
            match server.recv().await {
                Ok(incoming) if answered < answer => {
                    let result = incoming.opcode() as i32 + 1;
                    server.complete(incoming, result, 0).unwrap();
                    answered += 1;
                }
                Ok(_) => {}
                Err(Error::PeerGone) => return 0,
                Err(e) => panic!("server: {e}"),
            }
        }
    });
    std::process::exit(code)
}

/// `n` requests, `DEPTH` at a time, every result checked.
async fn run_client(client: &AsyncClient<'_, SLOTS>, n: u32) -> Result<u32, Error> {
    let mut seq = 0;
    while seq < n {
        let batch = (n - seq).min(DEPTH as u32);
        let calls = (seq..seq + batch)
            .map(|op| client.call(Request::new(op)))
            .collect::<Vec<_>>();
        for (op, reply) in (seq..).zip(join_all(calls).await) {
            assert_eq!(reply?.result, op as i32 + 1, "request {op}");
        }
        seq += batch;
    }
    Ok(n)
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn two_processes_a_million_requests_through_the_tokio_pair() {
    const TEST: &str = "two_processes_a_million_requests_through_the_tokio_pair";
    if std::env::var(ROLE).is_ok() {
        serve(u64::MAX);
    }
    let (mut shm, notifier, mut child) = spawn_peer(TEST, "server");
    let client = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .unwrap()
        .into_client::<SLOTS, _>(notifier);
    let n = requests();
    runtime().block_on(async {
        let client = AsyncClient::new(client).unwrap();
        assert_eq!(run_client(&client, n).await, Ok(n));
        assert_eq!(client.in_flight(), 0);
    });
    let status = child.wait().unwrap();
    assert!(status.success(), "server failed: {status}");
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn a_killed_server_gives_every_waiting_call_peer_gone() {
    const TEST: &str = "a_killed_server_gives_every_waiting_call_peer_gone";
    if std::env::var(ROLE).is_ok() {
        // Answers 1000, then takes requests and answers none.
        serve(1000);
    }
    let (mut shm, notifier, mut child) = spawn_peer(TEST, "server");
    let client = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .unwrap()
        .into_client::<SLOTS, _>(notifier);
    runtime().block_on(async {
        let client = AsyncClient::new(client).unwrap();
        assert_eq!(run_client(&client, 1000).await, Ok(1000));
        let calls = (0..DEPTH as u32)
            .map(|op| client.call(Request::new(op)))
            .collect::<Vec<_>>();
        let kill = async {
            // Every call is waiting by now (the server answers no more).
            tokio::time::sleep(Duration::from_millis(50)).await;
            child.kill().unwrap();
        };
        let (replies, ()) = tokio::join!(join_all(calls), kill);
        assert!(
            replies
                .iter()
                .all(|r| r.as_ref().err() == Some(&Error::PeerGone))
        );
    });
    child.wait().unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn a_killed_client_gives_the_async_server_peer_gone() {
    const TEST: &str = "a_killed_client_gives_the_async_server_peer_gone";
    if std::env::var(ROLE).is_ok() {
        let (mut shm, notifier) = peer_ends();
        let client = Uring::attach_with(shm.region(), NotifierKind::EventFd)
            .unwrap()
            .into_client::<SLOTS, _>(notifier);
        // Runs until killed.
        runtime().block_on(async {
            let client = AsyncClient::new(client).unwrap();
            let _ = run_client(&client, u32::MAX).await;
        });
        std::process::exit(1);
    }
    let (mut shm, notifier, mut child) = spawn_peer(TEST, "client");
    let server = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .unwrap()
        .into_server(notifier);
    let outcome = runtime().block_on(async {
        let mut server = AsyncServer::new(server).unwrap();
        for _ in 0..1000 {
            let incoming = server.recv().await.unwrap();
            let result = incoming.opcode() as i32 + 1;
            server.complete(incoming, result, 0).unwrap();
        }
        child.kill().unwrap();
        // What the client had in flight is still received; then the pidfd
        // says it is gone (it never set its close flag).
        loop {
            match server.recv().await {
                Ok(incoming) => {
                    let _ = server.complete(incoming, 0, 0);
                }
                Err(e) => break e,
            }
        }
    });
    assert_eq!(outcome, Error::PeerGone);
    child.wait().unwrap();
}
