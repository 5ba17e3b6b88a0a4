"""Credits and completion tags (uring-queue/src/uring/table.rs,
request.rs `Tag`, client/mod.rs `Client::new`).

A completion names its request by `user_data` (slot index in the low 32
bits, generation in the high 32); the table looks the slot up with `get`
and compares the generation, so a hostile tag is refused, never
out of bounds. Credits bound how many requests are outstanding.

Honest-side invariant assumed: `outstanding` counts the slots that are
Pending or Abandoned (the table's own bookkeeping, in the client's memory),
and every outstanding request is in exactly one place: an Sqe in the
submission ring, held by the server, or a Cqe in the completion ring. The
server publishes its inbound head before each push, as the client does
(uring/layout.rs `with_release_every`), so a ring's free count is exact.

Proven:
(a) `ring_credits` (a u32) never exceeds either ring's capacity at usize
    64 or 32; `outstanding -= 1` on an accepted completion and
    `outstanding += 1` on a submission neither underflow nor overflow;
(b) the tag an honest server echoes names the slot it was made from
    (round trip through `user_data`), and an honest client (which submits
    only with a credit) never finds the submission ring full, an honest
    server never finds the completion ring full.
"""

from z3 import And, Implies, LShR, ULE, ULT, UGE

from common import USIZE_WIDTHS, bv, check_formulas, const, truncate, umin, widen

TABLE = "uring-queue/src/uring/table.rs"
REQUEST = "uring-queue/src/uring/request.rs"
CLIENT = "uring-queue/src/uring/client/mod.rs"


def user_data(index, generation):
    return (widen(generation, 64) << 32) | widen(index, 64)


def from_user_data(ud):
    return truncate(ud, 32), truncate(LShR(ud, 32), 32)


def run(report):
    index, generation = bv("index", 32), bv("generation", 32)
    i2, g2 = from_user_data(user_data(index, generation))
    report.prove("tag: (b) from_user_data(user_data(tag)) == tag", And(i2 == index, g2 == generation))

    for w in USIZE_WIDTHS:
        sq_cap, cq_cap = bv("sq_capacity", w), bv("cq_capacity", w)
        m = umin(umin(sq_cap, cq_cap), widen(const((1 << 32) - 1, 32), w) if w > 32 else const((1 << 32) - 1, 32))
        credits = truncate(m, 32)
        report.prove(f"credits/usize{w}: (a) ring_credits <= each ring's capacity, the cast loses nothing",
                     And(ULE(widen(credits, w), sq_cap), ULE(widen(credits, w), cq_cap), widen(credits, w) == m))

    credits, outstanding = bv("ring_credits", 32), bv("outstanding", 32)
    pending, abandoned = bv("pending", 32), bv("abandoned", 32)
    counted = [outstanding == pending + abandoned, ULE(pending, pending + abandoned), ULE(outstanding, credits)]
    report.prove("credits: (a) a submission (outstanding < ring_credits) does not overflow outstanding",
                 And(ULE(outstanding + 1, credits), ULT(outstanding, outstanding + 1)), ULT(outstanding, credits))
    report.prove("credits: (a) an accepted completion of a Pending slot does not underflow outstanding",
                 UGE(outstanding, 1), *counted, UGE(pending, 1))
    report.prove("credits: (a) an accepted completion of an Abandoned slot does not underflow outstanding",
                 UGE(outstanding, 1), *counted, UGE(abandoned, 1))

    # Where the outstanding requests are: queued Sqes, held by the server,
    # queued Cqes (all u32 counts; their sum is `outstanding`).
    sq_len, held, cq_len = bv("sq_len", 32), bv("server_held", 32), bv("cq_len", 32)
    sq_cap, cq_cap = bv("sq_cap", 32), bv("cq_cap", 32)
    placed = [outstanding == sq_len + held + cq_len, ULE(sq_len, sq_len + held), ULE(sq_len + held, outstanding),
              ULE(credits, sq_cap), ULE(credits, cq_cap)]
    report.prove("credits: (b) a client with a credit finds room in the submission ring",
                 ULT(sq_len, sq_cap), ULT(outstanding, credits), *placed)
    report.prove("credits: (b) a server completing a request it holds finds room in the completion ring",
                 ULT(cq_len, cq_cap), UGE(held, 1), ULE(outstanding, credits), *placed)

    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_formulas(report, REQUEST, "user_data(self)", ["(u64::from(self.generation) << 32) | u64::from(self.index)"])
    check_formulas(report, REQUEST, "from_user_data", ["index: user_data as u32, generation: (user_data >> 32) as u32,"])
    check_formulas(report, CLIENT, "new", [
        "let ring_credits = sq.capacity().min(cq.capacity()).min(u32::MAX as usize) as u32;",
    ])
    check_formulas(report, TABLE, "slot_mut", [".get_mut(tag.index as usize).filter(|s| s.generation == tag.generation)"])
    check_formulas(report, TABLE, "vacancy", ["Some(index) if self.outstanding < self.ring_credits => index,"])
    check_formulas(report, TABLE, "occupy", ["self.in_flight += 1;", "self.outstanding += 1;"])
    check_formulas(report, TABLE, "complete_in", [
        "let tag = Tag::from_user_data(user_data);",
        "let slot = self.slot_mut(tag).ok_or(Error::Corrupted)?;",
        "State::Free { .. } | State::Done { .. } => return Err(Error::Corrupted),",
        "self.outstanding -= 1;",
    ])
