//! The server half of the echo pair: maps the region whose descriptor it is
//! given, and echoes every request body into its response block until the
//! client goes away. Started by `echo_client`, which prints the figures:
//!
//! ```text
//! cargo build --release --features std --example echo_server
//! cargo run --release --features std --example echo_client
//! ```

#[cfg(target_os = "linux")]
fn main() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use uring_queue::SharedMemory;
    use uring_queue::uring::{Error, Futex, Uring};

    let fd: i32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .expect("usage: echo_server <inherited descriptor number>");
    // SAFETY: the client made this descriptor inheritable for us and passed
    // its number; nothing else in this process owns it.
    let mut shm = SharedMemory::open(unsafe { OwnedFd::from_raw_fd(fd) }).expect("map the region");
    let mut server = Uring::attach(shm.region())
        .expect("a connection region")
        .into_server(Futex::new());
    let mut served = 0u64;
    loop {
        let outcome = server.handle(|incoming, body, response| {
            let n = body.len().min(response.len());
            response[..n].copy_from_slice(&body[..n]);
            (incoming.opcode() as i32, n)
        });
        match outcome {
            Ok(()) => served += 1,
            Err(Error::PeerGone) => break,
            Err(e) => {
                eprintln!("echo_server: {e}");
                std::process::exit(1);
            }
        }
    }
    eprintln!("echo_server: client gone after {served} requests");
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("echo_server needs Linux (memfd, futex)");
}
