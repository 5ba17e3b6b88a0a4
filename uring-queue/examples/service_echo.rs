//! A service by name, server and client started from two shells:
//!
//! ```text
//! cargo run --release --features std --example service_echo -- serve
//! cargo run --release --features std --example service_echo        # as many as you like
//! ```
//!
//! The server serves every client from one thread (`Hub`); each client
//! echoes bodies of a few sizes and prints its round-trip median.

#[cfg(target_os = "linux")]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("serve") => serve(),
        _ => client(),
    }
}

#[cfg(target_os = "linux")]
const NAME: &str = "ncio-service-echo";

/// Echoes every body into its response block, for every client, forever.
#[cfg(target_os = "linux")]
fn serve() {
    use uring_queue::uring::service::{BindOptions, Hub, Service};

    let service = Service::bind(NAME, BindOptions::default()).expect("bind the name");
    let mut hub = Hub::new(service).expect("an epoll set");
    eprintln!("service_echo: serving @{NAME}");
    loop {
        let turn = hub
            .turn(None, &mut |_peer, _incoming, body, out| {
                let n = body.len().min(out.len());
                out[..n].copy_from_slice(&body[..n]);
                (n as i32, n)
            })
            .expect("serve");
        if turn.accepted + turn.dropped + turn.refused > 0 {
            eprintln!("service_echo: {turn:?}, {} clients", hub.clients());
        }
    }
}

/// Connects, echoes bodies of three sizes and prints the medians.
#[cfg(target_os = "linux")]
fn client() {
    use std::time::Instant;
    use uring_queue::uring::Request;
    use uring_queue::uring::service::{ClientConfig, connect};

    let client = connect::<16>(NAME, ClientConfig::default())
        .unwrap_or_else(|e| panic!("service_echo: {e} (start `service_echo serve` first)"));
    for size in [4usize, 4096, 65536] {
        let mut body = client.alloc(size).unwrap();
        client.bytes_mut(&mut body).unwrap().fill(0x5a);
        let mut blocks = (body, client.alloc(size).unwrap());
        let mut times = Vec::with_capacity(10_000);
        for _ in 0..10_000 {
            let request = Request::new(0)
                .with_payload(blocks.0)
                .with_response(blocks.1);
            let start = Instant::now();
            let reply = client.call(request).expect("echo");
            times.push(start.elapsed());
            assert_eq!(
                client.response(&reply).unwrap(),
                client.bytes(&reply.payload).unwrap()
            );
            blocks = (reply.payload, reply.response);
        }
        times.sort();
        println!("{size:>6} B: median {:?}", times[times.len() / 2]);
        client.free(blocks.0);
        client.free(blocks.1);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("service_echo needs Linux");
}
