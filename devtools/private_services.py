"""A PostgreSQL cluster and a redis-server of the fault campaign's own (devtools.campaign).

The campaign restarts them, so they are never the machine's shared services: a throwaway
`initdb` in a temporary directory (run as `postgres` when this is root) and a private
`redis-server`, each on a free port, both removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from devtools.stack import free_port, wait_for


def _postgres_bin() -> Path:
    """`CP_CAMPAIGN_PG_BIN`, else the newest Debian PostgreSQL's own bin (scripts/ensure-services.sh
    installs it), else /usr/local/bin."""
    if override := os.environ.get("CP_CAMPAIGN_PG_BIN"):
        return Path(override)
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
    )
    return debian[-1].parent if debian else Path("/usr/local/bin")


PG_BIN = _postgres_bin()
REDIS_SERVER = os.environ.get("CP_CAMPAIGN_REDIS_SERVER", shutil.which("redis-server") or "")


def _as_postgres(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (initdb) on a free port, restartable at will."""

    def __init__(self) -> None:
        # Its own directory in the system's temporary one: the postgres user must reach it.
        self.directory = Path(tempfile.mkdtemp(prefix="cp-campaign-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres")
        self.data = self.directory / "pgdata"
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, *args: str) -> None:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), *args]),
            check=True,
            timeout=120,
            capture_output=True,
        )

    def start(self) -> None:
        if not self.data.exists():
            subprocess.run(
                _as_postgres(
                    [
                        str(PG_BIN / "initdb"),
                        "-D",
                        str(self.data),
                        "-A",
                        "trust",
                        "-U",
                        "postgres",
                        "--no-sync",
                        "-E",
                        "UTF8",
                    ]
                ),
                check=True,
                capture_output=True,
                timeout=120,
            )
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c max_connections=200"
        )
        self._pg(
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "postgres.log"),
            "-o",
            options,
            "-w",
            "start",
        )

    def stop(self) -> None:
        try:
            self._pg("-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def restart(self) -> None:
        """Stop fast (every connection dropped), start again on the same port."""
        self._pg("-D", str(self.data), "-m", "fast", "-w", "stop")
        self.start()


class PrivateRedis:
    """A private redis-server on a free port (no persistence), restartable at will."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 (kept for the process)
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(self._answers, 20, "the private redis-server")

    def _answers(self) -> bool:
        import redis

        with redis.Redis.from_url(self.url, socket_timeout=1) as client:
            return bool(client.ping())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def private_services(directory: Path) -> Iterator[tuple[PrivatePostgres, PrivateRedis]]:
    postgres, redis_server = PrivatePostgres(), PrivateRedis(directory)
    postgres.start()
    try:
        redis_server.start()
        try:
            yield postgres, redis_server
        finally:
            redis_server.stop()
    finally:
        postgres.stop()
