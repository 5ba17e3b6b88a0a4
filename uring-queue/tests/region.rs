//! Shared-region rings: init and attach validation, and a peer that writes
//! garbage into the region while the ring is in use.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use uring_queue::{
    CapacityError, FrameConsumer, FrameProducer, MAX_CAPACITY, PushError, RecordHeader, Region,
    RegionError, RingError, SharedRing,
};

/// Memory for tests: 8-byte aligned, zeroed, reached only through `ptr`.
struct Mem {
    _buf: Vec<u64>,
    ptr: NonNull<u8>,
    len: usize,
}

impl Mem {
    fn new(bytes: usize) -> Self {
        let mut buf = vec![0u64; bytes.div_ceil(8)];
        let ptr = NonNull::new(buf.as_mut_ptr().cast::<u8>()).unwrap();
        let len = buf.len() * 8;
        Self {
            _buf: buf,
            ptr,
            len,
        }
    }

    /// A view of the memory, as a peer process would have one.
    fn view(&self) -> Region<'_> {
        // SAFETY: the buffer lives as long as `self`, is only reached through
        // `ptr` (regions and the atomic words below), and each test builds
        // one producer and one consumer on it.
        unsafe { Region::from_raw_parts(self.ptr, self.len) }
    }

    /// The word at byte `offset`, as a hostile peer would write it.
    fn word(&self, offset: usize) -> &AtomicU32 {
        assert!(offset + 4 <= self.len && offset % 4 == 0);
        // SAFETY: in bounds and aligned (checked above); the rings access
        // index and header words atomically too, and tests poke slot words
        // only while the ring does not touch them.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(offset).cast()) }
    }

    fn poke(&self, offset: usize, value: u32) {
        self.word(offset).store(value, Ordering::SeqCst);
    }
}

const TAIL: usize = 128;
const HEAD: usize = 256;
const DATA: usize = 384;

#[test]
fn layout_is_the_documented_one() {
    let mem = Mem::new(1024);
    SharedRing::<u32>::init(mem.view(), 16).unwrap();
    let w: Vec<u32> = (0..11)
        .map(|k| mem.word(k * 4).load(Ordering::SeqCst))
        .collect();
    assert_eq!(
        w,
        [
            uring_queue::SHARED_RING_MAGIC,
            uring_queue::SHARED_RING_VERSION,
            2,
            4,
            4,
            16,
            TAIL as u32,
            HEAD as u32,
            DATA as u32,
            (DATA + 64) as u32,
            1,
        ]
    );
    assert_eq!(SharedRing::<u32>::required_size(16), Ok(DATA + 64));
}

#[test]
fn init_then_attach_exchanges_elements() {
    let mem = Mem::new(4096);
    let mut tx = SharedRing::<u64>::init(mem.view(), 8)
        .unwrap()
        .into_producer();
    tx.push_slice(&[0, 1, 2]).unwrap();
    // The consumer attaches after the producer started: it sees the items.
    let mut rx = SharedRing::<u64>::attach(mem.view())
        .unwrap()
        .into_consumer();
    assert_eq!(rx.len(), 3);
    for i in 3..40u64 {
        tx.push(i).unwrap();
        assert_eq!(rx.pop(), Ok(i - 3));
    }
    assert!(!rx.is_abandoned());
    drop(tx);
    assert!(rx.is_abandoned());
    assert_eq!(rx.pop_slice(&mut [0; 8]), Ok(3));
}

