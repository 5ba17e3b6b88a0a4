//! The validators a hostile peer reaches, run over every value of each
//! small field and every boundary class of each large one, against an
//! independent statement (in wide integers) of what they must accept.
//! `proofs/` proves the same properties for all values with an SMT solver;
//! these run the real code. Under Miri only the cheapest run (the rest take
//! minutes there); on a 32-bit target, `cargo +nightly miri test --target
//! armv7-unknown-linux-gnueabihf -p ncio-uring-queue --features std --test
//! validators_exhaustive` runs them with a 32-bit `usize`.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use uring_queue::uring::{Config, Cqe, Error, Request, Spin, Sqe, Uring};
use uring_queue::{CapacityError, Region, RegionError, SharedRing};

/// Boundary classes of a u32 field whose interesting points include `at`.
fn classes_u32(at: &[u32]) -> Vec<u32> {
    let mut v = vec![
        0,
        1,
        2,
        3,
        4,
        7,
        8,
        63,
        64,
        127,
        128,
        255,
        256,
        383,
        384,
        1 << 31,
    ];
    v.extend([
        u32::MAX / 2,
        (1 << 31) + 1,
        u32::MAX - 64,
        u32::MAX - 1,
        u32::MAX,
    ]);
    for &a in at {
        v.extend([a.wrapping_sub(1), a, a.wrapping_add(1)]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn classes_u64(at: &[u64]) -> Vec<u64> {
    let mut v: Vec<u64> = classes_u32(&[]).into_iter().map(u64::from).collect();
    v.extend([
        1 << 32,
        (1 << 32) + 1,
        u64::MAX - u64::from(u32::MAX),
        u64::MAX - 1,
        u64::MAX,
    ]);
    for &a in at {
        v.extend([a.wrapping_sub(1), a, a.wrapping_add(1)]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// How many cases a test expected accepted and refused: both must occur,
/// or the test would check one side only.
#[derive(Default)]
struct Seen {
    accepted: usize,
    refused: usize,
}

impl Seen {
    fn note(&mut self, accepted: bool) {
        if accepted {
            self.accepted += 1;
        } else {
            self.refused += 1;
        }
    }

    fn check(&self) {
        assert!(
            self.accepted > 0 && self.refused > 0,
            "{} accepted, {} refused",
            self.accepted,
            self.refused
        );
    }
}

/// 4 KiB, aligned for every layout here.
#[repr(C, align(4096))]
struct Mem([u8; 8192]);

fn mem() -> Box<Mem> {
    Box::new(Mem([0; 8192]))
}

fn word(mem: &mut Mem, at: usize, value: u32) {
    mem.0[at..at + 4].copy_from_slice(&value.to_ne_bytes());
}

fn read_word(mem: &Mem, at: usize) -> u32 {
    u32::from_ne_bytes(mem.0[at..at + 4].try_into().unwrap())
}

/// Whether `parts` (start, len, align) lie in `0..total`, aligned, and no
/// byte lies in two of them; wide integers, so nothing wraps.
fn parts_fit(parts: &[(u128, u128, u128)], total: u128) -> bool {
    parts.iter().all(|&(s, l, a)| s + l <= total && s % a == 0)
        && parts.iter().enumerate().all(|(i, &(s1, l1, _))| {
            parts[i + 1..]
                .iter()
                .all(|&(s2, l2, _)| s1 + l1 <= s2 || s2 + l2 <= s1)
        })
}

// ---- the shared ring's header ----

const SR_WORDS: [usize; 8] = [12, 16, 20, 24, 28, 32, 36, 40];
const SR_CAP: u32 = 16;
/// The element's alignment the header records: `u64`'s, which is 4 on
/// 32-bit x86 and 8 on the other targets.
const SR_ALIGN: u32 = core::mem::align_of::<u64>() as u32;

/// What `SharedRing::<u64>::attach` must accept on a region of `len`
/// bytes: `w` are the header words from offset 12 on.
fn shared_ring_ok(w: [u32; 8], len: usize) -> bool {
    let [size, align, cap, prod, cons, data, total, release] = w.map(u128::from);
    let len = len as u128;
    size == 8
        && align == u128::from(SR_ALIGN)
        && cap.is_power_of_two()
        && cap <= 1 << 31
        && total <= len
        && parts_fit(
            &[
                (0, 64, 1),
                (prod, 8, 4),
                (cons, 8, 4),
                (data, 8 * cap, u128::from(SR_ALIGN)),
            ],
            total,
        )
        && (1..=cap).contains(&release)
}

fn attach_shared(mem: &mut Mem, w: [u32; 8], len: usize) -> Result<(), RegionError> {
    SharedRing::<u64>::init(Region::new(&mut mem.0[..len]), SR_CAP as usize).unwrap();
    for (at, v) in SR_WORDS.into_iter().zip(w) {
        word(mem, at, v);
    }
    // Index lines moved elsewhere start empty (the header's own words
    // aside: a line there overlaps the header, which attach refuses).
    for line in [w[3], w[4]] {
        let line = line as usize;
        if line >= 64 && line.checked_add(8).is_some_and(|end| end <= len) {
            mem.0[line..line + 8].fill(0);
        }
    }
    let ring = SharedRing::<u64>::attach(Region::new(&mut mem.0[..len]))?;
    assert_eq!(ring.capacity(), w[2] as usize);
    // Use every slot: an accepted layout keeps them in the region.
    let (mut tx, mut rx) = ring.split();
    for round in 0..2u64 {
        for i in 0..w[2].min(64) {
            tx.push(u64::from(i) + round).unwrap();
        }
        for i in 0..w[2].min(64) {
            assert_eq!(rx.pop(), Ok(u64::from(i) + round));
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(miri, ignore)]
fn shared_ring_header_words_one_at_a_time() {
    let mut seen = Seen::default();
    let mut m = mem();
    let canonical = [8, SR_ALIGN, SR_CAP, 128, 256, 384, 384 + 8 * SR_CAP, 1];
    for len in [512, 4096] {
        for k in 0..8 {
            for v in classes_u32(&[canonical[k], len as u32]) {
                let mut w = canonical;
                w[k] = v;
                let expected = shared_ring_ok(w, len);
                seen.note(expected);
                let found = attach_shared(&mut m, w, len);
                assert_eq!(
                    found.is_ok(),
                    expected,
                    "word {k} = {v}, region {len}: {found:?}"
                );
            }
        }
    }
    seen.check();
}

#[test]
#[cfg_attr(miri, ignore)]
fn shared_ring_header_offsets_all_together() {
    let mut seen = Seen::default();
    let mut m = mem();
    let len = 4096;
    let offs = classes_u32(&[128, 256, 384, 512, 1024, 4096 - 128]);
    for &prod in &offs {
        for &cons in &offs {
            for &data in &offs {
                let w = [8, SR_ALIGN, SR_CAP, prod, cons, data, 4096, 1];
                let expected = shared_ring_ok(w, len);
                seen.note(expected);
                let found = attach_shared(&mut m, w, len);
                assert_eq!(found.is_ok(), expected, "{prod} {cons} {data}: {found:?}");
            }
        }
    }
    seen.check();
}

#[test]
#[cfg_attr(miri, ignore)]
fn shared_ring_capacity_total_and_release_interval() {
    let mut seen = Seen::default();
    let mut m = mem();
    let len = 4096;
    for cap in classes_u32(&[SR_CAP, 32, 64, 464]) {
        for total in classes_u32(&[384 + 8 * cap.min(1 << 20), 4096]) {
            for release in classes_u32(&[cap]) {
                let w = [8, SR_ALIGN, cap, 128, 256, 384, total, release];
                let expected = shared_ring_ok(w, len);
                seen.note(expected);
                let found = attach_shared(&mut m, w, len);
                assert_eq!(
                    found.is_ok(),
                    expected,
                    "{cap} {total} {release}: {found:?}"
                );
            }
        }
    }
    seen.check();
}

#[test]
fn shared_ring_stamp_words() {
    let mut m = mem();
    for at in [0, 4, 8] {
        for v in classes_u32(&[1, 2, read_word(&m, at)]) {
            SharedRing::<u64>::init(Region::new(&mut m.0[..512]), 16).unwrap();
            let good = read_word(&m, at);
            word(&mut m, at, v);
            let found = SharedRing::<u64>::attach(Region::new(&mut m.0[..512]));
            assert_eq!(found.is_ok(), v == good, "word at {at} = {v}");
        }
    }
}

// ---- the ring indices ----

const TAIL: usize = 128;
const HEAD: usize = 256;

/// The bytes of `mem` as a pointer, so that a test can lay out regions
/// and write words into them while halves built on them live, as a peer
/// would.
fn base(mem: &mut Mem) -> NonNull<u8> {
    NonNull::from(&mut mem.0).cast()
}

/// A view of `len` bytes at `at` of the memory `base` points to.
fn view<'a>(base: NonNull<u8>, at: usize, len: usize) -> Region<'a> {
    assert!(at + len <= 8192);
    // SAFETY: inside the `Mem` `base` points to, which each test keeps
    // alive (and otherwise unused) while its views live; within a test at
    // most one producer and one consumer are built on each ring's bytes.
    unsafe { Region::from_raw_parts(NonNull::new_unchecked(base.as_ptr().add(at)), len) }
}

/// Writes a word at `at`, as a peer does: atomically.
fn poke(base: NonNull<u8>, at: usize, value: u32) {
    assert!(at % 4 == 0 && at + 4 <= 8192);
    // SAFETY: 4-aligned (the `Mem` is 4096-aligned) and in bounds (checked
    // above); the halves reach shared words through atomics too.
    let cell = unsafe { &*base.as_ptr().add(at).cast::<AtomicU32>() };
    cell.store(value, Ordering::Release);
}

#[test]
#[cfg_attr(miri, ignore)]
fn attach_index_check_over_boundary_classes() {
    let mut m = mem();
    let idx = classes_u32(&[8, u32::MAX - 8]);
    for &head in &idx {
        for &tail in &idx {
            SharedRing::<u64>::init(Region::new(&mut m.0[..512]), 8).unwrap();
            word(&mut m, TAIL, tail);
            word(&mut m, HEAD, head);
            let found = SharedRing::<u64>::attach(Region::new(&mut m.0[..512]));
            let ready = tail.wrapping_sub(head);
            match found {
                Ok(ring) => {
                    assert!(ready <= 8, "{head} {tail}");
                    let (_tx, mut rx) = ring.split();
                    for _ in 0..ready {
                        assert!(rx.pop().is_ok());
                    }
                    assert_eq!(rx.pop(), Err(uring_queue::RingError::Empty));
                }
                Err(e) => assert!(
                    ready > 8 && e == RegionError::Corrupted,
                    "{head} {tail}: {e:?}"
                ),
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn consumer_refresh_over_boundary_classes() {
    let mut m = mem();
    for start in [0, u32::MAX - 3] {
        for d in classes_u32(&[8]) {
            let b = base(&mut m);
            SharedRing::<u64>::init(view(b, 0, 512), 8).unwrap();
            poke(b, TAIL, start);
            poke(b, HEAD, start);
            let mut rx = SharedRing::<u64>::attach(view(b, 0, 512))
                .unwrap()
                .into_consumer();
            poke(b, TAIL, start.wrapping_add(d));
            let found = rx.pop();
            match d {
                0 => assert_eq!(found, Err(uring_queue::RingError::Empty)),
                1..=8 => assert!(found.is_ok(), "{start} + {d}"),
                _ => assert_eq!(
                    found,
                    Err(uring_queue::RingError::Corrupted),
                    "{start} + {d}"
                ),
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn producer_refresh_over_boundary_classes() {
    let mut m = mem();
    for start in [0, u32::MAX - 3] {
        for pushed in 0..=8u32 {
            for d in classes_u32(&[pushed, 8]) {
                let b = base(&mut m);
                SharedRing::<u64>::init(view(b, 0, 512), 8).unwrap();
                poke(b, TAIL, start);
                poke(b, HEAD, start);
                let mut tx = SharedRing::<u64>::attach(view(b, 0, 512))
                    .unwrap()
                    .into_producer();
                for i in 0..pushed {
                    tx.push(u64::from(i)).unwrap();
                }
                // The consumer's head moves `d` on: honest up to `pushed`.
                poke(b, HEAD, start.wrapping_add(d));
                let found = tx.push(9).map_err(|e| e.error());
                let expected = if pushed < 8 || (1..=pushed).contains(&d) {
                    // Not full yet: no refresh; or a valid head that frees a slot.
                    Ok(())
                } else if d == 0 {
                    Err(uring_queue::RingError::Full)
                } else {
                    Err(uring_queue::RingError::Corrupted)
                };
                assert_eq!(found, expected, "{start}: pushed {pushed}, head + {d}");
            }
        }
    }
}

// ---- the connection header ----

const U_WORDS: [usize; 6] = [12, 16, 20, 24, 28, 32];

/// What `Uring::attach` must accept, as far as its own header goes (the
/// rings' headers are checked on their own): the parts in the region,
/// aligned, apart.
fn uring_parts_ok(w: [u32; 6], len: usize) -> bool {
    let [sq, sq_len, cq, cq_len, pay, pay_len] = w.map(u128::from);
    parts_fit(
        &[
            (0, 640, 1),
            (sq, sq_len, 128),
            (cq, cq_len, 128),
            (pay, pay_len, 64),
        ],
        len as u128,
    )
}

#[test]
#[cfg_attr(miri, ignore)]
fn uring_header_words_one_at_a_time() {
    let mut seen = Seen::default();
    let mut m = mem();
    let config = Config::new(4, 4, 1024);
    Uring::init(Region::new(&mut m.0), config).unwrap();
    let canonical: [u32; 6] = U_WORDS.map(|at| read_word(&m, at));
    assert_eq!(canonical, [640, 544, 1280, 480, 4096, 1024]);
    for len in [5120, 8192] {
        for k in 0..6 {
            for v in classes_u32(&[canonical[k], len as u32, 4096 + 1024, 8192 - 1024]) {
                let mut w = canonical;
                w[k] = v;
                Uring::init(Region::new(&mut m.0), config).unwrap();
                for (at, v) in U_WORDS.into_iter().zip(w) {
                    word(&mut m, at, v);
                }
                let found = Uring::attach(Region::new(&mut m.0[..len]));
                let parts_ok = uring_parts_ok(w, len);
                seen.note(parts_ok);
                if found.is_ok() {
                    assert!(parts_ok, "word {k} = {v}, region {len}");
                }
                // Moving the payload area (or the rings' ends past their
                // headers' totals) is fine while the parts stay apart.
                let rings_unmoved = w[..4] == canonical[..4];
                if parts_ok && rings_unmoved {
                    assert!(found.is_ok(), "word {k} = {v}, region {len}: {found:?}");
                }
                if let Ok(u) = found {
                    assert_eq!(u.payload_len(), w[5] as usize);
                }
            }
        }
    }
    seen.check();
}

/// Every configuration's `required_size` (what `init` checks the region
/// against) covers its payload area: it never wraps past `usize::MAX`.
#[test]
fn required_size_never_wraps() {
    let pays = classes_u64(&[4096])
        .into_iter()
        .filter_map(|p| usize::try_from(p).ok());
    for pay in pays {
        for sq in [1, 2, 8, 1 << 20, 1 << 26] {
            for cq in [1, 8, 1 << 26, 1 << 27] {
                match Uring::required_size(&Config::new(sq, cq, pay)) {
                    Ok(total) => assert!(
                        total >= pay && total - pay >= 640 + 24 * cq + 40 * sq,
                        "{sq} {cq} {pay}: {total}"
                    ),
                    Err(e) => assert!(
                        matches!(e, RegionError::Capacity(CapacityError::TooLarge { .. })),
                        "{sq} {cq} {pay}: {e:?}"
                    ),
                }
            }
        }
    }
}

// ---- the blocks an Sqe names ----

const AREA: u64 = 1024;

fn span_ok(offset: u64, len: u32) -> bool {
    len == 0 || u128::from(offset) + u128::from(len) <= u128::from(AREA)
}

fn apart((o1, l1): (u64, u32), (o2, l2): (u64, u32)) -> bool {
    let (o1, l1, o2, l2) = (
        u128::from(o1),
        u128::from(l1),
        u128::from(o2),
        u128::from(l2),
    );
    l1 == 0 || l2 == 0 || o1 + l1 <= o2 || o2 + l2 <= o1
}

/// A server on a fresh connection, and a producer on its submission ring
/// playing the client.
fn server_with_sqe(mem: &mut Mem, sqe: Sqe) -> Result<Option<(usize, usize)>, Error> {
    let b = base(mem);
    let uring = Uring::init(view(b, 0, 8192), Config::new(4, 4, AREA as usize)).unwrap();
    let mut server = uring.into_server(Spin);
    // The submission ring's bytes: the server holds its consumer, this is
    // its only producer.
    let mut tx = SharedRing::<Sqe>::attach(view(b, 640, 544))
        .unwrap()
        .into_producer();
    tx.push(sqe).unwrap();
    let incoming = server.try_recv()?.unwrap();
    let (body, out) = server.buffers(&incoming).unwrap();
    let lens = (body.len(), out.len());
    out.fill(0xa5);
    assert_eq!(server.payload(&incoming).unwrap().len(), lens.0);
    Ok(Some(lens))
}

#[test]
#[cfg_attr(miri, ignore)]
fn sqe_blocks_over_boundary_classes() {
    let mut seen = Seen::default();
    let mut m = mem();
    let offs = classes_u64(&[AREA, AREA - 64, 512]);
    let lens = classes_u32(&[AREA as u32, 512, 64]);
    for &po in &offs {
        for &pl in &lens {
            // The body alone, then against a response block.
            let found = server_with_sqe(
                &mut m,
                Sqe {
                    payload_offset: po,
                    payload_len: pl,
                    ..Sqe::default()
                },
            );
            let expected = span_ok(po, pl);
            seen.note(expected);
            assert_eq!(found.is_ok(), expected, "body {po}+{pl}: {found:?}");
            if expected {
                assert_eq!(found, Ok(Some((pl as usize, 0))));
            } else {
                assert_eq!(found, Err(Error::Corrupted));
            }
            for (ro, rl) in [
                (0, 64),
                (512, 512),
                (po, pl),
                (po.wrapping_add(u64::from(pl)), 1),
                (AREA - 1, 1),
            ] {
                let sqe = Sqe {
                    payload_offset: po,
                    payload_len: pl,
                    response_offset: ro,
                    response_len: rl,
                    ..Sqe::default()
                };
                let found = server_with_sqe(&mut m, sqe);
                let expected = span_ok(po, pl) && span_ok(ro, rl) && apart((po, pl), (ro, rl));
                seen.note(expected);
                assert_eq!(found.is_ok(), expected, "{po}+{pl}, {ro}+{rl}: {found:?}");
            }
        }
    }
    seen.check();
}

// ---- completions and credits ----

#[test]
#[cfg_attr(miri, ignore)]
fn cqe_tags_and_lengths_over_boundary_classes() {
    let mut seen = Seen::default();
    let mut m = mem();
    for response_block in [0usize, 1, 100, 1024] {
        for len in classes_u32(&[response_block as u32, 1024]) {
            for tag_delta in [0u64, 1, 3, 4, 1 << 32, u64::MAX] {
                let b = base(&mut m);
                let uring = Uring::init(view(b, 0, 8192), Config::new(4, 4, 1024)).unwrap();
                let client = uring.into_client::<4, _>(Spin);
                let out = client.alloc(response_block).unwrap();
                let ticket = client
                    .try_submit(Request::new(1).with_response(out))
                    .unwrap();
                let user_data = ticket.user_data() ^ tag_delta;
                // The completion ring's bytes: the client holds its
                // consumer, this is its only producer.
                let mut tx = SharedRing::<Cqe>::attach(view(b, 1280, 480))
                    .unwrap()
                    .into_producer();
                let cqe = Cqe {
                    user_data,
                    response_len: len,
                    ..Cqe::default()
                };
                tx.push(cqe).unwrap();
                let found = client.poll_completions();
                let expected = tag_delta == 0 && len as usize <= response_block;
                seen.note(expected);
                assert_eq!(
                    found.is_ok(),
                    expected,
                    "{response_block} {len} {tag_delta}: {found:?}"
                );
                if expected {
                    let reply = client.try_wait(ticket).unwrap();
                    assert_eq!(client.response(&reply).unwrap().len(), len as usize);
                } else {
                    assert_eq!(found, Err(Error::Corrupted));
                }
            }
        }
    }
    seen.check();
}

#[test]
#[cfg_attr(miri, ignore)]
fn credits_bound_submissions_by_the_smaller_ring() {
    let mut m = mem();
    for (sq, cq) in [(1, 1), (1, 4), (4, 1), (2, 8), (8, 2), (4, 4)] {
        let uring = Uring::init(Region::new(&mut m.0), Config::new(sq, cq, 0)).unwrap();
        let (client, mut server) = uring.split::<16, _, _>(Spin, Spin);
        let credits = sq.min(cq);
        assert_eq!(client.credits(), credits);
        let tickets: Vec<_> = (0..credits)
            .map(|_| client.try_submit(Request::new(0)).unwrap())
            .collect();
        assert_eq!(
            client.try_submit(Request::new(0)).unwrap_err().error,
            Error::Busy
        );
        // The server completes every request it holds: never a full ring.
        while let Some(incoming) = server.try_recv().unwrap() {
            server.complete(incoming, 0, 0).unwrap();
        }
        for t in tickets {
            client.wait(t).unwrap();
        }
    }
}

// ---- the payload allocator ----

#[test]
#[cfg_attr(miri, ignore)]
fn alloc_over_boundary_classes() {
    let mut m = mem();
    for area in [0usize, 1, 63, 64, 65, 1000, 1024] {
        let usable = area - area % 64;
        for len in [
            0,
            1,
            63,
            64,
            65,
            959,
            960,
            961,
            1023,
            1024,
            1025,
            usize::MAX - 1,
            usize::MAX,
        ] {
            let uring = Uring::init(Region::new(&mut m.0), Config::new(4, 4, area)).unwrap();
            let client = uring.into_client::<16, _>(Spin);
            match client.alloc(len) {
                Ok(b) => {
                    assert!(len <= usable, "{area} {len}");
                    assert_eq!((b.offset(), b.len()), (0, len));
                }
                Err(e) => assert!(
                    len > usable && e == Error::TooLarge { max: usable },
                    "{area} {len}: {e:?}"
                ),
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn alloc_fills_the_area_with_aligned_disjoint_blocks() {
    let mut m = mem();
    for len in [1, 63, 64, 65, 100, 128, 1000, 1024] {
        let uring = Uring::init(Region::new(&mut m.0), Config::new(4, 4, 1024)).unwrap();
        let client = uring.into_client::<16, _>(Spin);
        let mut blocks = Vec::new();
        while let Ok(b) = client.alloc(len) {
            blocks.push(b);
        }
        let granule = len.next_multiple_of(64);
        assert_eq!(blocks.len(), (1024 / granule).min(32), "{len}");
        let mut spans: Vec<_> = blocks.iter().map(|b| (b.offset(), b.len())).collect();
        spans.sort_unstable();
        assert!(spans.iter().all(|&(o, l)| o % 64 == 0 && o + l <= 1024));
        assert!(spans.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0));
        for b in blocks {
            client.free(b);
        }
        assert_eq!(client.blocks_in_use(), 0);
    }
}
