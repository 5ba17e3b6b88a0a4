//! A peer must not be able to crash us through the shared file.
//!
//! Shrinking a file that another process has mapped makes that process's next
//! access past the new end die with `SIGBUS`. `SharedMemory` seals the file
//! against that; these tests check, with real processes where it matters, that
//! the seal holds, that it is the seal that protects us (without it the same
//! truncation does kill a process), and what `open` does with files that are
//! not sealed.

#![cfg(target_os = "linux")]

use core::time::Duration;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{
    FallocateFlags, MemfdFlags, Mode, OFlags, SealFlags, fallocate, fcntl_add_seals,
    fcntl_get_seals, fstat, ftruncate, memfd_create,
};
use rustix::io::Errno;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::Instant;
use uring_queue::{OpenError, RingError, SharedMemory, SharedRing};

const PEER_FD: &str = "URING_QUEUE_TEST_SEAL_FD";
const SIZE: usize = 8192;
const HALF: usize = SIZE / 2;
const ROUNDS: u64 = 10_000;
const SIGBUS: i32 = 7;

/// Re-executes this test binary to run only `test`, with `fd` inherited and
/// its number in the environment.
fn spawn_peer(test: &str, fd: i32) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(PEER_FD, fd.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// The descriptor the parent passed, in a child started by `spawn_peer`.
fn inherited_fd() -> Option<OwnedFd> {
    let fd: i32 = std::env::var(PEER_FD).ok()?.parse().expect("fd number");
    // SAFETY: the parent made this descriptor inheritable for this process;
    // nothing else in it owns the descriptor.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Pops one value, waiting for it while the peer is alive.
fn pop_from(rx: &mut uring_queue::Consumer<'_, u64>, child: &mut Child) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match rx.pop() {
            Ok(v) => return v,
            Err(e) => assert_eq!(e, RingError::Empty),
        }
        if let Some(status) = child.try_wait().unwrap() {
            // It may have pushed its last value just before exiting.
            return rx
                .pop()
                .unwrap_or_else(|e| panic!("peer exited ({status}), ring {e}"));
        }
        assert!(Instant::now() < deadline, "nothing from the peer");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every way the peer tries to change the file's size or seals, in order,
/// with the error each must give; `Ok(())` would be a hole in the seal.
fn peer_attacks(fd: &OwnedFd) -> Vec<Result<(), Errno>> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    // A second, independent open of the same file: seals belong to the
    // file, not to a descriptor.
    let reopened = rustix::fs::open(path.as_str(), OFlags::RDWR, Mode::empty()).unwrap();
    // Shrinking comes last, so that if the seal did not hold the file would
    // be left short under the parent's mapping.
    vec![
        fcntl_add_seals(fd, SealFlags::FUTURE_WRITE),
        fcntl_add_seals(fd, SealFlags::WRITE),
        ftruncate(fd, 2 * SIZE as u64),
        fallocate(fd, FallocateFlags::empty(), 0, 2 * SIZE as u64),
        ftruncate(fd, (HALF / 2) as u64),
        ftruncate(&reopened, 0),
        ftruncate(fd, 0),
    ]
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn a_peer_cannot_shrink_the_file_under_us() {
    const TEST: &str = "a_peer_cannot_shrink_the_file_under_us";
    if let Some(fd) = inherited_fd() {
        return shrinking_peer(fd);
    }
    let mut shm = SharedMemory::create("uring-queue-seal", SIZE).unwrap();
    shm.set_inheritable(true).unwrap();
    let raw_fd = shm.fd().as_raw_fd();
    let watch = shm.fd().try_clone_to_owned().unwrap();
    let (requests, replies) = shm.region().split_at(HALF).unwrap();
    let mut tx = SharedRing::<u64>::init(requests, 64)
        .unwrap()
        .into_producer();
    let mut rx = SharedRing::<u64>::init(replies, 64)
        .unwrap()
        .into_consumer();
    let mut child = spawn_peer(TEST, raw_fd);

    // The peer attacks the file, then reports how each attack went (0 = it
    // succeeded, else the errno): every one must have failed with EPERM. Had
    // the file been shrunk, this first read of the region would be our
    // `SIGBUS`.
    let attacks = pop_from(&mut rx, &mut child);
    let results: Vec<u64> = (0..attacks)
        .map(|_| pop_from(&mut rx, &mut child))
        .collect();
    assert_eq!(attacks, 7);
    assert_eq!(results, vec![Errno::PERM.raw_os_error() as u64; 7]);

    // After the attacks, both sides keep working through the region: a run
    // of sequence numbers there, their sum back.
    let mut sum = 0u64;
    for seq in 0..ROUNDS {
        while let Err(e) = tx.push(seq) {
            assert_eq!(e.error(), RingError::Full);
            if let Some(status) = child.try_wait().unwrap() {
                panic!("peer exited early: {status}");
            }
            std::thread::yield_now();
        }
        sum += seq;
    }
    drop(tx);
    // The peer unmaps its view and closes its descriptor when it exits; our
    // mapping is not affected.
    let status = child.wait().unwrap();
    assert!(status.success(), "peer failed: {status}");
    assert_eq!(rx.pop(), Ok(ROUNDS));
    assert_eq!(rx.pop(), Ok(sum));
    assert_eq!(fstat(&watch).unwrap().st_size, SIZE as i64);
}

/// The child's side: try to shrink the file (and otherwise get around its
/// seals) through the descriptor it was given, then map it, report, and carry
/// on with the rings.
fn shrinking_peer(fd: OwnedFd) {
    let results = peer_attacks(&fd);
    let mut shm = SharedMemory::open(fd).unwrap();
    let (requests, replies) = shm.region().split_at(HALF).unwrap();
    let mut rx = SharedRing::<u64>::attach(requests).unwrap().into_consumer();
    let mut tx = SharedRing::<u64>::attach(replies).unwrap().into_producer();

    tx.push(results.len() as u64).unwrap();
    for r in &results {
        tx.push(r.err().map_or(0, |e| e.raw_os_error() as u64))
            .unwrap();
    }

    let mut next = 0u64;
    let mut sum = 0u64;
    loop {
        let abandoned = rx.is_abandoned();
        match rx.pop() {
            Ok(v) => {
                assert_eq!(v, next);
                sum += v;
                next += 1;
            }
            Err(RingError::Empty) if abandoned => break,
            Err(RingError::Empty) => std::thread::yield_now(),
            Err(e) => panic!("after {next} values: {e}"),
        }
    }
    tx.push(next).unwrap();
    tx.push(sum).unwrap();
}

/// The control: the same truncation on a file without the seal does kill the
/// process that has it mapped. (This is what the test above would see if the
/// seal were missing.)
#[test]
#[cfg_attr(miri, ignore = "spawns a process and maps shared memory")]
fn without_the_seal_truncation_kills_the_mapping_process() {
    const TEST: &str = "without_the_seal_truncation_kills_the_mapping_process";
    if std::env::var(PEER_FD).is_ok() {
        return truncated_under_itself();
    }
    let mut child = spawn_peer(TEST, -1);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(SIGBUS), "child ended with {status}");
}

fn truncated_under_itself() {
    use rustix::mm::{MapFlags, ProtFlags, mmap};
    let fd = memfd_create("unsealed", MemfdFlags::CLOEXEC).unwrap();
    ftruncate(&fd, SIZE as u64).unwrap();
    // SAFETY: a fresh shared mapping chosen by the kernel; it is never
    // unmapped (the process ends in this function).
    let ptr = unsafe {
        mmap(
            core::ptr::null_mut(),
            SIZE,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            fd.as_fd(),
            0,
        )
    }
    .unwrap()
    .cast::<u8>();
    // SAFETY: in bounds of the mapping, which nothing else accesses.
    unsafe { ptr.write_volatile(1) };
    ftruncate(&fd, 0).unwrap();
    // SAFETY: still within the mapping; the file under it is gone, so this
    // access raises `SIGBUS`, which the parent expects.
    unsafe { ptr.write_volatile(2) };
    // Reaching this line means the kernel did not fault: exit normally so
    // that the parent's assertion fails.
}

#[test]
#[cfg_attr(miri, ignore = "makes system calls")]
fn open_refuses_files_it_cannot_seal() {
    // A memfd made without sealing allowed.
    let fd = memfd_create("unsealable", MemfdFlags::CLOEXEC).unwrap();
    ftruncate(&fd, SIZE as u64).unwrap();
    let clone = fd.try_clone().unwrap();
    assert!(matches!(SharedMemory::open(fd), Err(OpenError::NotSealed)));
    // Refusing it left it shrinkable, as it was: `open` did not map it.
    assert_eq!(ftruncate(&clone, 0), Ok(()));

    // A memfd whose seals were frozen without the one that matters.
    let fd = memfd_create("frozen", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
    ftruncate(&fd, SIZE as u64).unwrap();
    fcntl_add_seals(&fd, SealFlags::GROW | SealFlags::SEAL).unwrap();
    let err = SharedMemory::open(fd).unwrap_err();
    assert!(matches!(err, OpenError::NotSealed), "{err:?}");
    // It converts into an `io::Error` that still carries the cause.
    let io = std::io::Error::from(err);
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
    assert!(matches!(
        io.get_ref().and_then(|e| e.downcast_ref::<OpenError>()),
        Some(OpenError::NotSealed)
    ));

    // A regular file (on whatever file system the temporary directory is).
    let path = std::env::temp_dir().join(format!("uring-queue-seal-{}", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(SIZE as u64).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        SharedMemory::open(file.into()),
        Err(OpenError::NotSealed)
    ));

    // A file on `/dev/shm` (tmpfs): seals exist there but start frozen.
    let path = format!("/dev/shm/uring-queue-seal-{}", std::process::id());
    if let Ok(file) = std::fs::File::create(&path) {
        std::fs::remove_file(&path).unwrap();
        file.set_len(SIZE as u64).unwrap();
        assert_eq!(fcntl_get_seals(&file), Ok(SealFlags::SEAL));
        assert!(matches!(
            SharedMemory::open(file.into()),
            Err(OpenError::NotSealed)
        ));
    }

    // Something that is not a file at all.
    let (reader, _writer) = std::io::pipe().unwrap();
    assert!(matches!(
        SharedMemory::open(reader.into()),
        Err(OpenError::NotSealed)
    ));

    // A sealed but empty file.
    let fd = memfd_create("empty", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
    assert!(matches!(SharedMemory::open(fd), Err(OpenError::Empty)));
}

#[test]
#[cfg_attr(miri, ignore = "makes system calls")]
fn open_seals_a_file_that_allows_it() {
    let fd = memfd_create("sealable", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
    ftruncate(&fd, SIZE as u64).unwrap();
    let other = fd.try_clone().unwrap();
    assert_eq!(fcntl_get_seals(&other), Ok(SealFlags::empty()));
    let mut shm = SharedMemory::open(fd).unwrap();
    assert_eq!(shm.len(), SIZE);
    // Sealed for every holder of the file, against shrinking only.
    assert_eq!(fcntl_get_seals(&other), Ok(SealFlags::SHRINK));
    assert_eq!(ftruncate(&other, 0), Err(Errno::PERM));
    assert_eq!(ftruncate(&other, SIZE as u64 - 1), Err(Errno::PERM));
    // Growing stays allowed (its creator did not seal that) and is harmless:
    // the mapping keeps the size it had, all of it still backed.
    assert_eq!(ftruncate(&other, 2 * SIZE as u64), Ok(()));
    assert_eq!(shm.len(), SIZE);
    let (mut tx, mut rx) = SharedRing::<u64>::init(shm.region(), 256).unwrap().split();
    for v in 0..1000 {
        tx.push(v).unwrap();
        assert_eq!(rx.pop(), Ok(v));
    }
}

/// Every byte of the mapping, read through it.
fn bytes(shm: &mut SharedMemory) -> Vec<u8> {
    let region = shm.region();
    (0..region.len())
        // SAFETY: `region` is `len` readable bytes of the mapping, borrowed
        // from `shm` for this whole expression; nothing writes to them
        // meanwhile. Volatile, because the kernel may change them behind
        // the compiler's back (that is what the test is about).
        .map(|i| unsafe { region.as_ptr().add(i).read_volatile() })
        .collect()
}

/// `F_SEAL_SHRINK` does not stop a peer from punching a hole in the file
/// (only `F_SEAL_WRITE` / `F_SEAL_FUTURE_WRITE` would, and neither can be
/// used with a ring both sides write). That is harmless: the pages read back
/// as zeros, as if the peer had written zeros into the region, which the ring
/// already survives; no access faults. Which process punches makes no
/// difference to the mapping, so this runs in one.
#[test]
#[cfg_attr(miri, ignore = "makes system calls")]
fn a_punched_hole_reads_as_zeros_not_sigbus() {
    let mut shm = SharedMemory::create("uring-queue-punch", SIZE).unwrap();
    let mut view = SharedMemory::open(shm.fd().try_clone_to_owned().unwrap()).unwrap();
    {
        let (mut tx, _rx) = SharedRing::<u64>::init(shm.region(), 256).unwrap().split();
        for v in 1..=100 {
            tx.push(v).unwrap();
        }
    }
    // Every byte we touched (header, indices, slots) is now nonzero somewhere.
    assert!(bytes(&mut view).iter().any(|&b| b != 0));

    let peer = shm.fd().try_clone_to_owned().unwrap();
    fallocate(
        &peer,
        FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
        0,
        SIZE as u64,
    )
    .unwrap();
    assert_eq!(fstat(&peer).unwrap().st_size, SIZE as i64);

    // Both mappings read zeros, without a fault.
    assert!(bytes(&mut shm).iter().all(|&b| b == 0));
    assert!(bytes(&mut view).iter().all(|&b| b == 0));
    // And the memory is live shared memory again: a new ring in one mapping
    // is seen through the other.
    let (mut tx, _) = SharedRing::<u64>::init(shm.region(), 256).unwrap().split();
    let (_, mut rx) = SharedRing::<u64>::attach(view.region()).unwrap().split();
    for v in 0..1000 {
        tx.push(v).unwrap();
        assert_eq!(rx.pop(), Ok(v));
    }
}
