//! The socket anchor: a tokio server on a Unix socket in the abstract
//! namespace, a task per connection on one current-thread runtime (one
//! thread, as the hub), each served by the `ipc` suite's tokio server loop
//! (its frames and checks).

use super::SMALL;
use super::control::{Control, field};
use crate::suites::ipc::tokio_unix::serve_on;
use crate::suites::ipc::wire::{IpcError, Patterns};
use std::os::fd::OwnedFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a connection's task failed: the process then exits with an
/// error when the suite hangs up.
static FAILED: AtomicBool = AtomicBool::new(false);

/// The address of `name` in the abstract namespace.
pub fn address(name: &str) -> Result<SocketAddr, IpcError> {
    Ok(SocketAddr::from_abstract_name(name.as_bytes())?)
}

/// A blocking connection to the server named `name`.
pub fn connect(name: &str) -> Result<UnixStream, IpcError> {
    Ok(UnixStream::connect_addr(&address(name)?)?)
}

/// The server role: listens on the name in its setup, answers `ok`, then
/// serves every connection until the suite hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let mut control = Control::inherited(fds)?;
    let setup = control.setup()?;
    let listener = field(&setup, "name").and_then(|name| {
        let listener = UnixListener::bind_addr(&address(name)?)?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    });
    let listener = control.answer(listener)?;
    // The runtime runs on a thread of its own, for as long as the process:
    // the suite's hang-up ends the process, whatever its tasks are doing.
    std::thread::spawn(move || accept_all(listener));
    control.until_hang_up()?;
    if FAILED.load(Ordering::Relaxed) {
        return Err(IpcError::Transport(
            "a connection failed (its message is above)".into(),
        ));
    }
    Ok(())
}

/// Accepts connections and serves each as a task.
fn accept_all(listener: UnixListener) -> Result<(), IpcError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let patterns: &'static Patterns = Box::leak(Box::new(Patterns::upto(SMALL)));
    rt.block_on(async {
        let listener = tokio::net::UnixListener::from_std(listener)?;
        loop {
            let (stream, _) = listener.accept().await?;
            tokio::spawn(async move {
                if let Err(e) = serve_on(stream, patterns).await {
                    eprintln!("service unix server: {e}");
                    FAILED.store(true, Ordering::Relaxed);
                }
            });
        }
    })
}
