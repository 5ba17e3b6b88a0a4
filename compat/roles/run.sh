#!/usr/bin/env bash
# A Stratum V2 role from the registry run twice: over the buffer_sv2 shim of
# compat/ (this workspace's patch), and as the control over the published
# buffer_sv2 3.0.1 (a copy of this workspace without the patch, resolved
# from the same Cargo.lock otherwise).
#
#   translator (the default): translator_sv2 0.6 between SV1 test miners and
#     a mock Stratum V2 upstream over Noise (tests/translator.rs).
#   pool: pool_sv2 0.7 on a mock Template Provider over Noise, with
#     translator_sv2 0.6 and SV1 test miners in front of it (tests/pool.rs;
#     `pool-run.sh` runs it, and says what it needs).
#
#   bash compat/roles/run.sh            # 100,000 shares in each run
#   bash compat/roles/run.sh pool
#   SV2_ROLE_SHARES=2000 bash compat/roles/run.sh
#   CONTROL=0 bash compat/roles/run.sh  # the shim only
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
role=${1:-translator}
case "$role" in
  translator) features=() ;;
  pool) features=(--features pool) ;;
  *)
    echo "usage: run.sh [translator|pool]"
    exit 2
    ;;
esac
export SV2_ROLE_SHARES=${SV2_ROLE_SHARES:-100000}
CONTROL=${CONTROL:-1}
# One target directory for both runs: only the crates above buffer_sv2 build twice.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-${here%/roles}/target/roles}

# Runs the role test in `dir` after checking which buffer_sv2 it builds with.
run() { # dir expected-first-line-of-cargo-tree label
  local tree
  tree=$(cd "$1" && cargo tree -e normal -i buffer_sv2 "${features[@]}" | head -n 1)
  if [[ "$tree" != "$2" ]]; then
    echo "$1 builds with $tree, not $2"
    exit 1
  fi
  echo "::: $role over $3: $tree"
  (cd "$1" && cargo test "${features[@]}" --test "$role" -- --nocapture)
}

run "$here" "buffer_sv2 v3.0.1 (${here%/roles}/buffer_sv2)" "the shim"
if [[ "$CONTROL" == 1 ]]; then
  control="$CARGO_TARGET_DIR/control"
  rm -rf "$control"
  mkdir -p "$control"
  cp -r "$here/Cargo.toml" "$here/Cargo.lock" "$here/src" "$here/tests" "$control/"
  # Drop the [patch.crates-io] table (the manifest's last one).
  sed -i '/^\[patch\.crates-io\]/,$d' "$control/Cargo.toml"
  run "$control" "buffer_sv2 v3.0.1" "buffer_sv2 3.0.1 (control)"
fi
