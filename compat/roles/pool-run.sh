#!/usr/bin/env bash
# pool_sv2 0.7 from the registry (stratum-apps' `pool` feature, which turns
# on `with_buffer_pool`) run offline: on a mock Template Provider over
# Noise, with translator_sv2 0.6 in front of it and SV1 test miners in front
# of the translator; every share must reach the pool unchanged and be
# acknowledged by it (tests/pool.rs). Run over the buffer_sv2 shim, then
# over the published buffer_sv2 3.0.1 as the control (run.sh).
#
# Building pool_sv2 needs Cap'n Proto (`capnp` and its schemas: Debian's
# capnproto and libcapnp-dev) for the Bitcoin Core IPC types it links even
# when, as here, it talks to a Template Provider over the network.
#
#   bash compat/roles/pool-run.sh                        # 100,000 shares in each run
#   SV2_ROLE_SHARES=2000 CONTROL=0 bash compat/roles/pool-run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v capnp >/dev/null; then
  echo "pool_sv2 needs capnp to build: apt-get install capnproto libcapnp-dev"
  exit 1
fi
exec bash "$here/run.sh" pool
