//! Two real processes: the parent sends 1,000,000 sequence-numbered records
//! through a memfd-backed ring, the child (this test binary, re-executed)
//! checks that each arrives exactly once, in order, intact, and reports its
//! tally back through a second ring.

#![cfg(target_os = "linux")]

use core::time::Duration;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Instant;
use uring_queue::{FrameConsumer, FrameProducer, RegionError, RingError, SharedMemory, SharedRing};

const RECORDS: u64 = 1_000_000;
const PEER_FD: &str = "URING_QUEUE_TEST_PEER_FD";
const SIZE: usize = 64 << 10;
const HALF: usize = SIZE / 2;
const TEST: &str = "two_processes_exchange_a_million_records";

fn payload_len(seq: u64) -> usize {
    8 + (seq % 57) as usize
}

fn fill(seq: u64, buf: &mut [u8]) {
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    for (k, b) in buf[8..].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(7).wrapping_add(k) as u8;
    }
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn two_processes_exchange_a_million_records() {
    if let Ok(fd) = std::env::var(PEER_FD) {
        return peer(fd.parse().expect("fd number"));
    }
    let mut shm = SharedMemory::create("uring-queue-test", SIZE).unwrap();
    shm.set_inheritable(true).unwrap();
    let fd = shm.fd().as_raw_fd();
    let (requests, replies) = shm.region().split_at(HALF).unwrap();
    let tx = SharedRing::<u64>::init(requests, 1024)
        .unwrap()
        .into_producer();
    let mut rx = SharedRing::<u64>::init(replies, 64)
        .unwrap()
        .into_consumer();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(PEER_FD, fd.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();

    let mut tx = FrameProducer::new(tx);
    let mut spins = 0u64;
    let mut expected_sum = 0u64;
    for seq in 0..RECORDS {
        let len = payload_len(seq);
        loop {
            match tx.grant(len) {
                Ok(mut grant) => {
                    fill(seq, grant.as_mut_bytes());
                    grant.commit();
                    break;
                }
                Err(e) => assert_eq!(e, RingError::Full),
            }
            spins += 1;
            if spins % 65_536 == 0 {
                assert!(!tx.is_abandoned(), "peer left early");
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("peer exited early: {status}");
                }
            }
            // Yield rather than spin: the machine may have fewer free cores
            // than the two processes need.
            std::thread::yield_now();
        }
        expected_sum = expected_sum.wrapping_add(seq);
    }
    drop(tx);

    // The peer's tally: count, then the sum of sequence numbers.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut tally = Vec::new();
    while tally.len() < 2 {
        match rx.pop() {
            Ok(v) => tally.push(v),
            Err(e) => {
                assert_eq!(e, RingError::Empty);
                assert!(Instant::now() < deadline, "no tally from the peer");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "peer failed: {status}");
    assert_eq!(tally, [RECORDS, expected_sum]);
}

/// The child's side: attach to both rings, check every record, send a tally.
fn peer(fd: i32) {
    // SAFETY: the parent made this descriptor inheritable for us; nothing
    // else in this process owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut shm = SharedMemory::open(fd).unwrap();
    let (requests, replies) = shm.region().split_at(HALF).unwrap();
    let rx = match SharedRing::<u64>::attach(requests) {
        Ok(ring) => ring.into_consumer(),
        Err(RegionError::NotReady { .. }) => panic!("parent initialises before spawning"),
        Err(e) => panic!("attach: {e}"),
    };
    let mut tx = SharedRing::<u64>::attach(replies).unwrap().into_producer();
    let mut rx = FrameConsumer::new(rx);
    let mut next = 0u64;
    let mut sum = 0u64;
    let mut want = [0u8; 8 + 57];
    loop {
        let abandoned = rx.is_abandoned();
        match rx.recv() {
            Ok(frame) => {
                let len = payload_len(next);
                fill(next, &mut want[..len]);
                assert_eq!(&*frame, &want[..len], "record {next}");
                sum = sum.wrapping_add(next);
                next += 1;
            }
            Err(RingError::Empty) if abandoned => break,
            Err(RingError::Empty) => std::thread::yield_now(),
            Err(e) => panic!("record {next}: {e}"),
        }
    }
    assert_eq!(next, RECORDS);
    tx.push(next).unwrap();
    tx.push(sum).unwrap();
}
