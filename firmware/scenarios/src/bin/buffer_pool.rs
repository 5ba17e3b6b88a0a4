//! buffer-pool as firmware: a pool over `static` storage lends messages in
//! Back and then Front mode, slices come back out of order (some dropped in
//! an interrupt handler), and a full pool is a typed error.
#![no_std]
#![no_main]

use buffer_pool::{Buffer, BufferError, PoolMode, PoolStorage, Slice, StaticBufferPool};
use firmware::{IrqCell, Outcome, ensure, irq};

/// 256 bytes and 8 slots: eight 32-byte messages fill both.
static STORAGE: PoolStorage<256> = PoolStorage::new();
const MESSAGE: usize = 32;
const SLOTS: usize = 8;

/// Slices that `main` hands to the interrupt handler to drop.
static TO_RELEASE: IrqCell<[Option<Slice>; 4]> = IrqCell::new();

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "buffer_pool",
        &[
            ("a static pool lends messages in Back mode", back_mode),
            (
                "slices released out of order make room in Front mode",
                front_mode,
            ),
            (
                "slices dropped in an interrupt handler return their space",
                released_in_irq,
            ),
            ("a full pool is a typed error", full_pool),
        ],
    )
}

/// The one place the scenario claims a pool.
fn claim() -> Result<StaticBufferPool, &'static str> {
    STORAGE.pool().map_err(|_| "the storage is free to claim")
}

/// Writes a `len`-byte message of `byte`s and hands it out.
fn lend(pool: &mut StaticBufferPool, len: usize, byte: u8) -> Result<Slice, &'static str> {
    pool.try_get_writable(len)
        .map_err(|_| "the message fits")?
        .fill(byte);
    Ok(pool.get_data_owned())
}

/// Fills the pool with eight messages, message `i` all `i`s.
fn fill(pool: &mut StaticBufferPool) -> Result<[Option<Slice>; SLOTS], &'static str> {
    let mut held = [const { None }; SLOTS];
    for (byte, slot) in (0u8..).zip(held.iter_mut()) {
        *slot = Some(lend(pool, MESSAGE, byte)?);
        ensure(
            pool.mode() == PoolMode::Back,
            "each message goes after the last",
        )?;
    }
    Ok(held)
}

/// Drops the slice held at `i`.
fn release(held: &mut [Option<Slice>], i: usize) {
    drop(held.get_mut(i).and_then(Option::take));
}

/// Whether every slice still held has its own bytes.
fn intact(held: &[Option<Slice>]) -> bool {
    (0u8..).zip(held).all(|(byte, slot)| {
        slot.as_ref()
            .is_none_or(|s| s.len() == MESSAGE && s.iter().all(|&b| b == byte))
    })
}

fn back_mode() -> Outcome {
    let mut pool = claim()?;
    ensure(STORAGE.pool().is_err(), "a second claim is StorageInUse")?;
    ensure(
        pool.capacity() == 256,
        "the pool has the storage's capacity",
    )?;
    let held = fill(&mut pool)?;
    ensure(
        held.iter()
            .all(|s| s.as_ref().is_some_and(Slice::is_pooled)),
        "all pooled",
    )?;
    ensure(intact(&held), "every slice holds its message")
}

fn front_mode() -> Outcome {
    let mut pool = claim()?;
    let mut held = fill(&mut pool)?;
    release(&mut held, 5);
    release(&mut held, 1);
    // Two slots are free, but the oldest message still bounds the front.
    let blocked = pool.try_get_writable(MESSAGE);
    ensure(
        matches!(blocked, Err(BufferError::CapacityExceeded { .. })),
        "no region fits",
    )?;
    release(&mut held, 0);
    let first = lend(&mut pool, MESSAGE, 10)?;
    ensure(pool.mode() == PoolMode::Front, "the freed front is reused")?;
    let second = lend(&mut pool, MESSAGE, 11)?;
    ensure(pool.mode() == PoolMode::Front, "the front grows")?;
    ensure(
        pool.try_get_writable(MESSAGE).is_err(),
        "the front ends at message 2",
    )?;
    ensure(
        first.iter().all(|&b| b == 10),
        "the first front message is intact",
    )?;
    ensure(
        second.iter().all(|&b| b == 11),
        "the second front message is intact",
    )?;
    ensure(intact(&held), "the Back messages are untouched")
}

fn released_in_irq() -> Outcome {
    irq::set_handler(drop_handed_slices);
    let mut pool = claim()?;
    let mut held = fill(&mut pool)?;
    let mut handed = [const { None }; 4];
    for (slot, i) in handed.iter_mut().zip([6, 0, 7, 3]) {
        *slot = held.get_mut(i).and_then(Option::take);
    }
    ensure(
        handed.iter().all(Option::is_some),
        "four slices are handed over",
    )?;
    ensure(
        TO_RELEASE.put(handed).is_none(),
        "the hand-over cell was empty",
    )?;
    let runs = irq::runs();
    irq::pend();
    ensure(
        irq::runs() == runs.wrapping_add(1),
        "the interrupt handler ran once",
    )?;
    ensure(TO_RELEASE.take().is_none(), "the handler took the slices")?;
    // Messages 6 and 7 came back: the back region after message 5 is free.
    let message = lend(&mut pool, 2 * MESSAGE, 20)?;
    ensure(
        pool.mode() == PoolMode::Back,
        "the space the handler freed is reused",
    )?;
    ensure(
        message.iter().all(|&b| b == 20),
        "the new message is intact",
    )?;
    ensure(intact(&held), "the slices main kept are untouched")
}

/// The interrupt handler: drops the slices `main` handed over.
fn drop_handed_slices() {
    drop(TO_RELEASE.take());
}

fn full_pool() -> Outcome {
    let mut pool = claim()?;
    let too_big = pool.try_get_writable(257);
    ensure(
        matches!(too_big, Err(BufferError::CapacityExceeded { .. })),
        "257 > 256",
    )?;
    let mut held = [const { None }; SLOTS];
    for slot in held.iter_mut() {
        *slot = Some(lend(&mut pool, 1, 1)?);
    }
    let full = pool.try_get_writable(1).err();
    ensure(
        full == Some(BufferError::NoFreeSlot),
        "no slot left: NoFreeSlot",
    )?;
    // What a firmware logs here, through the crates' `defmt` feature
    // (`println!`: unfiltered by DEFMT_LOG).
    let logged = firmware::log::logged_bytes();
    defmt::println!("pool full: {}, mode {}", full, pool.mode());
    ensure(
        firmware::log::logged_bytes() > logged,
        "defmt formats the error and the mode",
    )?;
    release(&mut held, 3);
    ensure(
        pool.try_get_writable(1).is_ok(),
        "a released slot is lent again",
    )
}
