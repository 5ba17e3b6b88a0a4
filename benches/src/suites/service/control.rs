//! How the suite drives the processes it starts: one Unix socket each,
//! carrying lines of text.
//!
//! The first line the suite sends is the process's setup (`key=value`
//! fields, [`field`]); every line after it is a command. The process
//! answers the setup and each command with `ok` or `err <message>`, and
//! exits once the suite hangs up.

use crate::suites::ipc::peer::{self, Peer};
use crate::suites::ipc::wire::IpcError;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;

/// A process the suite started, and the socket it drives it through.
#[derive(Debug)]
pub struct Child {
    role: &'static str,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    peer: Peer,
}

impl Child {
    /// Starts this binary in `role` (on `cpu` if given) and sends it
    /// `setup`; [`answer`](Self::answer) then reads whether it worked, so
    /// that many processes can set up at once.
    pub fn spawn(role: &'static str, setup: &str, cpu: Option<usize>) -> Result<Self, IpcError> {
        let (ours, theirs) = UnixStream::pair()?;
        let peer = Peer::spawn(role, &[theirs.as_fd()], cpu)?;
        drop(theirs);
        let mut child = Self {
            role,
            reader: BufReader::new(ours.try_clone()?),
            writer: ours,
            peer,
        };
        child.send(setup)?;
        Ok(child)
    }

    /// Sends one line.
    pub fn send(&mut self, line: &str) -> Result<(), IpcError> {
        Ok(self.writer.write_all(format!("{line}\n").as_bytes())?)
    }

    /// Reads the answer to the setup or to the last command.
    pub fn answer(&mut self) -> Result<(), IpcError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(IpcError::Transport(format!(
                "the {} process exited (its message is above)",
                self.role
            )));
        }
        match line.trim_end().strip_prefix("err ") {
            None if line.trim_end() == "ok" => Ok(()),
            None => Err(IpcError::Transport(format!(
                "the {} process answered {line:?}",
                self.role
            ))),
            Some(why) => Err(IpcError::Transport(format!("{}: {why}", self.role))),
        }
    }

    /// Hangs up, so that the process exits; [`finish`](Self::finish) then
    /// waits for it. Hanging up many first lets them exit together.
    pub fn hang_up(&self) {
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
    }

    /// Hangs up and waits for a clean exit.
    pub fn finish(self) -> Result<(), IpcError> {
        self.hang_up();
        drop((self.reader, self.writer));
        self.peer.finish()
    }
}

/// The process's end of its socket.
#[derive(Debug)]
pub struct Control {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Control {
    /// The socket this process inherited.
    pub fn inherited(fds: Vec<OwnedFd>) -> Result<Self, IpcError> {
        let socket = UnixStream::from(peer::one_fd(fds, "control socket")?);
        Ok(Self {
            reader: BufReader::new(socket.try_clone()?),
            writer: socket,
        })
    }

    /// The next line, or `None` once the suite hung up.
    pub fn next(&mut self) -> Result<Option<String>, IpcError> {
        let mut line = String::new();
        Ok(match self.reader.read_line(&mut line)? {
            0 => None,
            _ => Some(line.trim_end().to_owned()),
        })
    }

    /// The setup line, which must come first.
    pub fn setup(&mut self) -> Result<String, IpcError> {
        self.next()?
            .ok_or_else(|| IpcError::Transport("hung up before the setup".into()))
    }

    /// Answers the last line: `ok`, or `err` with the reason. Passes the
    /// result on, so that a process that failed exits with its error.
    pub fn answer<T>(&mut self, result: Result<T, IpcError>) -> Result<T, IpcError> {
        let line = match &result {
            Ok(_) => "ok\n".to_owned(),
            Err(e) => format!("err {}\n", e.to_string().replace('\n', " ")),
        };
        self.writer.write_all(line.as_bytes())?;
        result
    }

    /// Another handle on the socket, to notice the suite hang up.
    #[cfg(feature = "iceoryx2")]
    pub fn socket(&self) -> Result<UnixStream, IpcError> {
        Ok(self.writer.try_clone()?)
    }

    /// Blocks until the suite hangs up, ignoring anything else it sends.
    pub fn until_hang_up(mut self) -> Result<(), IpcError> {
        while self.next()?.is_some() {}
        Ok(())
    }
}

/// The value of `key` in a setup line of `key=value` fields.
pub fn field<'a>(line: &'a str, key: &str) -> Result<&'a str, IpcError> {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
        .ok_or_else(|| IpcError::Transport(format!("setup {line:?} lacks {key}=")))
}

/// A command: a variant and a request count.
pub fn command(line: &str) -> Result<(&str, usize), IpcError> {
    let bad = || IpcError::Transport(format!("bad command {line:?}"));
    let (variant, count) = line.split_once(' ').ok_or_else(bad)?;
    Ok((variant, count.parse().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_fields_and_commands_parse() {
        let line = "hub=svc-1 unix=svc-1-unix depth=16";
        assert_eq!(field(line, "hub").unwrap(), "svc-1");
        assert_eq!(field(line, "unix").unwrap(), "svc-1-unix");
        assert_eq!(field(line, "depth").unwrap(), "16");
        assert!(field(line, "hu").is_err());
        assert!(field(line, "ice").is_err());
        assert_eq!(command("service 128").unwrap(), ("service", 128));
        assert!(command("service").is_err());
        assert!(command("service x").is_err());
    }
}
