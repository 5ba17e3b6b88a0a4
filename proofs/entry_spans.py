"""The blocks an `Sqe` names and the length a `Cqe` reports
(uring-queue/src/uring/payload.rs `Area::span`, `Span::overlaps`,
`Area::bytes`; server.rs `try_recv`, `post` (behind `complete` and
`complete_in_place`); table.rs `complete_in`; client/blocks.rs `response`;
client/submit.rs `submit_with`, `route`).

The client writes `payload_offset`/`response_offset` (u64) and
`payload_len`/`response_len` (u32) of an Sqe; the server writes a Cqe's
`response_len` (u32). The payload area's length is a u32 (uring_layout.py
proves the area lies in the region).

Honest-side invariant assumed: a client's non-empty blocks come from its
allocator, which keeps them inside the area and apart from each other
(payload_allocator.py proves it); an empty block is (0, 0); a request's
body and response block are two different blocks. An honest server
reports at most the length of the block its completion names: the response
block, or with `CQE_IN_PLACE` the request's own block; the server, the
client's table and `Client::response` pick that block by the same rule
(tied to the source below), so the model's "block" is either.

Proven at usize = 64 and 32 bits:
(a) an accepted span's `offset as u32` loses nothing and
    `offset .. offset + len` lies in the area in usize arithmetic (what
    `bytes`/`bytes_mut` slice); a body and a response block that passed
    the overlap check share no byte; a completion's `response_len` that
    the client accepted lies within the block it slices (response block or,
    in place, request block);
(b) every block an honest client submits is accepted, as the same span,
    and an honest pair passes the overlap check; every `response_len` an
    honest server sends is accepted and arrives unchanged.
"""

from z3 import And, If, Implies, Not, Or, ULE, ULT

from common import USIZE_WIDTHS, bv, check_formulas, checked_add, const, truncate, widen

PAYLOAD = "uring-queue/src/uring/payload.rs"
SERVER = "uring-queue/src/uring/server.rs"
TABLE = "uring-queue/src/uring/table.rs"
BLOCKS = "uring-queue/src/uring/client/blocks.rs"
SUBMIT = "uring-queue/src/uring/client/submit.rs"


def span(offset, length, area_len):
    """`Area::span`: (accepted, (offset u32, len u32))."""
    ok, end = checked_add(offset, widen(length, 64))
    accepted = Or(length == 0, And(ok, ULE(end, widen(area_len, 64))))
    s = (If(length == 0, const(0, 32), truncate(offset, 32)), If(length == 0, const(0, 32), length))
    return accepted, s


def end(s):
    return widen(s[0], 64) + widen(s[1], 64)


def overlaps(a, b):
    """`Span::overlaps`."""
    return And(a[1] != 0, b[1] != 0, ULT(widen(a[0], 64), end(b)), ULT(widen(b[0], 64), end(a)))


def in_span(x, s, w):
    return And(ULE(widen(s[0], w), x), ULT(x, widen(s[0], w) + widen(s[1], w)))


