//! Two sides pinned to one CPU: the peer cannot answer while we spin. The
//! default options do not yield (a yield beside a CPU-bound thread gives
//! that thread the CPU for the rest of its slice); the adaptive spin falls
//! to `min_spin` and the side parks, which gives the CPU to the peer. The
//! pair runs on the defaults and on the options the docs give for a shared
//! CPU. In a test binary of its own, because it pins its threads.

#![cfg(all(feature = "std", target_os = "linux"))]

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use uring_queue::Region;
use uring_queue::uring::{Config, Error, Futex, Options, Request, Uring};

/// Pins the calling thread to the first CPU it may run on.
fn pin_to_one_cpu() {
    let allowed = sched_getaffinity(None).expect("sched_getaffinity");
    let cpu = (0..CpuSet::MAX_CPU)
        .find(|&c| allowed.is_set(c))
        .expect("some CPU is allowed");
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).expect("sched_setaffinity");
}

#[test]
#[cfg_attr(miri, ignore = "system calls")]
fn a_pair_pinned_to_one_cpu_runs_on_the_defaults_and_the_shared_cpu_options() {
    // Threads spawned from here inherit the pinning.
    pin_to_one_cpu();
    let o = Options::default();
    assert_eq!((o.spin, o.min_spin, o.yield_every), (4096, 1024, 0));
    assert_eq!(o.park_timeout, core::time::Duration::from_millis(10));
    assert_eq!(o.stale_after, None);
    let shared = Options {
        min_spin: 64,
        yield_every: 64,
        ..o
    };
    for options in [o, shared] {
        run_pair(options);
    }
}

fn run_pair(options: Options) {
    #[repr(C, align(128))]
    struct Mem([u8; 16384]);
    let mut mem = Box::new(Mem([0; 16384]));
    let uring = Uring::init(Region::new(&mut mem.0), Config::new(4, 4, 0)).unwrap();
    let (mut client, mut server) = uring.split::<4, _, _>(Futex::new(), Futex::new());
    client.set_options(options);
    server.set_options(options);
    std::thread::scope(|s| {
        s.spawn(move || {
            loop {
                match server.recv() {
                    Ok(incoming) => {
                        let op = incoming.opcode() as i32;
                        server.complete(incoming, op + 1, 0).unwrap();
                    }
                    Err(e) => break assert_eq!(e, Error::PeerGone),
                }
            }
        });
        for i in 0..2000 {
            assert_eq!(client.call(Request::new(i)).unwrap().result, i as i32 + 1);
        }
        drop(client);
    });
}
