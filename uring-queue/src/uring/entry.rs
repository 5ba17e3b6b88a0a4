//! The two entry types that cross the shared region: fixed-size `#[repr(C)]`
//! plain data, so both sides agree on them whatever their build, and any bit
//! pattern a peer writes is a valid value (checked, not trusted).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A submission queue entry: one request, client to server.
///
/// `user_data` is the client's tag for the operation (slot index in the low
/// 32 bits, the slot's generation in the high 32); the server copies it into
/// the completion unchanged. Payload and response blocks are given as offset
/// and length within the region's payload area; a length of 0 means no block.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Sqe;
/// use zerocopy::{FromBytes, IntoBytes};
///
/// let sqe = Sqe { user_data: 7, opcode: 1, payload_len: 4, ..Sqe::default() };
/// // Plain data: 40 bytes, the same on both sides of the region.
/// assert_eq!(core::mem::size_of::<Sqe>(), 40);
/// assert_eq!(Sqe::read_from_bytes(sqe.as_bytes()).unwrap(), sqe);
/// ```
// `align(8)`: the same layout on every target, those whose `u64` is
// 4-aligned (32-bit x86) included.
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Sqe {
    /// The operation's tag, echoed in its completion.
    pub user_data: u64,
    /// What to do; meaning defined by the application.
    pub opcode: u32,
    /// Application-defined flags.
    pub flags: u32,
    /// Offset of the request body in the payload area.
    pub payload_offset: u64,
    /// Length of the request body (0: none).
    pub payload_len: u32,
    /// Length of the block the server may write its response into (0: none).
    pub response_len: u32,
    /// Offset of the response block in the payload area.
    pub response_offset: u64,
}

/// A completion queue entry: one result, server to client.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::Cqe;
///
/// let cqe = Cqe { user_data: 7, result: -22, ..Cqe::default() };
/// assert_eq!(core::mem::size_of::<Cqe>(), 24);
/// assert_eq!(cqe.response_len, 0);
/// ```
// `align(8)`: the same layout on every target, those whose `u64` is
// 4-aligned (32-bit x86) included.
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Cqe {
    /// The tag of the request this completes.
    pub user_data: u64,
    /// The operation's result; meaning defined by the application.
    pub result: i32,
    /// Bytes the server wrote into the response block (at most its length).
    pub response_len: u32,
    /// Application-defined flags.
    pub flags: u32,
    /// Bit 0, [`CQE_IN_PLACE`]: the response is in the request's own block
    /// (`response_len` bytes of it), not in the response block. Every other
    /// bit is zero; a client refuses a completion with one set.
    pub reserved: u32,
}

/// The bit of [`Cqe::reserved`] that says the server wrote its response
/// over the request body, in the request's own block
/// ([`Server::complete_in_place`](super::Server::complete_in_place)).
///
/// # Examples
///
/// ```
/// use uring_queue::uring::{CQE_IN_PLACE, Cqe};
///
/// let cqe = Cqe { user_data: 7, response_len: 4, reserved: CQE_IN_PLACE, ..Cqe::default() };
/// assert_eq!(cqe.reserved & !CQE_IN_PLACE, 0, "no other bit is defined");
/// ```
pub const CQE_IN_PLACE: u32 = 1;

const _: () = assert!(core::mem::size_of::<Sqe>() == 40 && core::mem::align_of::<Sqe>() == 8);
const _: () = assert!(core::mem::size_of::<Cqe>() == 24 && core::mem::align_of::<Cqe>() == 8);
