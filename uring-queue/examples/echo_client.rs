//! The client half of the echo pair: creates a memfd region, starts
//! `echo_server` (built next to this example) with the descriptor, sends
//! requests of several sizes one at a time, checks every echo, and prints
//! round-trip percentiles; then 64 in flight at once, per request.
//!
//! ```text
//! cargo build --release --features std --example echo_server
//! cargo run --release --features std --example echo_client
//! ```

#[cfg(target_os = "linux")]
extern crate alloc;

#[cfg(target_os = "linux")]
fn main() {
    use core::time::Duration;
    use std::os::fd::AsRawFd;
    use std::process::Command;
    use std::time::Instant;
    use uring_queue::SharedMemory;
    use uring_queue::uring::{Client, Config, Futex, Request, Uring};

    const SLOTS: usize = 64;
    let config = Config::new(64, 64, 32 << 20);

    // The region: laid out before the server starts, then handed over.
    let mut shm = SharedMemory::create("echo", Uring::required_size(&config).unwrap())
        .expect("create a memfd");
    Uring::init(shm.region(), config).expect("lay out the connection");
    shm.set_inheritable(true).unwrap();
    let server_path = std::env::current_exe()
        .unwrap()
        .with_file_name("echo_server");
    let mut server = Command::new(&server_path)
        .arg(shm.fd().as_raw_fd().to_string())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {}: {e}\nbuild it first: cargo build --release --features std --example echo_server",
                server_path.display()
            )
        });
    shm.set_inheritable(false).unwrap();
    let client: Client<'_, SLOTS, Futex> = Uring::attach(shm.region())
        .unwrap()
        .into_client(Futex::new());

    let percentile =
        |sorted: &[Duration], p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "size", "p50", "p90", "p99", "p99.9", "max"
    );
    for (size, rounds) in [
        (4, 100_000),
        (64, 100_000),
        (4 << 10, 20_000),
        (64 << 10, 5_000),
        (1 << 20, 500),
    ] {
        let mut body = client.alloc(size).unwrap();
        for (k, b) in client.bytes_mut(&mut body).unwrap().iter_mut().enumerate() {
            *b = k as u8;
        }
        let mut blocks = (body, client.alloc(size).unwrap());
        let mut times = Vec::with_capacity(rounds);
        for round in 0..rounds {
            let start = Instant::now();
            let reply = client
                .call(
                    Request::new(round as u32)
                        .with_payload(blocks.0)
                        .with_response(blocks.1),
                )
                .expect("echo");
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
        let us = |d: Duration| format!("{:.2}us", d.as_secs_f64() * 1e6);
        println!(
            "{:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
            size,
            us(percentile(&times, 0.5)),
            us(percentile(&times, 0.9)),
            us(percentile(&times, 0.99)),
            us(percentile(&times, 0.999)),
            us(*times.last().unwrap()),
        );
    }

    // Pipelined: 64 small requests in flight, answered in order.
    let n = 200_000u32;
    let mut pending = alloc::collections::VecDeque::new();
    let start = Instant::now();
    for i in 0..n {
        if pending.len() == SLOTS {
            let t = pending.pop_front().unwrap();
            client.wait(t).expect("echo");
        }
        pending.push_back(client.submit(Request::new(i)).expect("submit"));
    }
    for t in pending {
        client.wait(t).expect("echo");
    }
    println!(
        "64 in flight: {:.1} ns per request",
        start.elapsed().as_secs_f64() * 1e9 / f64::from(n)
    );

    drop(client);
    let status = server.wait().unwrap();
    assert!(status.success(), "echo_server failed: {status}");
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("echo_client needs Linux (memfd, futex)");
}
