"""The cached text forms of int tuples answer what formatting answers, whatever the cache
holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller import int_lists
from controlplane.controller.int_lists import cached_counts, comma_separated, id_set, json_array

int_tuples = st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=6).map(tuple)


@given(int_tuples)
def test_each_form_is_its_formatting(values: tuple[int, ...]) -> None:
    for _ in range(2):  # the miss, then the hit
        assert comma_separated(values) == ",".join(str(v) for v in values)
        assert json_array(values) == "[" + ",".join(str(v) for v in values) + "]"
        assert id_set(values) == "," + "".join(f"{v}," for v in values)


def test_none_and_one() -> None:
    assert (comma_separated(()), json_array(()), id_set(())) == ("", "[]", ",")
    assert (comma_separated((7,)), json_array((7,)), id_set((7,))) == ("7", "[7]", ",7,")


def test_a_bool_is_written_as_the_int_it_equals_whichever_came_first() -> None:
    # (True, 2) == (1, 2) as dict keys: both must have the one text, cached or not.
    assert comma_separated((True, 902)) == "1,902"
    assert comma_separated((1, 902)) == "1,902"
    assert json_array((1, 903)) == "[1,903]"
    assert json_array((True, 903)) == "[1,903]"
    assert id_set((False, 904)) == ",0,904,"


def test_a_list_is_formatted_without_the_cache() -> None:
    assert json_array([4, 5]) == "[4,5]"  # type: ignore[arg-type]


def test_the_cache_is_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(int_lists, "MAX_CACHED", 8)
    for n in range(100):
        assert comma_separated((n, n + 1_000_000)) == f"{n},{n + 1_000_000}"
    assert 0 < cached_counts()["comma_separated"] <= 8


def test_what_is_not_an_int_is_formatted_and_never_answers_for_an_int() -> None:
    assert json_array((1.0, 905)) == "[1.0,905]"  # type: ignore[arg-type]
    assert json_array((1, 905)) == "[1,905]"
