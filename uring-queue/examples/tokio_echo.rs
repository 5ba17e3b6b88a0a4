//! The echo pair on tokio, across two processes: this binary is the client,
//! and starts itself again as the server (`tokio_echo serve <fds>`). Each
//! side is a task on a `current_thread` runtime of its own, with no thread
//! of its own driving the connection: the runtime's reactor wakes it through
//! its eventfd.
//!
//! The parent lays out the region for eventfds, makes both eventfds
//! (`EventFd::pair`), and hands the child the memfd and the child's two
//! eventfds by inheritance, their numbers on the command line.
//!
//! ```text
//! cargo run --release --features tokio --example tokio_echo
//! ```

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(&args[2..]),
        _ => client(),
    }
}

#[cfg(target_os = "linux")]
fn runtime() -> tokio::runtime::Runtime {
    // The async pair needs the I/O driver (eventfds) and the timer
    // (liveness checks).
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The server process: echoes every request body into its response block
/// until the client goes away.
#[cfg(target_os = "linux")]
fn serve(fds: &[String]) {
    use std::os::fd::{FromRawFd, OwnedFd};
    use uring_queue::SharedMemory;
    use uring_queue::uring::tokio::AsyncServer;
    use uring_queue::uring::{Error, EventFd, NotifierKind, Uring};

    let fd = |i: usize| -> OwnedFd {
        let n: i32 = fds
            .get(i)
            .and_then(|a| a.parse().ok())
            .expect("usage: tokio_echo serve <memfd> <own eventfd> <peer eventfd>");
        // SAFETY: the parent made this descriptor inheritable for us and
        // passed its number; nothing else in this process owns it.
        unsafe { OwnedFd::from_raw_fd(n) }
    };
    let mut shm = SharedMemory::open(fd(0)).expect("map the region");
    let notifier = EventFd::from_fds(fd(1), fd(2));
    let server = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .expect("a connection region for eventfds")
        .into_server(notifier);
    let served = runtime().block_on(async {
        let mut server = AsyncServer::new(server).expect("register the eventfd");
        let mut served = 0u64;
        loop {
            let incoming = match server.recv().await {
                Ok(incoming) => incoming,
                Err(Error::PeerGone) => return served,
                Err(e) => panic!("tokio_echo server: {e}"),
            };
            let (body, response) = server.buffers(&incoming).expect("our request");
            let n = body.len().min(response.len());
            response[..n].copy_from_slice(&body[..n]);
            let op = incoming.opcode() as i32;
            server.complete(incoming, op, n).expect("complete");
            served += 1;
        }
    });
    eprintln!("tokio_echo server: client gone after {served} requests");
}

/// The client process: starts the server, sends requests of several sizes
/// one at a time and prints round-trip percentiles, then 64 in flight.
#[cfg(target_os = "linux")]
fn client() {
    use core::time::Duration;
    use std::os::fd::AsRawFd;
    use std::process::Command;
    use std::time::Instant;
    use uring_queue::SharedMemory;
    use uring_queue::uring::tokio::AsyncClient;
    use uring_queue::uring::{Config, EventFd, NotifierKind, Request, Uring};

    const SLOTS: usize = 64;
    let config = Config::new(64, 64, 8 << 20).with_notifier(NotifierKind::EventFd);
    let mut shm = SharedMemory::create("tokio-echo", Uring::required_size(&config).unwrap())
        .expect("create a memfd");
    Uring::init(shm.region(), config).expect("lay out the connection");
    let (mine, theirs) = EventFd::pair().expect("two eventfds");
    shm.set_inheritable(true).unwrap();
    theirs.set_inheritable(true).unwrap();
    let (own, peer) = theirs.raw_fds();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["serve", &shm.fd().as_raw_fd().to_string()])
        .args([own.to_string(), peer.to_string()])
        .spawn()
        .expect("start the server");
    shm.set_inheritable(false).unwrap();
    drop(theirs);
    let client = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .unwrap()
        .into_client::<SLOTS, _>(mine);

    runtime().block_on(async {
        let client = AsyncClient::new(client).expect("register the eventfd");
        println!("{:>8} {:>10} {:>10} {:>10}", "size", "p50", "p99", "max");
        for (size, rounds) in [(4, 100_000), (4 << 10, 20_000), (64 << 10, 5_000)] {
            let mut body = client.alloc(size).unwrap();
            client.bytes_mut(&mut body).unwrap().fill(0x5a);
            let mut blocks = (body, client.alloc(size).unwrap());
            let mut times = Vec::with_capacity(rounds);
            for round in 0..rounds as u32 {
                let request = Request::new(round)
                    .with_payload(blocks.0)
                    .with_response(blocks.1);
                let start = Instant::now();
                let reply = client.call(request).await.expect("echo");
                times.push(start.elapsed());
                assert_eq!(reply.result, round as i32);
                assert_eq!(
                    client.response(&reply).unwrap(),
                    client.bytes(&reply.payload).unwrap()
                );
                blocks = (reply.payload, reply.response);
            }
            client.free(blocks.0);
            client.free(blocks.1);
            times.sort();
            let at = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
            let us = |d: Duration| format!("{:.2}us", d.as_secs_f64() * 1e6);
            let max = *times.last().unwrap();
            println!(
                "{size:>8} {:>10} {:>10} {:>10}",
                us(at(0.5)),
                us(at(0.99)),
                us(max)
            );
        }

        // 64 in flight: 64 calls polled together by one task.
        let rounds = 2_000u32;
        let start = Instant::now();
        for round in 0..rounds {
            let calls = (0..SLOTS as u32).map(|i| client.call(Request::new(round * 64 + i)));
            for reply in join_all(calls.collect()).await {
                reply.expect("echo");
            }
        }
        let per = start.elapsed().as_secs_f64() * 1e9 / f64::from(rounds * SLOTS as u32);
        println!("64 in flight: {per:.1} ns per request");
    });
    let status = child.wait().unwrap();
    assert!(status.success(), "tokio_echo server failed: {status}");
}

/// Polls every future until all are done (a join of any number, without a
/// futures crate).
#[cfg(target_os = "linux")]
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    use core::task::Poll;
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    core::future::poll_fn(|cx| {
        let mut done = true;
        for (f, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => done = false,
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("tokio_echo needs Linux (memfd, eventfd)");
}
