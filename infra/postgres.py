"""A PostgreSQL cluster for the Prefect server, reachable on loopback only.

    python -m infra.postgres DIR -- prefect server start --host 127.0.0.1 --port 4200

creates the cluster in DIR on first use (`initdb`), starts PostgreSQL on 127.0.0.1 at a free
port, gives the `prefect` role a fresh random password, runs the command with Prefect's
PREFECT_SERVER_DATABASE_* settings in its environment, and stops PostgreSQL when the command
ends. SIGTERM, SIGINT (Ctrl-C) or SIGHUP to this wrapper is passed to the command's whole process
group (a server and the processes it started), which is killed if it has not ended within
`GRACE` seconds; PostgreSQL is then stopped, and the wrapper exits with 128 + the signal. No password is ever written down: the superuser (the operating-system user that owns the
cluster) logs in only through a Unix socket in a folder only it can open (peer authentication),
and the `prefect` role's password, which TCP logins need, is replaced at every start.

PostgreSQL refuses to run as root; run as root (a container, CI), the cluster belongs to the
`postgres` user, or `nobody` where there is none, and DIR must be a folder that user can reach
(not under root's home, e.g. /var/lib/vase-db): the wrapper says so in one line before starting
anything.
The tests start their clusters with the same class (tests/infra/prefect_server.py).
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROLE = DATABASE = "prefect"
GRACE = 30.0  # seconds the command has to end after a signal before its process group is killed
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def binaries() -> Path:
    """The folder of pg_ctl and initdb: on PATH, else the newest of the distribution's packages."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if not installed:
        raise FileNotFoundError("PostgreSQL is not installed: no pg_ctl on PATH or in /usr/lib/postgresql/*/bin "
                                "(Debian and Ubuntu: `make system-packages`, or apt-get install postgresql-15)")
    return installed[-1].parent


def cluster_owner() -> pwd.struct_passwd:
    """Who runs the server: this user, or, for root, `postgres` (else `nobody`)."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise LookupError("running as root and there is neither a `postgres` nor a `nobody` user to run PostgreSQL as")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    """The PostgreSQL cluster in `root`: data/, socket/ (mode 0700) and postgres.log."""

    root: Path
    port: int = 0

    def __post_init__(self) -> None:
        self.root = Path(self.root).absolute()
        self.port = self.port or free_port()
        self.owner = cluster_owner()
        self.bin = binaries()

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def _run(self, *args: str, stdin: str | None = None) -> str:
        as_owner = {"user": self.owner.pw_uid, "group": self.owner.pw_gid, "extra_groups": []} if os.geteuid() == 0 else {}
        done = subprocess.run([str(self.bin / args[0]), *args[1:]], input=stdin, capture_output=True, text=True,
                              cwd=self.root, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
                              timeout=120, **as_owner)
        if done.returncode:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def _check_reachable(self) -> None:
        """initdb would only say "permission denied": name the folder and the user instead."""
        for parent in self.root.parents:
            mode, uid, gid = (st := parent.stat()).st_mode, st.st_uid, st.st_gid
            if not (uid == self.owner.pw_uid and mode & 0o100 or gid == self.owner.pw_gid and mode & 0o010 or mode & 0o001):
                raise PermissionError(f"PostgreSQL runs as {self.owner.pw_name}, who cannot enter {parent}: "
                                      f"choose a folder {self.owner.pw_name} can reach for {self.root}")

    def _prepare(self) -> None:
        self._check_reachable()
        for folder in (self.root, self.socket_dir):
            folder.mkdir(parents=True, exist_ok=True)
            os.chown(folder, self.owner.pw_uid, self.owner.pw_gid)
            folder.chmod(0o700)
        if not (self.data / "PG_VERSION").exists():
            self._run("initdb", "--pgdata", str(self.data), "--username", self.owner.pw_name, "--auth-local", "peer",
                      "--auth-host", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-instructions")

    def start(self) -> dict[str, str]:
        """Start the server; the Prefect settings to reach it (with this start's password)."""
        self._prepare()
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_permissions=0700 "
                   f"-c unix_socket_directories={shlex.quote(str(self.socket_dir))}")
        self._run("pg_ctl", "--pgdata", str(self.data), "--log", str(self.log), "--wait", "--timeout", "120",
                  "-o", options, "start")
        password = secrets.token_urlsafe(24)
        try:
            self._run("psql", "--host", str(self.socket_dir), "--port", str(self.port), "--username", self.owner.pw_name,
                      "--dbname", "postgres", "--no-psqlrc", "--quiet", "-v", "ON_ERROR_STOP=1", "--file", "-",
                      stdin=bootstrap_sql(password))
        except BaseException:
            self.stop()
            raise
        return {
            "PREFECT_SERVER_DATABASE_DRIVER": "postgresql+asyncpg",
            "PREFECT_SERVER_DATABASE_HOST": "127.0.0.1",
            "PREFECT_SERVER_DATABASE_PORT": str(self.port),
            "PREFECT_SERVER_DATABASE_USER": ROLE,
            "PREFECT_SERVER_DATABASE_NAME": DATABASE,
            "PREFECT_SERVER_DATABASE_PASSWORD": password,
        }

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "--pgdata", str(self.data), "--wait", "--timeout", "60", "--mode", "fast", "stop")


def bootstrap_sql(password: str) -> str:
    """The `prefect` role (a plain login role) owning the `prefect` database, with `password`."""
    if not password.replace("-", "").replace("_", "").isalnum():
        raise ValueError("the generated password must be URL-safe base64")
    return (f"SELECT 'CREATE ROLE {ROLE}' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}')\\gexec\n"
            f"ALTER ROLE {ROLE} WITH LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB PASSWORD '{password}';\n"
            f"SELECT 'CREATE DATABASE {DATABASE} OWNER {ROLE}' "
            f"WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{DATABASE}')\\gexec\n")


def run_command(command: list[str], env: dict[str, str], grace: float = GRACE) -> int:
    """Run `command` in a process group of its own and return its exit status. A signal of
    `FORWARDED` to this process goes to the whole group (a Prefect server's own children too);
    what of the group still runs `grace` seconds after the first is killed, and the status is
    128 + that signal, as for a process it ended."""
    child = subprocess.Popen(command, env=env, process_group=0)
    received: list[tuple[int, float]] = []  # (signal, when)

    def forward(signum, frame) -> None:
        received.append((signum, time.monotonic()))
        signal_group(child.pid, signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        while True:
            try:
                code = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if received and time.monotonic() - received[0][1] > grace:
                    signal_group(child.pid, signal.SIGKILL)
        if received:  # what the command started and left behind in its group
            signal_group(child.pid, signal.SIGKILL)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + received[0][0] if received else code


def signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:  # the group has ended
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.postgres", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the cluster's folder (created on first use)")
    parser.add_argument("--port", type=int, default=0, help="PostgreSQL's port on 127.0.0.1 (default: a free one)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run against it")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- prefect server start")
    for signum in FORWARDED:  # a signal while PostgreSQL starts unwinds through `cluster.stop()`
        signal.signal(signum, exit_on_signal)
    try:
        cluster = Cluster(args.folder, args.port)
    except (OSError, LookupError) as exc:  # not installed, or no user to run it as
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        settings = cluster.start()
        print(f"PostgreSQL on 127.0.0.1:{cluster.port}, data in {cluster.data}, log in {cluster.log}", file=sys.stderr)
        return run_command(command, os.environ | settings)
    except (OSError, RuntimeError) as exc:  # a folder the server cannot reach; initdb or pg_ctl failed
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, PermissionError) else 1
    finally:
        cluster.stop()


def exit_on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
