"""The docs (README.md, docker/README.md, docs/**/*.md) stand alone, speak of the product, and
name only what exists.

What a page names is read from its code alone (inline code spans, fenced code blocks) and its
links. In them:

- `make TARGET ...`: every target is a rule of the Makefile;
- `manage.py COMMAND` (`python manage.py ...` or not): a management command, the project's own
  (`<app>/management/commands/COMMAND.py`) or an installed app's (Django's `migrate`,
  drf-spectacular's `spectacular`);
- `python -m MODULE`: a module of the checkout (`MODULE.py`, or a package with `__main__.py`), or
  an installed one when its top-level package is not the checkout's;
- a relative link or image `[text](path#anchor)`: the file exists, relative to the page, and the
  anchor is a heading of the page it names;
- a repository path (a token with `/`, relative to the checkout's root): it exists when its first
  segment is an entry of the checkout's root (`controlplane/runtime/channel.py`, `docs/`,
  `bench/scale`); a `<placeholder>` or `*` in it must match something
  (`wire/apis/clients/<family>.py`); `path.py:name` names something of that file
  (`frontend/writes.py:rpc_call`); a path that starts inside a package a page just named
  (`partitions/states.py`) must be the tail of some path of the checkout. A benchmark's result
  `bench/results/NAME.json` may be absent (it is written by a run, and `make clean` deletes it)
  when its benchmark exists: `bench/NAME.py`, the package `bench/NAME/`, or a module of `bench/`
  or `devtools/` that names `NAME.json`.
  Runtime state (`var/...`, `.venv/...`), URLs, URL paths (`/api/v1/...`), media types
  (`text/plain`) and a bare `name/` (a dataset's or a package's directory named in passing) are
  not checked.

Nothing leaves the checkout: a link is a page or file of the checkout, or an address of the
running control plane (`http://127.0.0.1:8000/...`); no path climbs out of it (`../elsewhere`) or
names a place of one machine (`/home/...`, `~/...`); a web address is no link.

They speak of the product, not of how it was made: no issue numbers, no "before" figures, no words
about how the work went (`WORK_HISTORY`), on the pages and in the Makefile's comments.

Every environment variable the code reads (`os.environ`, `os.getenv`, the settings' `env_*`
helpers, and any `CP_*` name, the project's own prefix) is in docs/operators/configuration.md, and
each variable that page lists is read by the code, the Makefile or the scripts.

Besides: README.md stays a front door (at most README_MAX_LINES lines) and links docs/README.md,
which links every page of docs/ and docker/README.md.

Every check returns its problems: the tests run them on the real pages (none) and on pages made
wrong on purpose (each problem found), so none passes vacuously. No database, no service.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import importlib.util
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(REPO_ROOT).as_posix()  # its examples read nothing
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
DOCS_INDEX = DOCS / "README.md"
DOCKER_README = REPO_ROOT / "docker" / "README.md"
CONFIGURATION = DOCS / "operators" / "configuration.md"
README_MAX_LINES = 250  # a front door, read in five minutes

# Made by running the project, not part of the checkout: never checked.
RUNTIME_DIRS = frozenset({"var", ".venv", "node_modules"})
# Walking the checkout for path tails skips these (caches, installs, runtime state).
SKIPPED_DIRS = RUNTIME_DIRS | {".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
# Where a benchmark's result may come from when the file is absent.
BENCH_WRITERS = ("bench", "devtools")

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SHELL_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "$(", "`", "\\"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PYTHONS = re.compile(r"(^|/)python3?(\.\d+)?$")
FILE_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
FILE_AND_NAME = re.compile(r"^([\w./-]+\.[A-Za-z0-9]+):[\w.]+$")  # path.py:function or :line
NOT_A_PATH = re.compile(r"://|[\s{}$@|?#%\\\[\]^'\"=]")
PLACEHOLDER = re.compile(r"<[^<>/]*>")

# Leaving the checkout: a web address, a path climbing out of it, a place of one machine.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "0.0.0.0", "[::1]"})
WEB_ADDRESS = re.compile(r"\bhttps?://([^/\s)>\]`'\"]+)", re.IGNORECASE)
CLIMBING_PATH = re.compile(r"(?<![\w.-])(?:\./)?(?:\.\./)+[^\s)`'\"\]]*")
MACHINE_PLACES = ("home", "root", "Users", "work", "mnt", "srv", "media")
MACHINE_PATH = re.compile(r"(?<![\w.:/-])(?:~|/(?:" + "|".join(MACHINE_PLACES) + r"))/[^\s)`'\"]*")

# How the work went, which the docs never tell: each pattern with what it is.
WORK_HISTORY = {
    "an issue number": r"\bissues?\s+#?\d+",
    "a task's point": r"\bpoint\s+\d+\b",
    "a finding": r"\bthe finding\b|\bfinding's\b",
    "a pass of the work": r"\b(?:first|second|third|next) pass\b",
    "a goal not met": r"\bnot met\b",
    "the machine the work ran on": r"\bshared (?:\d+-core )?machine\b|\b\d+-core machine\b",
    "a figure before a change": r"\(before\b|\bbefore:\s*\d|\bbefore and after\b|\bused to\b"
    r"|\ban earlier (?:run|rule)\b|\bthe old (?:server|rule)\b",
    "the team's reference texts": r"(?-i:\b(?:DESIGN|CONTRACT|KRAFT)\.md\b)|\bthe contract\b"
    r"|\bthe seed's\b",
}
WORK_HISTORY_PATTERN = re.compile(
    "|".join(f"(?P<p{n}>{pattern})" for n, pattern in enumerate(WORK_HISTORY.values())),
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True)
class Code:
    """A piece of code on a page: an inline span or one line of a fenced block."""

    line: int
    text: str
    block: bool


@dataclasses.dataclass(frozen=True)
class Page:
    path: Path  # where it is (links are relative to it)
    text: str

    @property
    def name(self) -> str:
        try:
            return str(self.path.relative_to(REPO_ROOT))
        except ValueError:
            return str(self.path)


# --- Reading a page ------------------------------------------------------------------------


def split_code(text: str) -> tuple[list[Code], str]:
    """The page's code (fenced lines, inline spans) and its prose with the code blanked out
    (line numbers kept), where links are looked for."""
    code: list[Code] = []
    prose_lines: list[str] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            prose_lines.append("")
        elif fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            else:
                code.append(Code(number, line, block=True))
            prose_lines.append("")
        else:
            prose_lines.append(line)
    prose = "\n".join(prose_lines)
    blanked: list[str] = []
    last = 0
    for span in CODE_SPAN.finditer(prose):
        at = prose.count("\n", 0, span.start()) + 1
        code.append(Code(at, " ".join(span.group(2).split()), block=False))
        blanked.append(prose[last : span.start()])
        blanked.append("\n" * span.group(0).count("\n"))
        last = span.end()
    blanked.append(prose[last:])
    return code, "".join(blanked)


def shell_words(text: str) -> list[str]:
    """A line of code as shell words (quotes kept together); a comment ends it."""
    text = re.sub(r"(^|\s)#.*$", "", text)
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # an unbalanced quote: a fragment of code, words as they come
        return text.split()


def commands(
    words: list[str], program: re.Pattern[str], *, anywhere: bool = False
) -> Iterator[list[str]]:
    """The arguments of each invocation of `program`: a command word (first in its command, after
    a separator or after VAR=value assignments), or with `anywhere` any word (`manage.py` is the
    argument of a python)."""
    at_command = True
    for index, word in enumerate(words):
        if word in SHELL_SEPARATORS or set(word) <= set(";&|()"):
            at_command = True
            continue
        if at_command and ASSIGNMENT.match(word):
            continue
        if (at_command or anywhere) and program.search(word):
            arguments: list[str] = []
            for argument in words[index + 1 :]:
                if argument in SHELL_SEPARATORS or set(argument) <= set(";&|()"):
                    break
                arguments.append(argument)
            yield arguments
        at_command = False


def headings(text: str) -> set[str]:
    """GitHub's anchors of a page's headings (lower case, punctuation dropped, spaces to -)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    code, _ = split_code(text)
    in_block = {c.line for c in code if c.block}
    for number, line in enumerate(text.splitlines(), start=1):
        match = HEADING.match(line)
        if not match or number in in_block:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


