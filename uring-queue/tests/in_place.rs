//! Responses written over the request body (`Server::complete_in_place`):
//! the client reads them from its own request block, never past it, never
//! before the completion, and refuses a server that claims more.

use uring_queue::uring::{CQE_IN_PLACE, Client, Config, Cqe, Error, Request, Server, Spin, Uring};
use uring_queue::{Producer, Region, SharedRing};

#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct Line([u8; 128]);

const CONFIG: Config = Config::new(4, 4, 8192);

/// A zeroed buffer aligned for a connection region.
fn buffer() -> Vec<Line> {
    let len = Uring::required_size(&CONFIG).unwrap();
    vec![Line([0; 128]); len.div_ceil(128)]
}

fn region(buf: &mut [Line]) -> Region<'_> {
    let len = buf.len() * 128;
    let base = core::ptr::NonNull::new(buf.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `Line` is 128 plain bytes, so the vector is `len` initialised
    // bytes, aligned to 128, borrowed mutably for the region's lifetime.
    unsafe { Region::from_raw_parts(base, len) }
}

/// A client and an honest server over `buf`.
fn pair(buf: &mut [Line]) -> (Client<'_, 4, Spin>, Server<'_, Spin>) {
    Uring::init(region(buf), CONFIG)
        .unwrap()
        .split::<4, _, _>(Spin, Spin)
}

