#!/usr/bin/env bash
# Runs every proof of proofs/ and the checks that tie each model to the Rust
# source; exits non-zero on any failure. Creates a virtual environment with
# the z3 solver on first use (PROOFS_VENV overrides where).
set -euo pipefail
cd "$(dirname "$0")"
# No bytecode caches in the source tree.
export PYTHONDONTWRITEBYTECODE=1
venv=${PROOFS_VENV:-../target/proofs-venv}
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import z3' 2>/dev/null; then
  "$venv/bin/pip" install --quiet 'z3-solver>=4.12,<5'
fi
exec "$venv/bin/python" run_all.py "$@"
