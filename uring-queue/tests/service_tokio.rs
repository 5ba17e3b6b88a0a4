//! Services by name on tokio: clients accepted as they come and served as
//! tasks, one task for every client, async connections, admission, and
//! peers that die (seen through the socket, with hour-long park timeouts).
//! Processes, sockets and the reactor: not under Miri, which cannot make
//! these system calls.
#![cfg(target_os = "linux")]

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::io::Write;
use std::time::Instant;
use uring_queue::uring::service::{
    AcceptError, Admission, AsyncHub, AsyncService, BindOptions, ClientConfig, ConnectError, Hub,
    Peer, Refusal, Service, connect, connect_async,
};
use uring_queue::uring::{Error, Options, Request};

/// A name no other test (or run) uses.
fn unique(what: &str) -> String {
    format!("ncio-test-async-{what}-{}", std::process::id())
}

/// Options whose park timeout never ends a wait: only the socket can.
fn no_timeout() -> Options {
    Options {
        park_timeout: Duration::from_secs(3600),
        ..Options::default()
    }
}

/// How long a wait that must end may take before the test calls it hung
/// (a guard against hanging for the park timeout's hour, not a measure).
const HANG: Duration = Duration::from_secs(60);

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    if workers == 0 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(workers);
        b
    }
    .enable_all()
    .build()
    .unwrap()
}

/// Runs this test binary again as a child doing `role` (see `child_entry`).
fn child(role: &str, name: &str) -> std::process::Child {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("SERVICE_TOKIO_ROLE", role)
        .env("SERVICE_TOKIO_NAME", name)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ready = first_line(&mut child);
    assert!(
        ready == "BOUND" || ready == "CONNECTED",
        "{role}: {ready:?}"
    );
    child
}

