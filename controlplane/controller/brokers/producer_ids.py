"""AllocateProducerIds (KIP-730): a broker asks for the next block of producer ids; the block is
its own once a ProducerIdsRecord naming the block's end is committed, as Kafka's
ProducerIdControlManager hands them out (blocks of 1000, never handed out twice, checked
against the broker's epoch)."""

from __future__ import annotations

from controlplane.controller.brokers.control import require_broker_epoch
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import ProducerIdsRecord
from controlplane.controller.result import ControllerResult

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = 2**63 - 1


def allocate_producer_ids(
    view: MetadataDelta, broker_id: int, broker_epoch: int
) -> ControllerResult:
    require_broker_epoch(view, broker_id, broker_epoch)
    start = view.next_producer_id
    if start > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        raise ApiError(Errors.UNKNOWN_SERVER_ERROR, "Exhausted all producer ids.")
    record = ProducerIdsRecord(
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        next_producer_id=start + PRODUCER_ID_BLOCK_SIZE,
    )
    response = {
        "error_code": 0,
        "error_message": None,
        "producer_id_start": start,
        "producer_id_len": PRODUCER_ID_BLOCK_SIZE,
    }
    return ControllerResult([record], response)