# --- What the checkout has ------------------------------------------------------------------


@functools.cache
def make_targets() -> frozenset[str]:
    rule = re.compile(r"^([A-Za-z0-9][\w.-]*(?:[ \t]+[A-Za-z0-9][\w.-]*)*)[ \t]*:(?!=)")
    targets: set[str] = set()
    for line in (REPO_ROOT / "Makefile").read_text().splitlines():
        match = rule.match(line)
        if match:
            targets.update(match.group(1).split())
    return frozenset(targets)


@functools.cache
def project_commands() -> frozenset[str]:
    return frozenset(
        path.stem
        for path in REPO_ROOT.glob("*/management/commands/*.py")
        if not path.stem.startswith("_")
    )


@functools.cache
def installed_commands() -> frozenset[str]:
    """Management commands of the installed apps (Django's, drf-spectacular's, ...)."""
    from django.core.management import get_commands

    return frozenset(get_commands())


@functools.cache
def root_entries() -> frozenset[str]:
    return frozenset(entry.name for entry in REPO_ROOT.iterdir())


@functools.cache
def checkout_paths() -> tuple[str, ...]:
    """Every file and directory of the checkout (relative, directories ending with /)."""
    found: list[str] = []
    for folder, dirs, files in os.walk(REPO_ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        relative = Path(folder).relative_to(REPO_ROOT)
        found.extend(f"{(relative / d).as_posix()}/" for d in dirs)
        found.extend((relative / f).as_posix() for f in files)
    return tuple(found)


def module_exists(module: str) -> bool:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return False
    base = REPO_ROOT.joinpath(*parts)
    if parts[0] in root_entries() and (REPO_ROOT / parts[0]).is_dir():
        return base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()
    try:
        return importlib.util.find_spec(parts[0]) is not None and (
            len(parts) == 1 or importlib.util.find_spec(module) is not None
        )
    except (ImportError, ValueError):
        return False


def bench_result_writer_exists(name: str) -> bool:
    """A benchmark that writes bench/results/NAME.json exists."""
    if (REPO_ROOT / "bench" / f"{name}.py").is_file():
        return True
    if (REPO_ROOT / "bench" / name / "__main__.py").is_file():
        return True
    needle = f"{name}.json"
    for top in BENCH_WRITERS:
        for source in (REPO_ROOT / top).rglob("*.py"):
            if needle in source.read_text(errors="replace"):
                return True
    return False


# --- The checks -----------------------------------------------------------------------------


def path_problem(token: str) -> str | None:
    """Why `token`, a word of code, names nothing of the checkout (None: it does, or it is no
    repository path)."""
    token = token.strip(",;()'\"")
    if "=" in token:
        token = token.split("=", 1)[1]  # VAR=path, --option=path
    named = FILE_AND_NAME.match(token)
    symbol = None
    if named:
        token, symbol = named.group(1), token.rsplit(":", 1)[1]
    if "/" not in token or token.startswith(("/", "~", "-")) or ":" in token:
        return None  # no path, a URL or a URL path, an option
    if NOT_A_PATH.search(token):
        return None
    relative = token.removeprefix("./")
    if relative.startswith("../"):
        resolved = (REPO_ROOT / relative).resolve()
        if not resolved.is_relative_to(REPO_ROOT):
            return f"`{token}` leaves the checkout"
        relative = resolved.relative_to(REPO_ROOT).as_posix()
    first = relative.split("/", 1)[0]
    if first in RUNTIME_DIRS:
        return None
    if first not in root_entries():
        return tail_problem(token, relative)
    pattern = PLACEHOLDER.sub("*", relative)
    if "*" in pattern:
        if fnmatch.filter(checkout_paths(), pattern) or fnmatch.filter(
            checkout_paths(), pattern.rstrip("/") + "/"
        ):
            return None
        return f"`{token}` matches nothing in the checkout"
    if (REPO_ROOT / relative).is_file() and symbol and not symbol.isdigit():
        name = re.escape(symbol.split(".")[-1])
        if not re.search(rf"\b{name}\b", (REPO_ROOT / relative).read_text(errors="replace")):
            return f"`{token}:{symbol}`: {symbol} is not in {relative}"
        return None
    if (REPO_ROOT / relative).exists():
        return None
    result = re.fullmatch(r"bench/results/([\w.-]+)\.json", relative)
    if result and bench_result_writer_exists(result.group(1)):
        return None  # a benchmark's result, written when it runs
    if result:
        return f"`{token}` is no file, and no benchmark writes it"
    return f"`{token}` does not exist"


def is_placeholder(word: str) -> bool:
    """`COMMAND`, `NAME`, `<name>`, `[--option]`: a word that stands for another."""
    return word.startswith(("<", "[", "{")) or (word.isupper() and word.isidentifier())


def tail_problem(token: str, relative: str) -> str | None:
    """A path that starts inside a package named nearby (`partitions/states.py`): the tail of
    some path of the checkout. Not checked: placeholders, a bare `name/`, and words that are no
    file or directory (`text/plain`)."""
    if "<" in relative or ">" in relative or "*" in relative:
        return None
    if is_placeholder(relative.split("/", 1)[0]):
        return None  # DIR/__cluster_metadata-0/...: under a directory the reader picks
    if relative.count("/") == 1 and relative.endswith("/"):
        return None
    if not (relative.endswith("/") or FILE_EXTENSION.search(relative)):
        return None
    tail = "/" + relative
    if any(("/" + path).endswith(tail) for path in checkout_paths()):
        return None
    return f"`{token}` is no path of the checkout (nor the tail of one)"


def code_problems(code: Code) -> Iterator[str]:
    words = shell_words(code.text)
    for arguments in commands(words, re.compile(r"^make$")):
        for argument in arguments:
            if argument.startswith("-") or ASSIGNMENT.match(argument):
                continue
            if not fnmatch.filter(make_targets(), argument):  # `make bench-*`: one at least
                yield f"`make {argument}`: no such target in the Makefile"
    for arguments in commands(words, re.compile(r"(^|/)manage\.py$"), anywhere=True):
        command = next((a for a in arguments if not a.startswith("-")), None)
        if command is None or is_placeholder(command):
            continue
        if command not in project_commands() and command not in installed_commands():
            yield f"`manage.py {command}`: no such management command"
    for arguments in commands(words, PYTHONS):
        if len(arguments) < 2 or arguments[0] != "-m":
            continue
        module = arguments[1]
        placeholder = any(is_placeholder(part) for part in module.split("."))
        if not placeholder and not module_exists(module):
            yield f"`python -m {module}`: no such module"
    tokens = words if code.block else [*words, *re.split(r"[\s,]+", code.text)]
    for token in dict.fromkeys(tokens):
        problem = path_problem(token)
        if problem:
            yield problem


def link_problems(page: Page, target: str) -> Iterator[str]:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: (web addresses below)
        if not WEB_ADDRESS.match(target):
            yield f"link `{target}` leaves the checkout"
        return
    location, _, anchor = target.partition("#")
    if not location:
        if anchor and anchor not in headings(page.text):
            yield f"link `{target}`: no heading #{anchor} on this page"
        return
    destination = (page.path.parent / location).resolve()
    if not destination.is_relative_to(REPO_ROOT):
        yield f"link `{target}` leaves the checkout"
        return
    if not destination.exists():
        yield f"link `{target}`: {location} does not exist"
        return
    markdown = destination.suffix == ".md" and destination.is_file()
    if anchor and markdown and anchor not in headings(destination.read_text()):
        yield f"link `{target}`: no heading #{anchor} in {destination.name}"


def leaving_problems(page: Page, prose: str) -> Iterator[tuple[int, str]]:
    """(line, problem) for what leaves the checkout outside code: web addresses that are no
    running control plane's, paths climbing out of it, a machine's places (in code too)."""
    for address in WEB_ADDRESS.finditer(prose):
        host = address.group(1).rsplit("@", 1)[-1]
        host = host if host.startswith("[") else host.split(":", 1)[0]
        if host.lower() not in LOCAL_HOSTS:
            yield _at(prose, address.start()), f"`{address.group(0)}` leaves the checkout"
    words = LINK.sub(lambda link: " " * len(link.group(0)), prose)  # links: link_problems
    for climbing in CLIMBING_PATH.finditer(words):
        path = climbing.group(0).rstrip(".,;:")
        bases = (page.path.parent, REPO_ROOT)  # read relative to the page, or to the checkout
        if any(not (base / path).resolve().is_relative_to(REPO_ROOT) for base in bases):
            yield _at(words, climbing.start()), f"`{path}` leaves the checkout"
    for place in MACHINE_PATH.finditer(page.text):
        yield _at(page.text, place.start()), f"`{place.group(0)}` is a place of one machine"


def history_problems(text: str) -> Iterator[tuple[int, str]]:
    """(line, problem) for every word of how the work went (`WORK_HISTORY`)."""
    kinds = list(WORK_HISTORY)
    for match in WORK_HISTORY_PATTERN.finditer(text):
        kind = kinds[int(next(k for k, v in match.groupdict().items() if v)[1:])]
        yield _at(text, match.start()), f"`{match.group(0)}`: {kind}, not the product"


def _at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def page_problems(page: Page) -> list[str]:
    code, prose = split_code(page.text)
    problems = [
        f"{page.name}:{item.line}: {problem}" for item in code for problem in code_problems(item)
    ]
    for link in LINK.finditer(prose):
        line = prose.count("\n", 0, link.start()) + 1
        problems.extend(
            f"{page.name}:{line}: {problem}" for problem in link_problems(page, link.group(1))
        )
    for line, problem in [*leaving_problems(page, prose), *history_problems(page.text)]:
        problems.append(f"{page.name}:{line}: {problem}")
    return sorted(dict.fromkeys(problems), key=lambda p: (p.split(":")[0], _line(p)))


def _line(problem: str) -> int:
    parts = problem.split(":")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def doc_pages() -> list[Page]:
    paths = [README, DOCKER_README, *sorted(DOCS.rglob("*.md"))]
    return [Page(path, path.read_text()) for path in paths]


def report(problems: list[str]) -> str:
    return f"{len(problems)} thing(s) the docs name do not exist:\n  " + "\n  ".join(problems)


# --- On the real pages -------------------------------------------------------------------


def test_docs_name_only_what_exists() -> None:
    pages = doc_pages()
    assert len(pages) > 10, "README.md and the pages under docs/"
    problems = [problem for page in pages for problem in page_problems(page)]
    assert not problems, report(problems)


def test_readme_is_a_front_door() -> None:
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move details into docs/ "
        f"and link them (docs/README.md is the index)"
    )


