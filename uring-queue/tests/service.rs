//! Services by name: connecting, admission, many clients on one thread,
//! hostile clients, and peers that die. Processes and sockets: not under
//! Miri.
#![cfg(target_os = "linux")]

use core::time::Duration;
use std::io::Write;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use uring_queue::uring::service::{
    AcceptError, Admission, BindOptions, ClientConfig, ConnectError, Hub, Name, Peer, Refusal,
    Service, connect,
};
use uring_queue::uring::{Error, Options, Request};

/// A name no other test (or run) uses.
fn unique(what: &str) -> String {
    format!("ncio-test-{what}-{}", std::process::id())
}

/// Options whose park timeout never ends a wait: only the socket can.
fn no_timeout() -> Options {
    Options {
        park_timeout: Duration::from_secs(3600),
        ..Options::default()
    }
}

/// Runs this test binary again as a child doing `role` (see `child`).
fn child(role: &str, name: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("SERVICE_CHILD_ROLE", role)
        .env("SERVICE_CHILD_NAME", name)
        .stdout(Stdio::piped());
    cmd
}

/// The child processes' side: not a test of its own (it returns at once
/// unless started by `child`).
#[test]
fn child_entry() {
    let (Ok(role), Ok(name)) = (
        std::env::var("SERVICE_CHILD_ROLE"),
        std::env::var("SERVICE_CHILD_NAME"),
    ) else {
        return;
    };
    match role.as_str() {
        // Connects, reports how, then calls until killed.
        "client" => {
            let out = match connect::<4>(name.as_str(), ClientConfig::default()) {
                Ok(c) => c,
                Err(ConnectError::Refused(why)) => {
                    println!("REFUSED {why:?}");
                    return;
                }
                Err(e) => panic!("{e}"),
            };
            println!("CONNECTED");
            std::io::stdout().flush().unwrap();
            let mut op = 0u32;
            loop {
                op = op.wrapping_add(1);
                if out.call(Request::new(op)).is_err() {
                    std::process::exit(3);
                }
            }
        }
        // Serves until killed.
        "server" => {
            let mut hub =
                Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
            println!("BOUND");
            std::io::stdout().flush().unwrap();
            loop {
                hub.turn(None, &mut |_, inc, _, _| (inc.opcode() as i32, 0))
                    .unwrap();
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// The first line a child's role printed (the test runner's own lines
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
        // The runner prints "test child_entry ... " before the role's line.
        let found = ["CONNECTED", "REFUSED", "BOUND"]
            .iter()
            .find_map(|m| line.find(m));
        if let Some(at) = found {
            return line[at..].trim().to_owned();
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_client_calls_a_service_by_name_with_bodies_both_ways() {
    let name = unique("echo");
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut session = service.accept().unwrap();
            assert_eq!(session.peer().uid, own_uid());
            loop {
                match session.handle(|_, body, out| {
                    let n = body.len().min(out.len());
                    out[..n].copy_from_slice(&body[..n]);
                    (n as i32, n)
                }) {
                    Ok(()) => {}
                    Err(Error::PeerGone) => return,
                    Err(e) => panic!("{e}"),
                }
            }
        });
        let client = connect::<8>(name.as_str(), ClientConfig::default()).unwrap();
        for len in [1usize, 100, 4096, 60_000] {
            let mut body = client.alloc(len).unwrap();
            for (i, b) in client.bytes_mut(&mut body).unwrap().iter_mut().enumerate() {
                *b = (i * 7 + len) as u8;
            }
            let out = client.alloc(len).unwrap();
            let reply = client
                .call(Request::new(0).with_payload(body).with_response(out))
                .unwrap();
            assert_eq!(reply.result, len as i32);
            assert_eq!(
                client.response(&reply).unwrap(),
                client.bytes(&reply.payload).unwrap()
            );
            client.free_reply(reply);
        }
    });
    assert_eq!(service.clients(), 0);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_session_answers_in_place_over_the_request_body() {
    let name = unique("in-place");
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut session = service.accept().unwrap();
            loop {
                let incoming = match session.recv() {
                    Ok(incoming) => incoming,
                    Err(Error::PeerGone) => return,
                    Err(e) => panic!("{e}"),
                };
                let body = session.payload_mut(&incoming).unwrap();
                body.reverse();
                let n = body.len();
                session.complete_in_place(incoming, n as i32, n).unwrap();
            }
        });
        let client = connect::<8>(name.as_str(), ClientConfig::default()).unwrap();
        for len in [1usize, 100, 4096] {
            let mut body = client.alloc(len).unwrap();
            let sent: Vec<u8> = (0..len).map(|i| (i * 13 + len) as u8).collect();
            client.bytes_mut(&mut body).unwrap().copy_from_slice(&sent);
            let reply = client.call(Request::new(0).with_payload(body)).unwrap();
            assert_eq!(reply.result, len as i32);
            let mut expected = sent.clone();
            expected.reverse();
            assert_eq!(client.response(&reply).unwrap(), &expected[..]);
            client.free_reply(reply);
        }
    });
    assert_eq!(service.clients(), 0);
}

