//! Links the scenario binaries with defmt's linker script (where its log
//! strings go), which every binary that logs with defmt needs; the size
//! binaries do not log, so the flag is set here, not for the whole
//! workspace.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
}
