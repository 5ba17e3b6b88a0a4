"""The ring indices a peer writes (uring-queue/src/producer.rs and
consumer.rs `refresh`, shared_ring/mod.rs `attach` / `indices`,
raw.rs `slot`).

Indices are free-running u32s, compared with wrapping subtraction; the
capacity is a power of two <= 2^31 (proven of every accepted header in
shared_ring_layout.py), the mask `capacity - 1`.

Honest-side invariant assumed (and proven inductive below): the producer's
tail is at most `capacity` past the consumer's head, `tail - head <= cap`
(wrapping), and each side only moves its own index forward: the producer
by at most the free slots it computed, the consumer by at most the
elements it found ready. A half's private cache satisfies the same bound
(it was accepted when loaded).

Proven (u32 arithmetic, as the Rust):
(a) `index & mask < capacity` for every index; a producer that accepted a
    new head writes slots `tail + j`, j < free, none of which is a slot
    `head + k`, k < tail - head, the consumer may still be reading; the
    free count never exceeds the capacity; a consumer that accepted a new
    tail reads at most `capacity` slots, all distinct;
(b) every head an honest consumer publishes and every tail an honest
    producer publishes is accepted by the other side's refresh, and by
    `attach`; and each side's moves keep the invariant.
"""

from z3 import And, Not, ULE, ULT

from common import bv, check_formulas, check_pattern, const, is_power_of_two

PRODUCER = "uring-queue/src/producer.rs"
CONSUMER = "uring-queue/src/consumer.rs"
MOD = "uring-queue/src/shared_ring/mod.rs"
RAW = "uring-queue/src/raw.rs"
MAX_CAPACITY = 1 << 31


def ring():
    cap = bv("cap", 32)
    return cap, cap - 1, [is_power_of_two(cap), ULE(cap, const(MAX_CAPACITY, 32))]


def producer_refresh(tail, cached_head, head, cap):
    """`Producer::refresh`: (accepted, new free count)."""
    accepted = ULE(tail - head, tail - cached_head)
    limit = head + cap
    return accepted, limit - tail


def consumer_refresh(head, cached_tail, tail, cap):
    """`Consumer::refresh`: (accepted, ready)."""
    ready = tail - head
    accepted = And(ULE(ready, cap), Not(ULT(ready, cached_tail - head)))
    return accepted, ready


def attach_ok(tail, head, cap):
    """`SharedRing::attach` and `indices`: accepted iff `tail - head <= cap`."""
    return ULE(tail - head, cap)


