"""Round trips per sync step (issue 28), for `bench/run --only roundtrips`.

A relay on 127.0.0.1 adds a round trip (RTT, 100 ms) in front of a local
hub: every byte waits RTT/2 each way, and a new connection waits one RTT
before its first byte goes through (TCP's handshake). Three transports:
git daemon, smart HTTP (nginx + fcgiwrap + git http-backend, when
installed) and ssh (OpenSSH's sshd on loopback, when installed). Each step
is timed as a fresh process, several times; a step's round trips are its
median wall time over RTT (the issue's measure), next to the same step
without the relay (the local cost, in round trips too).

loopx's fetches speak git's protocol v0 to a hub with few refs (no
`ls-refs` round trip; `loopx.protocol`, docs/sync.md *Round trips*); the
row "no-op sync, v2" is the same sync with `loopx.protocol=2`, side by
side. sshd here accepts `GIT_PROTOCOL` (as GitHub's does; Debian's default
`AcceptEnv LANG LC_*` does not, and then ssh speaks v0 whatever is set).
`git ls-remote` is git's own, with git's default (v2).

"ssh, kept": loopx's own sharing and its kept sessions (`git::keep`,
docs/sync.md *Round trips*): a protocol-v2 upload-pack for the no-op sync's
question and a pre-opened receive-pack for pushes. The bench's keys reach ssh
through a wrapper named `ssh` first on PATH, so loopx sees ssh unconfigured;
each run waits a second first (the keeper opens its next session after each
answer or push). Each transport also logs one lone claim's exchanges.

ssh: loopx shares one connection between its own git calls unless the user
configured ssh (docs/sync.md, *Round trips*). This bench must point ssh at
its own keys, which is such a configuration (`GIT_SSH_COMMAND=ssh -F …`), so
loopx leaves ssh alone here; "ssh, warm" therefore adds exactly the options
loopx adds itself (ControlMaster=auto, ControlPersist, a ControlPath) and
keeps one master open, and "ssh, cold" closes it before every run.

Bench only, never in CI. Python 3.11 standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import threading
import time
from collections import deque
from pathlib import Path

RTT = 0.100


class Relay:
    """A TCP relay adding `rtt` of round trip in front of `upstream`."""

    def __init__(self, upstream: tuple[str, int], rtt: float):
        self.upstream = upstream
        self.rtt = rtt
        # When a list: (monotonic time, "up"/"down", bytes) of every read,
        # as the relay receives it (for where the round trips go).
        self.log: list | None = None
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        accepted = time.monotonic()
        try:
            upstream = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The client's bytes go out once the emulated handshake is done.
        ready = accepted + self.rtt
        done = [0]
        lock = threading.Lock()

        def finish() -> None:
            with lock:
                done[0] += 1
                if done[0] == 2:
                    client.close()
                    upstream.close()

        # The server's first bytes reach the client once the handshake's
        # last packet reached the server (accept returns there).
        self._pipe(client, upstream, ready, finish, "up")
        self._pipe(upstream, client, accepted + 1.5 * self.rtt, finish, "down")

    def _pipe(self, src: socket.socket, dst: socket.socket, not_before: float, finish, way: str) -> None:
        q: deque = deque()
        cv = threading.Condition()
        half = self.rtt / 2

        def read() -> None:
            last = 0.0
            while True:
                try:
                    data = src.recv(65536)
                except OSError:
                    data = b""
                now = time.monotonic()
                log = self.log  # once: timeline() may unset it meanwhile
                if log is not None and data:
                    log.append((now, way, len(data)))
                due = max(now, not_before) + half
                due = max(due, last)
                last = due
                with cv:
                    q.append((due, data))
                    cv.notify()
                if not data:
                    return

        def write() -> None:
            while True:
                with cv:
                    while not q:
                        cv.wait()
                    due, data = q.popleft()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if not data:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    finish()
                    return
                try:
                    dst.sendall(data)
                except OSError:
                    finish()
                    return

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=write, daemon=True).start()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port: int, what: str) -> None:
    t0 = time.time()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.time() - t0 > 10:
                raise RuntimeError(f"{what} did not listen on {port}")
            time.sleep(0.05)


def program(name: str) -> str | None:
    for d in os.environ.get("PATH", "").split(":") + ["/usr/sbin", "/sbin"]:
        p = Path(d) / name
        if d and p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


class Servers:
    """The hub's servers, each in a process group of its own."""

    def __init__(self, work: Path, env: dict):
        self.work = work
        self.env = env
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], env: dict | None = None, stderr_to: Path | None = None) -> subprocess.Popen:
        err = open(stderr_to, "ab") if stderr_to else subprocess.DEVNULL
        p = subprocess.Popen(argv, env=env if env is not None else self.env, start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        self.procs.append(p)
        return p

    def stop(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)

    def daemon(self) -> int:
        port = free_port()
        self.start(["git", "daemon", "--reuseaddr", f"--base-path={self.work}", "--export-all",
                    "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}", str(self.work)])
        wait_port(port, "git daemon")
        return port

    def http(self) -> tuple[int, dict[str, int]] | None:
        """nginx + fcgiwrap + git http-backend; returns the plain HTTP port
        and, when openssl is installed, an HTTPS port per TLS version (a
        self-signed certificate): what TLS adds, measured."""
        nginx, fcgiwrap = program("nginx"), program("fcgiwrap")
        if not (nginx and fcgiwrap):
            return None
        d = self.work / "nginx"
        d.mkdir(exist_ok=True)
        sock = d / "fcgiwrap.sock"
        self.start([fcgiwrap, "-c", "4", "-s", f"unix:{sock}"], env={})
        t0 = time.time()
        while not sock.exists():
            if time.time() - t0 > 10:
                raise RuntimeError("fcgiwrap did not start")
            time.sleep(0.05)
        location = f"""location ~ (/.*) {{
      client_max_body_size 0;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
      fastcgi_param GIT_PROJECT_ROOT {self.work};
      fastcgi_param GIT_HTTP_EXPORT_ALL 1;
      fastcgi_param PATH_INFO $1;
      fastcgi_param REMOTE_USER bench;
      fastcgi_param GIT_PROTOCOL $http_git_protocol;
      fastcgi_param PATH /usr/local/bin:/usr/bin:/bin;
      fastcgi_param GIT_CONFIG_NOSYSTEM 1;
      fastcgi_pass unix:{sock};
    }}"""
        port = free_port()
        servers = [f"server {{\n    listen 127.0.0.1:{port};\n    {location}\n  }}"]
        tls: dict[str, int] = {}
        if shutil.which("openssl"):
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-nodes", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"), "-days", "2",
                            "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
            for version in ("1.3", "1.2"):
                tls[version] = free_port()
                servers.append(f"server {{\n    listen 127.0.0.1:{tls[version]} ssl;\n"
                               f"    ssl_certificate {d}/cert.pem;\n    ssl_certificate_key {d}/key.pem;\n"
                               f"    ssl_protocols TLSv{version};\n    {location}\n  }}")
        user = "user root;\n" if os.geteuid() == 0 else ""
        body = "\n  ".join(servers)
        (d / "nginx.conf").write_text(f"""{user}worker_processes 2;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; fastcgi_temp_path {d}/fastcgi; proxy_temp_path {d}/proxy;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  {body}
}}
""")
        self.start([nginx, "-e", str(d / "error.log"), "-p", str(d), "-c", str(d / "nginx.conf"),
                    "-g", "daemon off;"], env={})
        wait_port(port, "nginx")
        for p in tls.values():
            wait_port(p, "nginx (TLS)")
        return port, tls

    def ssh(self) -> tuple[int, Path] | None:
        """sshd on loopback with keys of its own; returns its port and the
        client's ssh config file."""
        sshd = program("sshd")
        if not sshd or not shutil.which("ssh-keygen"):
            return None
        d = self.work / "ssh"
        d.mkdir(exist_ok=True)
        os.chmod(d, 0o700)
        for k in ("host", "client"):
            if not (d / k).exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / k)], check=True)
        shutil.copy(d / "client.pub", d / "authorized_keys")
        os.chmod(d / "authorized_keys", 0o600)
        port = free_port()
        user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        (d / "sshd_config").write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {d}/host
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
AcceptEnv GIT_PROTOCOL
""")
        Path("/run/sshd").mkdir(exist_ok=True)
        self.start([sshd, "-D", "-e", "-f", str(d / "sshd_config")],
                   stderr_to=d / "sshd.log")
        wait_port(port, "sshd")
        (d / "client_config").write_text(f"""Host 127.0.0.1
  User {user}
  IdentityFile {d}/client
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
""")
        return port, d / "client_config"


def timed(argv: list[str], env: dict, cwd: Path | None = None) -> float:
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    ms = (time.monotonic() - t0) * 1000
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    return ms


def timeline(relay: Relay, argv: list[str], env: dict) -> dict:
    """Runs `argv` once through `relay`, logging what crosses it: the
    reads as the relay got them (ms from the start, "up" to the server or
    "down", bytes) and the exchanges, each a burst up answered by one down
    (a round trip the client waited for, or the server's last words)."""
    relay.log = []
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True)
    ms = (time.monotonic() - t0) * 1000
    log, relay.log = relay.log, None
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    packets = [[round((t - t0) * 1000, 1), way, n] for t, way, n in log]
    exchanges = sum(1 for a, b in zip(packets, packets[1:]) if a[1] == "up" and b[1] == "down")
    return {"ms": round(ms, 1), "exchanges": exchanges, "packets": packets}


