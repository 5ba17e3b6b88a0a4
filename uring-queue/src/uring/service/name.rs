//! Where a service is found: a name in the abstract socket namespace (the
//! default: nothing on any filesystem, so nothing can go stale), or a
//! socket file at a path, whose permission bits say who may reach it.

use alloc::string::String;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::io;
use std::path::PathBuf;

/// How many connections wait for `accept` before the kernel refuses more.
const BACKLOG: i32 = 128;

/// A service's name.
///
/// A `&str` or `String` converts to [`Name::Abstract`]: a name in the
/// abstract Unix socket namespace, which the kernel removes with the last
/// socket that holds it, so a server that dies leaves nothing behind and a
/// restarted one binds the same name at once. It is visible to every process
/// in the same network namespace (containers that share the host's network
/// see it; ones with a network of their own do not): admission
/// ([`Admission`](super::Admission)) decides who is served.
///
/// [`Name::Path`] is a socket file: reaching it needs search permission on
/// its directories and write permission on the file, which
/// [`BindOptions::mode`](super::BindOptions) sets. A server removes the file
/// when it is dropped; one that was killed leaves it, and the next server to
/// bind the path replaces it once it finds nobody listening there.
///
/// # Examples
///
/// ```
/// use uring_queue::uring::service::Name;
///
/// assert_eq!(Name::from("compositor"), Name::Abstract("compositor".into()));
/// assert_eq!(Name::path("/run/pool.sock").to_string(), "/run/pool.sock");
/// assert_eq!(Name::from("compositor").to_string(), "@compositor");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// A name in the abstract namespace (at most 107 bytes).
    Abstract(String),
    /// A socket file.
    Path(PathBuf),
}

impl Name {
    /// A socket file at `path`.
    pub fn path(path: impl Into<PathBuf>) -> Self {
        Self::Path(path.into())
    }

    fn address(&self) -> io::Result<SocketAddrUnix> {
        Ok(match self {
            Self::Abstract(name) => SocketAddrUnix::new_abstract_name(name.as_bytes())?,
            Self::Path(path) => SocketAddrUnix::new(path.as_path())?,
        })
    }

    /// A listening socket bound to this name (non-blocking, close-on-exec);
    /// a socket file gets `mode`.
    pub(crate) fn listen(&self, mode: u32) -> io::Result<OwnedFd> {
        let address = self.address()?;
        let socket = stream_socket(SocketFlags::NONBLOCK)?;
        match rustix::net::bind(&socket, &address) {
            Err(Errno::ADDRINUSE) if self.is_stale() => {
                if let Self::Path(path) = self {
                    std::fs::remove_file(path)?;
                }
                rustix::net::bind(&socket, &address)?;
            }
            other => other?,
        }
        if let Self::Path(path) = self {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        }
        rustix::net::listen(&socket, BACKLOG)?;
        Ok(socket)
    }

    /// A socket file that nobody listens on any more (its server was
    /// killed). An abstract name in use always has a listener.
    fn is_stale(&self) -> bool {
        matches!(self, Self::Path(_))
            && matches!(self.connect(), Err(e) if e.kind() == io::ErrorKind::ConnectionRefused)
    }

    /// A socket connected to this name (blocking, close-on-exec).
    pub(crate) fn connect(&self) -> io::Result<OwnedFd> {
        self.connect_with(SocketFlags::empty())
    }

    /// A socket with `flags` (and close-on-exec) connected to this name. A
    /// non-blocking one fails with `WouldBlock` while the server's backlog
    /// is full.
    pub(crate) fn connect_with(&self, flags: SocketFlags) -> io::Result<OwnedFd> {
        let address = self.address()?;
        let socket = stream_socket(flags)?;
        rustix::net::connect(&socket, &address)?;
        Ok(socket)
    }

    /// Removes a socket file (nothing to do for an abstract name).
    pub(crate) fn remove(&self) {
        if let Self::Path(path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn stream_socket(flags: SocketFlags) -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        flags | SocketFlags::CLOEXEC,
        None,
    )?)
}

impl From<&str> for Name {
    fn from(name: &str) -> Self {
        Self::Abstract(name.into())
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Self::Abstract(name)
    }
}

impl From<&Name> for Name {
    fn from(name: &Name) -> Self {
        name.clone()
    }
}

impl core::fmt::Display for Name {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Abstract(name) => write!(f, "@{name}"),
            Self::Path(path) => write!(f, "{}", path.display()),
        }
    }
}
