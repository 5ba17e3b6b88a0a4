"""Shows that the drift checks catch a change: for each model, one edit
of the Rust source it models (a constant, an operator, a bound) is made in
a scratch copy of the source tree, and that model's drift checks must then
fail. Run by run_all.py after the proofs."""

import importlib
import os
import shutil
import tempfile

import common

# (model, file, text in the source, what it becomes)
MUTATIONS = [
    ("parts", "uring-queue/src/layout.rs",
     "a.start < b.start.saturating_add(b.len) && b.start < a_end",
     "a.start < b.start.saturating_add(b.len) && b.start <= a_end"),
    ("shared_ring_layout", "uring-queue/src/shared_ring/layout.rs",
     "const DATA_OFFSET: usize = 384;", "const DATA_OFFSET: usize = 392;"),
    ("shared_ring_layout", "uring-queue/src/raw.rs",
     "pub const MAX_CAPACITY: usize = 1 << 31;", "pub const MAX_CAPACITY: usize = 1 << 32;"),
    ("shared_ring_indices", "uring-queue/src/half.rs",
     "if moved <= most {", "if moved <= most + 1 {"),
    ("shared_ring_indices", "uring-queue/src/producer.rs",
     "load_bound(self.raw.consumer(), total, self.tail, self.limit, total)",
     "load_bound(self.raw.consumer(), total, self.tail, self.limit, total + 1)"),
    ("shared_ring_indices", "uring-queue/src/consumer.rs",
     "load_bound(self.raw.producer(), 0, self.head, self.cached_tail, total)",
     "load_bound(self.raw.producer(), 0, self.head, self.cached_tail, total + 1)"),
    ("uring_layout", "uring-queue/src/uring/layout.rs",
     "const RING_ALIGN: usize = 128;", "const RING_ALIGN: usize = 64;"),
    ("entry_spans", "uring-queue/src/uring/payload.rs",
     "if end > u64::from(self.len) {", "if end > u64::from(self.len) + 1 {"),
    ("entry_spans", "uring-queue/src/uring/table.rs",
     "if response_len > block.len {", "if response_len > block.len + 1 {"),
    ("credits", "uring-queue/src/uring/table.rs",
     "Some(index) if self.outstanding < self.ring_credits => index,",
     "Some(index) if self.outstanding <= self.ring_credits => index,"),
    ("payload_allocator", "uring-queue/src/uring/payload.rs",
     "let need = len.next_multiple_of(BLOCK_ALIGN) as u64;", "let need = len as u64;"),
]


class Quiet(common.Report):
    def ok(self, name):
        self.passed += 1

    def fail(self, name, detail):
        self.failures.append(name)


def run(report):
    real_root = common.ROOT
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(real_root, "uring-queue", "src"), os.path.join(tmp, "uring-queue", "src"))
        for model, rel, old, new in MUTATIONS:
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as f:
                original = f.read()
            label = f"drift self-test: {model} notices `{old.splitlines()[0]}` -> `{new.splitlines()[0]}` in {rel}"
            if original.count(old) != 1:
                report.fail(label, "the text to change is not in the source once: update MUTATIONS")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(original.replace(old, new))
            common.ROOT = tmp
            try:
                quiet = Quiet()
                importlib.import_module(model).drift(quiet)
            finally:
                common.ROOT = real_root
                with open(path, "w", encoding="utf-8") as f:
                    f.write(original)
            if quiet.failures:
                report.ok(label)
            else:
                report.fail(label, "the drift checks passed on a changed source")