def steps(loopx: str, repo: Path, url: str, env: dict, runs: int, before=None) -> dict[str, float]:
    """Median ms of each of the issue's steps, on the clone `repo`."""
    lx = [loopx, "-C", str(repo)]
    agent = {**env, "LOOPX_AGENT": "agent-a"}

    def run(argv, e=env):
        p = subprocess.run(argv, env=e, capture_output=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
        return p.stdout.decode()

    def each(prepare, argv, e=env) -> float:
        samples = []
        for i in range(runs + 1):  # the first is a warm-up
            prepare(i)
            if before:
                before()
            ms = timed(argv, e)
            if i:
                samples.append(ms)
        return statistics.median(samples)

    out = {}
    out["ls-remote"] = each(lambda i: None, ["git", "-C", str(repo), "ls-remote", url, "refs/loopx/state"])
    out["no-op sync"] = each(lambda i: None, lx + ["sync"])
    # The same with git's protocol v2 (git's default), side by side.
    run(["git", "-C", str(repo), "config", "loopx.protocol", "2"])
    try:
        out["no-op sync, v2"] = each(lambda i: None, lx + ["sync"])
    finally:
        run(["git", "-C", str(repo), "config", "--unset", "loopx.protocol"])
    out["sync pushing one tick"] = each(lambda i: run(lx + ["todo", "add", f"tick {time.time()}"]), lx + ["sync"])
    held: list[str] = []

    def fresh(i):
        for t in held:
            run(lx + ["todo", "release", t], agent)
        held.clear()
        run(lx + ["todo", "add", f"claim me {time.time()}", "--priority", "P0"])
        run(lx + ["sync"])

    claim = lx + ["--json", "todo", "claim", "--next", "--sync"]
    samples = []
    for i in range(runs + 1):
        fresh(i)
        if before:
            before()
        t0 = time.monotonic()
        p = subprocess.run(claim, env=agent, capture_output=True)
        ms = (time.monotonic() - t0) * 1000
        if p.returncode != 0:
            raise RuntimeError(f"claim exited {p.returncode}: {p.stderr.decode(errors='replace')}")
        held.append(json.loads(p.stdout)["todo"]["id"])
        if i:
            samples.append(ms)
    out["lone claim"] = statistics.median(samples)
    return out


ROWS = ["ls-remote", "no-op sync", "no-op sync, v2", "sync pushing one tick", "lone claim"]

# The issue's table (before this work), round trips at 100 ms.
ISSUE = {
    "git daemon": {"ls-remote": 2.5, "no-op sync": 3.6, "sync pushing one tick": 5.7, "lone claim": 11.2},
    "smart HTTP": {"ls-remote": 3.7, "no-op sync": 3.6, "sync pushing one tick": 4.9, "lone claim": 13.5},
    "ssh, cold": {"ls-remote": 8.2, "no-op sync": 8.7, "sync pushing one tick": 21.8, "lone claim": 39.6},
}


def close_masters(d: Path) -> None:
    """Closes every shared ssh connection whose socket is in `d`, and
    those loopx opened itself in the clones under `d`'s parent (their
    keepers exit with them)."""
    socks = list(d.glob("cm-*")) + [p for p in d.parent.glob("clone-*/.git/loopx-ssh/*")
                                    if not p.name.startswith("k")]
    for sock in socks:
        subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "127.0.0.1"], capture_output=True)