/// The child processes' side: not a test of its own (it returns at once
/// unless started by `child`).
#[test]
fn child_entry() {
    let (Ok(role), Ok(name)) = (
        std::env::var("SERVICE_TOKIO_ROLE"),
        std::env::var("SERVICE_TOKIO_NAME"),
    ) else {
        return;
    };
    let say = |what: &str| {
        println!("{what}");
        std::io::stdout().flush().unwrap();
    };
    match role.as_str() {
        // Admits clients and never answers them, until killed.
        "mute" => {
            let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
            say("BOUND");
            let mut sessions = Vec::new();
            loop {
                sessions.push(service.accept().unwrap());
            }
        }
        // Answers every request with its opcode, until killed.
        "echo" => {
            let mut hub =
                Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
            say("BOUND");
            loop {
                hub.turn(None, &mut |_, inc, _, _| (inc.opcode() as i32, 0))
                    .unwrap();
            }
        }
        // Connects and waits, until killed.
        "idle" => {
            let _client = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
            say("CONNECTED");
            loop {
                std::thread::park();
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// The first line a child's role printed (the test runner's own words
/// skipped), or "" if it printed none.
fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.as_mut().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            return String::new();
        }
        let found = ["CONNECTED", "BOUND"].iter().find_map(|m| line.find(m));
        if let Some(at) = found {
            return line[at..].trim().to_owned();
        }
    }
}

fn kill(mut child: std::process::Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Echoes a request's body into its response block.
fn echo(_: &uring_queue::uring::Incoming, body: &[u8], out: &mut [u8]) -> (i32, usize) {
    let n = body.len().min(out.len());
    out[..n].copy_from_slice(&body[..n]);
    (n as i32, n)
}

#[test]
#[cfg_attr(miri, ignore)]
fn clients_accepted_as_they_come_are_each_served_as_a_task() {
    runtime(2).block_on(async {
        let name = unique("tasks");
        let service = Arc::new(AsyncService::bind(name.as_str(), BindOptions::default()).unwrap());
        let acceptor = service.clone();
        let accepting = tokio::spawn(async move {
            let mut served = Vec::new();
            for _ in 0..4 {
                let mut session = acceptor.accept().await.unwrap();
                assert_eq!(session.peer().pid, std::process::id());
                served.push(tokio::spawn(async move {
                    loop {
                        match session.handle(echo).await {
                            Ok(()) => {}
                            Err(e) => return e,
                        }
                    }
                }));
            }
            served
        });
        let clients = (0..4u8).map(|c| {
            let name = name.clone();
            tokio::spawn(async move {
                let client = connect_async::<8>(name.as_str(), ClientConfig::default())
                    .await
                    .unwrap();
                for i in 0..50usize {
                    let len = 1 + (i * 37 + usize::from(c)) % 5000;
                    let mut body = client.alloc(len).unwrap();
                    client.bytes_mut(&mut body).unwrap().fill(c ^ i as u8);
                    let out = client.alloc(len).unwrap();
                    let request = Request::new(0).with_payload(body).with_response(out);
                    let reply = client.call(request).await.unwrap();
                    assert_eq!(reply.result, len as i32);
                    assert!(
                        client
                            .response(&reply)
                            .unwrap()
                            .iter()
                            .all(|&b| b == c ^ i as u8)
                    );
                    client.free_reply(reply);
                }
            })
        });
        for client in clients.collect::<Vec<_>>() {
            client.await.unwrap();
        }
        // Each client left: each session's task ends with `PeerGone`, and
        // its region and descriptors go with it.
        for task in accepting.await.unwrap() {
            let ended = tokio::time::timeout(HANG, task).await.expect("hung");
            assert_eq!(ended.unwrap(), Error::PeerGone);
        }
        assert_eq!(service.clients(), 0);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn one_task_serves_every_client_a_batch_per_round() {
    runtime(0).block_on(async {
        let name = unique("fair");
        let mut hub = AsyncHub::bind(name.as_str(), BindOptions::default()).unwrap();
        hub.set_batch(2);
        let connecting = async {
            let flood = connect_async::<16>(name.as_str(), ClientConfig::default());
            let flood = flood.await.unwrap();
            let quiet = connect_async::<16>(name.as_str(), ClientConfig::default());
            (flood, quiet.await.unwrap())
        };
        let accepting = async {
            while hub.clients() < 2 {
                hub.turn(&mut |_, _, _, _| (0, 0)).await.unwrap();
            }
        };
        let ((flood, quiet), ()) = tokio::join!(connecting, accepting);
        let floods: Vec<_> = (0..12)
            .map(|i| flood.client().try_submit(Request::new(100 + i)).unwrap())
            .collect();
        let quiet_one = quiet.client().try_submit(Request::new(1)).unwrap();
        let mut rounds = Vec::new();
        while rounds.iter().map(Vec::len).sum::<usize>() < 13 {
            let mut seen = Vec::new();
            let turn = tokio::time::timeout(
                HANG,
                hub.turn(&mut |_, inc, _, _| {
                    seen.push(inc.opcode());
                    (inc.opcode() as i32, 0)
                }),
            )
            .await
            .expect("hung")
            .unwrap();
            assert_eq!(turn.served, seen.len());
            rounds.push(seen);
        }
        // The quiet client's request is served in the first round that
        // serves anything, beside at most two of the flood.
        let first = rounds.iter().find(|r| !r.is_empty()).unwrap();
        assert!(first.contains(&1), "{rounds:?}");
        for round in &rounds {
            let of_flood = round.iter().filter(|&&op| op >= 100).count();
            assert!(of_flood <= 2, "{rounds:?}");
        }
        assert_eq!(quiet.client().wait(quiet_one).unwrap().result, 1);
        for (i, t) in floods.into_iter().enumerate() {
            assert_eq!(flood.client().wait(t).unwrap().result, 100 + i as i32);
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn one_task_serves_clients_that_come_and_go() {
    runtime(2).block_on(async {
        let name = unique("hub");
        let mut hub = AsyncHub::bind(name.as_str(), BindOptions::default()).unwrap();
        let serving = tokio::spawn(async move {
            let mut dropped = 0;
            let mut handler = |_: &Peer, inc: &_, body: &[u8], out: &mut [u8]| echo(inc, body, out);
            while dropped < 6 {
                dropped += hub.turn(&mut handler).await.unwrap().dropped;
            }
            hub.clients()
        });
        // Three at a time, twice: the second three come after the first left.
        for round in 0..2u32 {
            let calls = (0..3u32).map(|c| {
                let name = name.clone();
                tokio::spawn(async move {
                    let client = connect_async::<4>(name.as_str(), ClientConfig::default())
                        .await
                        .unwrap();
                    for i in 0..50u32 {
                        let mut body = client.alloc(8).unwrap();
                        let word = (round << 24 | c << 16 | i).to_ne_bytes();
                        client.bytes_mut(&mut body).unwrap()[..4].copy_from_slice(&word);
                        let out = client.alloc(8).unwrap();
                        let request = Request::new(i).with_payload(body).with_response(out);
                        let reply = client.call(request).await.unwrap();
                        assert_eq!(&client.response(&reply).unwrap()[..4], &word);
                        client.free_reply(reply);
                    }
                })
            });
            for call in calls.collect::<Vec<_>>() {
                call.await.unwrap();
            }
        }
        let left = tokio::time::timeout(HANG, serving).await.expect("hung");
        assert_eq!(left.unwrap(), 0);
    });
}

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl alloc::task::Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_sessions_task_yields_after_a_batch_in_a_row() {
    runtime(0).block_on(async {
        let name = unique("yield");
        let mut service = AsyncService::bind(name.as_str(), BindOptions::default()).unwrap();
        service.set_batch(4);
        let (session, client) = tokio::join!(
            service.accept(),
            connect_async::<16>(name.as_str(), ClientConfig::default())
        );
        let (mut session, client) = (session.unwrap(), client.unwrap());
        let tickets: Vec<_> = (0..10)
            .map(|i| client.client().try_submit(Request::new(i)).unwrap())
            .collect();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut seen = Vec::new();
        for _ in 0..12 {
            match session.poll_recv(&mut cx) {
                Poll::Ready(incoming) => {
                    let incoming = incoming.unwrap();
                    seen.push(Some(incoming.opcode()));
                    session.complete(incoming, 0, 0).unwrap();
                }
                Poll::Pending => seen.push(None),
            }
        }
        // Four in a row, a yield (the task woken at once), four, a yield,
        // the last two.
        let expect: Vec<_> = [0, 1, 2, 3]
            .map(Some)
            .into_iter()
            .chain([None])
            .chain([4, 5, 6, 7].map(Some))
            .chain([None])
            .chain([8, 9].map(Some))
            .collect();
        assert_eq!(seen, expect);
        assert_eq!(count.0.load(Ordering::Relaxed), 2);
        // Nothing left: the wait spins a turn per poll, yielding (the task
        // woken at once) between turns, then is pending without a wake (the
        // reactor wakes it). The default spin is 4,096 checks, 32 a turn.
        let mut yields = 0;
        loop {
            let before = count.0.load(Ordering::Relaxed);
            assert!(session.poll_recv(&mut cx).is_pending());
            if count.0.load(Ordering::Relaxed) == before {
                break;
            }
            yields += 1;
            assert!(yields < 4096 / 32, "still spinning after {yields} turns");
        }
        assert!(yields > 0);
        for t in tickets {
            assert_eq!(client.client().wait(t).unwrap().result, 0);
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_async_client_is_told_why_and_the_server_knows_whom() {
    runtime(0).block_on(async {
        let name = unique("refuse");
        let options = BindOptions {
            admission: Admission::custom(|_: &Peer| Err(Refusal::Denied)),
            ..BindOptions::default()
        };
        let service = AsyncService::bind(name.as_str(), options).unwrap();
        let (accepted, connected) = tokio::join!(
            service.accept(),
            connect_async::<2>(name.as_str(), ClientConfig::default())
        );
        let err = connected.unwrap_err();
        assert!(
            matches!(err, ConnectError::Refused(Refusal::Denied)),
            "{err}"
        );
        match accepted {
            Err(AcceptError::Refused { peer, why }) => {
                assert_eq!(peer.pid, std::process::id());
                assert_eq!(why, Refusal::Denied);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(service.clients(), 0);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_full_async_hub_refuses_with_the_reason() {
    runtime(0).block_on(async {
        let name = unique("full");
        let options = BindOptions {
            max_clients: 1,
            ..BindOptions::default()
        };
        let mut hub = AsyncHub::bind(name.as_str(), options).unwrap();
        let mut refused = 0;
        let connecting = async {
            let first = connect_async::<2>(name.as_str(), ClientConfig::default()).await;
            let second = connect_async::<2>(name.as_str(), ClientConfig::default()).await;
            (first.unwrap(), second.unwrap_err())
        };
        let serving = async {
            while refused == 0 {
                refused += hub.turn(&mut |_, _, _, _| (0, 0)).await.unwrap().refused;
            }
        };
        let ((_first, err), ()) = tokio::join!(connecting, serving);
        assert!(
            matches!(err, ConnectError::Refused(Refusal::Full { max: 1 })),
            "{err}"
        );
        assert_eq!(hub.clients(), 1);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn nobody_serving_the_name_is_an_error_not_a_wait() {
    runtime(0).block_on(async {
        let err = connect_async::<2>(unique("nobody"), ClientConfig::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ConnectError::Io(ref e) if e.kind() == std::io::ErrorKind::ConnectionRefused),
            "{err}"
        );
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_killed_server_ends_every_waiting_async_call_through_the_socket() {
    let name = unique("kills");
    let server = child("mute", &name);
    runtime(2).block_on(async {
        let config = ClientConfig {
            options: no_timeout(),
        };
        let a = Arc::new(connect_async::<4>(name.as_str(), config).await.unwrap());
        let b = Arc::new(connect_async::<4>(name.as_str(), config).await.unwrap());
        let gone = Arc::new(std::sync::Mutex::new(None::<Instant>));
        // Four calls wait, two per connection: nobody answers them.
        let calls: Vec<_> = [&a, &a, &b, &b]
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let c = Arc::clone(c);
                tokio::spawn(async move {
                    let err = c.call(Request::new(i as u32)).await.unwrap_err();
                    (err, Instant::now())
                })
            })
            .collect();
        while a.client().in_flight() + b.client().in_flight() < 4 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        *gone.lock().unwrap() = Some(Instant::now());
        kill(server);
        // The park timeout is an hour: only the socket can end these waits.
        let killed = gone.lock().unwrap().unwrap();
        let mut slowest = Duration::ZERO;
        for call in calls {
            let (err, at) = tokio::time::timeout(HANG, call)
                .await
                .expect("hung")
                .unwrap();
            assert_eq!(err, Error::PeerGone);
            slowest = slowest.max(at.saturating_duration_since(killed));
        }
        // Reported, not judged: the machine's load decides it.
        eprintln!("slowest PeerGone after the kill returned: {slowest:?}");
        // Later calls fail at once too.
        let again = a.call(Request::new(9)).await.unwrap_err();
        assert_eq!(again, Error::PeerGone);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_restarted_server_serves_new_async_connections_and_not_old_ones() {
    let name = unique("restart");
    let server = child("echo", &name);
    runtime(0).block_on(async {
        let config = ClientConfig {
            options: no_timeout(),
        };
        let old = connect_async::<4>(name.as_str(), config).await.unwrap();
        assert_eq!(old.call(Request::new(3)).await.unwrap().result, 3);
        kill(server);
        let err = tokio::time::timeout(HANG, old.call(Request::new(4)))
            .await
            .expect("hung");
        assert_eq!(err.unwrap_err(), Error::PeerGone);
        let again = child("echo", &name);
        let new = connect_async::<4>(name.as_str(), config).await.unwrap();
        assert_eq!(new.call(Request::new(5)).await.unwrap().result, 5);
        // The old connection stays gone: nothing of it reaches the new
        // server.
        assert_eq!(
            old.call(Request::new(6)).await.unwrap_err(),
            Error::PeerGone
        );
        kill(again);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_killed_client_ends_its_async_sessions_wait_through_the_socket() {
    let name = unique("killc");
    runtime(0).block_on(async {
        let service = AsyncService::bind(name.as_str(), BindOptions::default()).unwrap();
        // Started from a thread: the child's connect waits for this accept.
        let client = std::thread::spawn({
            let name = name.clone();
            move || child("idle", &name)
        });
        let mut session = service.accept().await.unwrap();
        let client = client.join().unwrap();
        session.set_options(no_timeout());
        assert_eq!(service.clients(), 1);
        let waiting = tokio::spawn(async move {
            let err = session.recv().await.unwrap_err();
            drop(session);
            err
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        kill(client);
        // The park timeout is an hour: only the socket can end this wait.
        let err = tokio::time::timeout(HANG, waiting).await.expect("hung");
        assert_eq!(err.unwrap(), Error::PeerGone);
        assert_eq!(service.clients(), 0);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_killed_client_is_dropped_by_the_async_hub_in_its_round() {
    let name = unique("hubkill");
    runtime(0).block_on(async {
        let mut hub = AsyncHub::bind(name.as_str(), BindOptions::default()).unwrap();
        let mut handler =
            |_: &Peer, _: &uring_queue::uring::Incoming, _: &[u8], _: &mut [u8]| (0, 0);
        let client = std::thread::spawn({
            let name = name.clone();
            move || child("idle", &name)
        });
        while hub.clients() < 1 {
            hub.turn(&mut handler).await.unwrap();
        }
        kill(client.join().unwrap());
        // The hub has no park timeout at all: the socket is the only news.
        let turn = tokio::time::timeout(HANG, hub.turn(&mut handler))
            .await
            .expect("hung")
            .unwrap();
        assert_eq!(turn.dropped, 1);
        assert_eq!(hub.clients(), 0);
        assert_eq!(hub.service().clients(), 0);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_client_that_sends_garbage_ends_its_session_and_not_the_others() {
    use std::os::linux::net::SocketAddrExt;
    runtime(0).block_on(async {
        let name = unique("garbage");
        let service = AsyncService::bind(name.as_str(), BindOptions::default()).unwrap();
        let (honest, client) = tokio::join!(
            service.accept(),
            connect_async::<4>(name.as_str(), ClientConfig::default())
        );
        let (mut honest, client) = (honest.unwrap(), client.unwrap());
        // A client that speaks no protocol: it sends bytes after connecting.
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let mut garbage = std::os::unix::net::UnixStream::connect_addr(&addr).unwrap();
        let mut hostile = service.accept().await.unwrap();
        hostile.set_options(no_timeout());
        garbage.write_all(b"not a request").unwrap();
        let err = tokio::time::timeout(HANG, hostile.recv())
            .await
            .expect("hung");
        assert_eq!(err.unwrap_err(), Error::PeerGone);
        drop(hostile);
        assert_eq!(service.clients(), 1);
        // The honest client is served as before.
        let serve = honest.handle(|inc, _, _| (inc.opcode() as i32 + 1, 0));
        let (served, reply) = tokio::join!(serve, client.call(Request::new(7)));
        served.unwrap();
        assert_eq!(reply.unwrap().result, 8);
    });
}