def test_every_docs_page_is_in_the_index() -> None:
    _, prose = split_code(DOCS_INDEX.read_text())
    linked = {
        (DOCS_INDEX.parent / link.group(1).partition("#")[0]).resolve()
        for link in LINK.finditer(prose)
    }
    orphans = [
        str(path.relative_to(REPO_ROOT))
        for path in [*sorted(DOCS.rglob("*.md")), DOCKER_README]
        if path != DOCS_INDEX and path.resolve() not in linked
    ]
    assert not orphans, "docs/README.md links no page: " + ", ".join(orphans)
    assert "docs/README.md" in README.read_text(), "README.md links the index of docs/"


def makefile_comment_problems(makefile: str) -> list[str]:
    """The Makefile's comments (its `## ` help lines among them) speak of the product too."""
    comments = "\n".join(
        line if line.lstrip().startswith("#") else "" for line in makefile.splitlines()
    )
    return [f"Makefile:{line}: {problem}" for line, problem in history_problems(comments)]


def test_the_makefiles_comments_speak_of_the_product() -> None:
    problems = makefile_comment_problems((REPO_ROOT / "Makefile").read_text())
    assert not problems, "\n  ".join(["the Makefile's comments tell how the work went:", *problems])


def test_a_makefile_comment_about_the_work_is_named() -> None:
    makefile = (
        "## bench-x: a benchmark (issue 23: 1M under 1 GiB)\nbench-x: install\n\techo issue 9\n"
    )
    assert makefile_comment_problems(makefile) == [
        "Makefile:1: `issue 23`: an issue number, not the product"
    ]


