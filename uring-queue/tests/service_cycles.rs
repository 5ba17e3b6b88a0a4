//! Clients killed at random moments: after each death the server's
//! descriptor count is back to its baseline, its resident memory stays
//! flat, and no file is left in `/dev/shm` or `/tmp`. Servers killed at
//! random moments: the clients reconnect to the next one under the same
//! name, and no request sent to one instance is answered by another.
//! `SERVICE_KILL_CYCLES` sets the client cycles (200 by default; the soak
//! is 10,000), `SERVICE_SERVER_KILL_CYCLES` the server cycles (20; the
//! soak is 100). The tests count this process's descriptors, so they take
//! turns (`SERIAL`), in a binary of their own.
#![cfg(target_os = "linux")]

mod common;

extern crate alloc;

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;
use uring_queue::uring::service::{
    BindOptions, ClientConfig, ConnectError, Connection, Hub, Service, connect,
};
use uring_queue::uring::{Error, Request};

/// The tests count this process's descriptors: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn entries(dir: &str) -> Vec<String> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// This process's resident memory, in KiB.
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// No entry of ours appeared in /dev/shm or /tmp. Other programs on a
/// shared machine make and remove theirs meanwhile (another suite's
/// `amp-<pid>-bell` in /dev/shm was seen to come and go during a run), so
/// an entry that went is not ours, and a new one is ours if its name says
/// so: every region here is a memfd named `uring-...`, every socket file
/// `ncio-...`.
fn nothing_left(shm: &[String], tmp: &[String]) {
    for (dir, before) in [("/dev/shm", shm), ("/tmp", tmp)] {
        let new: Vec<_> = entries(dir)
            .into_iter()
            .filter(|e| !before.contains(e))
            .collect();
        assert!(
            new.iter()
                .all(|e| !e.contains("ncio") && !e.contains("uring")),
            "new in {dir}: {new:?}"
        );
    }
}

fn cycles(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
#[cfg_attr(miri, ignore)]
fn killed_clients_leave_nothing_behind() {
    if let Ok(name) = std::env::var("SERVICE_CYCLE_CLIENT") {
        let client = connect::<4>(name.as_str(), ClientConfig::default()).unwrap();
        println!("CONNECTED");
        std::io::stdout().flush().unwrap();
        let mut op = 0u32;
        while client.call(Request::new(op)).is_ok() {
            op = op.wrapping_add(1);
        }
        return;
    }
    let _serial = serial();
    let cycles = cycles("SERVICE_KILL_CYCLES", 200);
    // Resident memory is taken after the first cycles, once the allocator
    // and the hub's tables have grown to what a cycle needs.
    let warm_up = (cycles / 4).clamp(1, 100);
    let mut warm = None;
    let (shm, tmp) = (entries("/dev/shm"), entries("/tmp"));
    let name = format!("ncio-test-cycles-{}", std::process::id());
    let mut hub = Hub::new(Service::bind(name.as_str(), BindOptions::default()).unwrap()).unwrap();
    let serve = |hub: &mut Hub| {
        hub.turn(Some(Duration::from_millis(1)), &mut |_, inc, _, _| {
            (inc.opcode() as i32, 0)
        })
        .unwrap()
    };
    let baseline = open_fds();
    let mut rng = common::XorShift(0x5eed_cafe);
    for cycle in 0..cycles {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "killed_clients_leave_nothing_behind",
                "--nocapture",
            ])
            .env("SERVICE_CYCLE_CLIENT", &name)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Serve until connected, then a random number of turns.
        while hub.clients() == 0 {
            serve(&mut hub);
        }
        for _ in 0..rng.next() % 20 {
            serve(&mut hub);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        while hub.clients() != 0 {
            serve(&mut hub);
        }
        assert_eq!(open_fds(), baseline, "descriptors after cycle {cycle}");
        if cycle + 1 == warm_up {
            warm = Some(resident_kib());
        }
    }
    if let Some(warm) = warm {
        let end = resident_kib();
        assert!(
            end <= warm + 1024,
            "resident memory grew from {warm} KiB to {end} KiB over {} cycles",
            cycles - warm_up
        );
    }
    drop(hub);
    nothing_left(&shm, &tmp);
}

/// Options whose park timeout never ends a wait: only the socket can.
fn no_timeout() -> ClientConfig {
    ClientConfig {
        options: uring_queue::uring::Options {
            park_timeout: Duration::from_secs(3600),
            ..Default::default()
        },
    }
}

/// Replies counted by the instance that sent them (index 0 unused).
type Replies = [AtomicU64];

/// The server child: answers each request with its opcode and, in the
/// response block, the instance number it was started as.
fn serve_as_instance(name: &str, instance: u32) -> ! {
    let mut hub = Hub::new(Service::bind(name, BindOptions::default()).unwrap()).unwrap();
    println!("BOUND");
    std::io::stdout().flush().unwrap();
    loop {
        hub.turn(None, &mut |_, inc, _, out| {
            let tag = instance.to_ne_bytes();
            let n = tag.len().min(out.len());
            out[..n].copy_from_slice(&tag[..n]);
            (inc.opcode() as i32, n)
        })
        .unwrap();
    }
}

