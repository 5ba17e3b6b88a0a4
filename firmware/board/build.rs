//! Puts the memory map of the target's machine, as `memory.x`, where the
//! runtime's linker script includes it from.

use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let source = PathBuf::from("memory").join(format!("{target}.x"));
    println!("cargo:rerun-if-changed={}", source.display());
    // Host builds (clippy, docs) need no memory map.
    let Ok(map) = fs::read_to_string(&source) else {
        return;
    };
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), map).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search={}", out.display());
}