# --- Every environment variable the code reads is configured in one place ------------------------

# Read from the environment: os.environ.get / os.getenv / os.environ[...] (not assigned) /
# `in os.environ` / the settings' env_int and env_bool; and any `CP_*` name in a string, the
# project's own prefix (an option's fallback, a program's environment a test or stack sets).
ENV_READ = re.compile(
    r"""(?:os\.environ\.get|os\.getenv)\(\s*["']([A-Z][A-Z0-9_]*)["']"""
    r"""|os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\](?!\s*=[^=])"""
    r"""|["']([A-Z][A-Z0-9_]*)["']\s+(?:not\s+)?in\s+os\.environ\b"""
    r"""|\benv_[a-z]+\(\s*["']([A-Z][A-Z0-9_]*)["']"""
    r"""|["'$]\{?(CP_[A-Z0-9_]+)\b"""
)
# What every process has, and what a program sets for its own children: no setting.
NOT_SETTINGS = frozenset({"PATH", "TMPDIR", "PYSPARK_GATEWAY_PORT"})
# Where a variable may be read besides the Python code: make's variables, the scripts, compose.
SHELL_SOURCES = ("Makefile", "scripts/**/*.sh", "docker/compose.yaml", "docker/Dockerfile")
SHELL_VARIABLE = re.compile(
    r"\$\{?([A-Z][A-Z0-9_]*)|^([A-Z][A-Z0-9_]*)\s*\??=|\b([A-Z][A-Z0-9_]*)="
)
CONFIGURED = re.compile(r"^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|", re.MULTILINE)


