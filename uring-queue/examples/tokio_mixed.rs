//! A mixed pair across two processes: a blocking server (a plain thread in
//! `Server::handle`) and an async client on a `current_thread` tokio
//! runtime. Both wake through eventfds, so either side may be blocking or
//! reactor-driven: the wire protocol is the same.
//!
//! This binary is the client, and starts itself again as the server
//! (`tokio_mixed serve <fds>`).
//!
//! ```text
//! cargo run --release --features tokio --example tokio_mixed
//! ```

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(&args[2..]),
        _ => client(),
    }
}

/// The blocking server: upper-cases every request body into its response
/// block until the client goes away.
#[cfg(target_os = "linux")]
fn serve(fds: &[String]) {
    use std::os::fd::{FromRawFd, OwnedFd};
    use uring_queue::SharedMemory;
    use uring_queue::uring::{Error, EventFd, NotifierKind, Uring};

    let fd = |i: usize| -> OwnedFd {
        let n: i32 = fds
            .get(i)
            .and_then(|a| a.parse().ok())
            .expect("usage: tokio_mixed serve <memfd> <own eventfd> <peer eventfd>");
        // SAFETY: the parent made this descriptor inheritable for us and
        // passed its number; nothing else in this process owns it.
        unsafe { OwnedFd::from_raw_fd(n) }
    };
    let mut shm = SharedMemory::open(fd(0)).expect("map the region");
    let mut server = Uring::attach_with(shm.region(), NotifierKind::EventFd)
        .expect("a connection region for eventfds")
        .into_server(EventFd::from_fds(fd(1), fd(2)));
    loop {
        let outcome = server.handle(|_, body, out| {
            let n = body.len().min(out.len());
            for (o, b) in out.iter_mut().zip(&body[..n]) {
                *o = b.to_ascii_uppercase();
            }
            (0, n)
        });
        match outcome {
            Ok(()) => {}
            Err(Error::PeerGone) => return,
            Err(e) => panic!("tokio_mixed server: {e}"),
        }
    }
}

/// The async client: starts the server, sends a few lines and prints the
/// answers.
#[cfg(target_os = "linux")]
fn client() {
    use std::os::fd::AsRawFd;
    use std::process::Command;
    use uring_queue::SharedMemory;
    use uring_queue::uring::tokio::AsyncClient;
    use uring_queue::uring::{Config, EventFd, NotifierKind, Request, Uring};

    let config = Config::new(8, 8, 64 << 10).with_notifier(NotifierKind::EventFd);
    let mut shm = SharedMemory::create("tokio-mixed", Uring::required_size(&config).unwrap())
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
        .into_client::<8, _>(mine);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let client = AsyncClient::new(client).expect("register the eventfd");
        for line in ["hello", "from an async client", "to a blocking server"] {
            let mut body = client.alloc(line.len()).unwrap();
            client
                .bytes_mut(&mut body)
                .unwrap()
                .copy_from_slice(line.as_bytes());
            let response = client.alloc(line.len()).unwrap();
            let request = Request::new(0).with_payload(body).with_response(response);
            let reply = client.call(request).await.expect("an answer");
            let answer = core::str::from_utf8(client.response(&reply).unwrap()).unwrap();
            assert_eq!(answer, line.to_ascii_uppercase());
            println!("{line} -> {answer}");
            client.free_reply(reply);
        }
    });
    let status = child.wait().unwrap();
    assert!(status.success(), "tokio_mixed server failed: {status}");
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("tokio_mixed needs Linux (memfd, eventfd)");
}
