//! Round-trip latency between two processes over a pair of shared-memory rings.
//!
//! ```text
//! cargo run --release -p ncio-uring-queue --features std --example ping_pong [ROUND_TRIPS]
//! ```
//!
//! The process maps a memfd holding two rings (requests and replies), spawns
//! itself as the peer with the descriptor inherited, sends sequence numbers
//! one at a time, waits for each echo, and prints round-trip percentiles.

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn core::error::Error>> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::process::Command;
    use std::time::Instant;
    use uring_queue::{RingError, SharedMemory, SharedRing};

    const SIZE: usize = 2 * 4096;
    const PEER: &str = "--peer";

    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(PEER) {
        // The peer: echo every request until the client goes away.
        let fd: i32 = args.get(2).ok_or("missing fd")?.parse()?;
        // SAFETY: the parent passed this inherited descriptor to us alone.
        let mut shm = SharedMemory::open(unsafe { OwnedFd::from_raw_fd(fd) })?;
        let (requests, replies) = shm.region().split_at(SIZE / 2)?;
        let mut rx = SharedRing::<u64>::attach(requests)?.into_consumer();
        let mut tx = SharedRing::<u64>::attach(replies)?.into_producer();
        loop {
            let abandoned = rx.is_abandoned();
            match rx.pop() {
                Ok(v) => {
                    while let Err(e) = tx.push(v) {
                        if e.error() != RingError::Full {
                            return Err(RingError::from(e).into());
                        }
                        core::hint::spin_loop();
                    }
                }
                Err(RingError::Empty) if abandoned => return Ok(()),
                Err(RingError::Empty) => core::hint::spin_loop(),
                Err(e) => return Err(e.into()),
            }
        }
    }

    let rounds: usize = match args.get(1) {
        Some(n) => n.parse()?,
        None => 100_000,
    };
    let mut shm = SharedMemory::create("ping-pong", SIZE)?;
    shm.set_inheritable(true)?;
    let fd = shm.fd().as_raw_fd();
    let (requests, replies) = shm.region().split_at(SIZE / 2)?;
    let mut tx = SharedRing::<u64>::init(requests, 64)?.into_producer();
    let mut rx = SharedRing::<u64>::init(replies, 64)?.into_consumer();
    let mut peer = Command::new(std::env::current_exe()?)
        .args([PEER.to_owned(), fd.to_string()])
        .spawn()?;

    let mut rtt = Vec::with_capacity(rounds);
    for seq in 0..rounds as u64 {
        let start = Instant::now();
        tx.push(seq)?;
        let echo = loop {
            match rx.pop() {
                Ok(v) => break v,
                Err(RingError::Empty) if rx.is_abandoned() => return Err("peer left".into()),
                Err(RingError::Empty) => core::hint::spin_loop(),
                Err(e) => return Err(e.into()),
            }
        };
        rtt.push(start.elapsed());
        if echo != seq {
            return Err(format!("echo {echo} for request {seq}").into());
        }
    }
    drop(tx);
    let status = peer.wait()?;
    if !status.success() {
        return Err(format!("peer failed: {status}").into());
    }
    rtt.sort();
    let pct = |p: f64| rtt[((rtt.len() - 1) as f64 * p) as usize].as_nanos();
    println!("round trips: {rounds}");
    for (name, p) in [
        ("p50", 0.5),
        ("p90", 0.9),
        ("p99", 0.99),
        ("p99.9", 0.999),
        ("max", 1.0),
    ] {
        println!("{name:>6}: {:>9} ns", pct(p));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("ping_pong needs Linux (memfd)");
}