def run(report):
    area = bv("area_len", 32)
    off, ln = bv("offset", 64), bv("len", 32)
    ok, s = span(off, ln, area)
    for w in USIZE_WIDTHS:
        sum_ok, s_end = checked_add(widen(s[0], w), widen(s[1], w))
        report.prove(f"span/usize{w}: (a) an accepted span is in the area; offset as u32 loses nothing",
                     And(sum_ok, ULE(s_end, widen(area, w)), Implies(ln != 0, widen(s[0], 64) == off)), ok)
    report.satisfiable("span: some non-empty span is accepted", ok, ln != 0)

    off2, ln2 = bv("offset2", 64), bv("len2", 32)
    ok2, s2 = span(off2, ln2, area)
    for w in USIZE_WIDTHS:
        x = bv("byte", w)
        report.prove(f"overlap/usize{w}: (a) accepted, non-overlapping body and response share no byte",
                     Not(And(in_span(x, s, w), in_span(x, s2, w))), ok, ok2, Not(overlaps(s, s2)))

    # (b) an honest client's blocks: inside the area, apart, (0, 0) when empty.
    b1, b2 = (bv("body_offset", 32), bv("body_len", 32)), (bv("resp_offset", 32), bv("resp_len", 32))
    def honest(b):
        return And(ULE(end(b), widen(area, 64)), Implies(b[1] == 0, b[0] == 0))
    apart = Or(ULE(end(b1), widen(b2[0], 64)), ULE(end(b2), widen(b1[0], 64)), b1[1] == 0, b2[1] == 0)
    h1, hs1 = span(widen(b1[0], 64), b1[1], area)
    h2, hs2 = span(widen(b2[0], 64), b2[1], area)
    report.prove("span: (b) every honest block is accepted as the same span",
                 And(h1, hs1[0] == b1[0], hs1[1] == b1[1]), honest(b1))
    report.prove("overlap: (b) an honest body and response block pass the overlap check",
                 Not(overlaps(hs1, hs2)), honest(b1), honest(b2), apart)

    # Completions: the server checks its own length, the client the peer's.
    for w in USIZE_WIDTHS:
        resp = bv("response_block_len", 32)
        n = bv("response_len_usize", w)
        server_ok = ULE(n, widen(resp, w))
        sent = truncate(n, 32) if w > 32 else n
        client_ok = ULE(sent, resp)
        report.prove(f"completion/usize{w}: (b) an honest server's response_len is accepted unchanged",
                     And(client_ok, widen(sent, w) == n), server_ok)
        # `Table::complete` compares u32s; `Client::response` slices
        # `bytes(block)[..reply.response_len()]`, in usize.
        wire = bv("cqe_response_len", 32)
        accepted = ULE(wire, resp)
        report.prove(f"completion/usize{w}: (a) an accepted response_len slices within the response block",
                     ULE(widen(wire, w), widen(resp, w)), accepted)

    drift(report)


def drift(report):
    """The checks that tie this model to the Rust source."""
    check_formulas(report, PAYLOAD, "span", [
        "if len == 0 { return Ok(Span { offset: 0, len: 0 }); }",
        "let end = offset.checked_add(u64::from(len)).ok_or(Error::Corrupted)?;",
        "if end > u64::from(self.len) { return Err(Error::Corrupted); }",
        "Ok(Span { offset: offset as u32, len, })",
    ])
    check_formulas(report, PAYLOAD, "end", ["u64::from(self.offset) + u64::from(self.len)"])
    check_formulas(report, PAYLOAD, "overlaps", [
        "self.len != 0 && other.len != 0 && u64::from(self.offset) < other.end() && u64::from(other.offset) < self.end()",
    ])
    check_formulas(report, PAYLOAD, "bytes", [
        "self.ptr.as_ptr().add(span.offset as usize), span.len as usize,",
    ])
    check_formulas(report, PAYLOAD, "bytes_mut", [
        "self.ptr.as_ptr().add(span.offset as usize), span.len as usize,",
    ])
    check_formulas(report, SERVER, "try_recv", [
        "self.area.span(sqe.payload_offset, sqe.payload_len),",
        "self.area.span(sqe.response_offset, sqe.response_len),",
        "if payload.overlaps(&response) { return Err(self.corrupt()); }",
    ])
    check_formulas(report, SERVER, "post", [
        "Place::ResponseBlock => (incoming.response, 0),",
        "Place::RequestBlock => (incoming.payload, CQE_IN_PLACE),",
        "if response_len > block.len as usize {",
        "response_len: response_len as u32,",
        "reserved,",
    ])
    check_formulas(report, SUBMIT, "route", [
        "0 => Place::ResponseBlock,",
        "CQE_IN_PLACE => Place::RequestBlock,",
        "_ => return Err(Error::Corrupted),",
    ])
    check_formulas(report, TABLE, "complete_in", [
        "Place::ResponseBlock => slot.response,",
        "Place::RequestBlock => slot.payload,",
        "if response_len > block.len { return Err(Error::Corrupted); }",
    ])
    check_formulas(report, TABLE, "take_reply", ["in_place: place == Place::RequestBlock,"])
    check_formulas(report, BLOCKS, "response", [
        "let block = if reply.in_place() { &reply.payload } else { &reply.response };",
        "bytes.get(..reply.response_len()).ok_or(Error::Foreign)",
    ])
    check_formulas(report, SUBMIT, "submit_with", [
        "payload_offset: u64::from(payload.offset),",
        "payload_len: payload.len,",
        "response_len: response.len,",
        "response_offset: u64::from(response.offset),",
    ])