/// A client over `buf`, and a producer of its completion ring standing in
/// for a hostile server, which posts whatever completion it likes.
fn client_and_hostile_server(buf: &mut [Line]) -> (Client<'_, 4, Spin>, Producer<'_, Cqe>) {
    let len = buf.len() * 128;
    let base = core::ptr::NonNull::new(buf.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `buf` outlives both views and is not otherwise used meanwhile;
    // `init` writes the header first, and the hostile view is made after.
    let whole = unsafe { Region::from_raw_parts(base, len) };
    let (client, server) = Uring::init(whole, CONFIG)
        .unwrap()
        .split::<4, _, _>(Spin, Spin);
    // The header's `cq_offset` and `cq_size` words (docs/uring-queue.md).
    // SAFETY: the first 32 bytes are the header `init` wrote, read as bytes.
    let header = unsafe { core::slice::from_raw_parts(base.as_ptr(), 32) };
    let word = |at: usize| u32::from_ne_bytes(header[at..at + 4].try_into().unwrap()) as usize;
    let (cq_offset, cq_size) = (word(20), word(24));
    // The real server's producer stays unused: the view below is the only
    // one that pushes completions.
    core::mem::forget(server);
    // SAFETY: the range is the completion ring inside `buf` (checked by the
    // attach below), which outlives the view.
    let cq_view = unsafe { Region::from_raw_parts(base.add(cq_offset), cq_size) };
    let hostile = SharedRing::<Cqe>::attach(cq_view).unwrap().into_producer();
    (client, hostile)
}

#[test]
fn a_response_in_place_is_read_from_the_request_block() {
    let mut buf = buffer();
    let (client, mut server) = pair(&mut buf);
    let mut body = client.alloc(64).unwrap();
    client.bytes_mut(&mut body).unwrap().fill(0x11);
    let mut out = client.alloc(128).unwrap();
    client.bytes_mut(&mut out).unwrap().fill(0x22);
    let request = Request::new(1).with_payload(body).with_response(out);
    let ticket = client.try_submit(request).unwrap();
    let incoming = server.try_recv().unwrap().unwrap();
    let body = server.payload_mut(&incoming).unwrap();
    assert_eq!(body, [0x11; 64]);
    body.fill(0x33);
    server.complete_in_place(incoming, 7, 48).unwrap();
    let reply = client.wait(ticket).unwrap();
    assert!(reply.in_place());
    assert_eq!((reply.result, reply.response_len()), (7, 48));
    assert_eq!(client.response(&reply).unwrap(), [0x33; 48]);
    // The response block was not written.
    assert_eq!(client.bytes(&reply.response).unwrap(), [0x22; 128]);
    client.free_reply(reply);
    assert_eq!(client.blocks_in_use(), 0);
}

#[test]
fn the_server_cannot_claim_more_than_the_request_block() {
    let mut buf = buffer();
    let (client, mut server) = pair(&mut buf);
    let body = client.alloc(64).unwrap();
    // A larger response block does not make a larger in-place response.
    let out = client.alloc(256).unwrap();
    let request = Request::new(1).with_payload(body).with_response(out);
    let ticket = client.try_submit(request).unwrap();
    let incoming = server.try_recv().unwrap().unwrap();
    let back = server.complete_in_place(incoming, 0, 65).unwrap_err();
    assert_eq!(back.error, Error::TooLarge { max: 64 });
    // Nothing was posted; the request came back whole.
    assert_eq!(client.poll_completions(), Ok(0));
    server.complete_in_place(back.value, 0, 64).unwrap();
    assert_eq!(client.wait(ticket).unwrap().response_len(), 64);

    // No request body: no room for a response in place.
    let ticket = client.try_submit(Request::new(2)).unwrap();
    let incoming = server.try_recv().unwrap().unwrap();
    let back = server.complete_in_place(incoming, 0, 1).unwrap_err();
    assert_eq!(back.error, Error::TooLarge { max: 0 });
    server.complete_in_place(back.value, 0, 0).unwrap();
    let reply = client.wait(ticket).unwrap();
    assert_eq!(client.response(&reply).unwrap(), b"");
}

#[test]
fn a_hostile_server_cannot_make_the_client_read_past_its_request_block() {
    let mut buf = buffer();
    let (client, mut hostile) = client_and_hostile_server(&mut buf);
    let body = client.alloc(64).unwrap();
    let out = client.alloc(256).unwrap();
    let request = Request::new(1).with_payload(body).with_response(out);
    let ticket = client.try_submit(request).unwrap();
    // Fits the response block, not the request block it names.
    hostile
        .push(Cqe {
            user_data: ticket.user_data(),
            response_len: 65,
            reserved: CQE_IN_PLACE,
            ..Cqe::default()
        })
        .unwrap();
    assert_eq!(client.wait(ticket).unwrap_err(), Error::Corrupted);
}

#[test]
fn a_completion_with_an_unknown_bit_is_refused() {
    let mut buf = buffer();
    let (client, mut hostile) = client_and_hostile_server(&mut buf);
    let ticket = client.try_submit(Request::new(1)).unwrap();
    hostile
        .push(Cqe {
            user_data: ticket.user_data(),
            reserved: CQE_IN_PLACE << 1,
            ..Cqe::default()
        })
        .unwrap();
    assert_eq!(client.wait(ticket).unwrap_err(), Error::Corrupted);
}

#[test]
fn a_reply_whose_request_block_was_swapped_reads_nothing_foreign() {
    let mut buf = buffer();
    let (client, mut server) = pair(&mut buf);
    let body = client.alloc(64).unwrap();
    let ticket = client
        .try_submit(Request::new(1).with_payload(body))
        .unwrap();
    let incoming = server.try_recv().unwrap().unwrap();
    server.complete_in_place(incoming, 0, 64).unwrap();
    let mut reply = client.wait(ticket).unwrap();
    // A shorter block in the request block's place does not hold the
    // response: refused rather than read past.
    let short = client.alloc(8).unwrap();
    let body = core::mem::replace(&mut reply.payload, short);
    assert_eq!(client.response(&reply), Err(Error::Foreign));
    // Another client's block is refused too.
    let mut other_buf = buffer();
    let (other, _other_server) = pair(&mut other_buf);
    let foreign = other.alloc(64).unwrap();
    let short = core::mem::replace(&mut reply.payload, foreign);
    assert_eq!(client.response(&reply), Err(Error::Foreign));
    client.free(short);
    reply.payload = body;
    assert_eq!(client.response(&reply).unwrap().len(), 64);
}

#[test]
fn the_client_sees_every_response_in_place_whole() {
    // A server thread turns each request's bytes into their complement in
    // place; the client, on another thread, must find every byte turned.
    let rounds: u8 = if cfg!(miri) { 4 } else { 200 };
    let len = if cfg!(miri) { 64 } else { 4096 };
    let mut buf = buffer();
    let (client, mut server) = pair(&mut buf);
    std::thread::scope(|s| {
        s.spawn(move || {
            while let Ok(incoming) = server.recv() {
                let body = server.payload_mut(&incoming).unwrap();
                let first = body[0];
                assert!(body.iter().all(|&b| b == first), "a torn request");
                body.iter_mut().for_each(|b| *b = !*b);
                let n = body.len();
                server
                    .complete_in_place(incoming, i32::from(first), n)
                    .unwrap();
            }
        });
        for k in 0..rounds {
            let mut body = client.alloc(len).unwrap();
            client.bytes_mut(&mut body).unwrap().fill(k);
            let reply = client.call(Request::new(1).with_payload(body)).unwrap();
            assert_eq!(reply.result, i32::from(k));
            let response = client.response(&reply).unwrap();
            assert_eq!(response.len(), len);
            assert!(response.iter().all(|&b| b == !k), "round {k}: torn");
            client.free_reply(reply);
        }
        drop(client);
    });
}
