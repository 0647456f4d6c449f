//! A hook's stdin, read with its limits: at most [`LIMIT`] bytes
//! ([`GUARD_LIMIT`] for the tool guard's event), and only for [`WAIT`] (a
//! runtime that never closes the pipe must not hang its hook). The reading
//! runs on its own thread, so a reader that blocks is left behind when the
//! wait is over.

use std::io::Read;
use std::time::Duration;

/// The most stdin a hook reads, and how long it waits for it.
pub const LIMIT: u64 = 1 << 20;
pub const WAIT: Duration = Duration::from_secs(2);

/// The most stdin the tool guard's event reads: its payload carries the
/// agent's own text (a command, a file's content), so its size is the
/// agent's to choose. What is over it is denied, never allowed.
pub const GUARD_LIMIT: u64 = 16 << 20;

/// Reads the process's stdin within `limit` and [`WAIT`].
pub fn read(limit: u64) -> Result<Vec<u8>, String> {
    read_from(std::io::stdin(), limit, WAIT)
}

/// Reads `input` to its end: an error past `limit` bytes, or when it has
/// not ended after `wait`.
pub fn read_from<R: Read + Send + 'static>(
    input: R,
    limit: u64,
    wait: Duration,
) -> Result<Vec<u8>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = input.take(limit + 1).read_to_end(&mut buf);
        let _ = tx.send(r.map(|_| buf));
    });
    match rx.recv_timeout(wait) {
        Ok(Ok(buf)) if buf.len() as u64 > limit => Err(format!("stdin is over {}", size(limit))),
        Ok(Ok(buf)) => Ok(buf),
        Ok(Err(e)) => Err(format!("reading stdin: {e}")),
        Err(_) => Err(format!(
            "stdin did not close within {} s",
            wait.as_secs_f64()
        )),
    }
}

/// `16 MiB`, or a number of bytes.
fn size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_limit_and_refuses_more() {
        let wait = Duration::from_secs(60);
        assert_eq!(read_from(&b"{}"[..], 2, wait), Ok(b"{}".to_vec()));
        assert_eq!(read_from(&b""[..], 2, wait), Ok(Vec::new()));
        assert_eq!(
            read_from(&b"{ }"[..], 2, wait),
            Err("stdin is over 2 bytes".to_owned())
        );
        let big = vec![b' '; (LIMIT + 1) as usize];
        assert_eq!(
            read_from(std::io::Cursor::new(big), LIMIT, wait),
            Err("stdin is over 1 MiB".to_owned())
        );
        let guard = vec![b' '; (GUARD_LIMIT + 1) as usize];
        assert_eq!(
            read_from(std::io::Cursor::new(guard[1..].to_vec()), GUARD_LIMIT, wait)
                .map(|b| b.len()),
            Ok(GUARD_LIMIT as usize)
        );
        assert_eq!(
            read_from(std::io::Cursor::new(guard), GUARD_LIMIT, wait),
            Err("stdin is over 16 MiB".to_owned())
        );
    }

    /// A pipe whose writer never closes it.
    struct Open;
    impl Read for Open {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(0)
        }
    }

    #[test]
    fn a_stdin_that_never_closes_is_given_up() {
        let r = read_from(Open, LIMIT, Duration::from_millis(10));
        assert_eq!(r, Err("stdin did not close within 0.01 s".to_owned()));
    }

    #[test]
    fn a_failing_read_says_so() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("gone"))
            }
        }
        let r = read_from(Broken, LIMIT, Duration::from_secs(60));
        assert_eq!(r, Err("reading stdin: gone".to_owned()));
    }
}