#[test]
fn init_refuses_bad_requests() {
    let mem = Mem::new(1024);
    assert_eq!(
        SharedRing::<u64>::init(mem.view(), 12).unwrap_err(),
        RegionError::Capacity(CapacityError::NotPowerOfTwo { capacity: 12 })
    );
    assert_eq!(
        SharedRing::<u64>::init(mem.view(), 0).unwrap_err(),
        RegionError::Capacity(CapacityError::NotPowerOfTwo { capacity: 0 })
    );
    // Above `MAX_CAPACITY` (a 32-bit `usize` has no power of two there).
    #[cfg(target_pointer_width = "64")]
    assert_eq!(
        SharedRing::<u64>::init(mem.view(), 1 << 32).unwrap_err(),
        RegionError::Capacity(CapacityError::TooLarge {
            capacity: 1 << 32,
            max: MAX_CAPACITY
        })
    );
    // Within `MAX_CAPACITY`, but 2^31 `u64`s do not fit 32-bit offsets:
    // 2^28 is the largest capacity that does.
    assert_eq!(
        SharedRing::<u64>::required_size(1 << 31).unwrap_err(),
        RegionError::Capacity(CapacityError::TooLarge {
            capacity: 1 << 31,
            max: 1 << 28
        })
    );
    assert_eq!(
        SharedRing::<u64>::required_size(1 << 28),
        Ok(384 + (8 << 28))
    );
    assert_eq!(
        SharedRing::<u64>::init(mem.view(), 128).unwrap_err(),
        RegionError::TooSmall {
            needed: DATA + 1024,
            actual: 1024
        }
    );
    // SAFETY: one byte into the same memory, one byte shorter: in bounds.
    let odd = unsafe { Region::from_raw_parts(mem.ptr.add(1), mem.len - 1) };
    assert_eq!(
        SharedRing::<u8>::init(odd, 16).unwrap_err(),
        RegionError::Misaligned { align: 8 }
    );
}

#[test]
fn attach_reports_each_mismatch() {
    let mem = Mem::new(1024);
    assert_eq!(
        SharedRing::<u32>::attach(mem.view()).unwrap_err(),
        RegionError::NotReady { state: 0 }
    );
    let mut small = [0u64; 2];
    let tiny = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut small[..]));
    assert!(matches!(
        SharedRing::<u32>::attach(tiny).unwrap_err(),
        RegionError::TooSmall {
            needed: 64,
            actual: 16
        }
    ));

    let fresh = |mem: &Mem| {
        SharedRing::<u32>::init(mem.view(), 16).unwrap();
    };
    let cases: [(usize, u32, RegionError); 9] = [
        (0, 0xdead_beef, RegionError::BadMagic { found: 0xdead_beef }),
        (4, 7, RegionError::BadVersion { found: 7 }),
        (8, 1, RegionError::NotReady { state: 1 }),
        (12, 8, RegionError::ElementLayout { size: 8, align: 4 }),
        (
            20,
            12,
            RegionError::Capacity(CapacityError::NotPowerOfTwo { capacity: 12 }),
        ),
        // 2^31 is a power of two, but the data it implies overruns the total.
        (20, 1 << 31, RegionError::BadOffsets),
        (
            36,
            4096,
            RegionError::TooSmall {
                needed: 4096,
                actual: 1024,
            },
        ),
        (24, 0, RegionError::BadOffsets),
        (32, 1021, RegionError::BadOffsets),
    ];
    for (offset, value, want) in cases {
        fresh(&mem);
        mem.poke(offset, value);
        let got = SharedRing::<u32>::attach(mem.view()).unwrap_err();
        assert_eq!(got, want, "poking {value:#x} at {offset}");
    }
    // Overlapping lines, data past the total, a line over the header.
    for (offset, value) in [(28, TAIL as u32), (32, 512), (24, 60)] {
        fresh(&mem);
        mem.poke(offset, value);
        assert_eq!(
            SharedRing::<u32>::attach(mem.view()).unwrap_err(),
            RegionError::BadOffsets,
            "poking {value} at {offset}"
        );
    }
    fresh(&mem);
    assert_eq!(
        SharedRing::<u16>::attach(mem.view()).unwrap_err(),
        RegionError::ElementLayout { size: 4, align: 4 }
    );
    fresh(&mem);
    mem.poke(TAIL, 17);
    assert_eq!(
        SharedRing::<u32>::attach(mem.view()).unwrap_err(),
        RegionError::Corrupted
    );
    // Layouts other than the canonical one are fine if consistent.
    fresh(&mem);
    mem.poke(24, 320);
    mem.poke(28, 336);
    let ring = SharedRing::<u32>::attach(mem.view()).unwrap();
    let (mut tx, mut rx) = ring.split();
    tx.push(5).unwrap();
    assert_eq!(rx.pop(), Ok(5));
    assert_eq!(mem.word(320).load(Ordering::SeqCst), 1);
}