/// One client's connection to one server instance, four requests in
/// flight, every reply checked: the opcode it was sent, and the tag of
/// the one instance this connection reached. Returns that instance (0 if
/// none answered) once the server is gone.
fn serve_connection(client: &Connection<4>, replies: &Replies, op: &mut u32) -> u32 {
    let mut tag = 0;
    let mut in_flight = VecDeque::new();
    let check = |reply: uring_queue::uring::Reply, sent: u32, tag: &mut u32| {
        assert_eq!(reply.result, sent as i32);
        let got = u32::from_ne_bytes(client.response(&reply).unwrap().try_into().unwrap());
        if *tag == 0 {
            *tag = got;
        }
        assert_eq!(got, *tag, "a reply from another instance");
        client.free_reply(reply);
        replies[got as usize].fetch_add(1, Ordering::Relaxed);
    };
    loop {
        while in_flight.len() < 4 {
            *op = op.wrapping_add(1) & 0x7fff_ffff;
            let out = match client.alloc(4) {
                Ok(out) => out,
                Err(e) => panic!("{e}"),
            };
            match client.submit(Request::new(*op).with_response(out)) {
                Ok(ticket) => in_flight.push_back((ticket, *op)),
                Err(Error::PeerGone) => break,
                Err(e) => panic!("{e}"),
            }
        }
        let Some((ticket, sent)) = in_flight.pop_front() else {
            return tag;
        };
        match client.wait(ticket) {
            Ok(reply) => check(reply, sent, &mut tag),
            Err(Error::PeerGone) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // What was in flight when the server went: answered by it, or not at
    // all; never by the next one (this connection's region is not its).
    for (ticket, sent) in in_flight {
        match client.wait(ticket) {
            Ok(reply) => check(reply, sent, &mut tag),
            Err(Error::PeerGone) => {}
            Err(e) => panic!("{e}"),
        }
    }
    tag
}

/// A client that reconnects whenever its server goes, until `stop`: each
/// connection reaches a newer instance than the one before.
fn reconnecting_client(name: &str, stop: &AtomicBool, replies: &Replies) {
    let mut last = 0;
    let mut op = 0;
    while !stop.load(Ordering::Relaxed) {
        let client = match connect::<4>(name, no_timeout()) {
            Ok(c) => c,
            // No server bound, or it died during the handshake.
            Err(ConnectError::Io(_)) => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let tag = serve_connection(&client, replies, &mut op);
        if tag != 0 {
            assert!(tag > last, "instance {tag} after instance {last}");
            last = tag;
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn killed_servers_are_replaced_and_answer_nothing_of_their_predecessors() {
    if let (Ok(name), Ok(instance)) = (
        std::env::var("SERVICE_CYCLE_SERVER"),
        std::env::var("SERVICE_CYCLE_INSTANCE"),
    ) {
        serve_as_instance(&name, instance.parse().unwrap());
    }
    let _serial = serial();
    let cycles = cycles("SERVICE_SERVER_KILL_CYCLES", 20);
    let (shm, tmp) = (entries("/dev/shm"), entries("/tmp"));
    let name = format!("ncio-test-server-cycles-{}", std::process::id());
    let baseline = open_fds();
    let stop = AtomicBool::new(false);
    let replies: Vec<AtomicU64> = (0..=cycles).map(|_| AtomicU64::new(0)).collect();
    let replies = &replies[..];
    let mut rng = common::XorShift(0x5e7e_c0de);
    std::thread::scope(|s| {
        let clients: Vec<_> = (0..3)
            .map(|_| s.spawn(|| reconnecting_client(&name, &stop, replies)))
            .collect();
        for cycle in 0..cycles {
            let mut server = Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "killed_servers_are_replaced_and_answer_nothing_of_their_predecessors",
                    "--nocapture",
                ])
                .env("SERVICE_CYCLE_SERVER", &name)
                .env("SERVICE_CYCLE_INSTANCE", (cycle + 1).to_string())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut out = std::io::BufReader::new(server.stdout.take().unwrap());
            let mut line = String::new();
            while !line.contains("BOUND") {
                line.clear();
                assert_ne!(out.read_line(&mut line).unwrap(), 0, "server {cycle} died");
            }
            // A quarter of the servers die at once, while clients are still
            // connecting; the others once they have sent a random number
            // of replies.
            if rng.next() % 4 != 0 {
                let answered = &replies[cycle as usize + 1];
                let target = 1 + rng.next() % 200;
                let deadline = Instant::now() + Duration::from_secs(60);
                while answered.load(Ordering::Relaxed) < target {
                    assert!(Instant::now() < deadline, "no replies from server {cycle}");
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            server.kill().unwrap();
            server.wait().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            c.join().unwrap();
        }
    });
    assert_eq!(open_fds(), baseline, "the clients' descriptors");
    nothing_left(&shm, &tmp);
}
