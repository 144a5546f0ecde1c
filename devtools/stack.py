"""Run the control plane's real processes locally: for integration tests and benchmarks.

Stacks share the machine's PostgreSQL and Redis with other runs (`CP_TEST_POSTGRES_URL`,
`CP_TEST_REDIS_URL`). A stack gets a PostgreSQL database of its own, created and dropped here,
and a Redis key prefix of its own for every key it writes (the control plane's and Celery's), so
two stacks never take each other's events; cleaning up deletes that prefix's keys, nothing else.
Processes are subprocesses started with the commands the deployment uses, so a caller can kill -9
or pause them. A web process binds two ports, the public and the internal listener's (the internal
one is its `CP_INTERNAL_PORT`), as the embedded run does; `Http` sends `/internal/...` paths to
the internal one.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
BIN = Path(PYTHON).parent
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def postgres_admin_url() -> str:
    """Where stacks create and drop their databases (`CP_TEST_POSTGRES_URL`)."""
    return os.environ.get("CP_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL


def redis_url() -> str:
    """The Redis that stacks and tests share, each under a key prefix of its own."""
    return os.environ.get("CP_TEST_REDIS_URL") or DEFAULT_REDIS_URL


def host_and_port(url: str, default_port: int) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or default_port


def database_url(database: str) -> str:
    """The admin URL (`postgres_admin_url()`) naming another database on the same server."""
    return urllib.parse.urlsplit(postgres_admin_url())._replace(path=f"/{database}").geturl()


def unique_key_prefix() -> str:
    return f"cp-it-{uuid.uuid4().hex[:12]}:"


def delete_keys(url: str, prefix: str, batch: int = 500) -> int:
    """Delete every key that starts with `prefix` (SCAN + UNLINK); returns how many."""
    import redis

    if not prefix:
        raise ValueError("refusing to delete every key: no prefix")
    pattern = re.sub(r"([\\*?\[\]^])", r"\\\1", prefix) + "*"
    deleted = 0
    with redis.Redis.from_url(url) as client:
        keys: list[bytes] = []
        for key in client.scan_iter(match=pattern, count=batch):
            keys.append(key)
            if len(keys) >= batch:
                deleted += int(client.unlink(*keys))
                keys.clear()
        if keys:
            deleted += int(client.unlink(*keys))
    return deleted


# Benchmarks measure the server, not the public API's request rate limit (controlplane.throttling).
BENCH_SETTINGS = {"CP_API_RATE_LIMIT": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as error:  # the thing we wait for may not be up yet
            last = error
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


INTERNAL_PREFIX = "/internal/"
# The server every mode runs: gunicorn's arbiter with the control plane's asyncio worker.
WORKER_CLASS = "controlplane.server.worker.ControlPlaneWorker"


def server_description(worker_class: str, workers: int, threads: int) -> str:
    kind = "the control plane's worker" if worker_class == WORKER_CLASS else worker_class
    return f"gunicorn ({kind}), {workers} workers x {threads} threads per listener"


def gunicorn_argv(
    binds: list[str], *, workers: int, threads: int, worker_class: str = WORKER_CLASS
) -> list[str]:
    """The web listener's command line, as the deployment starts it."""
    argv = [str(BIN / "gunicorn"), "controlplane.wsgi:application"]
    for bind in binds:
        argv += ["--bind", bind]
    return [
        *argv,
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--worker-class",
        worker_class,
        "--no-control-socket",
        "--config",
        "python:controlplane.gunicorn_conf",
    ]


@dataclasses.dataclass
class Http:
    """JSON over HTTP to one web process: `/internal/...` to its internal listener (`internal`),
    every other path to its public one (`base`)."""

    base: str
    internal: str

    def url(self, path: str) -> str:
        return (self.internal if path.startswith(INTERNAL_PREFIX) else self.base) + path

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url(path), data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def post(self, path: str, body: Any, token: str, **kw: Any) -> tuple[int, Any]:
        return self.call("POST", path, body, token, **kw)

    def get(self, path: str, token: str, **kw: Any) -> tuple[int, Any]:
        return self.call("GET", path, None, token, **kw)


