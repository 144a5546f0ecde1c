"""The embedded default (`make run`) as a test stack: one server process on SQLite that is also
the controller, with its two listeners, and simulated brokers on the internal one.

The same command lines `make run` uses (scripts/run-embedded.sh), on free ports and in a
directory of the caller's: for the slow-client test, the schemathesis run and anything else that
probes the server as the issue's probes did.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from devtools.stack import (
    PYTHON,
    ROOT,
    WORKER_CLASS,
    Http,
    free_port,
    gunicorn_argv,
    wait_for,
)


@dataclasses.dataclass
class EmbeddedServer:
    directory: Path
    env: dict[str, str]
    http: Http
    tokens: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = dataclasses.field(default_factory=dict)

    @property
    def public(self) -> str:
        return self.http.base

    @property
    def internal(self) -> str:
        return self.http.internal

    def spawn(
        self, name: str, argv: list[str], stdin: int | None = None
    ) -> subprocess.Popen[bytes]:
        log = open(self.directory / f"{name}.log", "ab")  # noqa: SIM115 (kept for the process)
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=stdin,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def brokers_unfenced(self) -> int:
        status, cluster = self.http.get("/api/v1/cluster", self.tokens["admin"])
        return int(cluster["broker_states"]["UNFENCED"]) if status == 200 else -1

    def stop(self) -> None:
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise AssertionError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


@contextlib.contextmanager
def embedded_server(
    directory: Path,
    *,
    brokers: int = 3,
    threads: int = 16,
    settings: dict[str, str] | None = None,
    topic: str | None = "demo",
    worker_class: str = WORKER_CLASS,
) -> Iterator[EmbeddedServer]:
    """`make run` in `directory`: SQLite, one process (the controller too), `brokers` simulated
    brokers over 3 racks; tokens for `admin` (super user), `broker` and `alice` (no ACLs)."""
    directory.mkdir(parents=True, exist_ok=True)
    port, internal_port = free_port(), free_port()
    while internal_port == port:
        internal_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CP_", "DATABASE_", "CELERY_"))}
    env.update(
        {
            "CP_SQLITE_PATH": str(directory / "controlplane.sqlite3"),
            "CP_STATIC_ROOT": str(directory / "static"),
            "CP_SUPER_USERS": "User:admin",
            "CP_LISTENER": "public",
            "CP_INTERNAL_PORT": str(internal_port),
            "CP_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            **(settings or {}),
        }
    )
    manage(env, "migrate", "--noinput", "-v0")
    tokens = {
        name: manage(env, "create_principal", name, *flags).split()[-1]
        for name, flags in (("admin", ["--super-user"]), ("broker", ["--broker"]), ("alice", []))
    }
    http = Http(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{internal_port}")
    server = EmbeddedServer(directory, env, http, tokens)
    try:
        server.spawn(
            "server",
            gunicorn_argv(
                [f"127.0.0.1:{port}", f"127.0.0.1:{internal_port}"],
                workers=1,
                threads=threads,
                worker_class=worker_class,
            ),
        )
        for path in ("/api/v1/whoami", "/internal/v1/metadata"):

            def asks_for_a_token(path: str = path) -> bool:
                return http.call("GET", path)[0] == 401

            wait_for(asks_for_a_token, 60, f"the server ({path})")
        if brokers:
            argv = [PYTHON, "manage.py", "simulate_brokers", "--internal-url", http.internal]
            argv += ["--url", http.base, "--token", tokens["broker"], "--brokers", str(brokers)]
            argv += ["--racks", "3", "--control", "none"]
            if topic:
                argv += ["--topic", topic, "--partitions", "6", "--replication-factor", "2"]
                argv += ["--admin-token", tokens["admin"]]
            server.spawn("simulator", argv, stdin=subprocess.DEVNULL)
            wait_for(lambda: server.brokers_unfenced() == brokers, 60, "every broker unfenced")
        if topic and brokers:
            wait_for(
                lambda: http.get(f"/api/v1/topics/{topic}", tokens["admin"])[0] == 200,
                60,
                f"the topic {topic}",
            )
        yield server
    finally:
        server.stop()
        time.sleep(0.1)