#[test]
fn a_tail_beyond_capacity_is_corruption_and_stays_latched() {
    let mem = Mem::new(1024);
    let mut rx = SharedRing::<u32>::init(mem.view(), 16)
        .unwrap()
        .into_consumer();
    assert_eq!(rx.pop(), Err(RingError::Empty));
    mem.poke(TAIL, 17);
    assert_eq!(rx.len(), 0);
    assert_eq!(rx.pop(), Err(RingError::Corrupted));
    assert!(rx.is_corrupted());
    // Repairing the index does not clear the latch.
    mem.poke(TAIL, 1);
    assert_eq!(rx.pop(), Err(RingError::Corrupted));
    assert_eq!(rx.pop_slice(&mut [0; 4]), Err(RingError::Corrupted));
    assert_eq!(rx.read_chunk(0).unwrap_err(), RingError::Corrupted);
    assert_eq!(rx.read_chunk(17).unwrap_err(), RingError::Corrupted);
    assert_eq!(rx.peek().unwrap_err(), RingError::Corrupted);
    assert_eq!(rx.len(), 0);
}

#[test]
fn a_tail_moving_backwards_is_corruption() {
    let mem = Mem::new(1024);
    let ring = SharedRing::<u32>::init(mem.view(), 16).unwrap();
    let mut rx = SharedRing::<u32>::attach(mem.view())
        .unwrap()
        .into_consumer();
    let mut tx = ring.into_producer();
    tx.push_slice(&[1, 2, 3, 4]).unwrap();
    assert_eq!(rx.pop(), Ok(1));
    mem.poke(TAIL, 2);
    // Cached items still drain; the next refresh sees the regression.
    assert_eq!(rx.pop_slice(&mut [0; 3]), Ok(3));
    assert_eq!(rx.pop(), Err(RingError::Corrupted));
}

#[test]
fn a_head_outside_its_window_is_corruption_for_the_producer() {
    let mem = Mem::new(1024);
    let mut tx = SharedRing::<u32>::init(mem.view(), 4)
        .unwrap()
        .into_producer();
    tx.push_slice(&[1, 2, 3, 4]).unwrap();
    assert_eq!(tx.push(5), Err(PushError::Full(5)));
    // The head jumps past the tail: the producer must not believe in free room.
    mem.poke(HEAD, 9);
    assert_eq!(tx.len(), 4);
    assert_eq!(tx.push(5), Err(PushError::Corrupted(5)));
    mem.poke(HEAD, 4);
    assert_eq!(tx.push(5), Err(PushError::Corrupted(5)));
    assert_eq!(tx.push_slice(&[]), Err(RingError::Corrupted));
    assert_eq!(tx.write_chunk(1).unwrap_err(), RingError::Corrupted);
    // Even a request that could never fit reports the latch first.
    assert_eq!(tx.write_chunk(5).unwrap_err(), RingError::Corrupted);
    assert!(tx.is_full());
}

#[test]
fn indices_corrupted_between_attach_and_split_are_caught_on_first_use() {
    let mem = Mem::new(1024);
    let ring = SharedRing::<u32>::init(mem.view(), 16).unwrap();
    mem.poke(TAIL, 100);
    let (mut tx, mut rx) = ring.split();
    assert_eq!(rx.pop(), Err(RingError::Corrupted));
    // The producer starts from the last consistent state (empty) and keeps
    // its tail privately, so the garbage does not reach it.
    assert_eq!(tx.push(1), Ok(()));
    assert!(!tx.is_corrupted());
    assert_eq!(rx.pop(), Err(RingError::Corrupted));
}

