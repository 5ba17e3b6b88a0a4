//! How soon a service's side knows that its peer died: `CYCLES` times (100
//! by default) a child process is killed with `SIGKILL` while the other
//! side waits on it, and the time from the kill to the end of the wait is
//! taken, with the park timeout set to an hour (only the connection's
//! socket can end the wait):
//!
//! - a client killed while its server's `Session::recv` waits for its next
//!   request: until that `recv` returns `PeerGone`;
//! - a server killed while four calls of a client wait for their replies
//!   (the server never answers them): until the last of the four returns
//!   `PeerGone`.
//!
//! Beside each, the same with a plain `UnixStream` in place of the service:
//! until a blocked `read` sees the end of the stream, the kernel's own time
//! to tear down a killed process and hang up its socket. Prints the median,
//! the 99th percentile and the slowest of each, for docs/benchmarks.md.
//!
//! ```text
//! cargo run --release --features std --example service_death [CYCLES]
//! ```

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some(role @ ("client" | "server" | "unix-client" | "unix-server")) => {
            child::run(role, &args[2]);
        }
        count => {
            parent::run(count.map_or(100, |n| n.parse().expect("usage: service_death [CYCLES]")))
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("service_death needs Linux (services by name)");
}

/// The killed side: connects or serves, says so on stdout, then waits to
/// be killed.
#[cfg(target_os = "linux")]
mod child {
    use std::io::{Read, Write};
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
    use uring_queue::uring::Request;
    use uring_queue::uring::service::{BindOptions, ClientConfig, Service, connect};

    pub(super) fn run(role: &str, name: &str) -> ! {
        // Held until the process is killed.
        let mut held: Vec<Box<dyn core::any::Any>> = Vec::new();
        match role {
            "client" => {
                let client = connect::<4>(name, ClientConfig::default()).expect("connect");
                client.call(Request::new(1)).expect("first call");
                held.push(Box::new(client));
            }
            "server" => {
                let service = Service::bind(name, BindOptions::default()).expect("bind");
                ready();
                // Accepted, and never answered.
                held.push(Box::new(service.accept().expect("accept")));
                held.push(Box::new(service));
            }
            "unix-client" => {
                let addr = SocketAddr::from_abstract_name(name).expect("name");
                let mut stream = UnixStream::connect_addr(&addr).expect("connect");
                stream.write_all(b"x").expect("write");
                held.push(Box::new(stream));
            }
            _ => {
                let addr = SocketAddr::from_abstract_name(name).expect("name");
                let listener = UnixListener::bind_addr(&addr).expect("bind");
                ready();
                let (mut stream, _) = listener.accept().expect("accept");
                let mut byte = [0u8];
                stream.read_exact(&mut byte).expect("read");
                held.push(Box::new(stream));
                held.push(Box::new(listener));
            }
        }
        ready();
        loop {
            std::thread::park();
        }
    }

    fn ready() {
        println!("READY");
        std::io::stdout().flush().expect("stdout");
    }
}

/// The measuring side.
#[cfg(target_os = "linux")]
mod parent {
    use core::time::Duration;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
    use std::process::{Child, Command, Stdio};
    use std::sync::mpsc::channel;
    use std::time::Instant;
    use uring_queue::uring::service::{BindOptions, ClientConfig, Service, connect};
    use uring_queue::uring::{Error, Options, Request};

    /// Only the socket ends a wait: the park timeout is an hour.
    fn hour() -> Options {
        Options {
            park_timeout: Duration::from_secs(3600),
            ..Options::default()
        }
    }

    /// Long enough for a waiting thread to reach its wait before the kill.
    const SETTLE: Duration = Duration::from_millis(2);

    fn spawn(role: &str, name: &str) -> Child {
        Command::new(std::env::current_exe().expect("own path"))
            .args([role, name])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn")
    }

    /// Waits for the child's next "READY" line.
    fn ready(child: &mut Child) {
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        assert_eq!(line.trim(), "READY", "the child failed");
    }

    /// Kills `child` and returns the times from the kill to the instants
    /// `seen()` gives.
    fn kill_and_time<const K: usize>(
        mut child: Child,
        seen: impl FnOnce() -> [Instant; K],
    ) -> [Duration; K] {
        std::thread::sleep(SETTLE);
        let start = Instant::now();
        child.kill().expect("kill");
        let ends = seen();
        child.wait().expect("reap");
        ends.map(|end| end.saturating_duration_since(start))
    }

