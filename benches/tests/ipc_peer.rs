//! The `ipc` suite's server process, started as the suite starts it: it
//! exits cleanly when its client hangs up, and with a message and a failure
//! status on a bad request or a bad start.

#![allow(clippy::std_instead_of_core, reason = "a std-only test")]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Output, Stdio};
use uring_queue::SharedMemory;
use uring_queue::uring::{Client, Config, Futex, Request, Uring};

/// Starts the server for `role` on a fresh socket, lets `client` use the
/// other end, hangs up, and returns how the server ended.
fn serve(role: &str, parent: u32, client: impl FnOnce(&UnixStream)) -> Output {
    let (ours, theirs) = UnixStream::pair().unwrap();
    // SAFETY: F_DUPFD on an open descriptor; the copy (close-on-exec clear,
    // for the child) is owned by the `OwnedFd` alone.
    let inherited = unsafe {
        let raw = libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD, 3);
        assert!(raw >= 3);
        OwnedFd::from_raw_fd(raw)
    };
    let child = Command::new(env!("CARGO_BIN_EXE_compare"))
        .env("COMPARE_IPC_PEER", role)
        .env("COMPARE_IPC_FDS", inherited.as_raw_fd().to_string())
        .env("COMPARE_IPC_PARENT", parent.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop((inherited, theirs));
    client(&ours);
    drop(ours);
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn servers_exit_cleanly_when_the_client_hangs_up() {
    for role in ["unix", "tokio"] {
        let out = serve(role, std::process::id(), |_| {});
        assert!(out.status.success(), "{role}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "the server prints no rows");
    }
}

#[test]
fn a_wrong_body_byte_stops_the_server_with_its_offset() {
    for role in ["unix", "tokio"] {
        let out = serve(role, std::process::id(), |s| {
            let mut frame = 64i32.to_le_bytes().to_vec();
            // All zeros: the pattern's first nonzero byte is the offset.
            frame.extend_from_slice(&[0; 64]);
            (&*s).write_all(&frame).unwrap();
        });
        let msg = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{role}: {msg}");
        assert!(
            msg.contains(&format!("ipc {role} server: request body of 64 bytes")),
            "{msg}"
        );
        assert!(msg.contains("differs at byte"), "{msg}");
    }
}

#[test]
fn an_oversize_header_stops_the_server() {
    let out = serve("unix", std::process::id(), |s| {
        (&*s).write_all(&(5i32 << 20).to_le_bytes()).unwrap();
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad request header 5242880"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_server_not_started_by_its_parent_refuses_to_run() {
    let out = serve("unix", 1, |_| {});
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("parent exited"), "{}", stderr(&out));
    let out = serve("nonesuch", std::process::id(), |_| {});
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown role"), "{}", stderr(&out));
}

/// Starts the `uring_queue` server on a fresh region, lets `client` use the
/// client end, closes it, and returns how the server ended.
fn serve_uring(client: impl FnOnce(&Client<'_, 4, Futex>)) -> Output {
    let config = Config::new(4, 4, 1 << 16);
    let mut shm = SharedMemory::create("ipc-test", Uring::required_size(&config).unwrap()).unwrap();
    // SAFETY: as in `serve`.
    let inherited = unsafe {
        let raw = libc::fcntl(shm.fd().as_raw_fd(), libc::F_DUPFD, 3);
        assert!(raw >= 3);
        OwnedFd::from_raw_fd(raw)
    };
    let ours = Uring::init(shm.region(), config)
        .unwrap()
        .into_client::<4, _>(Futex::new());
    let child = Command::new(env!("CARGO_BIN_EXE_compare"))
        .env("COMPARE_IPC_PEER", "uring_queue")
        .env("COMPARE_IPC_FDS", inherited.as_raw_fd().to_string())
        .env("COMPARE_IPC_PARENT", std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(inherited);
    client(&ours);
    drop(ours);
    child.wait_with_output().unwrap()
}

fn uring_request(client: &Client<'_, 4, Futex>, body: &[u8]) -> Request {
    let mut payload = client.alloc(body.len()).unwrap();
    client
        .bytes_mut(&mut payload)
        .unwrap()
        .copy_from_slice(body);
    Request::new(body.len() as u32)
        .with_payload(payload)
        .with_response(client.alloc(body.len()).unwrap())
}

#[test]
fn the_uring_server_answers_then_exits_cleanly_when_the_client_closes() {
    let out = serve_uring(|client| {
        // An empty body is a valid request with nothing to compare.
        let reply = client.call(uring_request(client, &[])).unwrap();
        assert_eq!(reply.result, !0, "the reply header is the length, NOT-ed");
        assert_eq!(reply.response_len(), 0);
        client.free_reply(reply);
    });
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_wrong_byte_stops_the_uring_server_with_its_offset() {
    let out = serve_uring(|client| {
        let ticket = client.try_submit(uring_request(client, &[0; 64])).unwrap();
        // The server stops without completing; the client sees it go.
        assert!(client.wait(ticket).is_err());
    });
    let msg = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{msg}");
    assert!(
        msg.contains("ipc uring_queue server: request body of 64 bytes")
            && msg.contains("differs at byte"),
        "{msg}"
    );
}

/// The regimes' request flags (benches/src/suites/ipc/regimes.rs).
const SIGNAL: u32 = 1;
const IN_PLACE: u32 = 2;
const POLL_ON: u32 = 4;
const POLL_OFF: u32 = 8;

#[test]
fn the_uring_server_answers_signal_and_control_requests_while_polling_or_not() {
    let out = serve_uring(|client| {
        for control in [None, Some(POLL_ON)] {
            if let Some(flags) = control {
                let reply = client.call(Request::new(0).with_flags(flags)).unwrap();
                assert_eq!(reply.result, 0, "control {flags:#x}");
            }
            // Signal only: no byte written, the whole response block
            // reported back, the reply header checked as ever.
            let request = Request::new(64)
                .with_flags(SIGNAL)
                .with_payload(client.alloc(64).unwrap())
                .with_response(client.alloc(64).unwrap());
            let reply = client.call(request).unwrap();
            assert_eq!((reply.result, reply.response_len()), (!64, 64));
            assert!(!reply.in_place());
            client.free_reply(reply);
        }
        let reply = client.call(Request::new(0).with_flags(POLL_OFF)).unwrap();
        assert_eq!(reply.result, 0);
    });
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_wrong_byte_stops_the_in_place_server_with_its_offset() {
    let out = serve_uring(|client| {
        let mut body = client.alloc(64).unwrap();
        client.bytes_mut(&mut body).unwrap().fill(0);
        let request = Request::new(64).with_flags(IN_PLACE).with_payload(body);
        let ticket = client.try_submit(request).unwrap();
        assert!(client.wait(ticket).is_err());
    });
    let msg = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{msg}");
    assert!(
        msg.contains("request body of 64 bytes") && msg.contains("differs at byte"),
        "{msg}"
    );
}

#[test]
fn unknown_request_flags_stop_the_uring_server() {
    let out = serve_uring(|client| {
        let ticket = client.try_submit(Request::new(0).with_flags(16)).unwrap();
        assert!(client.wait(ticket).is_err());
    });
    let msg = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{msg}");
    assert!(msg.contains("request flags 0x10"), "{msg}");
}

#[test]
fn the_load_runs_until_its_client_hangs_up() {
    let out = serve("load", std::process::id(), |s| {
        let mut running = [0_u8];
        (&*s).read_exact(&mut running).unwrap();
        assert_eq!(running, [1], "the load says when its threads run");
    });
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The iceoryx2 server, over services this process creates as the suite's
/// client does (`compare-ipc/<client pid>/lane<i>`, lane 0 for 4 B bodies).
#[cfg(feature = "iceoryx2")]
mod iceoryx2_server {
    use super::*;
    use iceoryx2::prelude::*;

    #[test]
    fn a_wrong_byte_stops_the_iceoryx2_server_with_its_offset() {
        set_log_level(LogLevel::Error);
        let node = NodeBuilder::new()
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<ipc::Service>()
            .unwrap();
        let name = format!("compare-ipc/{}/lane0", std::process::id());
        let service = node
            .service_builder(&ServiceName::new(&name).unwrap())
            .request_response::<[u8], [u8]>()
            .request_user_header::<i32>()
            .response_user_header::<i32>()
            .create()
            .unwrap();
        let client = service
            .client_builder()
            .initial_max_slice_len(4)
            .create()
            .unwrap();
        let out = serve("iceoryx2", std::process::id(), |s| {
            let mut opened = [0_u8];
            (&*s).read_exact(&mut opened).unwrap();
            assert_eq!(opened[0] & 1, 1, "lane 0 opened");
            // Wake lane 0; the server answers when it polls.
            (&*s).write_all(&[0]).unwrap();
            (&*s).read_exact(&mut opened).unwrap();
            let mut request = client
                .loan_slice_uninit(4)
                .unwrap()
                .write_from_slice(&[0; 4]);
            *request.user_header_mut() = 4;
            let pending = request.send().unwrap();
            assert_eq!(pending.number_of_server_connections(), 1);
            // The server stops without answering: its end of the socket
            // closes.
            assert_eq!((&*s).read(&mut opened).unwrap(), 0);
        });
        let msg = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{msg}");
        assert!(
            msg.contains("ipc iceoryx2 server: request body of 4 bytes")
                && msg.contains("differs at byte"),
            "{msg}"
        );
    }
}
