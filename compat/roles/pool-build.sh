#!/usr/bin/env bash
# pool_sv2 0.7 from the registry (with its JD server and stratum-apps' `pool`
# feature, which turns on `with_buffer_pool`) built over the buffer_sv2 shim:
# a scratch crate depending on it, with this workspace's patch. Building
# needs Cap'n Proto (`capnp` and its schemas: Debian's capnproto and
# libcapnp-dev) for bitcoin-capnp-types.
#
#   bash compat/roles/pool-build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${here%/roles}/target/roles}
probe="$CARGO_TARGET_DIR/pool-build"
rm -rf "$probe"
mkdir -p "$probe/src"
printf '' > "$probe/src/lib.rs"
cat > "$probe/Cargo.toml" <<TOML
[package]
name = "pool-build"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
pool_sv2 = { version = "=0.7.0", default-features = false }

[patch.crates-io]
buffer_sv2 = { path = "${here%/roles}/buffer_sv2" }

[workspace]
TOML
cd "$probe"
tree=$(cargo tree -e normal -i buffer_sv2 | head -n 1)
if [[ "$tree" != "buffer_sv2 v3.0.1 (${here%/roles}/buffer_sv2)" ]]; then
  echo "pool_sv2 does not build over the shim: $tree"
  exit 1
fi
cargo build
echo "pool_sv2 0.7 builds over the shim"
