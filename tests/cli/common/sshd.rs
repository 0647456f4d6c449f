//! OpenSSH's sshd on 127.0.0.1 with keys of its own (as
//! bench/roundtrips.py runs it), for the tests of loopx's own ssh: its
//! shared connection and the kept session (`git::keep`).
//!
//! loopx must see ssh unconfigured (else it leaves ssh alone), so the
//! client's settings reach ssh through a wrapper named `ssh` first on the
//! `PATH` of the commands run with [`Sshd::path`] (ssh reads no config
//! from `$HOME`).
//!
//! Dropping it closes every shared connection under the temp dir (`ssh -O
//! exit`: the keepers' sessions end with them, and the keepers exit) and
//! then sshd.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::daemon::free_port;
use super::{SUITE_MARK, TestEnv};

/// Whether the opt-in ssh server tests run, saying so when they do not.
pub fn enabled(what: &str) -> bool {
    if std::env::var_os("LOOPX_SERVER_TESTS").is_some_and(|v| v == "1") {
        return true;
    }
    super::skipped(format_args!(
        "skipped: {what} needs OpenSSH's sshd; run it with \
         LOOPX_SERVER_TESTS=1 cargo test --test cli test_ssh_keep:: \
         (apt-get install openssh-server)"
    ));
    false
}

pub struct Sshd {
    sshd: Child,
    port: u16,
    root: PathBuf,
    bin: PathBuf,
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "loopx-test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen runs");
    assert!(out.status.success(), "{out:?}");
}

impl Sshd {
    /// sshd serving the user running the tests, with its key; it accepts
    /// `GIT_PROTOCOL` from clients (protocol v2 over ssh) when `v2`.
    pub fn start(env: &TestEnv, v2: bool) -> Sshd {
        Sshd::start_with(env, v2, &[])
    }

    /// [`Sshd::start`] with `set_env` in every session's environment
    /// (sshd's `SetEnv`: the hub's hooks read them).
    pub fn start_with(env: &TestEnv, v2: bool, set_env: &[(&str, &str)]) -> Sshd {
        let root = env.root().to_path_buf();
        let d = root.join("sshd");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        keygen(&d.join("host"));
        keygen(&d.join("client"));
        std::fs::copy(d.join("client.pub"), d.join("authorized_keys")).unwrap();
        let port = free_port();
        let mut accept = if v2 { "AcceptEnv GIT_PROTOCOL\n" } else { "" }.to_owned();
        for (k, v) in set_env {
            accept.push_str(&format!("SetEnv {k}={v}\n"));
        }
        let d_ = d.display();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d_}/host\n\
                 AuthorizedKeysFile {d_}/authorized_keys\nPidFile {d_}/sshd.pid\n\
                 StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\n{accept}"
            ),
        )
        .unwrap();
        let user = String::from_utf8(
            Command::new("id")
                .arg("-un")
                .output()
                .expect("id runs")
                .stdout,
        )
        .unwrap();
        std::fs::write(
            d.join("client_config"),
            format!(
                "Host 127.0.0.1\n  User {}\n  IdentityFile {d_}/client\n  IdentitiesOnly yes\n\
                 \x20 StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
                user.trim()
            ),
        )
        .unwrap();
        let bin = d.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let real = ["/usr/bin/ssh", "/bin/ssh"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("ssh is installed");
        std::fs::write(
            bin.join("ssh"),
            format!("#!/bin/sh\nexec {real} -F '{d_}/client_config' \"$@\"\n"),
        )
        .unwrap();
        std::fs::set_permissions(bin.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        // sshd's privilege separation directory (Debian makes it at boot).
        let _ = std::fs::create_dir_all("/run/sshd");
        let sshd = Command::new(program("sshd"))
            .env_clear()
            .env(SUITE_MARK.0, SUITE_MARK.1)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .expect("sshd starts (apt-get install openssh-server)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd did not listen on {port}: {}",
                std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Sshd {
            sshd,
            port,
            root,
            bin,
        }
    }

    /// The ssh URL of a repository at `path`.
    pub fn url(&self, path: &Path) -> String {
        format!("ssh://127.0.0.1:{}{}", self.port, path.display())
    }

    /// `PATH` with the ssh wrapper first.
    pub fn path(&self) -> std::ffi::OsString {
        let rest = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(std::iter::once(self.bin.clone()).chain(std::env::split_paths(&rest)))
            .unwrap()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("sshd/sshd.log")).unwrap_or_default()
    }
}

/// A server program: on PATH, else in the sbin folders Debian puts them in.
fn program(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed (apt-get install openssh-server)"))
}

/// Every `loopx-ssh` directory under `dir`, a few levels down.
fn socket_dirs(dir: &Path, depth: u32, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if e.file_name() == "loopx-ssh" {
            found.push(p);
        } else if depth > 0 {
            socket_dirs(&p, depth - 1, found);
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let mut dirs = Vec::new();
        socket_dirs(&self.root, 3, &mut dirs);
        for d in dirs {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                // A keeper's socket is `k…`; shared connections are hex.
                if name.starts_with('k') || name.contains('.') {
                    continue;
                }
                let _ = Command::new(self.bin.join("ssh"))
                    .arg("-o")
                    .arg(format!("ControlPath={}", e.path().display()))
                    .args(["-O", "exit", "127.0.0.1"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.sshd.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}
