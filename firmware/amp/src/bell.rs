//! The doorbell of the amp scenario: the machine's first UART, which QEMU
//! wires to a socket the host holds (`-serial chardev:...`). A byte the
//! firmware writes makes the host's socket readable; a byte the host
//! writes raises the UART's receive interrupt, whose handler takes it.
//! [`Bell`] is the firmware's `Notifier` over it: it sleeps in `WFI` until
//! an interrupt (the doorbell, or the timer tick that bounds every wait)
//! and rings by writing a byte.
//!
//! Per machine (one module each): `mps2-an386`'s CMSDK UART0 on NVIC line
//! 0 (`cmsdk`), `virt`'s NS16550A UART0 on PLIC source 10 (`ns16550`).
//!
//! The same UART carries the baseline of the latency comparison: 64-byte
//! messages echoed over the UART alone ([`echo`]).

#[cfg(target_arch = "arm")]
#[path = "bell/cmsdk.rs"]
mod uart;
#[cfg(target_arch = "riscv32")]
#[path = "bell/ns16550.rs"]
mod uart;

use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use uring_queue::uring::{Notifier, WakeFlag};

/// Doorbells taken by the receive interrupt.
static RUNG: AtomicU32 = AtomicU32::new(0);

/// The receive interrupt took `byte`: counts it. (Load and store: the
/// handler is the only writer, and handlers do not nest.)
fn rung(_byte: u8) {
    RUNG.store(
        RUNG.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Release,
    );
}

/// Doorbells received so far.
pub fn rung_count() -> u32 {
    RUNG.load(Ordering::Acquire)
}

/// The firmware's notifier over the UART, with the connection id it
/// publishes (as [`Boot`](crate::Boot)'s).
#[derive(Debug)]
pub struct Bell(pub u32);

impl Bell {
    /// Enables the UART with its receive interrupt, and the timer tick,
    /// which bounds every wait.
    pub fn new(id: u32) -> Self {
        uart::start();
        Self(id)
    }
}

/// Reads a byte, polling.
fn receive() -> u8 {
    loop {
        if let Some(byte) = uart::try_receive() {
            return byte;
        }
    }
}

impl Notifier for Bell {
    fn wait(&self, flag: &WakeFlag, _timeout: Duration) {
        // Masked, so that an interrupt between the check and `WFI` is not
        // lost: `WFI` wakes on a pending interrupt even while masked (on
        // both cores), and its handler runs once the mask is lifted.
        firmware::irq::masked(|| {
            if flag.is_armed() {
                uart::sleep();
            }
        });
    }

    fn wake(&self, _flag: &WakeFlag) {
        uart::send(1);
    }

    fn process_id(&self) -> u32 {
        self.0
    }
}

/// Turns the receive interrupt off: the UART is read by polling from now
/// on (the latency baseline).
pub fn poll_only() {
    uart::poll_only();
}

/// The latency baseline: `count` 64-byte messages over the UART alone,
/// each read byte by byte (polled: call [`poll_only`] first) and written
/// back.
/// Doorbell bytes still in flight are skipped: the host sends
/// `UART_START` first, and this side answers with it.
pub fn echo(count: u32) {
    while receive() != amp_proto::UART_START {}
    uart::send(amp_proto::UART_START);
    let mut message = [0u8; 64];
    for _ in 0..count {
        for b in message.iter_mut() {
            *b = receive();
        }
        for &b in message.iter() {
            uart::send(b);
        }
    }
}
