//! Puts the memory map of the target's machine, as `memory.x`, beside the
//! image's linker script, and links with that script.

use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let source = PathBuf::from("memory").join(format!("{target}.x"));
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed=link.x");
    // Host builds (clippy) need no memory map.
    let Ok(map) = fs::read_to_string(&source) else {
        return;
    };
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), map).expect("OUT_DIR is writable");
    fs::copy("link.x", out.join("link.x")).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tlink.x");
}
