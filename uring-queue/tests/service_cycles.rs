//! Clients killed at random moments: after each death the server's
//! descriptor count is back to its baseline, and no file is left in
//! `/dev/shm` or `/tmp`. One test in its own binary, so that no other test
//! opens descriptors meanwhile. `SERVICE_KILL_CYCLES` sets the count (20
//! by default; the soak is 10,000).
#![cfg(target_os = "linux")]

mod common;

use core::time::Duration;
use std::io::Write;
use std::process::{Command, Stdio};
use uring_queue::uring::Request;
use uring_queue::uring::service::{BindOptions, ClientConfig, Hub, Service, connect};

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
    let cycles: u64 = std::env::var("SERVICE_KILL_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
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
    }
    drop(hub);
    assert_eq!(entries("/dev/shm"), shm);
    let new_tmp: Vec<_> = entries("/tmp")
        .into_iter()
        .filter(|e| !tmp.contains(e))
        .collect();
    assert!(
        new_tmp
            .iter()
            .all(|e| !e.contains("ncio") && !e.contains("uring")),
        "{new_tmp:?}"
    );
}
