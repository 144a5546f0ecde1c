"""Every make target the docs name works on a fresh clone: it installs what it runs first.

The Makefile is read as make reads it (rules, prerequisites, recipes). A target whose recipe runs
the project's Python (`$(PY)`, `$(VENV)/bin/...`) needs the project installed; one that runs
pytest or the linters needs the test extras too. An installer is a target whose recipe runs
`pip install`: `-e .` brings the project, `-e '.[test]'` the project and its test extras. A
target gets what the installers among its prerequisites bring (transitively), and the targets
it stands on must each have what they run. No make is run, no database, no service.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re
from pathlib import Path

import pytest

from tests.unit.test_docs import commands, doc_pages, shell_words, split_code

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
RULE = re.compile(r"^([^\s:#=][^:=]*?)\s*:(?!=)\s*([^#]*)")
RUNS_PYTHON = re.compile(r"\$\(PY\)|\$\(VENV\)/bin/")
RUNS_TEST_TOOLS = re.compile(r"\$\(VENV\)/bin/(?:pytest|ruff|mypy|lint-imports)\b")
PIP_INSTALL = re.compile(r"pip install\b.*?-e\s+(['\"]?)\.(\[test\])?\1")
PROJECT, TEST_EXTRAS = "the project", "its test extras"


@dataclasses.dataclass
class Rule:
    prerequisites: list[str]
    recipe: list[str]


def parse(makefile: str) -> dict[str, Rule]:
    """Targets with their prerequisites and recipe lines (variables as written: `$(PY)`)."""
    rules: dict[str, Rule] = {}
    current: list[Rule] = []
    for line in makefile.splitlines():
        if line.startswith("\t"):
            for rule in current:
                rule.recipe.append(line.strip())
            continue
        current = []
        match = RULE.match(line)
        if not match or line.startswith(".PHONY"):
            continue
        for target in match.group(1).split():
            rule = rules.setdefault(target, Rule([], []))
            rule.prerequisites.extend(match.group(2).split())
            current.append(rule)
    return rules


def brings(rule: Rule) -> set[str]:
    """What an installer's own recipe installs."""
    found: set[str] = set()
    for line in rule.recipe:
        match = PIP_INSTALL.search(line)
        if match:
            found |= {PROJECT, TEST_EXTRAS} if match.group(2) else {PROJECT}
    return found


def needs(rule: Rule) -> set[str]:
    """What a recipe runs that an installer must have brought (pip itself needs nothing)."""
    recipe = "\n".join(line for line in rule.recipe if "pip install" not in line)
    found = {PROJECT} if RUNS_PYTHON.search(recipe) else set()
    return found | ({TEST_EXTRAS} if RUNS_TEST_TOOLS.search(recipe) else set())


def installed_before(rules: dict[str, Rule], target: str) -> set[str]:
    """What the installers among a target's prerequisites (transitively) bring."""
    found: set[str] = set()
    seen: set[str] = set()
    waiting = list(rules[target].prerequisites)
    while waiting:
        name = waiting.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        found |= brings(rules[name])
        waiting.extend(rules[name].prerequisites)
    return found


def stands_on(rules: dict[str, Rule], target: str) -> list[str]:
    """The target and every target among its prerequisites, transitively."""
    order: list[str] = []
    waiting = [target]
    while waiting:
        name = waiting.pop(0)
        if name in order or name not in rules:
            continue
        order.append(name)
        waiting.extend(rules[name].prerequisites)
    return order


def install_problems(rules: dict[str, Rule], targets: list[str]) -> list[str]:
    problems: list[str] = []
    for named in targets:
        for target in stands_on(rules, named):
            missing = needs(rules[target]) - installed_before(rules, target)
            if missing:
                via = "" if target == named else f" (for `make {named}`)"
                problems.append(
                    f"`make {target}`{via} runs {' and '.join(sorted(missing))} "
                    f"without installing it first: give it install-test-python, install or "
                    f"install-test as a prerequisite"
                )
    return list(dict.fromkeys(problems))


@functools.cache
def documented_targets() -> list[str]:
    """Every target a page names (`make bench-*` names each benchmark)."""
    rules = parse(MAKEFILE.read_text())
    named: list[str] = []
    for page in doc_pages():
        code, _ = split_code(page.text)
        for item in code:
            for arguments in commands(shell_words(item.text), re.compile(r"^make$")):
                for argument in arguments:
                    if argument.startswith("-") or "=" in argument:
                        continue
                    named.extend(fnmatch.filter(sorted(rules), argument))
    return list(dict.fromkeys(named))


# --- On the real Makefile and pages ------------------------------------------------------------


def test_the_docs_name_the_commands_of_a_fresh_clone() -> None:
    named = set(documented_targets())
    assert {"run", "test", "test-fast", "bench-health-fence", "bench-ui", "lint"} <= named


def test_every_target_the_docs_name_installs_what_it_runs_first() -> None:
    problems = install_problems(parse(MAKEFILE.read_text()), documented_targets())
    assert not problems, "\n  ".join(["on a fresh clone these fail:", *problems])


def test_the_installers_bring_what_the_docs_say() -> None:
    rules = parse(MAKEFILE.read_text())
    assert brings(rules["install"]) == {PROJECT}
    assert brings(rules["install-test-python"]) == {PROJECT, TEST_EXTRAS}
    assert installed_before(rules, "test-fast") == {PROJECT, TEST_EXTRAS}
    assert PROJECT in installed_before(rules, "bench-health-fence")


# --- On a Makefile made wrong on purpose -------------------------------------------------------

SMALL = """VENV ?= .venv
PY := $(VENV)/bin/python

$(PY):
\tpython3 -m venv $(VENV)
\t$(PY) -m pip install -q --upgrade pip

install: $(PY)
\t$(PY) -m pip install -q -e .

install-test: $(PY)
\t$(PY) -m pip install -q -e '.[test]'

## test-fast: the fast tests
test-fast: install-test
\t$(VENV)/bin/pytest -m "not integration"

bench: bench-a bench-b

bench-a: install-test
\t$(PY) -m bench.a

bench-b: install
\t$(PY) -m bench.b

clean:
\trm -rf var
"""


def test_a_makefile_that_installs_first_has_no_problem() -> None:
    rules = parse(SMALL)
    assert rules["bench"].prerequisites == ["bench-a", "bench-b"]
    assert install_problems(rules, ["test-fast", "bench", "clean", "install"]) == []


@pytest.mark.parametrize(
    ("wrong", "right", "expected"),
    [
        ("test-fast: $(PY)", "test-fast: install-test", "`make test-fast` runs its test extras"),
        ("test-fast: install\n", "test-fast: install-test\n", "runs its test extras"),
        ("bench-b: \n", "bench-b: install\n", "`make bench-b` (for `make bench`) runs the project"),
    ],
)
def test_a_target_that_does_not_install_first_is_named(
    wrong: str, right: str, expected: str
) -> None:
    assert right in SMALL
    problems = install_problems(parse(SMALL.replace(right, wrong)), ["test-fast", "bench"])
    assert len(problems) == 1 and expected in problems[0], problems