/// This process's effective uid, from /proc.
fn own_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_socket_file_gets_its_mode_replaces_a_stale_one_and_goes_with_the_service() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(unique("dir"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("svc.sock");
    // A server killed earlier left its socket file: nobody listens there.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let options = BindOptions {
        mode: 0o660,
        ..BindOptions::default()
    };
    let service = Service::bind(Name::path(&path), options).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);
    // A live one is not replaced.
    let again = Service::bind(Name::path(&path), BindOptions::default()).unwrap_err();
    assert_eq!(again.kind(), std::io::ErrorKind::AddrInUse);
    std::thread::scope(|s| {
        s.spawn(|| service.accept().unwrap().handle(|_, _, _| (5, 0)).unwrap());
        let client = connect::<2>(Name::path(&path), ClientConfig::default()).unwrap();
        assert_eq!(client.call(Request::new(0)).unwrap().result, 5);
    });
    drop(service);
    assert!(!path.exists());
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_abstract_name_is_held_by_one_service_and_free_once_it_goes() {
    let name = unique("held");
    let first = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    let err = Service::bind(name.as_str(), BindOptions::default()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    drop(first);
    Service::bind(name.as_str(), BindOptions::default()).unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_client_is_told_why_and_the_server_knows_whom() {
    let name = unique("refuse");
    let options = BindOptions {
        admission: Admission::custom(|_: &Peer| Err(Refusal::Denied)),
        ..BindOptions::default()
    };
    let service = Service::bind(name.as_str(), options).unwrap();
    std::thread::scope(|s| {
        let server = s.spawn(|| service.accept());
        let err = connect::<2>(name.as_str(), ClientConfig::default()).unwrap_err();
        assert!(
            matches!(err, ConnectError::Refused(Refusal::Denied)),
            "{err}"
        );
        match server.join().unwrap() {
            Err(AcceptError::Refused { peer, why }) => {
                assert_eq!(peer.pid, std::process::id());
                assert_eq!(why, Refusal::Denied);
            }
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(service.clients(), 0);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_full_service_refuses_until_a_session_ends() {
    let name = unique("full");
    let options = BindOptions {
        max_clients: 1,
        ..BindOptions::default()
    };
    let service = Service::bind(name.as_str(), options).unwrap();
    std::thread::scope(|s| {
        let first = s.spawn(|| service.accept().unwrap());
        let _a = connect::<2>(name.as_str(), ClientConfig::default()).unwrap();
        let session = first.join().unwrap();
        let second = s.spawn(|| service.accept());
        let err = connect::<2>(name.as_str(), ClientConfig::default()).unwrap_err();
        assert!(
            matches!(err, ConnectError::Refused(Refusal::Full { max: 1 })),
            "{err}"
        );
        assert!(matches!(
            second.join().unwrap(),
            Err(AcceptError::Refused { .. })
        ));
        drop(session);
        let third = s.spawn(|| service.accept().map(|_| ()));
        connect::<2>(name.as_str(), ClientConfig::default()).unwrap();
        third.join().unwrap().unwrap();
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn another_user_is_refused_by_default() {
    if own_uid() != 0 {
        eprintln!("skipped: starting a process as another user needs root");
        return;
    }
    let name = unique("uid");
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    let mut nobody = child("client", &name)
        .uid(65534)
        .gid(65534)
        .spawn()
        .unwrap();
    match service.accept() {
        Err(AcceptError::Refused { peer, why }) => {
            assert_eq!(peer.uid, 65534);
            assert_eq!(
                why,
                Refusal::OtherUser {
                    uid: 65534,
                    server_uid: 0
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        first_line(&mut nobody),
        "REFUSED OtherUser { uid: 65534, server_uid: 0 }"
    );
    assert!(nobody.wait().unwrap().success());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_killed_client_ends_the_servers_wait_through_its_socket() {
    let name = unique("killc");
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    let mut client = child("client", &name).spawn().unwrap();
    let mut session = service.accept().unwrap();
    session.set_options(no_timeout());
    assert_eq!(first_line(&mut client), "CONNECTED");
    // Answer a few calls, then kill it while it waits for the next.
    for _ in 0..10 {
        session
            .handle(|inc, _, _| (inc.opcode() as i32, 0))
            .unwrap();
    }
    client.kill().unwrap();
    client.wait().unwrap();
    // The park timeout is an hour: only the socket can end this wait.
    loop {
        match session.recv() {
            Ok(inc) => session.complete(inc, 0, 0).unwrap(),
            Err(e) => {
                assert_eq!(e, Error::PeerGone);
                break;
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_killed_server_ends_every_waiting_call_through_the_socket() {
    let name = unique("kills");
    let mut server = child("server", &name).spawn().unwrap();
    assert_eq!(first_line(&mut server), "BOUND");
    let config = ClientConfig {
        options: no_timeout(),
    };
    let a = connect::<4>(name.as_str(), config).unwrap();
    let b = connect::<4>(name.as_str(), config).unwrap();
    assert_eq!(a.call(Request::new(3)).unwrap().result, 3);
    assert_eq!(b.call(Request::new(4)).unwrap().result, 4);
    server.kill().unwrap();
    server.wait().unwrap();
    // Calls after the death: each must end, by the socket alone.
    std::thread::scope(|s| {
        for c in [&a, &b] {
            s.spawn(move || {
                let mut op = 0;
                let err = loop {
                    op += 1;
                    if let Err(e) = c.call(Request::new(op)) {
                        break e;
                    }
                };
                assert_eq!(err, Error::PeerGone);
            });
        }
    });
    // A restarted server under the same name serves a new connection.
    let mut again = child("server", &name).spawn().unwrap();
    assert_eq!(first_line(&mut again), "BOUND");
    let c = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
    assert_eq!(c.call(Request::new(9)).unwrap().result, 9);
    // The old connections stay gone.
    assert_eq!(a.call(Request::new(1)).unwrap_err(), Error::PeerGone);
    again.kill().unwrap();
    again.wait().unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_hub_serves_each_client_at_most_a_batch_per_round() {
    let name = unique("fair");
    let mut hub = Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
    hub.set_batch(2);
    std::thread::scope(|s| {
        let connecting = s.spawn(|| {
            let flood = connect::<16>(name.as_str(), ClientConfig::default()).unwrap();
            let quiet = connect::<16>(name.as_str(), ClientConfig::default()).unwrap();
            (flood, quiet)
        });
        while hub.clients() < 2 {
            hub.turn(Some(Duration::from_millis(5)), &mut |_, _, _, _| (0, 0))
                .unwrap();
        }
        let (flood, quiet) = connecting.join().unwrap();
        let floods: Vec<_> = (0..12)
            .map(|i| flood.try_submit(Request::new(100 + i)).unwrap())
            .collect();
        let quiet_one = quiet.try_submit(Request::new(1)).unwrap();
        let mut rounds = Vec::new();
        while rounds.iter().map(Vec::len).sum::<usize>() < 13 {
            let mut seen = Vec::new();
            hub.turn(Some(Duration::from_millis(50)), &mut |_, inc, _, _| {
                seen.push(inc.opcode());
                (inc.opcode() as i32, 0)
            })
            .unwrap();
            rounds.push(seen);
        }
        // The quiet client's request is served in the first round that
        // serves anything, beside at most two of the flood.
        let first = rounds.iter().find(|r| !r.is_empty()).unwrap();
        assert!(first.contains(&1), "{rounds:?}");
        for round in &rounds {
            assert!(
                round.iter().filter(|&&op| op >= 100).count() <= 2,
                "{rounds:?}"
            );
        }
        assert_eq!(quiet.wait(quiet_one).unwrap().result, 1);
        for (i, t) in floods.into_iter().enumerate() {
            assert_eq!(flood.wait(t).unwrap().result, 100 + i as i32);
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_hub_drops_a_client_that_sends_garbage_and_serves_the_rest() {
    let name = unique("hostile");
    let mut hub = Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
    let mut handler = |_: &Peer, inc: &uring_queue::uring::Incoming, _: &[u8], _: &mut [u8]| {
        (inc.opcode() as i32 * 3, 0)
    };
    std::thread::scope(|s| {
        let done = s.spawn(|| {
            let honest = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
            // Garbage on the socket: the protocol has the client send nothing.
            let mut garbage = UnixStream::connect_addr(&addr).unwrap();
            garbage.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            for op in 0..200 {
                assert_eq!(honest.call(Request::new(op)).unwrap().result, op as i32 * 3);
            }
            drop(garbage);
        });
        while !done.is_finished() {
            hub.turn(Some(Duration::from_millis(1)), &mut handler)
                .unwrap();
        }
        done.join().unwrap();
    });
    // The honest client went too; nothing is left.
    for _ in 0..10 {
        if hub.clients() == 0 {
            break;
        }
        hub.turn(Some(Duration::from_millis(10)), &mut handler)
            .unwrap();
    }
    assert_eq!(hub.clients(), 0);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_client_in_its_own_ipc_and_mount_namespaces_connects() {
    let have = Command::new("unshare")
        .args(["--ipc", "--mount", "true"])
        .status();
    if !matches!(have, Ok(s) if s.success()) {
        eprintln!("skipped: `unshare --ipc --mount` is not available here ({have:?})");
        return;
    }
    let name = unique("netns");
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    let exe = std::env::current_exe().unwrap();
    // A /dev/shm of its own: nothing shared with this process but the socket.
    let script = format!(
        "mount -t tmpfs none /dev/shm && exec {} --exact child_entry --nocapture --test-threads=1",
        exe.display()
    );
    let mut contained = Command::new("unshare")
        .args(["--ipc", "--mount", "sh", "-c", &script])
        .env("SERVICE_CHILD_ROLE", "client")
        .env("SERVICE_CHILD_NAME", &name)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut session = service.accept().unwrap();
    assert_eq!(first_line(&mut contained), "CONNECTED");
    let mut ops = Vec::new();
    for _ in 0..100 {
        session
            .handle(|inc, _, _| {
                ops.push(inc.opcode());
                (inc.opcode() as i32, 0)
            })
            .unwrap();
    }
    assert_eq!(ops, (1..=100).collect::<Vec<_>>());
    contained.kill().unwrap();
    contained.wait().unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn connecting_to_nothing_and_to_a_socket_that_is_not_a_service_fail_typed() {
    let err = connect::<2>(unique("nobody").as_str(), ClientConfig::default()).unwrap_err();
    assert!(
        matches!(err, ConnectError::Io(ref e) if e.kind() == std::io::ErrorKind::ConnectionRefused),
        "{err}"
    );
    // A socket whose server says something else.
    let name = unique("impostor");
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let (mut c, _) = listener.accept().unwrap();
            c.write_all(&[0x55; 32]).unwrap();
        });
        let err = connect::<2>(name.as_str(), ClientConfig::default()).unwrap_err();
        assert!(matches!(err, ConnectError::NotAService), "{err}");
    });
    std::thread::scope(|s| {
        s.spawn(|| drop(listener.accept().unwrap()));
        let err = connect::<2>(name.as_str(), ClientConfig::default()).unwrap_err();
        assert!(
            matches!(err, ConnectError::Io(ref e) if e.kind() == std::io::ErrorKind::UnexpectedEof),
            "{err}"
        );
    });
}
