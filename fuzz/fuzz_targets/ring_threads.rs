//! Random operation sequences on the two halves of a ring, each half on its
//! own thread: every value arrives exactly once, in order, through any mix of
//! single, batched and chunked operations; framed records arrive intact.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use uring_queue::{FrameConsumer, FrameProducer, HeapRing, RingError};

#[derive(Debug, Arbitrary)]
enum ProducerOp {
    Push,
    PushSlice(u8),
    WriteChunk { n: u8, commit: u8 },
    Send(u8),
    Yield,
}

#[derive(Debug, Arbitrary)]
enum ConsumerOp {
    Pop,
    PopSlice(u8),
    ReadChunk { n: u8, commit: u8 },
    Peek,
    Recv,
    Yield,
}

#[derive(Debug, Arbitrary)]
struct Input {
    log2_capacity: u8,
    frames: bool,
    producer: Vec<ProducerOp>,
    consumer: Vec<ConsumerOp>,
}

fuzz_target!(|input: Input| {
    let capacity = 1usize << (input.log2_capacity % 7);
    if input.frames {
        frames(capacity.max(2), &input);
    } else {
        elements(capacity, &input);
    }
});

fn elements(capacity: usize, input: &Input) {
    let (mut tx, mut rx) = HeapRing::<u64>::new(capacity).unwrap();
    std::thread::scope(|s| {
        let producer = s.spawn(move || {
            let mut next = 0u64;
            for op in &input.producer {
                match *op {
                    ProducerOp::Push | ProducerOp::Send(_) => match tx.push(next) {
                        Ok(()) => next += 1,
                        Err(e) => assert_eq!(e.error(), RingError::Full),
                    },
                    ProducerOp::PushSlice(n) => {
                        let batch: Vec<u64> = (next..next + u64::from(n)).collect();
                        next += tx.push_slice(&batch).unwrap() as u64;
                    }
                    ProducerOp::WriteChunk { n, commit } => match tx.write_chunk(n.into()) {
                        Ok(mut chunk) => {
                            let (a, b) = chunk.as_mut_slices();
                            assert_eq!(a.len() + b.len(), usize::from(n));
                            for (k, slot) in a.iter_mut().chain(b.iter_mut()).enumerate() {
                                *slot = next + k as u64;
                            }
                            chunk.commit(commit.into());
                            next += u64::from(commit.min(n));
                        }
                        Err(RingError::TooLarge { max }) => assert!(usize::from(n) > max),
                        Err(RingError::Insufficient { available }) => {
                            assert!(available < usize::from(n))
                        }
                        Err(e) => panic!("write_chunk: {e}"),
                    },
                    ProducerOp::Yield => std::thread::yield_now(),
                }
            }
            next
        });
        let mut next = 0u64;
        for op in &input.consumer {
            match *op {
                ConsumerOp::Pop | ConsumerOp::Recv => match rx.pop() {
                    Ok(v) => check(&mut next, v),
                    Err(e) => assert_eq!(e, RingError::Empty),
                },
                ConsumerOp::PopSlice(n) => {
                    let mut out = vec![0; n.into()];
                    let got = rx.pop_slice(&mut out).unwrap();
                    out[..got].iter().for_each(|&v| check(&mut next, v));
                }
                ConsumerOp::ReadChunk { n, commit } => match rx.read_chunk(n.into()) {
                    Ok(chunk) => {
                        let (a, b) = chunk.as_slices();
                        let k = usize::from(commit.min(n));
                        a.iter().chain(b).take(k).for_each(|&v| check(&mut next, v));
                        chunk.commit(k);
                    }
                    Err(RingError::TooLarge { max }) => assert!(usize::from(n) > max),
                    Err(RingError::Insufficient { available }) => {
                        assert!(available < usize::from(n))
                    }
                    Err(e) => panic!("read_chunk: {e}"),
                },
                ConsumerOp::Peek => {
                    if let Ok(&v) = rx.peek() {
                        assert_eq!(v, next);
                    }
                }
                ConsumerOp::Yield => std::thread::yield_now(),
            }
        }
        // Drain: everything published before the producer left must arrive.
        loop {
            let abandoned = rx.is_abandoned();
            while let Ok(v) = rx.pop() {
                check(&mut next, v);
            }
            if abandoned {
                break;
            }
            std::thread::yield_now();
        }
        assert_eq!(producer.join().unwrap(), next, "values lost");
        assert!(rx.is_empty());
    });
}

/// Every value arrives exactly once, in order: the next one is `*next`.
fn check(next: &mut u64, v: u64) {
    assert_eq!(v, *next, "out of order, lost or duplicated");
    *next += 1;
}

fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len).map(|k| (seq as usize * 13 + k) as u8).collect()
}

fn frames(capacity: usize, input: &Input) {
    let (tx, rx) = HeapRing::<u64>::new(capacity).unwrap();
    let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    std::thread::scope(|s| {
        let producer = s.spawn(move || {
            let mut lens = Vec::new();
            for op in &input.producer {
                let len = match *op {
                    ProducerOp::Send(n) | ProducerOp::PushSlice(n) => usize::from(n),
                    ProducerOp::WriteChunk { n, .. } => usize::from(n) / 4,
                    ProducerOp::Push => 0,
                    ProducerOp::Yield => {
                        std::thread::yield_now();
                        continue;
                    }
                };
                match tx.send(&payload(lens.len() as u64, len)) {
                    Ok(()) => lens.push(len),
                    Err(RingError::Full) => {}
                    Err(RingError::TooLarge { max }) => assert!(len > max),
                    Err(e) => panic!("send: {e}"),
                }
            }
            lens
        });
        let mut got = Vec::new();
        let mut receive = |rx: &mut FrameConsumer<'_>| match rx.recv() {
            Ok(frame) => {
                assert_eq!(&*frame, &payload(got.len() as u64, frame.len())[..]);
                got.push(frame.len());
                true
            }
            Err(e) => {
                assert_eq!(e, RingError::Empty);
                false
            }
        };
        for op in &input.consumer {
            if let ConsumerOp::Yield = op {
                std::thread::yield_now();
            } else {
                receive(&mut rx);
            }
        }
        loop {
            let abandoned = rx.is_abandoned();
            while receive(&mut rx) {}
            if abandoned {
                break;
            }
            std::thread::yield_now();
        }
        assert_eq!(producer.join().unwrap(), got, "records lost or resized");
    });
}