#[test]
fn frames_in_a_region_reject_hostile_headers() {
    let mem = Mem::new(1024);
    let ring = SharedRing::<u64>::init(mem.view(), 16).unwrap();
    let (tx, rx) = ring.split();
    let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    tx.send(b"twelve bytes").unwrap();
    assert_eq!(&*rx.recv().unwrap(), b"twelve bytes");

    // Header words live at DATA + 8 * slot. The next record starts at slot 3.
    tx.send(b"ok").unwrap();
    // A length that runs past what was published.
    mem.poke(DATA + 3 * 8, 64);
    assert_eq!(rx.recv().unwrap_err(), RingError::Corrupted);
    assert!(rx.is_corrupted());
    assert_eq!(rx.recv().unwrap_err(), RingError::Corrupted);
}

#[test]
fn frames_reject_unknown_kinds_and_misplaced_padding() {
    let kinds = [
        (0u32, 0x1234_5678u32),
        (0, RecordHeader::PADDING),
        (u32::MAX, RecordHeader::MESSAGE),
    ];
    for (len, kind) in kinds {
        let mem = Mem::new(1024);
        let ring = SharedRing::<u64>::init(mem.view(), 16).unwrap();
        let (tx, rx) = ring.split();
        let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
        tx.send(b"x").unwrap();
        mem.poke(DATA, len);
        mem.poke(DATA + 4, kind);
        assert_eq!(
            rx.recv().unwrap_err(),
            RingError::Corrupted,
            "{len} {kind:#x}"
        );
    }
}

#[test]
fn attach_refuses_a_garbage_release_interval() {
    const RELEASE_EVERY: usize = 40;
    let mem = Mem::new(1024);
    SharedRing::<u32>::init_deferred(mem.view(), 16, 4).unwrap();
    assert_eq!(mem.word(RELEASE_EVERY).load(Ordering::SeqCst), 4);
    for bad in [0, 17, u32::MAX] {
        mem.poke(RELEASE_EVERY, bad);
        assert_eq!(
            SharedRing::<u32>::attach(mem.view()).unwrap_err(),
            RegionError::ReleaseInterval {
                found: bad as usize,
                max: 16
            }
        );
    }
    mem.poke(RELEASE_EVERY, 16);
    let ring = SharedRing::<u32>::attach(mem.view()).unwrap();
    assert_eq!(ring.release_every(), 16);
    // A peer rewriting the word after attach changes nothing here: the
    // interval was read once.
    mem.poke(RELEASE_EVERY, 0);
    assert_eq!(ring.release_every(), 16);
    let mut rx = ring.into_deferred_consumer::<16>().unwrap();
    assert_eq!(rx.pop(), Err(RingError::Empty));
}

#[test]
fn a_deferred_consumer_across_two_views_releases_on_drop() {
    let mem = Mem::new(1024);
    let mut tx = SharedRing::<u32>::init_deferred(mem.view(), 8, 4)
        .unwrap()
        .into_producer();
    let mut rx = SharedRing::<u32>::attach(mem.view())
        .unwrap()
        .into_deferred_consumer::<4>()
        .unwrap();
    assert_eq!(tx.push_slice(&[1, 2, 3, 4, 5, 6, 7, 8]), Ok(8));
    assert_eq!(rx.pop(), Ok(1));
    assert_eq!(rx.pop(), Ok(2));
    // Two pops unpublished: the producer still sees a full ring.
    assert_eq!(tx.push(9), Err(PushError::Full(9)));
    assert_eq!(mem.word(HEAD).load(Ordering::SeqCst), 0);
    drop(rx);
    // Published before the closed flag.
    assert!(tx.is_abandoned());
    assert_eq!(mem.word(HEAD).load(Ordering::SeqCst), 2);
    assert_eq!(tx.push(9), Ok(()));
}
