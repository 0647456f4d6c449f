//! A real git server on 127.0.0.1: Debian's nginx in front of fcgiwrap and
//! `git http-backend` (smart HTTP), serving the bare repositories of the
//! temp dir, as docs/sync.md's recipe sets it up. Opt-in (it needs the
//! `nginx` and `fcgiwrap` packages): `LOOPX_SERVER_TESTS=1`.
//!
//! Run as root (CI), the CGI side runs as the web server's user, `www-data`,
//! as on a real server: the served repositories are handed to it (`chown`),
//! and its hooks (the hub guard) run as that user, with loopx executable by
//! it. Run as anyone else, everything runs as that user.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::daemon::free_port;
use super::{SUITE_MARK, TestEnv};

/// Whether the real-server tests run; else says how to run them.
pub fn enabled(what: &str) -> bool {
    if std::env::var_os("LOOPX_SERVER_TESTS").is_some_and(|v| v == "1") {
        return true;
    }
    super::skipped(format_args!(
        "skipped: {what} needs a real git server; run it with \
         LOOPX_SERVER_TESTS=1 cargo test --test cli test_server:: \
         (apt-get install nginx fcgiwrap)"
    ));
    false
}

/// The web server's user, when the test runs as root.
const WEB_USER: &str = "www-data";

pub struct Nginx {
    nginx: Child,
    fcgiwrap: Child,
    port: u16,
    dir: PathBuf,
}

fn id_of(flag: &str) -> u32 {
    let out = Command::new("id")
        .args([flag, WEB_USER])
        .output()
        .expect("id runs");
    assert!(out.status.success(), "no user {WEB_USER}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// A server program: on PATH, else in the sbin folders Debian puts them in
/// (not on a plain user's PATH).
fn program(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed (apt-get install nginx fcgiwrap)"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Nginx {
    /// Serves the bare repositories under the environment's temp dir over
    /// smart HTTP, pushes included (`http.receivepack` is set in each repo
    /// served with [`Nginx::serve`]). `envs` reach `git http-backend` and its
    /// hooks as FastCGI parameters.
    pub fn start(env: &TestEnv, envs: &[(&str, &str)]) -> Nginx {
        let root = env.root().to_path_buf();
        let dir = root.join("nginx");
        std::fs::create_dir_all(&dir).unwrap();
        let root_user = is_root();
        if root_user {
            // The web server's user walks into the temp dir (tempfile makes
            // it 0700) and writes nginx's request-body files.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
            chown(&dir);
        }
        let sock = dir.join("fcgiwrap.sock");
        let mut f = Command::new(program("fcgiwrap"));
        f.env_clear()
            .env(SUITE_MARK.0, SUITE_MARK.1)
            .args(["-c", "4", "-s"])
            .arg(format!("unix:{}", sock.display()))
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if root_user {
            f.uid(id_of("-u")).gid(id_of("-g"));
        }
        let fcgiwrap = f
            .spawn()
            .expect("fcgiwrap starts (apt-get install fcgiwrap)");
        let started = Instant::now();
        while !sock.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "fcgiwrap did not make {}",
                sock.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let port = free_port();
        let params: String = envs
            .iter()
            .map(|(k, v)| format!("      fastcgi_param {k} \"{v}\";\n"))
            .collect();
        let user = if root_user {
            format!("user {WEB_USER};\n")
        } else {
            String::new()
        };
        let d = dir.display();
        let conf = format!(
            "{user}worker_processes 2;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  fastcgi_temp_path {d}/fastcgi;
  proxy_temp_path {d}/proxy;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location ~ (/.*) {{
      client_max_body_size 0;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
      fastcgi_param GIT_PROJECT_ROOT {root};
      fastcgi_param GIT_HTTP_EXPORT_ALL 1;
      fastcgi_param PATH_INFO $1;
      fastcgi_param GIT_PROTOCOL $http_git_protocol;
      fastcgi_param PATH /usr/local/bin:/usr/bin:/bin;
      fastcgi_param GIT_CONFIG_NOSYSTEM 1;
{params}      fastcgi_pass unix:{sock};
    }}
  }}
}}
",
            root = root.display(),
            sock = sock.display(),
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let nginx = Command::new(program("nginx"))
            .env_clear()
            .env(SUITE_MARK.0, SUITE_MARK.1)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf_path)
            .args(["-g", "daemon off;"])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts (apt-get install nginx)");
        let server = Nginx {
            nginx,
            fcgiwrap,
            port,
            dir,
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not listen on {port}: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Makes the bare repository at `repo` servable with pushes, and hands
    /// it to the web server's user (as root): docs/sync.md's permissions.
    pub fn serve(&self, repo: &Path) {
        super::git_in(repo, &["config", "http.receivepack", "true"]);
        if is_root() {
            chown(repo);
        }
    }

    pub fn url(&self, repo: &str) -> String {
        format!("http://127.0.0.1:{}/{repo}", self.port)
    }

    /// nginx's error log, for a failure's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

/// Hands `path` (recursively) to the web server's user.
fn chown(path: &Path) {
    let ok = Command::new("chown")
        .arg("-R")
        .arg(format!("{WEB_USER}:{WEB_USER}"))
        .arg(path)
        .status()
        .expect("chown runs");
    assert!(ok.success(), "chown {}", path.display());
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // Each group this handle started (nginx's master and workers;
        // fcgiwrap and its children), and only those.
        for child in [&mut self.nginx, &mut self.fcgiwrap] {
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", child.id())])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
