#!/usr/bin/env python3
"""Lists every `unsafe { ... }` block in the crates' library sources and
whether an lcov coverage report shows any of its lines executed.

Usage: unsafe-reach.py LCOV [CRATE_DIR...]

Prints one line per block (`reached` / `NOT REACHED`, file:line, function)
and a total; exits 1 if any block is not reached. Not counted, and listed
with the reason: blocks that only a loom build compiles or runs (LOOM_ONLY:
loom builds are not instrumented; the loom step runs them), and blocks in
test scaffolding inside src/ (`tests.rs`, `tests/`).
"""
import re
import sys
from pathlib import Path


def hits_by_file(lcov):
    hits, current = {}, None
    for line in Path(lcov).read_text().splitlines():
        if line.startswith("SF:"):
            current = hits.setdefault(str(Path(line[3:]).resolve()), {})
        elif line.startswith("DA:") and current is not None:
            number, count = line[3:].split(",")[:2]
            current[int(number)] = max(current.get(int(number), 0), int(count))
    return hits


def strip_comments_and_strings(text):
    """Blanks comments and string/char literals, keeping line structure."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j]) + '"'); i = j + 1
        else:
            out.append(text[i]); i += 1
    return "".join(out)


# (file, function): why only a loom build reaches the block.
LOOM_ONLY = {
    ("uring-queue/src/raw.rs", "track"): "AccessTracker::TRACKED is false without loom",
    ("uring-queue/src/loom/cell.rs", "track_run"): "#[cfg(loom)]",
}


def unsafe_blocks(path):
    """Yields (first_line, last_line, function) of each unsafe block."""
    text = strip_comments_and_strings(path.read_text())
    for m in re.finditer(r"\bunsafe\s*\{", text):
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        first = text.count("\n", 0, m.start()) + 1
        last = text.count("\n", 0, j) + 1
        names = re.findall(r"\bfn\s+(\w+)", text[:m.start()])
        yield first, last, names[-1] if names else "?"


def main():
    lcov, crates = sys.argv[1], sys.argv[2:] or ["io-traits", "buffer-pool", "uring-queue", "batch-reader"]
    hits = hits_by_file(lcov)
    total = reached = 0
    for crate in crates:
        for path in sorted(Path(crate, "src").rglob("*.rs")):
            lines = hits.get(str(path.resolve()), {})
            scaffolding = path.name == "tests.rs" or "tests" in path.parts[2:-1]
            for first, last, function in unsafe_blocks(path):
                where = f"{path}:{first} ({function})"
                if scaffolding:
                    print(f"test code    {where}")
                    continue
                if (str(path), function) in LOOM_ONLY:
                    print(f"loom only    {where}: {LOOM_ONLY[(str(path), function)]}")
                    continue
                total += 1
                ok = any(lines.get(k, 0) > 0 for k in range(first, last + 1))
                reached += ok
                print(f"{'reached    ' if ok else 'NOT REACHED'}  {where}")
    print(f"{reached} of {total} unsafe blocks reached")
    return 0 if reached == total else 1


if __name__ == "__main__":
    sys.exit(main())
