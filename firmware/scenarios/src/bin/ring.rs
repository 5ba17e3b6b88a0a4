//! uring-queue's `Ring` as firmware: the producer runs in the timer
//! interrupt handler, the consumer in `main`; 10,000 values arrive in order.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};
use firmware::{IrqCell, Outcome, ensure, irq, singleton};
use uring_queue::{Consumer, Producer, Ring, RingError};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    firmware::run(
        "ring",
        &[(
            "10,000 values from a timer interrupt arrive in order",
            ring_from_irq,
        )],
    )
}

const VALUES: u32 = 10_000;
static PRODUCER: IrqCell<(Producer<'static, u32>, u32)> = IrqCell::new();
static PUSHED_IN_IRQ: AtomicU32 = AtomicU32::new(0);

/// The timer handler: pushes the next values until the ring is full.
fn produce() {
    PRODUCER.with(|(tx, next)| {
        while *next < VALUES && tx.push(*next).is_ok() {
            *next += 1;
            PUSHED_IN_IRQ.store(*next, Ordering::Relaxed);
        }
    });
}

fn ring_from_irq() -> Outcome {
    let ring = singleton!(Ring<u32, 16> = Ring::new()).ok_or("the ring is fresh")?;
    let (tx, mut rx) = ring.split();
    ensure(
        PRODUCER.put((tx, 0)).is_none(),
        "the producer cell was empty",
    )?;
    irq::set_handler(produce);
    irq::start_ticks();
    let drained = drain(&mut rx);
    irq::stop_ticks();
    drained?;
    ensure(
        PUSHED_IN_IRQ.load(Ordering::Relaxed) == VALUES,
        "the handler pushed every value",
    )?;
    ensure(
        irq::runs() >= VALUES / 16,
        "the handler ran once per ring-full at least",
    )?;
    drop(PRODUCER.take());
    ensure(rx.is_abandoned(), "the consumer sees the producer gone")?;
    ensure(rx.pop() == Err(RingError::Empty), "nothing is left")
}

/// Pops `VALUES` values, checking each is the next one; fails if the
/// handler ran three times, each with room in the ring, and left it empty
/// (the producer stalled).
///
/// The handler's run count is read before each pop, never after: under an
/// emulator on a loaded host, `main` can be held up between two
/// instructions while timer interrupts queue up, so that several handler
/// runs (the first filling the ring, the rest finding it full) land between
/// an empty pop and a later look at the count. Counted before the pop,
/// only runs that finished before the ring was seen empty are charged.
fn drain(rx: &mut Consumer<'_, u32>) -> Outcome {
    let mut expected = 0;
    let mut runs_at_last_value = irq::runs();
    while expected < VALUES {
        let runs = irq::runs();
        match rx.pop() {
            Ok(v) => {
                ensure(v == expected, "values arrive in order, none lost")?;
                expected += 1;
                runs_at_last_value = runs;
            }
            Err(RingError::Empty) => {
                let idle_runs = runs.wrapping_sub(runs_at_last_value);
                ensure(idle_runs < 3, "the producer in the handler keeps up")?;
            }
            Err(_) => return Err("pop fails only when empty"),
        }
    }
    Ok(())
}