    fn client_dies_service(name: &str) -> Duration {
        let service = Service::bind(name, BindOptions::default()).expect("bind");
        let mut child = spawn("client", name);
        let mut session = service.accept().expect("accept");
        session.set_options(hour());
        session.handle(|_, _, _| (0, 0)).expect("the first call");
        ready(&mut child);
        let (tx, rx) = channel();
        let waiting = std::thread::spawn(move || {
            let r = session.recv().map(|_| ());
            tx.send((Instant::now(), r)).expect("send");
        });
        let [took] = kill_and_time(child, || {
            let (at, r) = rx.recv().expect("the session's end");
            assert_eq!(r, Err(Error::PeerGone));
            [at]
        });
        waiting.join().expect("session thread");
        took
    }

    /// The first and the last of four waiting calls to end.
    fn server_dies_service(name: &str) -> (Duration, Duration) {
        let mut child = spawn("server", name);
        ready(&mut child);
        let config = ClientConfig { options: hour() };
        let client = connect::<4>(name, config).expect("connect");
        ready(&mut child);
        std::thread::scope(|s| {
            let (tx, rx) = channel();
            for op in 0..4 {
                let (tx, client) = (tx.clone(), &client);
                s.spawn(move || {
                    let r = client.call(Request::new(op)).map(|_| ());
                    tx.send((Instant::now(), r)).expect("send");
                });
            }
            let [first, last] = kill_and_time(child, || {
                let ends: Vec<Instant> = (0..4)
                    .map(|_| {
                        let (at, r) = rx.recv().expect("a call's end");
                        assert_eq!(r, Err(Error::PeerGone));
                        at
                    })
                    .collect();
                let first = ends.iter().min().copied().expect("four calls");
                let last = ends.iter().max().copied().expect("four calls");
                [first, last]
            });
            (first, last)
        })
    }

    fn eof_at(mut stream: UnixStream) -> Instant {
        let mut buf = [0u8; 1];
        assert_eq!(stream.read(&mut buf).expect("read"), 0);
        Instant::now()
    }

    fn client_dies_unix(name: &str) -> Duration {
        let addr = SocketAddr::from_abstract_name(name).expect("name");
        let listener = UnixListener::bind_addr(&addr).expect("bind");
        let mut child = spawn("unix-client", name);
        let (mut stream, _) = listener.accept().expect("accept");
        let mut byte = [0u8];
        stream.read_exact(&mut byte).expect("read");
        ready(&mut child);
        let waiting = std::thread::spawn(move || eof_at(stream));
        let [took] = kill_and_time(child, || [waiting.join().expect("reader")]);
        took
    }

    fn server_dies_unix(name: &str) -> Duration {
        let mut child = spawn("unix-server", name);
        ready(&mut child);
        let addr = SocketAddr::from_abstract_name(name).expect("name");
        let mut stream = UnixStream::connect_addr(&addr).expect("connect");
        stream.write_all(b"x").expect("write");
        ready(&mut child);
        let waiting = std::thread::spawn(move || eof_at(stream));
        let [took] = kill_and_time(child, || [waiting.join().expect("reader")]);
        took
    }

    fn summary(what: &str, mut times: Vec<Duration>) -> Duration {
        times.sort_unstable();
        let n = times.len();
        let median = times[n / 2];
        println!(
            "{what:<62} median {median:>10.1?}  99th {:>10.1?}  slowest {:>10.1?}",
            times[(n * 99 / 100).min(n - 1)],
            times[n - 1],
        );
        median
    }

    pub(super) fn run(cycles: usize) {
        assert!(cycles > 0, "at least one cycle");
        let base = format!("ncio-death-{}", std::process::id());
        let mut rows: [Vec<Duration>; 5] = Default::default();
        // Interleaved, so that the machine's state is shared alike.
        for cycle in 0..cycles {
            rows[0].push(client_dies_service(&format!("{base}-c{cycle}")));
            rows[1].push(client_dies_unix(&format!("{base}-uc{cycle}")));
            let (first, last) = server_dies_service(&format!("{base}-s{cycle}"));
            rows[2].push(first);
            rows[3].push(last);
            rows[4].push(server_dies_unix(&format!("{base}-us{cycle}")));
        }
        println!("{cycles} kills of each, the park timeout an hour:");
        let [a, b, c, d, e] = rows;
        let service_client = summary("client killed: the session's recv returns PeerGone", a);
        let unix_client = summary("client killed: a UnixStream read sees the end", b);
        summary(
            "server killed: the first of 4 waiting calls returns PeerGone",
            c,
        );
        let service_server = summary(
            "server killed: the last of 4 waiting calls returns PeerGone",
            d,
        );
        let unix_server = summary("server killed: a UnixStream read sees the end", e);
        println!(
            "medians against the UnixStream's: client killed {:.2}x, server killed {:.2}x",
            service_client.as_secs_f64() / unix_client.as_secs_f64(),
            service_server.as_secs_f64() / unix_server.as_secs_f64(),
        );
    }
}
