//! The server process: this same binary, started again with the role in an
//! environment variable and its descriptors inherited.
//!
//! The parent keeps a [`Peer`] per server. Dropping it (also while a panic
//! unwinds) kills and reaps the child; [`Peer::finish`] waits for a clean
//! exit after the client has hung up. The child asks the kernel to kill it
//! when the parent dies (`PR_SET_PDEATHSIG`), so no server outlives the run
//! even when the parent is killed with SIGKILL.

use super::wire::IpcError;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Names the server's role; its presence makes `main` run the server.
const ROLE: &str = "COMPARE_IPC_PEER";
/// The inherited descriptors, comma-separated.
const FDS: &str = "COMPARE_IPC_FDS";
/// The parent's process id, to detect a parent that died before
/// `PR_SET_PDEATHSIG` took effect.
const PARENT: &str = "COMPARE_IPC_PARENT";

/// The CPU the server pins itself to, if any.
const CPU: &str = "COMPARE_IPC_CPU";

/// How long a server may take to exit once its client has hung up.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// A running server process.
#[derive(Debug)]
pub struct Peer {
    role: &'static str,
    child: Option<Child>,
}

impl Peer {
    /// Starts this binary as the server for `role`, handing it `fds` (they
    /// are duplicated for the child; the caller's stay close-on-exec), on
    /// `cpu` if given.
    pub fn spawn(
        role: &'static str,
        fds: &[BorrowedFd<'_>],
        cpu: Option<usize>,
    ) -> io::Result<Self> {
        // Inheritable duplicates, closed in this process once the child has
        // them. The suite spawns from one thread, so no other child can pick
        // them up in between.
        let dups = fds
            .iter()
            .map(|fd| {
                // SAFETY: F_DUPFD on a descriptor the borrow keeps open; the
                // new descriptor has close-on-exec clear and is owned by the
                // `OwnedFd` made from it, and by nothing else.
                let raw = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD, 3) };
                if raw < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: `raw` is a fresh descriptor no one else owns.
                Ok(unsafe { OwnedFd::from_raw_fd(raw) })
            })
            .collect::<io::Result<Vec<_>>>()?;
        let list = dups
            .iter()
            .map(|fd| fd.as_raw_fd().to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut command = Command::new(std::env::current_exe()?);
        if let Some(cpu) = cpu {
            command.env(CPU, cpu.to_string());
        }
        let child = command
            .env(ROLE, role)
            .env(FDS, list)
            .env(PARENT, std::process::id().to_string())
            .stdin(Stdio::null())
            // Stdout carries the result rows; the server has none.
            .stdout(Stdio::null())
            .spawn()?;
        drop(dups);
        Ok(Self {
            role,
            child: Some(child),
        })
    }

