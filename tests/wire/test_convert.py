"""kio entities to and from the REST bodies the RPCs take (wire.convert): any entity of any
schema kio has, turned into plain data and back, is written as the same bytes."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.wire.test_encoding import schemas
from wire.convert import from_data, to_data
from wire.encoding import encode


@settings(
    max_examples=800,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_an_entity_as_data_and_back_is_written_as_the_same_bytes(data: st.DataObject) -> None:
    schema = data.draw(st.sampled_from(schemas()))
    entity = data.draw(st.from_type(schema))
    try:
        written = encode(entity)
    except Exception:  # a value no writer takes (out of its type's range): nothing to compare
        return
    assert encode(from_data(schema, to_data(entity))) == written