def env_reads(sources: dict[str, str]) -> dict[str, str]:
    """Every variable the Python `sources` (path: text) read, with the first path reading it."""
    read: dict[str, str] = {}
    for path, text in sorted(sources.items()):
        for match in ENV_READ.finditer(text):
            name = next(group for group in match.groups() if group)
            if name not in NOT_SETTINGS:
                read.setdefault(name, path)
    return read


def python_sources() -> dict[str, str]:
    return {
        path: (REPO_ROOT / path).read_text(errors="replace")
        for path in checkout_paths()
        if path.endswith(".py") and "node_modules/" not in path and path != THIS_FILE
    }


def shell_variables() -> set[str]:
    names: set[str] = set()
    for pattern in SHELL_SOURCES:
        for source in REPO_ROOT.glob(pattern):
            for match in SHELL_VARIABLE.finditer(source.read_text(), re.MULTILINE):
                names.update(group for group in match.groups() if group)
    return names


def configured(configuration: str) -> set[str]:
    """The variables a configuration page lists: the first column of its tables."""
    return set(CONFIGURED.findall(configuration))


def configuration_problems(
    read: dict[str, str], listed: set[str], read_elsewhere: set[str]
) -> list[str]:
    unlisted = [
        f"{name} (read by {path}) is not in docs/operators/configuration.md"
        for name, path in sorted(read.items())
        if name not in listed
    ]
    unread = [
        f"{name} is in docs/operators/configuration.md, but nothing reads it"
        for name in sorted(listed - set(read) - read_elsewhere)
    ]
    return unlisted + unread


