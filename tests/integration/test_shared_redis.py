"""Cleaning up after a stack or a test on the shared Redis deletes its own prefix's keys only."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.stack import delete_keys, redis_url

pytestmark = pytest.mark.integration


def test_only_the_prefixs_keys_are_deleted(shared_redis: Any, key_prefix: str) -> None:
    odd = key_prefix + "[ab]?*\\:"  # glob characters: SCAN must match them literally
    own = [f"{odd}{i}" for i in range(1203)]  # more than one SCAN / UNLINK batch
    # The unescaped pattern would match the first; the other only ends with the prefix.
    other = [f"{key_prefix}a-x:1", f"x{odd}1"]
    shared_redis.mset(dict.fromkeys(own + other, "1"))
    try:
        assert delete_keys(redis_url(), odd) == len(own)
        assert shared_redis.exists(*own) == 0
        assert shared_redis.exists(*other) == len(other)
    finally:
        shared_redis.delete(*other)


def test_an_empty_prefix_is_refused() -> None:
    with pytest.raises(ValueError):
        delete_keys(redis_url(), "")
