//! The queue's state machine under the loom facade: runs once as a plain
//! test, and under `cfg(loom)` with every access to the shared cell checked.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use crate::backends::MemoryBackend;
use crate::loom::model;
use crate::{AsyncReader, Geometry};

static MEM: [u8; 64] = {
    let mut m = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        m[i] = i as u8;
        i += 1;
    }
    m
};

#[test]
fn a_dropped_queued_read_leaves_the_batch() {
    model(|| {
        let Ok(g) = Geometry::new(None, 64, 64) else {
            panic!("valid geometry");
        };
        let reader = AsyncReader::<_, _, 4, 16>::new(MemoryBackend::new(&MEM, g), [0u8; 0]);
        let mut cx = Context::from_waker(Waker::noop());
        let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
        {
            // Queued outside a run, then dropped before any flush.
            let mut first = pin!(reader.read(8, &mut a));
            assert!(first.as_mut().poll(&mut cx).is_pending());
        }
        {
            let mut second = pin!(reader.read(16, &mut b));
            assert!(second.as_mut().poll(&mut cx).is_pending());
            // Polled again: the task came back, so the queue is flushed,
            // and only the read still wanted goes to the backend.
            assert_eq!(second.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
        }
        assert_eq!(b, [16, 17, 18, 19]);
        assert_eq!(a, [0; 4]);
        let c = reader.counters();
        assert_eq!((c.backend_calls, c.ops), (1, 1));
    });
}