def test_configuration_lists_every_variable_the_code_reads_and_no_other() -> None:
    read = env_reads(python_sources())
    assert {"DATABASE_URL", "CP_KAFKA_LIBS", "CP_CAMPAIGN_PG_BIN", "KAFKA_VERSION"} <= set(read)
    problems = configuration_problems(
        read, configured(CONFIGURATION.read_text()), shell_variables()
    )
    assert not problems, "\n  ".join(["configuration.md and the code disagree:", *problems])


def test_a_variable_read_and_not_listed_or_listed_and_not_read_is_named() -> None:
    code = {
        "app/settings.py": 'X = os.environ.get("CP_NEW", "1")\nY = env_int("CP_OLD", 2)\n'
        'os.environ["CP_SET"] = "1"\nif "PATH" in os.environ: pass\n',
        "app/command.py": 'parser.add_argument("--token", help="default: $CP_TOKEN")\n',
    }
    configuration = "| variable | default |\n| --- | --- |\n| `CP_OLD` | `2` |\n| `CP_GONE` | |\n"

    read = env_reads(code)

    assert read == {
        "CP_NEW": "app/settings.py",
        "CP_OLD": "app/settings.py",
        "CP_SET": "app/settings.py",
        "CP_TOKEN": "app/command.py",
    }
    assert configuration_problems(read, configured(configuration), {"CP_SET"}) == [
        "CP_NEW (read by app/settings.py) is not in docs/operators/configuration.md",
        "CP_SET (read by app/settings.py) is not in docs/operators/configuration.md",
        "CP_TOKEN (read by app/command.py) is not in docs/operators/configuration.md",
        "CP_GONE is in docs/operators/configuration.md, but nothing reads it",
    ]


