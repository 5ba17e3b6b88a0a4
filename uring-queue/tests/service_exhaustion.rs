//! A server out of descriptors: while `accept` fails with `EMFILE`, the
//! listening socket stays readable, and a server that kept watching it
//! would wake at once, forever (100 % of a CPU for nothing). Each server
//! form runs in a child process whose descriptor limit is lowered (`ulimit
//! -n`) and then filled; a client waits in the backlog meanwhile. The
//! child's CPU time over a few seconds of wall time must stay small (a
//! resource bound, generous for a loaded machine, not a timing), and once
//! the child frees its descriptors the waiting client is served.
//! Processes and sockets: not under Miri.
#![cfg(target_os = "linux")]

use core::time::Duration;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;
use uring_queue::uring::Request;
use uring_queue::uring::service::{
    AsyncHub, AsyncService, BindOptions, ClientConfig, Hub, Service, connect,
};

/// The child's descriptor limit: room for the test harness, the service
/// and a runtime, filled up before any client comes.
const FD_LIMIT: u32 = 64;

/// The wall time over which the child's CPU time is measured.
const WINDOW: Duration = Duration::from_secs(3);

/// The most CPU time the child may use over [`WINDOW`] while out of
/// descriptors. A server that wakes at once for its readable listener
/// burns the whole window (one core), or on a loaded two-core machine
/// still a large share of it; one that sleeps uses a few milliseconds.
const CPU_BOUND: Duration = Duration::from_millis(150);

/// Runs this test binary again, under a lowered descriptor limit, as a
/// child serving `name` in form `role` (see `child_entry`).
fn child(role: &str, name: &str) -> Child {
    let exe = std::env::current_exe().unwrap();
    Command::new("sh")
        .args(["-c", &format!("ulimit -n {FD_LIMIT} && exec \"$0\" \"$@\"")])
        .arg(exe)
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("EXHAUSTION_CHILD_ROLE", role)
        .env("EXHAUSTION_CHILD_NAME", name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Opens `/dev/null` until the process is out of descriptors; the files
/// are freed when the line "FREE" comes on stdin.
fn fill_descriptors() {
    let mut files = Vec::new();
    let err = loop {
        match File::open("/dev/null") {
            Ok(f) => files.push(f),
            Err(e) => break e,
        }
    };
    assert_eq!(err.raw_os_error(), Some(24), "EMFILE expected: {err}");
    println!("FULL {}", files.len());
    std::io::stdout().flush().unwrap();
    std::thread::spawn(move || {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "FREE");
        drop(files);
    });
}

/// The answer every server form gives.
fn answer(opcode: u32) -> i32 {
    opcode as i32 * 2
}

/// The child processes' side: not a test of its own (it returns at once
/// unless started by `child`). Binds, fills its descriptors, then serves
/// until killed.
#[test]
fn child_entry() {
    let (Ok(role), Ok(name)) = (
        std::env::var("EXHAUSTION_CHILD_ROLE"),
        std::env::var("EXHAUSTION_CHILD_NAME"),
    ) else {
        return;
    };
    let service = Service::bind(name.as_str(), BindOptions::default()).unwrap();
    match role.as_str() {
        "hub" => {
            let mut hub = Hub::new(service).unwrap();
            fill_descriptors();
            loop {
                hub.turn(Some(Duration::from_secs(1)), &mut |_, inc, _, _| {
                    (answer(inc.opcode()), 0)
                })
                .unwrap();
            }
        }
        "async_hub" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut hub = AsyncHub::new(service).unwrap();
                fill_descriptors();
                loop {
                    hub.turn(&mut |_, inc, _, _| (answer(inc.opcode()), 0))
                        .await
                        .unwrap();
                }
            });
        }
        "async_service" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let service = AsyncService::new(service).unwrap();
                fill_descriptors();
                loop {
                    let mut session = service.accept().await.unwrap();
                    tokio::spawn(async move {
                        while session
                            .handle(|inc, _, _| (answer(inc.opcode()), 0))
                            .await
                            .is_ok()
                        {}
                    });
                }
            });
        }
        other => panic!("unknown role {other}"),
    }
}

/// Waits for the child's "FULL" line (the test runner's own lines
/// skipped).
fn wait_full(child: &mut Child) -> String {
    let mut out = BufReader::new(child.stdout.as_mut().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(out.read_line(&mut line).unwrap(), 0, "the child ended");
        if let Some(at) = line.find("FULL") {
            return line[at..].trim().to_owned();
        }
    }
}

/// The CPU time (user and system, every thread) process `pid` has used.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which ends with the last ')':
    // state is field 3, utime 14 and stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // Linux reports these in USER_HZ, 100 per second on every architecture
    // it exposes to user space (`getconf CLK_TCK`).
    Duration::from_millis(ticks * 10)
}

/// Kills the child when the test ends, passing or not.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The scenario for one server form.
fn out_of_descriptors_sleeps_then_accepts(role: &str) {
    let name = format!("ncio-test-exhaustion-{role}-{}", std::process::id());
    let mut child = Reap(child(role, &name));
    let full = wait_full(&mut child.0);
    eprintln!("{role}: {full}");

    // A client connects: the kernel queues it, the child cannot accept it.
    let (tx, rx) = mpsc::channel();
    let client = std::thread::spawn({
        let name = name.clone();
        move || {
            let result = connect::<4>(name.as_str(), ClientConfig::default())
                .map_err(|e| e.to_string())
                .and_then(|c| c.call(Request::new(21)).map_err(|e| e.to_string()));
            tx.send(result.map(|reply| reply.result)).unwrap();
        }
    });
    // Let the connection reach the backlog and the child fail on it.
    std::thread::sleep(Duration::from_millis(300));

    let pid = child.0.id();
    let (before, start) = (cpu_time(pid), Instant::now());
    std::thread::sleep(WINDOW);
    let (used, wall) = (cpu_time(pid) - before, start.elapsed());
    eprintln!("{role}: {used:?} of CPU over {wall:?} out of descriptors");
    assert!(
        rx.try_recv().is_err(),
        "{role}: the client was served while the server had no descriptor"
    );
    assert!(
        used < CPU_BOUND,
        "{role}: the server used {used:?} of CPU over {wall:?} out of descriptors"
    );

    // Descriptors come back: the waiting client is accepted and served.
    let stdin = child.0.stdin.as_mut().unwrap();
    stdin.write_all(b"FREE\n").unwrap();
    stdin.flush().unwrap();
    let served = rx.recv_timeout(Duration::from_secs(30));
    assert_eq!(served, Ok(Ok(answer(21))), "{role}");
    client.join().unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_hub_out_of_descriptors_sleeps_and_accepts_once_they_free_up() {
    out_of_descriptors_sleeps_then_accepts("hub");
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_async_hub_out_of_descriptors_sleeps_and_accepts_once_they_free_up() {
    out_of_descriptors_sleeps_then_accepts("async_hub");
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_async_service_out_of_descriptors_sleeps_and_accepts_once_they_free_up() {
    out_of_descriptors_sleeps_then_accepts("async_service");
}
