//! Faults are counted, not survived: a hostile host must never make the
//! firmware fault, so the handler reports the fault and ends the run with
//! exit code 3, which the host side of the scenario reads as a failure.

/// Ends the run: prints the fault and exits with 3.
fn fault() -> ! {
    firmware::story::print(b"amp: FAULT taken\n");
    semihosting::process::exit(3)
}

#[cfg(target_arch = "arm")]
#[cortex_m_rt::exception]
unsafe fn HardFault(_frame: &cortex_m_rt::ExceptionFrame) -> ! {
    // MemManage, BusFault and UsageFault are not enabled, so each of them
    // escalates to HardFault.
    fault()
}

#[cfg(target_arch = "riscv32")]
#[unsafe(export_name = "ExceptionHandler")]
fn exception(_frame: &riscv_rt::TrapFrame) -> ! {
    fault()
}