# --- The error codes are Kafka's, each answered one listed --------------------------------------

ERRORS_PAGE = DOCS / "reference" / "errors.md"
ERROR_ROW = re.compile(r"^\|\s*(-?\d+)\s*\|\s*`([A-Z_]+)`\s*\|", re.MULTILINE)
ERROR_USE = re.compile(r"\bErrors\.([A-Z][A-Z_]+)\b")


def error_code_problems(page: str, codes: dict[str, int], used: set[str]) -> list[str]:
    listed = {name: int(number) for number, name in ERROR_ROW.findall(page)}
    wrong = [
        f"{name} is {codes[name]}, not {number}" if name in codes else f"{name} is no error code"
        for name, number in sorted(listed.items())
        if codes.get(name) != number
    ]
    return wrong + [f"{name} is answered but not listed" for name in sorted(used - set(listed))]


def test_the_error_codes_page_lists_every_code_answered() -> None:
    from controlplane.controller.errors import Errors

    used = {
        name
        for path, text in python_sources().items()
        if not path.startswith("tests/") and not path.endswith("controller/errors.py")
        for name in ERROR_USE.findall(text)
    }
    codes = {member.name: int(member) for member in Errors}
    assert {"NOT_CONTROLLER", "UNKNOWN_EVENT_TYPE"} <= used
    problems = error_code_problems(ERRORS_PAGE.read_text(), codes, used & set(codes))
    assert not problems, "docs/reference/errors.md: " + "; ".join(problems)


def test_an_error_code_wrong_or_missing_is_named() -> None:
    page = "| 41 | `NOT_CONTROLLER` | x |\n| 43 | `INVALID_REQUEST` | x |\n| 5 | `NO_SUCH` | x |\n"
    codes = {"NOT_CONTROLLER": 41, "INVALID_REQUEST": 42, "STALE_BROKER_EPOCH": 77}
    assert error_code_problems(page, codes, {"NOT_CONTROLLER", "STALE_BROKER_EPOCH"}) == [
        "INVALID_REQUEST is 42, not 43",
        "NO_SUCH is no error code",
        "STALE_BROKER_EPOCH is answered but not listed",
    ]


# --- On pages made wrong on purpose --------------------------------------------------------

GOOD = """# A page

## Run it

`make run`, then `make bench-scale BENCH_ARGS="--sizes 1000000"`; `PORT=9000 make run`.

```
export DATABASE_URL=postgres://user@host:5432/db
python manage.py migrate
python manage.py run_controller &            # twice or more
.venv/bin/python manage.py create_principal admin --super-user
python -m stock_kafka --version
python -m bench.scale --sizes 10
spark-submit audit/spark/job.py denied-requests --data hdfs://namenode:8020/audit
```

`controlplane/runtime/channel.py`, `docs/`, `bench/scale/`, `docs/screenshots`,
`frontend/writes.py:rpc_call`, `wire/apis/<family>.py`, `tests/unit/test_mirror_*.py`,
`partitions/states.py`, `bench/results/scale.json`, `var/audit`, `text/plain`,
`metadata_log/`, `/api/v1/cluster`, `hdfs://namenode:8020/audit`, `/opt/kafka/config/`,
`GET /internal/v1/metadata?after_offset=`, `pytest -m campaign -s tests/campaign`,
`make bench-*`, `python -m bench.NAME`, `manage.py COMMAND`, `DIR/__cluster_metadata-0/0.log`.

[the index](README.md), [this page](#run-it),
[the schema](audit-export-schema.md#the-audit-exports-schema),
![overview](screenshots/overview.png), [the console](http://127.0.0.1:8000/ui/),
<http://localhost:8000/api/docs/>, [the compose file](../docker/compose.yaml).
"""