def scenario(b, runs: int, say) -> dict:
    """Sets up a hub per transport behind a relay, and measures."""
    work = b.work / "run" / "roundtrips"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = dict(b.env)
    servers = Servers(work, env)
    loopx = str(b.loopx)
    results: dict = {"rtt_ms": RTT * 1000, "runs": runs, "transports": {}}
    try:
        seed = work / "seed"
        b.git_init(seed)
        subprocess.run([loopx, "-C", str(seed), "init", "--goal", "main", "--objective", "bench"], env=env,
                       check=True, capture_output=True)
        subprocess.run([loopx, "-C", str(seed), "agent", "register", "agent-a"], env=env, check=True,
                       capture_output=True)
        hub = work / "hub.git"
        subprocess.run(["git", "init", "-q", "--bare", str(hub)], env=env, check=True)
        subprocess.run(["git", "-C", str(hub), "config", "http.receivepack", "true"], env=env, check=True)
        subprocess.run(["git", "-C", str(seed), "push", "-q", str(hub), "refs/loopx/state:refs/loopx/state"],
                       env=env, check=True)
        transports: list[tuple[str, str, str, dict, object]] = []
        port = servers.daemon()
        transports.append(("git daemon", "git://127.0.0.1:{}/hub.git", port, env, None))
        got = servers.http()
        if got:
            port, tls_ports = got
            transports.append(("smart HTTP", "http://127.0.0.1:{}/hub.git", port, env, None))
            for version, tls_port in tls_ports.items():
                # The bench's own certificate: git is told not to check it.
                transports.append((f"HTTPS, TLS {version}", "https://127.0.0.1:{}/hub.git", tls_port,
                                   {**env, "GIT_SSL_NO_VERIFY": "1"}, None))
        else:
            results["transports"]["smart HTTP"] = "skipped: nginx and fcgiwrap are not installed"
        got = servers.ssh()
        if got:
            port, cfg = got
            sockets = work / "ssh"
            cold = {**env, "GIT_SSH_COMMAND": f"ssh -F {cfg}"}
            # Exactly what loopx adds when the user did not configure ssh.
            warm = {**env, "GIT_SSH_COMMAND": f"ssh -F {cfg} -o ControlMaster=auto -o ControlPersist=300 "
                                              f"-o ControlPath={sockets}/cm-%C"}

            def close_master(sockets=sockets):
                close_masters(sockets)

            url = "ssh://127.0.0.1:{}" + str(hub)
            transports.append(("ssh, cold", url, port, warm, close_master))
            transports.append(("ssh, warm", url, port, warm, None))
            transports.append(("ssh, no sharing", url, port, cold, None))
            # loopx's own sharing and its kept session (git::keep): no
            # GIT_SSH_COMMAND, the bench's keys through an `ssh` wrapper first
            # on PATH, which loopx does not see as a configuration. After an
            # answer the keeper opens the next session (3 exchanges); an
            # agent's commands are seconds apart, so each run waits a second
            # first, and the back-to-back cost is its own row in the notes.
            wrapper = work / "ssh-kept-bin"
            wrapper.mkdir(exist_ok=True)
            (wrapper / "ssh").write_text(f"#!/bin/sh\nexec {shutil.which('ssh')} -F {cfg} \"$@\"\n")
            os.chmod(wrapper / "ssh", 0o755)
            kept = {**env, "PATH": f"{wrapper}:{env.get('PATH', os.environ.get('PATH', ''))}"}
            kept.pop("GIT_SSH_COMMAND", None)
            transports.append(("ssh, kept", url, port, kept, lambda: time.sleep(1.0)))
        else:
            results["transports"]["ssh"] = "skipped: sshd (openssh-server) is not installed"
        # LOOPX_BENCH_TRANSPORTS=ssh (a comma list of name prefixes) keeps some;
        # with a `;` in it, a `;` list ("ssh, warm;ssh, kept": names with commas).
        want = os.environ.get("LOOPX_BENCH_TRANSPORTS", "")
        keep = [k for k in want.split(";" if ";" in want else ",") if k]
        for name, template, port, tenv, before in transports:
            if keep and not any(name.startswith(k) for k in keep):
                continue
            row = {}
            for label, target_port in (("local", port), ("relay", None)):
                relay = None
                if target_port is None:
                    relay = Relay(("127.0.0.1", port), RTT)
                    target_port = relay.port
                url = template.format(target_port)
                clone = work / f"clone-{len(results['transports'])}-{label}"
                b.git_init(clone)
                subprocess.run(["git", "-C", str(clone), "remote", "add", "origin", url], env=tenv, check=True)
                subprocess.run([loopx, "-C", str(clone), "sync", "--setup"], env=tenv, check=True,
                               capture_output=True)
                subprocess.run([loopx, "-C", str(clone), "sync"], env=tenv, check=True, capture_output=True)
                try:
                    row[label] = steps(loopx, clone, url, tenv, runs, before)
                    if relay:
                        # Where one no-op sync's and one push's round trips go.
                        lx = [loopx, "-C", str(clone)]
                        if before:
                            before()
                        row["no-op sync timeline"] = timeline(relay, lx + ["sync"], tenv)
                        subprocess.run(lx + ["todo", "add", f"timeline {time.time()}"], env=tenv, check=True,
                                       capture_output=True)
                        if before:
                            before()
                        row["push timeline"] = timeline(relay, lx + ["sync"], tenv)
                        # A lone claim's (push-first: no fetch, one push).
                        subprocess.run(lx + ["todo", "add", f"claim timeline {time.time()}", "--priority", "P0"],
                                       env=tenv, check=True, capture_output=True)
                        subprocess.run(lx + ["sync"], env=tenv, check=True, capture_output=True)
                        if before:
                            before()
                        row["claim timeline"] = timeline(relay, lx + ["todo", "claim", "--next", "--sync"],
                                                         {**tenv, "LOOPX_AGENT": "agent-a"})
                finally:
                    if relay:
                        relay.close()
            results["transports"][name] = row
            say(f"  {name}: " + ", ".join(f"{k} {row['relay'][k] / (RTT * 1000):.1f}" for k in ROWS))
            for what in ("no-op sync timeline", "push timeline", "claim timeline"):
                t = row.get(what)
                if t:
                    say(f"    {what}: {t['exchanges']} exchanges, {t['ms'] / (RTT * 1000):.1f} round trips: "
                        + " ".join(f"{ms / (RTT * 1000):.2f}{'>' if way == 'up' else '<'}{n}"
                                   for ms, way, n in t["packets"]))
    finally:
        close_masters(work / "ssh")
        servers.stop()
    return results


def table(results: dict) -> tuple[list[str], list[list[str]]]:
    """The issue's rows, side by side per transport: round trips through the
    relay (wall / RTT), then without it (local cost), then the issue's."""
    names = [n for n, v in results["transports"].items() if isinstance(v, dict)]
    rtt = results["rtt_ms"]
    headers = ["step (100 ms round trip, medians, round trips)"] + names
    rows = []
    for step in ROWS:
        cells = [step]
        for n in names:
            v = results["transports"][n]
            r = v["relay"][step] / rtt
            local = v["local"][step] / rtt
            was = ISSUE.get(n, {}).get(step)
            cells.append(f"{r:.1f} (local {local:.1f}" + (f"; was {was}" if was else "") + ")")
        rows.append(cells)
    # Load-independent: what one run's relay log shows (a new connection's
    # TCP handshake, emulated by the relay, is one round trip more).
    cells = ["exchanges seen by the relay: no-op sync / push / lone claim"]
    for n in names:
        v = results["transports"][n]
        ex = [v.get(k, {}).get("exchanges") for k in ("no-op sync timeline", "push timeline", "claim timeline")]
        cells.append(" / ".join("?" if e is None else str(e) for e in ex))
    rows.append(cells)
    return headers, rows
