//! The `ipc` suite's server process, started as the suite starts it: it
//! exits cleanly when its client hangs up, and with a message and a failure
//! status on a bad request or a bad start.

#![allow(clippy::std_instead_of_core, reason = "a std-only test")]

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Output, Stdio};

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
