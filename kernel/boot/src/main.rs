//! The crates as kernel code: one image per kernel target, booted under
//! QEMU's `virt` machines (aarch64 with the MMU on, riscv64 in M-mode with
//! the FPU off), that runs kernel-flavoured stories and exits through
//! semihosting; x86_64 is linked only. Nothing here formats or indexes, so
//! the image also links with the `panic-never` handler.
#![no_std]
#![no_main]

mod panic;
mod scenarios;
mod start;
mod story;

/// Called by `_start` with a stack.
extern "C" fn kmain() -> ! {
    story::run(
        "kernel",
        &[
            ("the CPU is set up as a kernel's", machine),
            (
                "a pipe's faulting user copies commit what they copied",
                scenarios::pipe,
            ),
            (
                "a buffer pool in a static lends and takes back",
                scenarios::pool,
            ),
            (
                "the batch reader reads kernel memory",
                scenarios::batch_reader,
            ),
            (
                "a uring pair in one region answers a request",
                scenarios::uring,
            ),
        ],
    )
}

/// On aarch64 the MMU and caches on; on riscv64 the FPU off.
fn machine() -> story::Outcome {
    story::ensure(start::as_a_kernel_runs(), "as _start set it up")
}
