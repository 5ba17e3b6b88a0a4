"""The ring indices a peer writes (uring-queue/src/half.rs `load_bound`,
the one check both halves make of a reloaded peer index; producer.rs and
consumer.rs `refresh`; shared_ring/mod.rs `attach` / `indices`; raw.rs
`slot`).

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
HALF = "uring-queue/src/half.rs"
MOD = "uring-queue/src/shared_ring/mod.rs"
RAW = "uring-queue/src/raw.rs"
MAX_CAPACITY = 1 << 31


def ring():
    cap = bv("cap", 32)
    return cap, cap - 1, [is_power_of_two(cap), ULE(cap, const(MAX_CAPACITY, 32))]


def load_bound(peer, offset, own, seen, cap):
    """`half::load_bound`: (accepted, bound). The bound a peer index sets
    is accepted when it moved forward from the one last seen by at most
    as far as this half's own index plus the capacity."""
    bound = peer + offset
    return ULE(bound - seen, own + cap - seen), bound


def producer_refresh(tail, cached_head, head, cap):
    """`Producer::refresh` through `load_limit`: (accepted, new free
    count). The producer keeps `limit`, the cached head plus the capacity."""
    accepted, limit = load_bound(head, cap, tail, cached_head + cap, cap)
    return accepted, limit - tail


def consumer_refresh(head, cached_tail, tail, cap):
    """`Consumer::refresh` through `load_tail`: (accepted, ready)."""
    accepted, tail = load_bound(tail, 0, head, cached_tail, cap)
    return accepted, tail - head


def attach_ok(tail, head, cap):
    """`SharedRing::attach` and `indices`: accepted iff `tail - head <= cap`."""
    return ULE(tail - head, cap)


def run(report):
    cap, mask, facts = ring()
    x, j, k = bv("index", 32), bv("j", 32), bv("k", 32)
    report.prove("slot: index & mask < capacity", ULT(x & mask, cap), *facts)

    # The shared check is each half's own rule: the producer accepts a head
    # between its cached head and its tail, the consumer a tail between its
    # cached tail and its head plus the capacity.
    tail, cached, head = bv("tail", 32), bv("cached_head", 32), bv("head", 32)
    report.prove("load_bound: the producer's form accepts exactly tail - head <= tail - cached_head",
                 producer_refresh(tail, cached, head, cap)[0] == ULE(tail - head, tail - cached),
                 ULE(tail - cached, cap), *facts)
    c_head, c_cached, c_tail = bv("c_head", 32), bv("cached_tail", 32), bv("new_tail", 32)
    ready = c_tail - c_head
    report.prove("load_bound: the consumer's form accepts exactly cached_tail - head <= ready <= capacity",
                 consumer_refresh(c_head, c_cached, c_tail, cap)[0]
                 == And(ULE(ready, cap), Not(ULT(ready, c_cached - c_head))),
                 ULE(c_cached - c_head, cap), *facts)

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
                 ok, c_inv, ULT(j, ready), ULT(k, ready), j != k, *facts)
    m = bv("m", 32)
    report.prove("consumer: advancing the head by m <= ready keeps tail - head <= capacity",
                 ULE(c_tail - (c_head + m), cap), ok, c_inv, ULE(m, ready), *facts)
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
    check_formulas(report, HALF, "load_bound", [
        "let bound = peer.index.load(Ordering::Acquire).wrapping_add(offset);",
        "let moved = bound.wrapping_sub(seen);",
        "let most = own.wrapping_add(capacity).wrapping_sub(seen);",
        "if moved <= most { Some(bound) } else { None }",
    ])
    check_formulas(report, PRODUCER, "load_limit", [
        "let total = self.slots_total();",
        "load_bound(self.raw.consumer(), total, self.tail, self.limit, total)",
    ])
    check_formulas(report, PRODUCER, "refresh", [
        "Some(limit) => { self.limit = limit; Ok(limit.wrapping_sub(self.tail)) }",
        "None => Err(self.latch()),",
    ])
    check_formulas(report, PRODUCER, "slots_total", ["self.mask + 1"])
    check_formulas(report, PRODUCER, "new", ["limit: head.wrapping_add(raw.capacity()),"])
    check_formulas(report, CONSUMER, "load_tail", [
        "let total = self.slots_total();",
        "load_bound(self.raw.producer(), 0, self.head, self.cached_tail, total)",
    ])
    check_formulas(report, CONSUMER, "refresh", [
        "let Some(tail) = self.load_tail() else { return Err(self.latch()); };",
        "self.cached_tail = tail;",
        "let ready = tail.wrapping_sub(self.head);",
    ])
    check_formulas(report, CONSUMER, "slots_total", ["self.mask + 1"])
    check_formulas(report, MOD, "attach", ["if tail.wrapping_sub(head) > layout.capacity { return Err(RegionError::Corrupted); }"])
    check_formulas(report, MOD, "indices", ["if tail.wrapping_sub(head) > self.raw.capacity() {"])
    check_formulas(report, RAW, "slot", ["let i = (index & self.mask()) as usize;"])
    check_formulas(report, RAW, "capacity", ["self.geometry().mask + 1"])
    check_pattern(report, RAW, r"mask: capacity\.wrapping_sub\(1\),", "the geometry's mask is capacity - 1")
