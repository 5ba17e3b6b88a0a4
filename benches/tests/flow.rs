//! One message pipeline through every crate of the workspace:
//! decoded into a `BufferPool` (io-traits' `Buffer`), handed to another thread
//! as a `Slice`, sent as a framed record through a `uring-queue` ring built in
//! a byte region, and its fields read back with one batched `batch-reader`
//! call. Every message must arrive once, in order, with its bytes intact.
#![allow(clippy::std_instead_of_core, reason = "a std-only test")]

use batch_reader::backends::MemoryBackend;
use batch_reader::{Geometry, ReadOp, Reader};
use buffer_pool::{Buffer, BufferPool};
use uring_queue::{FrameConsumer, FrameProducer, Region, RingError, SharedRing};

const MESSAGES: u32 = if cfg!(miri) { 24 } else { 3000 };

/// The body of message `i`: 1 to 200 bytes that depend on `i`.
fn body(i: u32) -> Vec<u8> {
    let len = (i as usize * 37) % 200 + 1;
    (0..len).map(|k| (i as usize * 31 + k) as u8).collect()
}

#[test]
fn messages_flow_through_pool_ring_and_batch_reader() {
    // The ring lives in a plain byte region, as it would in shared memory.
    let mut mem = vec![0u64; 1024];
    let region = Region::new(zerocopy::IntoBytes::as_mut_bytes(&mut mem[..]));
    let (tx, rx) = SharedRing::<u64>::init(region, 512)
        .expect("region fits a 512-slot ring")
        .split();
    let (mut tx, mut rx) = (FrameProducer::new(tx), FrameConsumer::new(rx));
    let (slice_tx, slice_rx) = std::sync::mpsc::sync_channel(8);

    std::thread::scope(|s| {
        // Decoder: a 4-byte length, a 4-byte sequence number, then the body,
        // each written in place into the pool.
        s.spawn(move || {
            let mut pool = BufferPool::new(2048);
            for i in 0..MESSAGES {
                let b = body(i);
                pool.get_writable(4)
                    .copy_from_slice(&(b.len() as u32).to_le_bytes());
                pool.get_writable(4).copy_from_slice(&i.to_le_bytes());
                pool.get_writable(b.len()).copy_from_slice(&b);
                slice_tx.send(pool.get_data_owned()).expect("worker alive");
            }
        });

        // Worker: each slice, on another thread than the one that filled it,
        // becomes one record in the ring; the slice is dropped here.
        s.spawn(move || {
            for slice in slice_rx {
                loop {
                    match tx.send(slice.as_ref()) {
                        Ok(()) => break,
                        Err(RingError::Full) => std::thread::yield_now(),
                        Err(e) => panic!("send failed: {e}"),
                    }
                }
            }
        });

        // Reader: every record's three fields in one batched read.
        let mut next = 0u32;
        while next < MESSAGES {
            let record = match rx.recv() {
                Ok(frame) => frame.to_vec(),
                Err(RingError::Empty) => {
                    std::thread::yield_now();
                    continue;
                }
                Err(e) => panic!("recv failed: {e}"),
            };
            let geometry = Geometry::new(Some(64), 256, 16).expect("valid geometry");
            let mut reader: Reader<_, _> =
                Reader::new(MemoryBackend::new(&record, geometry), [0u8; 256]);
            let (mut len, mut seq) = ([0u8; 4], [0u8; 4]);
            let mut payload = vec![0u8; record.len().saturating_sub(8)];
            let mut ops = [
                ReadOp::new(0, &mut len, 0),
                ReadOp::new(4, &mut seq, 1),
                ReadOp::new(8, &mut payload, 2),
            ];
            let mut completed = 0;
            reader.read_many(&mut ops, |done| {
                assert!(
                    done.is_ok(),
                    "op {} failed: {:?}",
                    done.tag(),
                    done.first_error()
                );
                completed += 1;
            });
            assert_eq!(completed, 3);
            assert_eq!(reader.counters().ops, 3);
            assert_eq!(
                u32::from_le_bytes(seq),
                next,
                "records arrive once, in order"
            );
            let expected = body(next);
            assert_eq!(u32::from_le_bytes(len) as usize, expected.len());
            assert_eq!(payload, expected);
            next += 1;
        }
    });
}
