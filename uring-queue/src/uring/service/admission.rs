//! Who may connect: the peer's credentials as the kernel reports them
//! (`SO_PEERCRED`), the rule that admits or refuses it, and the reasons a
//! refused client is told.

use alloc::boxed::Box;
use core::fmt;

/// A connecting process as the kernel saw it when it called `connect`
/// (`SO_PEERCRED`): not what the client claims, so it cannot lie about it.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::service::Peer;
///
/// let peer = Peer { pid: 42, uid: 1000, gid: 1000 };
/// assert_eq!(peer.to_string(), "pid 42 (uid 1000, gid 1000)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The process id (in the server's pid namespace; 0 if the process is
    /// in a namespace the server cannot see).
    pub pid: u32,
    /// The effective user id.
    pub uid: u32,
    /// The effective group id.
    pub gid: u32,
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} (uid {}, gid {})", self.pid, self.uid, self.gid)
    }
}

/// Why a server turned a client away. The client receives it
/// ([`ConnectError::Refused`](super::ConnectError::Refused)); the server's
/// [`AcceptError::Refused`](super::AcceptError::Refused) carries it too.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::service::Refusal;
///
/// let why = Refusal::OtherUser { uid: 1001, server_uid: 1000 };
/// assert_eq!(why.to_string(), "uid 1001 may not connect: the service admits uid 1000 only");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The default rule: only the server's own user may connect.
    OtherUser {
        /// The client's user id.
        uid: u32,
        /// The server's user id, the only one admitted.
        server_uid: u32,
    },
    /// The server's own rule ([`Admission::Custom`]) said no.
    Denied,
    /// The server serves as many clients as it was configured for.
    Full {
        /// The most clients it serves at once.
        max: u32,
    },
    /// The server could not set the connection up (out of memory or
    /// descriptors); worth retrying later.
    Unavailable,
}

impl Refusal {
    /// The code on the wire (never 0: that is "admitted").
    pub(crate) fn code(&self) -> u32 {
        match self {
            Self::OtherUser { .. } => 1,
            Self::Denied => 2,
            Self::Full { .. } => 3,
            Self::Unavailable => 4,
        }
    }

    /// The two words of detail on the wire.
    pub(crate) fn detail(&self) -> [u32; 2] {
        match *self {
            Self::OtherUser { uid, server_uid } => [uid, server_uid],
            Self::Full { max } => [max, 0],
            Self::Denied | Self::Unavailable => [0, 0],
        }
    }

    /// The refusal a code and its detail stand for, if any.
    pub(crate) fn from_code(code: u32, detail: [u32; 2]) -> Option<Self> {
        match code {
            1 => Some(Self::OtherUser {
                uid: detail[0],
                server_uid: detail[1],
            }),
            2 => Some(Self::Denied),
            3 => Some(Self::Full { max: detail[0] }),
            4 => Some(Self::Unavailable),
            _ => None,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherUser { uid, server_uid } => write!(
                f,
                "uid {uid} may not connect: the service admits uid {server_uid} only"
            ),
            Self::Denied => f.write_str("the service's admission rule refused this client"),
            Self::Full { max } => write!(f, "the service serves {max} clients already"),
            Self::Unavailable => f.write_str("the service could not set up a connection"),
        }
    }
}

impl core::error::Error for Refusal {}

/// A rule of the server's own: `Ok` admits, `Err` refuses with the reason.
pub type Rule = Box<dyn Fn(&Peer) -> Result<(), Refusal> + Send + Sync>;

/// The rule that decides, from its credentials, whether a client may
/// connect. It runs before the server lays out anything for the client.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::service::{Admission, Peer, Refusal};
///
/// let me = Peer { pid: 1, uid: 1000, gid: 1000 };
/// let other = Peer { pid: 2, uid: 1001, gid: 100 };
/// // The default: the server's own user only.
/// let rule = Admission::default();
/// assert_eq!(rule.decide(&me, 1000), Ok(()));
/// assert_eq!(
///     rule.decide(&other, 1000),
///     Err(Refusal::OtherUser { uid: 1001, server_uid: 1000 })
/// );
/// // A rule of the server's own: a group.
/// let group = Admission::custom(|peer: &Peer| {
///     if peer.gid == 100 { Ok(()) } else { Err(Refusal::Denied) }
/// });
/// assert_eq!(group.decide(&other, 1000), Ok(()));
/// assert_eq!(group.decide(&me, 1000), Err(Refusal::Denied));
/// ```
#[derive(Default)]
pub enum Admission {
    /// Admits processes running as the server's user only.
    #[default]
    SameUser,
    /// Admits every process that can reach the socket: with a filesystem
    /// path, its permission bits decide; in the abstract namespace, every
    /// process of the network namespace can.
    Anyone,
    /// Admits whom the function admits.
    Custom(Rule),
}

impl Admission {
    /// A rule of the server's own.
    pub fn custom<F>(rule: F) -> Self
    where
        F: Fn(&Peer) -> Result<(), Refusal> + Send + Sync + 'static,
    {
        Self::Custom(Box::new(rule))
    }

    /// Whether `peer` may connect to a server running as `server_uid`.
    ///
    /// # Errors
    ///
    /// The reason the client is refused.
    pub fn decide(&self, peer: &Peer, server_uid: u32) -> Result<(), Refusal> {
        match self {
            Self::SameUser if peer.uid == server_uid => Ok(()),
            Self::SameUser => Err(Refusal::OtherUser {
                uid: peer.uid,
                server_uid,
            }),
            Self::Anyone => Ok(()),
            Self::Custom(rule) => rule(peer),
        }
    }
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SameUser => f.write_str("SameUser"),
            Self::Anyone => f.write_str("Anyone"),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_survives_the_wire() {
        let all = [
            Refusal::OtherUser {
                uid: 7,
                server_uid: 0,
            },
            Refusal::Denied,
            Refusal::Full { max: 3 },
            Refusal::Unavailable,
        ];
        for why in all {
            assert_ne!(why.code(), 0);
            assert_eq!(Refusal::from_code(why.code(), why.detail()), Some(why));
        }
        assert_eq!(Refusal::from_code(0, [0, 0]), None);
        assert_eq!(Refusal::from_code(99, [0, 0]), None);
    }

    #[test]
    fn root_is_not_admitted_by_a_user_service() {
        let root = Peer {
            pid: 1,
            uid: 0,
            gid: 0,
        };
        assert!(Admission::SameUser.decide(&root, 1000).is_err());
        assert_eq!(Admission::Anyone.decide(&root, 1000), Ok(()));
    }
}