    /// Waits for the server to exit on its own (the client must have hung
    /// up first) and checks that it exited cleanly. A server that is still
    /// running after a grace period is killed.
    pub fn finish(mut self) -> Result<(), IpcError> {
        let mut child = self.child.take().expect("finish runs once");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if start.elapsed() > EXIT_GRACE {
                let _ = child.kill();
                let _ = child.wait();
                return Err(IpcError::Transport(format!(
                    "{} server still running {EXIT_GRACE:?} after its client hung up; killed",
                    self.role
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        if status.success() {
            Ok(())
        } else {
            Err(IpcError::Transport(format!(
                "{} server failed ({status}); its message is above",
                self.role
            )))
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Not finished: the run is being abandoned (an error or a panic).
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The server side of one role: serves on the inherited descriptors until
/// the client hangs up.
pub type Serve = fn(Vec<OwnedFd>) -> Result<(), IpcError>;

/// The one descriptor a role's server inherits: an error saying `what` was
/// expected unless exactly one came.
pub fn one_fd(fds: Vec<OwnedFd>, what: &str) -> Result<OwnedFd, IpcError> {
    let [fd]: [OwnedFd; 1] = fds
        .try_into()
        .map_err(|_| IpcError::Transport(format!("expected one {what}")))?;
    Ok(fd)
}

/// In the server process, runs the role named in the environment and
/// returns the exit code; in the parent (no role set), returns `None`.
pub fn main(roles: &[(&str, Serve)]) -> Option<ExitCode> {
    let role = std::env::var_os(ROLE)?;
    Some(match serve(&role, roles) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ipc {} server: {e}", role.to_string_lossy());
            ExitCode::from(2)
        }
    })
}

fn serve(role: &OsString, roles: &[(&str, Serve)]) -> Result<(), IpcError> {
    let bad = |msg: String| IpcError::Transport(msg);
    // Die with the parent. If it is already gone, the signal would never
    // come: check, after asking.
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no
    // memory.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        return Err(io::Error::last_os_error().into());
    }
    let parent: u32 = std::env::var(PARENT)
        .ok()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| bad(format!("{PARENT} missing: not started by the suite")))?;
    if std::os::unix::process::parent_id() != parent {
        return Err(bad("the parent exited before the server started".into()));
    }
    let serve = roles
        .iter()
        .find(|(name, _)| role.to_str() == Some(name))
        .map(|(_, serve)| *serve)
        .ok_or_else(|| bad(format!("unknown role {role:?}")))?;
    let fds = std::env::var(FDS)
        .map_err(|_| bad(format!("{FDS} missing")))?
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let raw: RawFd = s
                .parse()
                .map_err(|_| bad(format!("bad descriptor {s:?}")))?;
            // SAFETY: F_GETFD only reads the descriptor's flags, and fails
            // cleanly on a descriptor that is not open.
            if raw < 3 || unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
                return Err(bad(format!("descriptor {raw} was not inherited")));
            }
            // SAFETY: the parent duplicated this descriptor for this process
            // and named it once; nothing else here owns it.
            Ok(unsafe { OwnedFd::from_raw_fd(raw) })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(cpu) = std::env::var(CPU).ok().and_then(|c| c.parse().ok()) {
        if !pin_to(cpu) {
            return Err(bad(format!("cannot run on CPU {cpu}")));
        }
    }
    serve(fds)
}

/// Where the two sides run, chosen by `COMPARE_IPC_CPUS`:
/// - `split` (the default): the client thread on the first CPU it may use,
///   the servers on the second;
/// - `shared`: both on the first;
/// - `free`: nothing pinned, the scheduler places both.
///
/// With fewer than two CPUs nothing is pinned. Restores the client thread's
/// old mask on drop.
#[derive(Debug)]
pub struct Placement {
    old: Option<libc::cpu_set_t>,
    server: Option<usize>,
    /// What was asked for and done, for the log.
    pub describe: String,
}

/// Environment variable choosing a [`Placement`].
pub const PLACEMENT: &str = "COMPARE_IPC_CPUS";

impl Placement {
    /// Pins the calling thread (the client) and picks the servers' CPU as
    /// `COMPARE_IPC_CPUS` says.
    ///
    /// # Panics
    ///
    /// On a value other than `split`, `shared` or `free`.
    pub fn pin_client() -> Self {
        let mode = std::env::var(PLACEMENT).unwrap_or_else(|_| "split".into());
        let free = |describe: &str| Self {
            old: None,
            server: None,
            describe: describe.into(),
        };
        let server_index = match mode.as_str() {
            "split" => 1,
            "shared" => 0,
            "free" => return free("free: nothing pinned"),
            other => panic!("{PLACEMENT}={other}: expected split, shared or free"),
        };
        // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
        let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `old` is a writable cpu_set_t of the size passed.
        if unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut old) } != 0 {
            return free("free: the CPU mask is unknown");
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `i` is below CPU_SETSIZE, the set's size.
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &old) })
            .collect();
        if cpus.len() < 2 || !pin_to(cpus[0]) {
            return free("free: fewer than two CPUs");
        }
        Self {
            old: Some(old),
            server: Some(cpus[server_index]),
            describe: format!(
                "{mode}: client on CPU {}, servers on CPU {}",
                cpus[0], cpus[server_index]
            ),
        }
    }

    /// The CPU the servers run on, if any.
    pub fn server_cpu(&self) -> Option<usize> {
        self.server
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        if let Some(set) = &self.old {
            // SAFETY: `set` is a valid cpu_set_t of the size passed.
            unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) };
        }
    }
}

/// Lets the calling thread run on every online CPU: a process started by
/// the pinned client thread inherits its one-CPU mask.
pub fn unpin() -> io::Result<()> {
    // SAFETY: sysconf reads a system value and touches no memory.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let online = usize::try_from(online)
        .unwrap_or(1)
        .clamp(1, libc::CPU_SETSIZE as usize);
    // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
    let mut all: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in 0..online {
        // SAFETY: `cpu` is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu, &mut all) };
    }
    // SAFETY: `all` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &all) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread to `cpu`; whether that worked.
fn pin_to(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: cpu_set_t is plain bits; all zero is the empty set.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of the size passed.
    unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &one) == 0 }
}
