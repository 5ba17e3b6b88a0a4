//! A process that may run on one CPU only may share it with its peer, which
//! cannot answer while we spin: the default options then yield the CPU as
//! they spin. In a test binary of its own, because the answer is worked out
//! once per process.

#![cfg(all(feature = "std", target_os = "linux"))]

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use uring_queue::uring::Options;

#[test]
#[cfg_attr(miri, ignore = "system calls; Miri never yields")]
fn pinned_to_one_cpu_yields_while_spinning() {
    // Pin this thread (the one that asks first) to one CPU it may run on.
    let allowed = sched_getaffinity(None).expect("sched_getaffinity");
    let cpu = (0..CpuSet::MAX_CPU)
        .find(|&c| allowed.is_set(c))
        .expect("some CPU is allowed");
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).expect("sched_setaffinity");

    let o = Options::default();
    assert_eq!(o.yield_every, 64);
    // The other defaults are those of any process.
    assert_eq!(o.spin, 4096);
    assert_eq!(o.park_timeout, core::time::Duration::from_millis(10));
    assert_eq!(o.stale_after, None);
}
