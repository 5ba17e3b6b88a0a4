//! Each machine's entry: the stack, what the CPU needs before Rust code runs
//! (on aarch64 the FP/SIMD unit, which the target's code uses for copies,
//! and the MMU, so that the rings' exclusives and unaligned accesses work on
//! normal memory), then `kmain`. RISC-V leaves the FPU off (`mstatus.FS`), as
//! a kernel does: a float instruction in the crates would trap.

#[cfg(target_arch = "riscv64")]
core::arch::global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    "_start:",
    "  la sp, _stack_top",
    "  call {main}",
    "1: j 1b",
    main = sym crate::kmain,
);

#[cfg(target_arch = "aarch64")]
core::arch::global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    "_start:",
    "  ldr x0, =_stack_top",
    "  mov sp, x0",
    // CPACR_EL1.FPEN = 0b11: FP/SIMD at EL1 without a trap.
    "  mov x0, #(3 << 20)",
    "  msr cpacr_el1, x0",
    "  isb",
    "  bl {mmu}",
    "  bl {main}",
    "1: b 1b",
    mmu = sym crate::start::mmu_on,
    main = sym crate::kmain,
);

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    "_start:",
    "  lea rsp, [rip + _stack_top]",
    "  call {main}",
    "2: hlt",
    "  jmp 2b",
    main = sym crate::kmain,
);

/// The first-level table of an identity map in 1 GiB blocks.
#[cfg(target_arch = "aarch64")]
#[repr(C, align(4096))]
struct Table([u64; 512]);

#[cfg(target_arch = "aarch64")]
static mut TABLE: Table = Table([0; 512]);

/// Identity-maps the first 4 GiB: the first as device memory (the
/// machine's devices), the rest as normal write-back memory (RAM from
/// 1 GiB); then turns the MMU and the caches on.
#[cfg(target_arch = "aarch64")]
extern "C" fn mmu_on() {
    // Block descriptor: valid block, access flag; AttrIndx 0 is normal
    // memory (inner shareable), 1 device memory.
    const BLOCK: u64 = 0b01 | (1 << 10);
    const NORMAL: u64 = BLOCK | (3 << 8);
    const DEVICE: u64 = BLOCK | (1 << 2);
    // MAIR: attribute 0 normal write-back, 1 Device-nGnRnE.
    const MAIR: u64 = 0xFF;
    // 39-bit addresses from TTBR0 (the walk starts at level 1), 4 KiB pages,
    // walks write-back cacheable and inner shareable, TTBR1 off, 40-bit PA.
    const TCR: u64 = 25 | (1 << 8) | (1 << 10) | (3 << 12) | (1 << 23) | (2 << 32);
    let table = &raw mut TABLE;
    for (i, base) in (0..4u64).map(|i| (i as usize, i << 30)) {
        let entry = base | if i == 0 { DEVICE } else { NORMAL };
        // SAFETY: the MMU is off and nothing else runs: this is the only
        // access to the table; `i < 4 <= 512`.
        unsafe { (*table).0.as_mut_ptr().add(i).write_volatile(entry) };
    }
    // SAFETY: the table maps every address this image and QEMU's devices
    // use to itself, so turning the MMU on changes no address in use.
    unsafe {
        core::arch::asm!(
            "msr mair_el1, {mair}",
            "msr tcr_el1, {tcr}",
            "msr ttbr0_el1, {table}",
            "dsb ish",
            "isb",
            "tlbi vmalle1",
            "dsb ish",
            "isb",
            "mrs {t}, sctlr_el1",
            "orr {t}, {t}, #(1 << 0)",
            "orr {t}, {t}, #(1 << 2)",
            "orr {t}, {t}, #(1 << 12)",
            "msr sctlr_el1, {t}",
            "isb",
            mair = in(reg) MAIR,
            tcr = in(reg) TCR,
            table = in(reg) table as u64,
            t = out(reg) _,
        );
    }
}

/// Whether the CPU is set up as `_start` means it: on aarch64 the MMU and
/// the data cache on; on riscv64 the FPU off (`mstatus.FS` = Off).
pub fn as_a_kernel_runs() -> bool {
    #[cfg(target_arch = "aarch64")]
    {
        let sctlr: u64;
        // SAFETY: reads a system register of the current exception level.
        unsafe { core::arch::asm!("mrs {}, sctlr_el1", out(reg) sctlr) };
        sctlr & 0b101 == 0b101
    }
    #[cfg(target_arch = "riscv64")]
    {
        let mstatus: u64;
        // SAFETY: reads a machine-mode CSR in machine mode.
        unsafe { core::arch::asm!("csrr {}, mstatus", out(reg) mstatus) };
        (mstatus >> 13) & 0b11 == 0
    }
    #[cfg(target_arch = "x86_64")]
    true
}
