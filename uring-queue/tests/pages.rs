//! What backs a `SharedMemory`: `create_with` and `Pages`.

#![cfg(target_os = "linux")]

use std::io::ErrorKind;
use uring_queue::{Pages, SharedMemory, SharedRing};

/// A field of /proc/meminfo, in its own unit (pages or kB).
fn meminfo(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The creator's ring and a peer's view of the same file pass values.
fn passes_values(shm: &mut SharedMemory) {
    let mut peer = SharedMemory::open(shm.fd().try_clone_to_owned().unwrap()).unwrap();
    assert_eq!(peer.len(), shm.len());
    let mut tx = SharedRing::<u64>::init(shm.region(), 1024)
        .unwrap()
        .into_producer();
    let mut rx = SharedRing::<u64>::attach(peer.region())
        .unwrap()
        .into_consumer();
    for round in 0..5_000u64 {
        tx.push(round).unwrap();
        assert_eq!(rx.pop(), Ok(round));
    }
}

#[cfg_attr(
    miri,
    ignore = "memfd_create and mmap are system calls Miri cannot make"
)]
#[test]
fn normal_pages_are_what_create_makes() {
    let mut shm = SharedMemory::create_with("pages-normal", 12_345, Pages::Normal).unwrap();
    assert_eq!(shm.len(), 12_345);
    assert_eq!(rustix::fs::fstat(shm.fd()).unwrap().st_size, 12_345);
    passes_values(&mut shm);
}

#[cfg_attr(
    miri,
    ignore = "memfd_create and mmap are system calls Miri cannot make"
)]
#[test]
fn transparent_huge_pages_keep_the_length_and_the_seals() {
    let len = 4 << 20;
    let mut shm = SharedMemory::create_with("pages-thp", len, Pages::TransparentHuge).unwrap();
    assert_eq!(shm.len(), len);
    let seals = rustix::fs::fcntl_get_seals(shm.fd()).unwrap();
    assert!(seals.contains(rustix::fs::SealFlags::SHRINK | rustix::fs::SealFlags::GROW));
    passes_values(&mut shm);
}

/// With enough free huge pages the file is on hugetlbfs, whole pages long,
/// sealed and shared; without, the error says so at once.
#[cfg_attr(
    miri,
    ignore = "memfd_create and mmap are system calls Miri cannot make"
)]
#[test]
fn huge_pages_are_whole_pages_or_an_out_of_memory_error() {
    let page = meminfo("Hugepagesize:") as usize * 1024;
    let free = meminfo("HugePages_Free:") as usize;
    let len = page + 1;
    match SharedMemory::create_with("pages-huge", len, Pages::Huge) {
        Ok(mut shm) => {
            assert!(free >= 2, "created with {free} free huge pages");
            assert_eq!(shm.len(), 2 * page);
            let stat = rustix::fs::fstat(shm.fd()).unwrap();
            assert_eq!(stat.st_blksize as usize, page);
            assert_eq!(stat.st_size as usize, 2 * page);
            let seals = rustix::fs::fcntl_get_seals(shm.fd()).unwrap();
            assert!(seals.contains(rustix::fs::SealFlags::SHRINK | rustix::fs::SealFlags::GROW));
            passes_values(&mut shm);
        }
        Err(e) => {
            assert!(free < 2, "{free} free huge pages, yet: {e}");
            assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
        }
    }
}

#[cfg_attr(miri, ignore = "memfd_create is a system call Miri cannot make")]
#[test]
fn an_empty_request_is_refused_for_every_kind_of_page() {
    for pages in [Pages::Normal, Pages::TransparentHuge, Pages::Huge] {
        let err = SharedMemory::create_with("pages-empty", 0, pages).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{pages:?}");
    }
}
