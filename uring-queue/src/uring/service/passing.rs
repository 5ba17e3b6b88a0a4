//! The handshake's one message on the socket, with its descriptors
//! (`SCM_RIGHTS`): sending it, and receiving it with a bounded number of
//! descriptors, every one of them owned (and so closed) by the receiver.

use super::error::ConnectError;
use super::offer::{OFFER_LEN, Offer};
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::io::{self, IoSlice, IoSliceMut};

/// The descriptors an admitted answer carries: the region, the eventfd the
/// client waits on, the eventfd it writes to wake the server.
pub(crate) const OFFER_FDS: usize = 3;

/// Sends `offer` with `fds` (none for a refusal). Never raises `SIGPIPE`: a
/// client that hung up already gets an error back, not a dead server.
pub(crate) fn send_offer(
    socket: BorrowedFd<'_>,
    offer: &Offer,
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    let bytes = offer.encode();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(OFFER_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors for one answer"));
    }
    let sent = rustix::net::sendmsg(
        socket,
        &[IoSlice::new(&bytes)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    if sent != bytes.len() {
        return Err(io::ErrorKind::WriteZero.into());
    }
    Ok(())
}

/// Receives the server's answer and the descriptors that came with it
/// (close-on-exec). More than one beyond what an answer carries, or a
/// message cut short, is refused; every descriptor received is owned here,
/// so whatever is refused is closed.
///
/// # Errors
///
/// [`ConnectError::Io`] for the socket's errors (`WouldBlock` on a
/// non-blocking socket with nothing yet), an `UnexpectedEof` when the
/// server hung up without answering; the decoding errors of [`Offer`];
/// [`ConnectError::Descriptors`] when too many came.
pub(crate) fn recv_offer(socket: impl AsFd) -> Result<(Offer, Vec<OwnedFd>), ConnectError> {
    let mut bytes = [0u8; OFFER_LEN + 1];
    // One more than an answer carries, to tell "too many" from "exactly".
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(OFFER_FDS + 1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut bytes)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if got.bytes == 0 {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
    }
    if got.flags.contains(ReturnFlags::CTRUNC) || fds.len() > OFFER_FDS {
        return Err(ConnectError::Descriptors { found: fds.len() });
    }
    let bytes = bytes.get(..got.bytes).unwrap_or(&[]);
    Ok((Offer::decode(bytes)?, fds))
}
