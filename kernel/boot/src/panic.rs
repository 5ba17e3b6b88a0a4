//! The panic handler, chosen by the `panic-never` feature.

#[cfg(not(feature = "panic-never"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // No formatting: the message would pull `core::fmt` into every binary.
    crate::story::print(b"panicked\n");
    crate::story::exit(101)
}

#[cfg(feature = "panic-never")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    unsafe extern "Rust" {
        // Defined nowhere: a binary links only if the optimiser removed
        // every path to this handler.
        fn a_panic_path_is_left_in_this_binary() -> !;
    }
    // SAFETY: never runs; if it were reachable the binary would not link.
    unsafe { a_panic_path_is_left_in_this_binary() }
}
