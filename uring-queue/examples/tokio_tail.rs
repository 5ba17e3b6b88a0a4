//! The slowest of many calls on a multi-thread tokio runtime: eight tasks
//! share one async client on a runtime of two workers and make `CALLS`
//! calls (1,000,000 by default) to an async server task, each timed. Prints
//! the slowest call, the 99.99th percentile, and how many calls took more
//! than 1 ms and more than the park timeout (10 ms): a call that waits out
//! the park timeout is one the reactor did not wake.
//!
//! Then the same with tokio's own channels in place of the pair, on the
//! same runtime: the eight tasks send each request through one bounded
//! `mpsc` channel (16 places, as the pair's 16 credits) with a `oneshot`
//! for its reply, and a server task answers. That is the runtime's own
//! floor for the same round trips: what it costs the slowest call to wait
//! for a worker on this machine, whatever it waits for.
//!
//! A measurement, for docs/benchmarks.md; the loom models in
//! `src/uring/reactor_waiter/loom.rs` prove the hand-off it exercises.
//!
//! ```text
//! cargo run --release --features tokio --example tokio_tail [CALLS]
//! ```

#[cfg(target_os = "linux")]
fn main() {
    extern crate alloc;

    use alloc::sync::Arc;
    use core::time::Duration;
    use std::time::Instant;
    use uring_queue::Region;
    use uring_queue::uring::tokio::{AsyncClient, AsyncServer};
    use uring_queue::uring::{Config, Error, EventFd, NotifierKind, Request, Uring};

    const TASKS: u32 = 8;
    let calls: u32 = std::env::args()
        .nth(1)
        .map_or(1_000_000, |a| a.parse().expect("usage: tokio_tail [CALLS]"));
    let per_task = calls / TASKS;

    #[repr(C, align(4096))]
    struct Mem([u8; 1 << 16]);
    let mem: &'static mut Mem = Box::leak(Box::new(Mem([0; 1 << 16])));
    let config = Config::new(16, 16, 0).with_notifier(NotifierKind::EventFd);
    let (for_client, for_server) = EventFd::pair().expect("eventfds");
    let (client, server) = Uring::init(Region::new(&mut mem.0), config)
        .expect("region")
        .split::<16, _, _>(for_client, for_server);
    let park = client.options().park_timeout;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let times: Vec<Duration> = rt.block_on(async move {
        let server = tokio::spawn(async move {
            let mut server = AsyncServer::new(server).expect("server");
            loop {
                match server.recv().await {
                    Ok(incoming) => {
                        let op = incoming.opcode() as i32;
                        server.complete(incoming, op, 0).expect("complete");
                    }
                    Err(Error::PeerGone) => return,
                    Err(e) => panic!("server: {e}"),
                }
            }
        });
        let client = Arc::new(AsyncClient::new(client).expect("client"));
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let client = client.clone();
                tokio::spawn(async move {
                    let mut times = Vec::with_capacity(per_task as usize);
                    for k in 0..per_task {
                        let op = (t << 24) | k;
                        let start = Instant::now();
                        let reply = client.call(Request::new(op)).await.expect("call");
                        times.push(start.elapsed());
                        assert_eq!(reply.result, op as i32);
                    }
                    times
                })
            })
            .collect();
        let mut all = Vec::with_capacity(calls as usize);
        for t in tasks {
            all.extend(t.await.expect("task"));
        }
        drop(client);
        server.await.expect("server task");
        all
    });
    report(
        "the pair's AsyncClient",
        times,
        calls,
        park,
        started.elapsed(),
    );

    // The anchor: the same round trips through tokio's own channels.
    let started = Instant::now();
    let times: Vec<Duration> = rt.block_on(async move {
        use tokio::sync::{mpsc, oneshot};
        let (requests, mut incoming) = mpsc::channel::<(u32, oneshot::Sender<i32>)>(16);
        let server = tokio::spawn(async move {
            while let Some((op, reply)) = incoming.recv().await {
                let _ = reply.send(op as i32);
            }
        });
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let requests = requests.clone();
                tokio::spawn(async move {
                    let mut times = Vec::with_capacity(per_task as usize);
                    for k in 0..per_task {
                        let op = (t << 24) | k;
                        let start = Instant::now();
                        let (reply, answer) = oneshot::channel();
                        requests.send((op, reply)).await.expect("send");
                        let result = answer.await.expect("answer");
                        times.push(start.elapsed());
                        assert_eq!(result, op as i32);
                    }
                    times
                })
            })
            .collect();
        drop(requests);
        let mut all = Vec::with_capacity(calls as usize);
        for t in tasks {
            all.extend(t.await.expect("task"));
        }
        server.await.expect("server task");
        all
    });
    report(
        "tokio's mpsc and oneshot (anchor)",
        times,
        calls,
        park,
        started.elapsed(),
    );
}

/// Prints one line of figures for `times`.
#[cfg(target_os = "linux")]
fn report(
    what: &str,
    mut times: Vec<core::time::Duration>,
    calls: u32,
    park: core::time::Duration,
    wall: core::time::Duration,
) {
    use core::time::Duration;
    times.sort_unstable();
    let n = times.len();
    let over = |limit: Duration| times.iter().filter(|t| **t > limit).count();
    println!(
        "{what}: {calls} calls, 8 tasks, 2 workers, {:.2} s: slowest {:?}, 99.99th percentile {:?}, \
         median {:?}; over 1 ms: {}; over the park timeout ({park:?}): {}",
        wall.as_secs_f64(),
        times[n - 1],
        times[n * 9999 / 10000],
        times[n / 2],
        over(Duration::from_millis(1)),
        over(park),
    );
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("tokio_tail needs Linux (eventfd)");
}
