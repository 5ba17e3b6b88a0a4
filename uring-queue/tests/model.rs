//! The ring against a `VecDeque` model: same results for any sequence of
//! operations, on every storage kind; framed records keep order and content.

use proptest::prelude::*;
extern crate alloc;

use alloc::collections::VecDeque;
use uring_queue::{
    Consumer, FrameConsumer, FrameProducer, HeapRing, Producer, PushError, Region, Ring, RingError,
    SharedRing,
};

const CAP: usize = 8;
/// Operations per case: fewer under Miri, which is slow.
const OPS: usize = if cfg!(miri) { 24 } else { 64 };

#[derive(Debug, Clone)]
enum Op {
    Push(u16),
    PushSlice(Vec<u16>),
    Pop,
    PopSlice(usize),
    WriteChunk { n: usize, commit: usize, seed: u16 },
    ReadChunk { n: usize, commit: usize },
    Peek,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<u16>().prop_map(Op::Push),
        prop::collection::vec(any::<u16>(), 0..12).prop_map(Op::PushSlice),
        Just(Op::Pop),
        (0..12usize).prop_map(Op::PopSlice),
        (0..10usize, 0..12usize, any::<u16>()).prop_map(|(n, commit, seed)| Op::WriteChunk {
            n,
            commit,
            seed
        }),
        (0..10usize, 0..12usize).prop_map(|(n, commit)| Op::ReadChunk { n, commit }),
        Just(Op::Peek),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 1 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn check(ops: &[Op], tx: &mut Producer<'_, u16>, rx: &mut Consumer<'_, u16>) {
    let mut model = VecDeque::new();
    for op in ops {
        match op {
            Op::Push(v) => {
                let got = tx.push(*v);
                if model.len() < CAP {
                    assert_eq!(got, Ok(()));
                    model.push_back(*v);
                } else {
                    assert_eq!(got, Err(PushError::Full(*v)));
                }
            }
            Op::PushSlice(vs) => {
                let n = vs.len().min(CAP - model.len());
                assert_eq!(tx.push_slice(vs), Ok(n));
                model.extend(&vs[..n]);
            }
            Op::Pop => assert_eq!(rx.pop().ok(), model.pop_front()),
            Op::PopSlice(len) => {
                let mut out = vec![0; *len];
                let n = (*len).min(model.len());
                assert_eq!(rx.pop_slice(&mut out), Ok(n));
                let want: Vec<u16> = model.drain(..n).collect();
                assert_eq!(out[..n], want[..]);
            }
            Op::WriteChunk { n, commit, seed } => match tx.write_chunk(*n) {
                Ok(mut chunk) => {
                    assert!(*n <= CAP - model.len());
                    let (a, b) = chunk.as_mut_slices();
                    assert_eq!(a.len() + b.len(), *n);
                    for (k, slot) in a.iter_mut().chain(b.iter_mut()).enumerate() {
                        *slot = seed.wrapping_add(k as u16);
                    }
                    chunk.commit(*commit);
                    for k in 0..(*commit).min(*n) {
                        model.push_back(seed.wrapping_add(k as u16));
                    }
                }
                Err(RingError::TooLarge { max }) => assert!(*n > CAP && max == CAP),
                Err(e) => {
                    assert_eq!(
                        e,
                        RingError::Insufficient {
                            available: CAP - model.len()
                        }
                    );
                    assert!(*n > CAP - model.len());
                }
            },
            Op::ReadChunk { n, commit } => match rx.read_chunk(*n) {
                Ok(chunk) => {
                    let (a, b) = chunk.as_slices();
                    let seen: Vec<u16> = a.iter().chain(b).copied().collect();
                    let want: Vec<u16> = model.iter().take(*n).copied().collect();
                    assert_eq!(seen, want);
                    chunk.commit(*commit);
                    model.drain(..(*commit).min(*n));
                }
                Err(RingError::TooLarge { max }) => assert!(*n > CAP && max == CAP),
                Err(e) => assert_eq!(
                    e,
                    RingError::Insufficient {
                        available: model.len()
                    }
                ),
            },
            Op::Peek => assert_eq!(rx.peek().ok(), model.front()),
        }
        assert_eq!(tx.len(), model.len());
        assert_eq!(rx.len(), model.len());
        assert_eq!(rx.is_empty(), model.is_empty());
        assert_eq!(tx.is_full(), model.len() == CAP);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn inline_ring_matches_model(ops in prop::collection::vec(op(), OPS / 2..=OPS)) {
        let mut ring = Ring::<u16, CAP>::new();
        let (mut tx, mut rx) = ring.split();
        check(&ops, &mut tx, &mut rx);
    }

    #[test]
    fn heap_ring_matches_model(ops in prop::collection::vec(op(), OPS / 2..=OPS)) {
        let (mut tx, mut rx) = HeapRing::<u16>::new(CAP).unwrap();
        check(&ops, &mut tx, &mut rx);
    }

    #[test]
    fn region_ring_matches_model(ops in prop::collection::vec(op(), OPS / 2..=OPS)) {
        let mut mem = [0u64; 64];
        let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
        let (mut tx, mut rx) = SharedRing::<u16>::init(region, CAP).unwrap().split();
        check(&ops, &mut tx, &mut rx);
    }

    #[test]
    fn frames_keep_order_and_content(
        lens in prop::collection::vec((0..60usize, any::<bool>()), OPS / 2..=OPS),
    ) {
        let mut ring = Ring::<u64, 16>::new();
        let (tx, rx) = ring.split();
        let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
        prop_assert_eq!(tx.max_len(), 56);
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        for (seq, (len, recv)) in lens.into_iter().enumerate() {
            let msg: Vec<u8> = (0..len).map(|k| (seq * 31 + k) as u8).collect();
            match tx.send(&msg) {
                Ok(()) => model.push_back(msg),
                Err(RingError::TooLarge { max }) => prop_assert!(len > max),
                Err(RingError::Full) => prop_assert!(!model.is_empty()),
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
            if recv {
                match rx.recv() {
                    Ok(frame) => prop_assert_eq!(&*frame, &model.pop_front().unwrap()[..]),
                    Err(e) => {
                        prop_assert_eq!(e, RingError::Empty);
                        prop_assert!(model.is_empty());
                    }
                }
            }
        }
        while let Some(want) = model.pop_front() {
            prop_assert_eq!(&*rx.recv().unwrap(), &want[..]);
        }
        prop_assert_eq!(rx.recv().unwrap_err(), RingError::Empty);
    }
}

/// Operations on a deferred-release consumer's ring.
#[derive(Debug, Clone)]
enum DeferredOp {
    Push(u16),
    PushSlice(Vec<u16>),
    Pop,
    PopSlice(usize),
    ReadChunk(usize),
    Peek,
    Release,
    /// Takes up to this many elements from a batch, then ends it.
    Batch(usize),
}

fn deferred_op() -> impl Strategy<Value = DeferredOp> {
    prop_oneof![
        3 => any::<u16>().prop_map(DeferredOp::Push),
        1 => prop::collection::vec(any::<u16>(), 0..12).prop_map(DeferredOp::PushSlice),
        4 => Just(DeferredOp::Pop),
        1 => (0..12usize).prop_map(DeferredOp::PopSlice),
        1 => (0..10usize).prop_map(DeferredOp::ReadChunk),
        1 => Just(DeferredOp::Peek),
        1 => Just(DeferredOp::Release),
        1 => (0..10usize).prop_map(DeferredOp::Batch),
    ]
}

/// A deferred-release consumer against a model that knows which pops are
/// published: every `K`-th head, every empty read, every slice, chunk commit,
/// batch end and `release`. The producer must see exactly the published
/// head, and `push` must never fail while fewer than `CAP - K + 1` elements
/// are queued.
fn check_deferred<const K: usize>(
    ops: &[DeferredOp],
    tx: &mut Producer<'_, u16>,
    rx: &mut Consumer<'_, u16, K>,
) {
    let mut model = VecDeque::new();
    // Pops so far, and how many of them the producer has been told about.
    let (mut head, mut published) = (0usize, 0usize);
    for op in ops {
        let pending = head - published;
        let was_empty = model.is_empty();
        match op {
            DeferredOp::Push(v) => {
                let got = tx.push(*v);
                if model.len() < CAP - K + 1 {
                    assert_eq!(got, Ok(()), "push failed with fewer than N - K + 1 queued");
                }
                if model.len() + pending < CAP {
                    assert_eq!(got, Ok(()));
                    model.push_back(*v);
                } else {
                    assert_eq!(got, Err(PushError::Full(*v)));
                }
            }
            DeferredOp::PushSlice(vs) => {
                let n = vs.len().min(CAP - model.len() - pending);
                assert_eq!(tx.push_slice(vs), Ok(n));
                model.extend(&vs[..n]);
            }
            DeferredOp::Pop => {
                assert_eq!(rx.pop().ok(), model.pop_front());
                if was_empty {
                    published = head;
                } else {
                    head += 1;
                    if head % K == 0 {
                        published = head;
                    }
                }
            }
            DeferredOp::PopSlice(len) => {
                let mut out = vec![0; *len];
                let n = (*len).min(model.len());
                assert_eq!(rx.pop_slice(&mut out), Ok(n));
                let want: Vec<u16> = model.drain(..n).collect();
                assert_eq!(out[..n], want[..]);
                head += n;
                if n > 0 || was_empty {
                    published = head;
                }
            }
            DeferredOp::ReadChunk(n) => match rx.read_chunk(*n) {
                Ok(chunk) => {
                    let (a, b) = chunk.as_slices();
                    let seen: Vec<u16> = a.iter().chain(b).copied().collect();
                    let want: Vec<u16> = model.iter().take(*n).copied().collect();
                    assert_eq!(seen, want);
                    chunk.commit_all();
                    model.drain(..*n);
                    head += n;
                    published = head;
                }
                Err(RingError::TooLarge { max }) => assert!(*n > CAP && max == CAP),
                Err(e) => {
                    assert_eq!(
                        e,
                        RingError::Insufficient {
                            available: model.len()
                        }
                    );
                    if was_empty {
                        published = head;
                    }
                }
            },
            DeferredOp::Peek => {
                assert_eq!(rx.peek().ok(), model.front());
                if was_empty {
                    published = head;
                }
            }
            DeferredOp::Release => {
                rx.release();
                published = head;
            }
            DeferredOp::Batch(take) => {
                let mut batch = rx.batch().unwrap();
                assert_eq!(batch.len(), model.len());
                let n = (*take).min(model.len());
                for _ in 0..n {
                    assert_eq!(batch.next(), model.pop_front());
                }
                if model.is_empty() {
                    // Drained: the batch has nothing more.
                    assert_eq!(batch.next(), None);
                }
                drop(batch);
                head += n;
                published = head;
            }
        }
        let pending = head - published;
        assert!(pending < K, "at most K - 1 pops unpublished");
        assert_eq!(rx.pending(), pending);
        assert_eq!(rx.len(), model.len());
        assert_eq!(tx.len(), model.len() + pending);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn deferred_inline_ring_matches_model(ops in prop::collection::vec(deferred_op(), OPS / 2..=OPS)) {
        let mut ring = Ring::<u16, CAP>::new();
        {
            let (mut tx, mut rx) = ring.split_deferred::<4>();
            check_deferred(&ops, &mut tx, &mut rx);
        }
        // Whatever was pending was published when the consumer went: a new
        // split sees every slot not still queued as free.
        let (tx, rx) = ring.split();
        prop_assert_eq!(tx.len(), rx.len());
    }

    #[test]
    fn deferred_heap_ring_matches_model(ops in prop::collection::vec(deferred_op(), OPS / 2..=OPS)) {
        let (mut tx, mut rx) = HeapRing::<u16>::new_deferred::<3>(CAP).unwrap();
        check_deferred(&ops, &mut tx, &mut rx);
        let queued = rx.len();
        drop(rx);
        prop_assert_eq!(tx.len(), queued);
    }

    #[test]
    fn release_every_one_is_exact(ops in prop::collection::vec(deferred_op(), OPS / 2..=OPS)) {
        let (mut tx, mut rx) = HeapRing::<u16>::new(CAP).unwrap();
        check_deferred(&ops, &mut tx, &mut rx);
    }

    #[test]
    fn deferred_region_ring_matches_model(ops in prop::collection::vec(deferred_op(), OPS / 2..=OPS)) {
        // Aligned as the region's header needs on every target (a `u64`
        // array is 4-aligned on 32-bit x86).
        #[repr(C, align(128))]
        struct Mem([u8; 512]);
        let mut mem = Mem([0; 512]);
        let ptr = core::ptr::NonNull::from(&mut mem).cast::<u8>();
        // SAFETY: `mem` outlives both views and is not otherwise used while
        // they live; they build one producer and one consumer.
        let (a, b) = unsafe { (Region::from_raw_parts(ptr, 512), Region::from_raw_parts(ptr, 512)) };
        let mut tx = SharedRing::<u16>::init_deferred(a, CAP, CAP).unwrap().into_producer();
        let mut rx = SharedRing::<u16>::attach(b).unwrap().into_deferred_consumer::<CAP>().unwrap();
        check_deferred(&ops, &mut tx, &mut rx);
    }
}
