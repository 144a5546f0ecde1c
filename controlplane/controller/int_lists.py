"""Text forms of the small int tuples a commit writes over and over (replica sets, ISRs, offline
replicas), cached.

A large commit writes each changed partition's lists several times (the log's JSON, the
partitions' rows, the timeline's moves), and a cluster has few distinct ones: 10,000 partitions
moved off one broker name a few hundred replica sets. A hit is a dict lookup (about 0.15 µs)
where formatting is about 1 µs. Each cache is emptied when it outgrows `MAX_CACHED` entries, so
a cluster with very many distinct lists costs what formatting costs, never unbounded memory.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_CACHED = 65_536

IntList = tuple[int, ...]
Digits = Callable[[object], str]
_CACHES: dict[str, dict[IntList, str]] = {}


def _cached(render: Callable[[IntList, Digits], str]) -> Callable[[IntList], str]:
    cache = _CACHES[render.__name__] = {}

    def cached(values: IntList) -> str:
        try:
            text = cache.get(values)
        except TypeError:  # a list, not a tuple: nothing to key on
            return render(values, str)
        if text is None:
            try:
                # An int's digits, a bool's too (True is 1): (True, 2) and (1, 2) are one key,
                # so they must have one text.
                text = render(values, int.__repr__)
            except TypeError:  # not ints (1.0 is also the key 1): formatted, never cached
                return render(values, str)
            if len(cache) >= MAX_CACHED:
                cache.clear()
            cache[values] = text
        return text

    cached.__doc__ = render.__doc__
    return cached


@_cached
def comma_separated(values: IntList, digits: Digits) -> str:
    """`1,2,3` (empty for none)."""
    return ",".join(map(digits, values))


@_cached
def json_array(values: IntList, digits: Digits) -> str:
    """`[1,2,3]`."""
    return "[" + ",".join(map(digits, values)) + "]"


@_cached
def id_set(values: IntList, digits: Digits) -> str:
    """`,1,2,3,` (`,` for none): a LIKE '%,2,%' finds 2."""
    return "," + "".join([f"{digits(v)}," for v in values])


def cached_counts() -> dict[str, int]:
    """How many lists each form holds (for the tests and a curious operator)."""
    return {name: len(cache) for name, cache in _CACHES.items()}
