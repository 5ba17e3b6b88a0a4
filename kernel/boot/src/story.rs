//! A scenario is a list of stories; each returns `Ok` or names the first
//! check that failed. [`run`] prints each outcome through semihosting and
//! exits QEMU with 0, or with the failing story's number.

/// A story's result: `Err` names the check that failed.
pub type Outcome = Result<(), &'static str>;

/// A story: its name and the function that tells it.
pub type Story = (&'static str, fn() -> Outcome);

/// `Ok` when `holds`, else the failure `what`: use with `?`.
pub fn ensure(holds: bool, what: &'static str) -> Outcome {
    if holds { Ok(()) } else { Err(what) }
}

/// Runs every story in order, prints `name: story ... ok` or `FAILED: <check>`,
/// and exits: 0 when all passed, else the number (from 1) of the first story
/// that failed. Later stories still run, so one failure hides no other.
pub fn run(scenario: &str, stories: &[Story]) -> ! {
    let (mut passed, mut failed, mut first_failure) = (0u32, 0u32, 0i32);
    let mut number = 0i32;
    for (name, story) in stories {
        number = number.saturating_add(1);
        print(scenario.as_bytes());
        print(b": ");
        print(name.as_bytes());
        match story() {
            Ok(()) => {
                passed = passed.saturating_add(1);
                print(b" ... ok\n");
            }
            Err(what) => {
                failed = failed.saturating_add(1);
                if first_failure == 0 {
                    first_failure = number;
                }
                print(b" ... FAILED: ");
                print(what.as_bytes());
                print(b"\n");
            }
        }
    }
    print(scenario.as_bytes());
    print(b": ");
    print_u32(passed);
    print(b" passed, ");
    print_u32(failed);
    print(b" failed\n");
    exit(first_failure)
}

/// Ends the run with `code` through semihosting.
#[cfg(not(target_arch = "x86_64"))]
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}

/// x86_64 is linked, not booted: halts.
#[cfg(target_arch = "x86_64")]
pub fn exit(_code: i32) -> ! {
    loop {
        core::hint::spin_loop();
    }
}

/// Writes `bytes` to the host's console, one semihosting call a byte (the
/// crate's `Stdout` has a panic path, an assertion on its descriptor).
pub fn print(bytes: &[u8]) {
    #[cfg(not(target_arch = "x86_64"))]
    for &b in bytes {
        semihosting::sys::arm_compat::sys_writec(b);
    }
    #[cfg(target_arch = "x86_64")]
    let _ = bytes;
}

/// Writes `n` in decimal.
pub fn print_u32(mut n: u32) {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        start -= 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    print(digits.get(start..).unwrap_or_default());
}

/// Copies `src` into `dst` if their lengths match: `copy_from_slice`
/// without its panic.
pub fn copy(dst: &mut [u8], src: &[u8]) -> Outcome {
    ensure(dst.len() == src.len(), "the lengths match")?;
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = s;
    }
    Ok(())
}
