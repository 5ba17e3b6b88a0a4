//! A service by name, server and client started from two shells:
//!
//! ```text
//! cargo run --release --features std --example service_echo -- serve
//! cargo run --release --features std --example service_echo        # as many as you like
//! ```
//!
//! The server serves every client from one thread (`Hub`); each client
//! echoes bodies of a few sizes and prints its round-trip median.
//!
//! The tokio form (feature `tokio`), against either server:
//!
//! ```text
//! cargo run --release --features tokio --example service_echo -- serve-tokio   # a task per client
//! cargo run --release --features tokio --example service_echo -- serve-hub     # one task for all
//! cargo run --release --features tokio --example service_echo -- tokio         # an async client
//! ```
//!
//! The wire is the same: blocking clients talk to tokio servers, and the
//! other way round.

#[cfg(target_os = "linux")]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("serve") => serve(),
        Some(mode @ ("serve-tokio" | "serve-hub" | "tokio")) => on_tokio::run(mode),
        _ => client(),
    }
}

/// Echoes a body into the response block.
#[cfg(target_os = "linux")]
fn echo(body: &[u8], out: &mut [u8]) -> (i32, usize) {
    let n = body.len().min(out.len());
    out[..n].copy_from_slice(&body[..n]);
    (n as i32, n)
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
            .turn(None, &mut |_peer, _incoming, body, out| echo(body, out))
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

/// The tokio forms of the server and the client.
#[cfg(all(target_os = "linux", feature = "tokio"))]
mod on_tokio {
    use super::{NAME, echo};
    use std::time::Instant;
    use uring_queue::uring::Request;
    use uring_queue::uring::service::{
        AsyncHub, AsyncService, BindOptions, ClientConfig, connect_async,
    };

    pub(super) fn run(mode: &str) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            match mode {
                "serve-tokio" => serve_tasks().await,
                "serve-hub" => serve_hub().await,
                _ => client().await,
            }
        });
    }

    /// Accepts clients as they come and serves each as a task.
    async fn serve_tasks() {
        let service = AsyncService::bind(NAME, BindOptions::default()).expect("bind the name");
        eprintln!("service_echo: serving @{NAME}, a task per client");
        loop {
            let mut session = match service.accept().await {
                Ok(session) => session,
                Err(e) => {
                    eprintln!("service_echo: {e}");
                    continue;
                }
            };
            eprintln!("service_echo: {} connected", session.peer());
            tokio::spawn(async move {
                let peer = session.peer();
                let why = loop {
                    if let Err(e) = session.handle(|_, body, out| echo(body, out)).await {
                        break e;
                    }
                };
                eprintln!("service_echo: {peer} left ({why})");
            });
        }
    }

    /// Serves every client from one task.
    async fn serve_hub() {
        let mut hub = AsyncHub::bind(NAME, BindOptions::default()).expect("bind the name");
        eprintln!("service_echo: serving @{NAME}, one task for all");
        loop {
            let turn = hub
                .turn(&mut |_peer, _incoming, body, out| echo(body, out))
                .await
                .expect("serve");
            if turn.accepted + turn.dropped + turn.refused > 0 {
                eprintln!("service_echo: {turn:?}, {} clients", hub.clients());
            }
        }
    }

    /// Connects, echoes bodies of three sizes and prints the medians.
    async fn client() {
        let client = connect_async::<16>(NAME, ClientConfig::default())
            .await
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
                let reply = client.call(request).await.expect("echo");
                times.push(start.elapsed());
                assert_eq!(
                    client.response(&reply).unwrap(),
                    client.bytes(&reply.payload).unwrap()
                );
                blocks = (reply.payload, reply.response);
            }
            times.sort();
            println!("{size:>6} B: median {:?} (tokio)", times[times.len() / 2]);
            client.free(blocks.0);
            client.free(blocks.1);
        }
    }
}

/// Without the `tokio` feature: says how to get it.
#[cfg(all(target_os = "linux", not(feature = "tokio")))]
mod on_tokio {
    pub(super) fn run(mode: &str) {
        eprintln!("service_echo: `{mode}` needs `--features tokio`");
        std::process::exit(2);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("service_echo needs Linux");
}
