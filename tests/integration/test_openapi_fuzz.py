"""Schemathesis against the running server, over the OpenAPI schema it serves: every check
(`--checks all`), as three principals (a super user, a principal without ACLs, a broker
principal), on both listeners, with bounded examples and a fixed seed: the super user's run
and the broker's on the internal listener explore each operation's inputs (`EXAMPLES`); the
others, whom most operations refuse, check with fewer
(`REFUSED_EXAMPLES`) that each refusal is a documented answer.
Passing means 0 x 5xx, 0 responses that violate the schema, 0 undocumented statuses, and every
other check of schemathesis (tests/integration/schemathesis.toml says which statuses answer a
valid or an invalid request).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from devtools.embedded import EmbeddedServer, embedded_server
from devtools.stack import BIN, ROOT

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = 10
REFUSED_EXAMPLES = 4
SEED = 7
LISTENERS = {"public": "^/api/v1/", "internal": "^/internal/"}
PRINCIPALS = ("admin", "alice", "broker")
# Who may do what they ask: the super user anywhere, a broker on the internal listener.
EXPLORING = {("public", "admin"), ("internal", "admin"), ("internal", "broker")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedServer:
    with embedded_server(tmp_path_factory.mktemp("fuzz"), brokers=3) as running:
        yield running


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("listener", sorted(LISTENERS))
def test_schemathesis_finds_nothing(server: EmbeddedServer, listener: str, principal: str) -> None:
    base = server.public if listener == "public" else server.internal
    argv = [
        str(BIN / "st"),
        "--config-file",
        str(CONFIG),
        "run",
        f"{server.public}/api/schema/",
        "--url",
        base,
        "--include-path-regex",
        LISTENERS[listener],
        "--checks",
        "all",
        "--max-examples",
        str(EXAMPLES if (listener, principal) in EXPLORING else REFUSED_EXAMPLES),
        "--seed",
        str(SEED),
        # One worker: CPython 3.11's ast.parse is not thread-safe, and hypothesis calls it to
        # describe filters (a SystemError, in the tool, 1 run in ~10 with two workers).
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--no-color",
        "--header",
        f"Authorization: Bearer {server.tokens[principal]}",
    ]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    summary = done.stdout[-6000:]
    print(summary)
    generated = re.search(r"(\d+) generated", done.stdout)
    assert done.returncode == 0, summary
    assert "No issues found" in done.stdout or "warning" in done.stdout.splitlines()[-1]
    assert generated is not None and int(generated.group(1)) > 0
