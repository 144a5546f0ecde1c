"""README.md and docs/**/*.md name only what exists (issue 37).

Only code is read, never prose: inline code spans, fenced code blocks and links. In them:

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

Besides: README.md stays a front door (at most README_MAX_LINES lines) and links docs/README.md,
which links every page of docs/.

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
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
DOCS_INDEX = DOCS / "README.md"
README_MAX_LINES = 250  # issue 37: a front door read in five minutes

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
            return None  # outside the checkout (a sibling repository): not ours to check
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
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return
    location, _, anchor = target.partition("#")
    if not location:
        if anchor and anchor not in headings(page.text):
            yield f"link `{target}`: no heading #{anchor} on this page"
        return
    destination = (page.path.parent / location).resolve()
    if not destination.exists():
        yield f"link `{target}`: {location} does not exist"
        return
    markdown = destination.suffix == ".md" and destination.is_file()
    if anchor and markdown and anchor not in headings(destination.read_text()):
        yield f"link `{target}`: no heading #{anchor} in {destination.name}"


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
    return sorted(dict.fromkeys(problems), key=lambda p: (p.split(":")[0], _line(p)))


def _line(problem: str) -> int:
    parts = problem.split(":")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def doc_pages() -> list[Page]:
    paths = [README, *sorted(DOCS.rglob("*.md"))]
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
        for path in sorted(DOCS.rglob("*.md"))
        if path != DOCS_INDEX and path.resolve() not in linked
    ]
    assert not orphans, "docs/README.md links no page: " + ", ".join(orphans)
    assert "docs/README.md" in README.read_text(), "README.md links the index of docs/"


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
`metadata_log/`, `/api/v1/cluster`, `hdfs://namenode:8020/audit`, `../shared/DESIGN.md`,
`GET /internal/v1/metadata?after_offset=`, `pytest -m campaign -s tests/campaign`,
`make bench-*`, `python -m bench.NAME`, `manage.py COMMAND`, `DIR/__cluster_metadata-0/0.log`.

[the index](README.md), [this page](#run-it),
[the schema](audit-export-schema.md#the-audit-exports-schema),
![overview](screenshots/overview.png), [Kafka](https://kafka.apache.org/).
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
}


def test_good_page_has_no_problem() -> None:
    assert page_problems(Page(DOCS / "example.md", GOOD)) == []


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_missing_thing_is_named(case: str) -> None:
    text, expected = WRONG[case]
    problems = page_problems(Page(DOCS / "example.md", GOOD + "\n" + text + "\n"))
    assert len(problems) == 1 and expected in problems[0], problems
    assert problems[0].startswith("docs/example.md:"), problems