def run(report):
    cap, mask, facts = ring()
    x, j, k = bv("index", 32), bv("j", 32), bv("k", 32)
    report.prove("slot: index & mask < capacity", ULT(x & mask, cap), *facts)

    # (a) producer
    tail, cached, head = bv("tail", 32), bv("cached_head", 32), bv("head", 32)
    inv = ULE(tail - cached, cap)
    ok, free = producer_refresh(tail, cached, head, cap)
    report.prove("producer refresh: (a) free <= capacity, free + (tail - head) == capacity",
                 And(ULE(free, cap), ULE(tail - head, cap), free + (tail - head) == cap), ok, inv, *facts)
    report.prove("producer refresh: (a) a free slot is never one the consumer may still read",
                 (tail + j) & mask != (head + k) & mask,
                 ok, inv, ULT(j, free), ULT(k, tail - head), *facts)
    n = bv("n", 32)
    report.prove("producer: advancing the tail by n <= free keeps tail - head <= capacity",
                 ULE((tail + n) - head, cap), ok, inv, ULE(n, free), *facts)
    # (b) producer: an honest consumer moves its head forward over published elements only.
    report.prove("producer refresh: (b) every head an honest consumer publishes is accepted",
                 producer_refresh(tail, cached, cached + k, cap)[0], inv, ULE(k, tail - cached), *facts)
    report.satisfiable("producer refresh: assumptions hold for some state", ok, inv, ULT(j, free), ULT(k, tail - head), *facts)

    # (a) consumer
    c_head, c_cached, c_tail = bv("c_head", 32), bv("cached_tail", 32), bv("new_tail", 32)
    c_inv = ULE(c_cached - c_head, cap)
    ok, ready = consumer_refresh(c_head, c_cached, c_tail, cap)
    report.prove("consumer refresh: (a) ready <= capacity, at least what was cached",
                 And(ULE(ready, cap), ULE(c_cached - c_head, ready)), ok, c_inv, *facts)
    report.prove("consumer refresh: (a) the ready slots are distinct",
                 (c_head + j) & mask != (c_head + k) & mask,
                 ok, ULT(j, ready), ULT(k, ready), j != k, *facts)
    m = bv("m", 32)
    report.prove("consumer: advancing the head by m <= ready keeps tail - head <= capacity",
                 ULE(c_tail - (c_head + m), cap), ok, ULE(m, ready), *facts)
    # (b) consumer: the producer last saw head `seen` (published), the consumer's
    # private head is `r` past it (deferred release: r may be > 0), and the
    # producer's tail moved forward from the cached tail, at most `cap` past `seen`.
    # Written as offsets from `seen` (any cached tail is `seen + a` with
    # `a = cached_tail - seen`), which the solver handles much faster.
    seen, a, r, grow = bv("published_head", 32), bv("a", 32), bv("r", 32), bv("grow", 32)
    cached_tail = seen + a
    honest = [ULE(a, cap), ULE(r, a), ULE(grow, cap - a)]
    report.prove("consumer refresh: (b) every tail an honest producer publishes is accepted",
                 consumer_refresh(seen + r, cached_tail, cached_tail + grow, cap)[0], *honest, *facts)
    report.satisfiable("consumer refresh: assumptions hold for some state", ok, c_inv, ULT(j, ready), ULT(k, ready), j != k, *facts)

    # attach / indices
    t, h = bv("t", 32), bv("h", 32)
    report.prove("attach: (a) accepted indices satisfy the halves' invariant", ULE(t - h, cap), attach_ok(t, h, cap), *facts)
    report.prove("attach: (b) every honest state (tail - head <= capacity) is accepted", attach_ok(t, h, cap),
                 ULE(t - h, cap), *facts)

    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_formulas(report, PRODUCER, "refresh", [
        "let head = self.raw.consumer().index.load(Ordering::Acquire);",
        "if self.tail.wrapping_sub(head) > self.tail.wrapping_sub(self.cached_head()) { return Err(self.latch()); }",
        "self.limit = head.wrapping_add(self.slots_total());",
        "Ok(self.limit.wrapping_sub(self.tail))",
    ])
    check_formulas(report, PRODUCER, "cached_head", ["self.limit.wrapping_sub(self.slots_total())"])
    check_formulas(report, PRODUCER, "slots_total", ["self.mask + 1"])
    check_formulas(report, PRODUCER, "new", ["limit: head.wrapping_add(raw.capacity()),"])
    check_formulas(report, CONSUMER, "refresh", [
        "let tail = self.raw.producer().index.load(Ordering::Acquire);",
        "let ready = tail.wrapping_sub(self.head);",
        "if ready > self.slots_total() || ready < self.cached_tail.wrapping_sub(self.head) { return Err(self.latch()); }",
        "self.cached_tail = tail;",
    ])
    check_formulas(report, CONSUMER, "slots_total", ["self.mask + 1"])
    check_formulas(report, MOD, "attach", ["if tail.wrapping_sub(head) > layout.capacity { return Err(RegionError::Corrupted); }"])
    check_formulas(report, MOD, "indices", ["if tail.wrapping_sub(head) > self.raw.capacity() {"])
    check_formulas(report, RAW, "slot", ["let i = (index & self.mask()) as usize;"])
    check_formulas(report, RAW, "capacity", ["self.geometry().mask + 1"])
    check_pattern(report, RAW, r"mask: capacity\.wrapping_sub\(1\),", "the geometry's mask is capacity - 1")
