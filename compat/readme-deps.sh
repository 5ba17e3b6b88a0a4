#!/usr/bin/env bash
# Every `[dependencies]` snippet of the READMEs resolves and builds as a user
# would paste it: each becomes the manifest of a scratch crate, its paths into
# `../no-compromise-io/` (a checkout beside the user's project) pointed at this
# checkout, and `cargo check` builds it: for `thumbv6m-none-eabi` when the
# snippet picks a portable-atomic backend (what such a snippet is for), for
# the host otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/compat/target/readme-deps"
rm -rf "$work"
mkdir -p "$work"

checked=0
for readme in "$root"/README.md "$root"/*/README.md; do
  name=$(basename "$(dirname "$readme")")
  [[ "$readme" == "$root/README.md" ]] && name=top
  # Split the README's ```toml blocks that declare dependencies into files.
  awk -v out="$work/$name" '
    /^```toml/ { inside = 1; body = ""; next }
    inside && /^```/ {
      inside = 0
      if (body ~ /\[dependencies\]/) { n++; printf "%s", body > (out "-" n ".toml") }
      next
    }
    inside { body = body $0 "\n" }
  ' "$readme"
done

for snippet in "$work"/*.toml; do
  [[ -e "$snippet" ]] || continue
  if ! grep -q 'path = "\.\./no-compromise-io/' "$snippet"; then
    echo "$(basename "$snippet"): names no crate of this repository by path"
    exit 1
  fi
  crate="${snippet%.toml}"
  mkdir -p "$crate/src"
  {
    printf '[package]\nname = "readme-snippet"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
    sed "s#\\.\\./no-compromise-io/#$root/#g" "$snippet"
    printf '\n[workspace]\n'
  } > "$crate/Cargo.toml"
  printf '#![no_std]\n' > "$crate/src/lib.rs"
  target=()
  if grep -q '^portable-atomic' "$snippet"; then
    target=(--target thumbv6m-none-eabi)
  fi
  echo "::: README snippet $(basename "$snippet") ${target[*]}"
  (cd "$crate" && CARGO_TARGET_DIR="$work/target" cargo check -q "${target[@]}")
  checked=$((checked + 1))
done
echo "$checked README dependency snippets resolve"
[[ "$checked" -gt 0 ]]
