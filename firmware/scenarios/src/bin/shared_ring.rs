//! uring-queue's `SharedRing` as firmware: a ring laid out in a static byte
//! region, read by a side that attaches to it, and corrupted headers refused
//! with their cause.
#![no_std]
#![no_main]

use firmware::{Outcome, copy, ensure, singleton};
use uring_queue::{CapacityError, Region, RegionError, SHARED_RING_MAGIC, SharedRing};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "shared_ring",
        &[(
            "a SharedRing in a static region refuses corrupted headers",
            shared_ring,
        )],
    )
}

/// Header, two index lines and 16 `u32` slots: 448 bytes.
#[repr(C, align(8))]
struct SharedBytes([u8; 448]);

fn shared_ring() -> Outcome {
    let mem = &mut singleton!(SharedBytes = SharedBytes([0; 448]))
        .ok_or("the region is fresh")?
        .0;
    ensure(
        SharedRing::<u32>::required_size(16) == Ok(448),
        "16 slots need 448 bytes",
    )?;
    {
        let (mut tx, _rx) = SharedRing::<u32>::init(Region::new(mem), 16)
            .map_err(|_| "init lays out a ring")?
            .split();
        ensure(tx.push_slice(&[1, 2, 3]) == Ok(3), "three values go in")?;
    }
    // Another side attaches to the same bytes and reads them.
    {
        let (_tx, mut rx) = SharedRing::<u32>::attach(Region::new(mem))
            .map_err(|_| "a fresh header is accepted")?
            .split();
        let mut out = [0u32; 4];
        ensure(
            rx.pop_slice(&mut out) == Ok(3),
            "the attached side reads three values",
        )?;
        ensure(out == [1, 2, 3, 0], "the values come out as they went in")?;
    }
    refuses(mem, 0, 0, RegionError::BadMagic { found: 0 })?;
    // Capacity (word 5) 3: not a power of two.
    refuses(
        mem,
        20,
        3,
        RegionError::Capacity(CapacityError::NotPowerOfTwo { capacity: 3 }),
    )?;
    // Data offset (word 8) past the end of the region.
    refuses(mem, 32, 4096, RegionError::BadOffsets)?;
    ensure(
        mem.get(..4) == Some(&SHARED_RING_MAGIC.to_ne_bytes()[..]),
        "attach wrote nothing",
    )
}

/// Writes `value` over the header word at `offset`, checks that attaching
/// fails with `expected`, and puts the word back.
fn refuses(mem: &mut [u8], offset: usize, value: u32, expected: RegionError) -> Outcome {
    let word = mem
        .get_mut(offset..offset + 4)
        .ok_or("the word is in the header")?;
    let mut saved = [0u8; 4];
    copy(&mut saved, word)?;
    copy(word, &value.to_ne_bytes())?;
    let attached = SharedRing::<u32>::attach(Region::new(mem)).map(|_| ());
    ensure(
        attached == Err(expected),
        "a corrupted header is refused with its cause",
    )?;
    let word = mem.get_mut(offset..offset + 4);
    copy(word.ok_or("the word is in the header")?, &saved)
}