WRONG = {
    "a make target": ("`make rnu`", "`make rnu`: no such target"),
    "a make target in a block": ("```\nPORT=1 make test-fastest\n```", "make test-fastest"),
    "a second make target": ("`make run bench-nothing`", "`make bench-nothing`"),
    "a management command": ("`python manage.py run_controler`", "manage.py run_controler"),
    "a management command in a block": (
        "```\n.venv/bin/python manage.py serve_kafk --listener X\n```",
        "manage.py serve_kafk",
    ),
    "a make target pattern": ("`make bnch-*`", "`make bnch-*`: no such target"),
    "a module": ("`python -m bench.no_such_bench`", "python -m bench.no_such_bench"),
    "a module in a block": ("```\n.venv/bin/python -m devtools.nothing\n```", "devtools.nothing"),
    "a file": ("`controlplane/runtime/chanel.py`", "chanel.py` does not exist"),
    "a file in a block": ("```\nspark-submit audit/spark/jobs.py x\n```", "jobs.py` does not"),
    "a directory": ("`controlplane/runtim/`", "`controlplane/runtim/` does not exist"),
    "a bench script": ("`bench/no_such_bench.py`", "`bench/no_such_bench.py` does not exist"),
    "a bench result": ("`bench/results/nobody.json`", "no benchmark writes it"),
    "a placeholder": ("`wire/apis/<family>.rs`", "matches nothing"),
    "a path tail": ("`partitions/stats.py`", "nor the tail of one"),
    "a name in a file": ("`frontend/writes.py:rpc_cal`", "rpc_cal is not in frontend/writes.py"),
    "a link": ("[x](operators/nowhere.md)", "operators/nowhere.md does not exist"),
    "an anchor": ("[x](#nowhere)", "no heading #nowhere"),
    "a link out of the checkout": ("[x](../../elsewhere/notes.md)", "leaves the checkout"),
    "a web link": ("[Kafka](https://kafka.apache.org/)", "leaves the checkout"),
    "a web address": ("See https://kafka.apache.org/documentation.", "leaves the checkout"),
    "a link of another scheme": ("[mail](mailto:someone@example.org)", "leaves the checkout"),
    "a path out of the checkout": ("`../elsewhere/notes.md`", "leaves the checkout"),
    "a path out of the checkout in prose": ("See ../elsewhere/notes.md.", "leaves the checkout"),
    "a place of one machine": ("`/home/me/notes.md`", "a place of one machine"),
    "a place of one machine in prose": ("Read ~/notes.md first.", "a place of one machine"),
    "an issue number": ("## Hardening (issue 12)", "an issue number"),
    "issue numbers": ("Scale (issues 22 and 23).", "an issue number"),
    "a finding": ("What the finding's frame costs.", "a finding"),
    "a pass of the work": ("The console's second pass checks it.", "a pass of the work"),
    "a goal not met": ("Every broker in 4.4 s (goal 3 s: not met).", "a goal not met"),
    "the machine of the work": ("Measured on the shared 2-core machine.", "the machine the work"),
    "a figure before": ("411 MiB (before: 859 MiB).", "a figure before a change"),
    "a reference text": ("As CONTRACT.md says.", "the team's reference texts"),
}


def test_good_page_has_no_problem() -> None:
    assert page_problems(Page(DOCS / "example.md", GOOD)) == []


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_missing_thing_is_named(case: str) -> None:
    text, expected = WRONG[case]
    problems = page_problems(Page(DOCS / "example.md", GOOD + "\n" + text + "\n"))
    assert len(problems) == 1 and expected in problems[0], problems
    assert problems[0].startswith("docs/example.md:"), problems
