//! A `git daemon` on 127.0.0.1 serving the temp dir, in a process group of
//! its own that is killed whole when the handle drops (the daemon forks a
//! process per connection, and those run hooks).

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{TestEnv, isolate};

/// A port on 127.0.0.1 that nothing listens on (it was free a moment ago).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

pub struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    /// Serves every repository under the environment's temp dir, pushes
    /// included, with `envs` set for the daemon and what it runs (hooks).
    pub fn start_with(env: &TestEnv, envs: &[(&str, &str)]) -> Daemon {
        let port = free_port();
        let base = env.root().to_str().expect("utf-8").to_owned();
        let mut c = Command::new("git");
        isolate(&mut c, env.root());
        for (k, v) in envs {
            c.env(k, v);
        }
        let child = c
            .args([
                "daemon",
                "--reuseaddr",
                &format!("--base-path={base}"),
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &base,
            ])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        let daemon = Daemon { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "git daemon did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    pub fn start(env: &TestEnv) -> Daemon {
        Self::start_with(env, &[])
    }

    pub fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // The group this daemon leads (its id is the daemon's), and only it.
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // SIGTERM is delivered, not yet acted on: on a loaded machine the
        // `git-daemon` the wrapper started can still be there a moment
        // later. Wait (boundedly) until nothing of the group is left.
        let group = format!("-{}", self.child.id());
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10)
            && Command::new("kill")
                .args(["-0", "--", &group])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
