//! The skeleton every size binary shares, so that what a binary adds over
//! `empty` is the named work alone: the runtime's entry and default
//! handlers, and a panic handler that does not format (it spins).
#![no_std]

use core::hint::black_box;

/// Ends a size binary: `result` is used, so the work that made it stays.
pub fn done<T>(result: T) -> ! {
    black_box(result);
    loop {
        core::hint::spin_loop();
    }
}

/// An input the optimiser cannot see through.
pub fn input<T>(value: T) -> T {
    black_box(value)
}

/// The 256 bytes the reader rows read, in `.bss` (not `.rodata`, where they
/// would count as flash, nor made on the stack, which would link a `memset`
/// that is the binary's and not the crate's), behind `black_box`, so the
/// optimiser cannot see what they hold.
pub fn memory() -> &'static [u8] {
    // `mut`, so that it is writable memory (`.bss`), not read-only data.
    static mut MEMORY: [u8; 256] = [0; 256];
    let memory: *const [u8; 256] = &raw const MEMORY;
    // SAFETY: nothing writes `MEMORY`, so shared references to it are sound.
    black_box(unsafe { &*memory })
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        core::hint::spin_loop();
    }
}

/// A `&'static mut` to a `static` of type `$ty` initialised with `$init`,
/// the first time this runs (a size binary runs it once): keeps the work's
/// memory in `.bss` / `.data`, where the table counts it.
#[macro_export]
macro_rules! statik {
    ($ty:ty = $init:expr) => {{
        static TAKEN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        static mut VALUE: $ty = $init;
        if TAKEN.load(core::sync::atomic::Ordering::Relaxed) {
            $crate::done(0u32)
        }
        TAKEN.store(true, core::sync::atomic::Ordering::Relaxed);
        // SAFETY: `TAKEN` lets this reference be made once; size binaries
        // have no interrupts.
        unsafe { &mut *&raw mut VALUE }
    }};
}
