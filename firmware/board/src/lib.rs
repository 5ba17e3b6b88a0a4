//! The memory map of each QEMU machine the firmware runs on, as the
//! `memory.x` that the runtime's linker script includes (see `build.rs` and
//! `memory/`). No code: depending on this crate is what links a binary for
//! its machine.
#![no_std]