@dataclasses.dataclass
class Stack:
    env: dict[str, str]
    logs: Path
    database: str
    key_prefix: str
    procs: dict[str, subprocess.Popen[bytes]] = dataclasses.field(default_factory=dict)
    tokens: dict[str, str] = dataclasses.field(default_factory=dict)
    http: Http | None = None

    @property
    def log_level(self) -> str:
        """The stack's `CP_LOG_LEVEL` (WARNING unless a setting names another), given to Celery
        and `run_controller` as their `--loglevel` too: theirs would win over the setting."""
        return self.env.get("CP_LOG_LEVEL", "WARNING")

    @property
    def token_secret_key(self) -> str | None:
        """The delegation-token key every process of the stack reads (a node setting)."""
        path = self.env.get(f"{TOKEN_KEY_SETTING}_FILE")
        if path:
            return Path(path).read_text().strip() or None
        return self.env.get(TOKEN_KEY_SETTING) or None

    def manage(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 120,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
        return result

    def spawn(
        self,
        name: str,
        argv: list[str],
        extra_env: dict[str, str] | None = None,
        *,
        stdin: int | None = None,
    ) -> subprocess.Popen[bytes]:
        """`stdin=subprocess.PIPE` to send the process commands (the simulator's controls)."""
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 (kept open for the process)
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**self.env, **(extra_env or {})},
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def start_web(
        self,
        name: str = "web",
        workers: int = 2,
        threads: int = 8,
        extra_env: dict[str, str] | None = None,
        worker_class: str = WORKER_CLASS,
    ) -> Http:
        """One gunicorn process bound to a public port and an internal one (CP_INTERNAL_PORT),
        with the control plane's worker (or `worker_class`, e.g. gthread, to compare)."""
        port, internal_port = free_port(), free_port()
        while internal_port == port:
            internal_port = free_port()
        self.spawn(
            name,
            gunicorn_argv(
                [f"127.0.0.1:{port}", f"127.0.0.1:{internal_port}"],
                workers=workers,
                threads=threads,
                worker_class=worker_class,
            ),
            {"CP_INTERNAL_PORT": str(internal_port), **(extra_env or {})},
        )
        http = Http(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{internal_port}")
        # Each port with its own listener: both ask for a token (401), neither answers 404.
        for path in ("/api/v1/whoami", "/internal/v1/metadata"):

            def asks_for_a_token(path: str = path) -> bool:
                return http.call("GET", path)[0] == 401

            wait_for(asks_for_a_token, 30, f"{name} to listen ({path})")
        if self.http is None:
            self.http = http
        return http

    def start_controller(self, name: str, controller_id: int) -> subprocess.Popen[bytes]:
        return self.spawn(
            name,
            [PYTHON, "manage.py", "run_controller", "--loglevel", self.log_level],
            {"CP_NODE_ID": name, "CP_CONTROLLER_ID": str(controller_id)},
        )

    def start_worker(self, name: str = "worker") -> subprocess.Popen[bytes]:
        """A Celery worker on the default queue (background work; never `controller`)."""
        return self.spawn(
            name,
            [
                str(BIN / "celery"),
                "-A",
                "controlplane",
                "worker",
                "--queues",
                "celery",
                "--concurrency",
                "2",
                "--loglevel",
                self.log_level,
                "--hostname",
                f"{name}@{self.key_prefix.rstrip(':')}",
            ],
        )

    def start_beat(self, name: str = "beat") -> subprocess.Popen[bytes]:
        """Celery beat, its schedule file beside the stack's logs."""
        return self.spawn(
            name,
            [
                str(BIN / "celery"),
                "-A",
                "controlplane",
                "beat",
                "--schedule",
                str(self.logs / f"{name}-schedule"),
                "--loglevel",
                self.log_level,
            ],
        )

    def lease(self) -> tuple[str, int, int]:
        """(holder, epoch, controller id) as the cluster row says now."""
        row = self.sql(
            "SELECT lease_holder, controller_epoch, coalesce(controller_id, -1)"
            " FROM cp_cluster WHERE id = 1"
        )
        return (row[0][0], int(row[0][1]), int(row[0][2])) if row else ("", 0, -1)

    def tables_follow_log(self, timeout: float = 30) -> None:
        """Wait until the state tables stand where the log ended when called. A commit is the
        log's transaction, the brokers woken, then the tables': what a broker already sees
        (a long-poll, a simulator's metadata) the REST reads show a moment later."""
        ((end,),) = self.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")
        wait_for(
            lambda: self.sql("SELECT projected_offset FROM cp_cluster WHERE id = 1")[0][0] >= end,
            timeout,
            f"the state tables to reach the log's offset {end}",
        )

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(
            self.env["DATABASE_URL"].replace("postgres://", "postgresql://"), autocommit=True
        ) as conn:
            return conn.execute(query, params).fetchall()

    def wait_active(self, name: str, timeout: float = 30) -> int:
        def active() -> int | None:
            holder, epoch, _ = self.lease()
            return epoch if holder == name else None

        return int(wait_for(active, timeout, f"{name} to become the active controller", 0.3))

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        os.killpg(self.procs[name].pid, sig)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


TOKEN_KEY_SETTING = "CP_DELEGATION_TOKEN_SECRET_KEY"


def token_key_file(logs: Path, settings: dict[str, str] | None) -> dict[str, str]:
    """A delegation-token key of the stack's own, in a file beside its logs (mode 0600) that
    every process reads (CP_DELEGATION_TOKEN_SECRET_KEY_FILE, as a mounted secret), unless
    the caller's settings name the key themselves."""
    if settings and any(name.startswith(TOKEN_KEY_SETTING) for name in settings):
        return {}
    path = logs / "delegation-token-secret-key"
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write(secrets.token_urlsafe(32) + "\n")
    return {f"{TOKEN_KEY_SETTING}_FILE": str(path)}


def _admin_connection() -> Any:
    import psycopg

    return psycopg.connect(postgres_admin_url(), autocommit=True)


# The principals every stack starts with: name -> create_principal's flags.
STACK_PRINCIPALS = (("admin", ["--super-user"]), ("broker", ["--broker"]))


@dataclasses.dataclass(frozen=True)
class _Template:
    database: str
    tokens: dict[str, str]


# One migrated database with the stack's principals per PostgreSQL server, made by the first
# stack of this process and copied by every next one (CREATE DATABASE ... TEMPLATE): a migrate
# and two create_principal runs cost a stack about 10 s of Django start-ups; a copy, 0.3 s.
_templates: dict[str, _Template] = {}


def _template(env: dict[str, str]) -> _Template:
    admin_url = postgres_admin_url()
    made = _templates.get(admin_url)
    if made is not None:
        return made
    database = f"cp_tpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with _admin_connection() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    atexit.register(_drop_database, admin_url, database)
    seeded = Stack(
        env={**env, "DATABASE_URL": database_url(database)}, logs=Path(), database="", key_prefix=""
    )
    seeded.manage("migrate", "--noinput", "-v0")
    tokens = {
        name: seeded.manage("create_principal", name, *flags).stdout.split()[-1]
        for name, flags in STACK_PRINCIPALS
    }
    made = _templates[admin_url] = _Template(database, tokens)
    return made


def _drop_database(admin_url: str, database: str) -> None:
    import psycopg

    with contextlib.suppress(Exception), psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _copy_of(template: str, database: str) -> None:
    """`database` as a copy of `template`; retried while the template's last session (a
    create_principal that just exited) is still closing."""
    import psycopg

    for attempt in range(50):
        try:
            with _admin_connection() as conn:
                conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')
            return
        except psycopg.errors.ObjectInUse:
            if attempt == 49:
                raise
            time.sleep(0.1)


@contextlib.contextmanager
def running_stack(logs: Path, *, settings: dict[str, str] | None = None) -> Iterator[Stack]:
    """A fresh database and Redis key prefix, migrated, with `admin` and `broker` principals."""
    database = f"cp_it_{uuid.uuid4().hex[:10]}"
    shared_redis = redis_url()
    key_prefix = unique_key_prefix()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CP_", "DATABASE_", "CELERY_"))}
    logs.mkdir(parents=True, exist_ok=True)
    env.update(token_key_file(logs, settings))
    env.update(
        {
            "DATABASE_URL": database_url(database),
            "CELERY_BROKER_URL": shared_redis,
            "CELERY_RESULT_BACKEND": shared_redis,
            "CP_REDIS_URL": shared_redis,
            "CP_REDIS_KEY_PREFIX": key_prefix,
            "CP_CELERY_KEY_PREFIX": key_prefix,
            "CP_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            **(settings or {}),
        }
    )
    template = _template(env)
    _copy_of(template.database, database)
    built = Stack(env=env, logs=logs, database=database, key_prefix=key_prefix)
    built.tokens.update(template.tokens)
    try:
        yield built
    finally:
        built.stop_all()
        for log in sorted(logs.glob("*.log")):
            tail = log.read_text(errors="replace")[-2500:]
            if "Traceback" in tail:
                print(f"--- {log.name} ---\n{tail}", file=sys.stderr)
        delete_keys(shared_redis, key_prefix)
        with _admin_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
