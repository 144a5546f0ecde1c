"""The metadata log in Apache Kafka's own binary format (KRaft's `__cluster_metadata`).

Pure: bytes in, bytes out. Layered bottom to top:

- `codec`: Kafka's flexible message encoding driven by field specs; `MalformedRecords`.
- `schemas`: the field specs of the metadata records and the control messages, as data.
- `versions`: metadata.version levels and the record versions each writes.
- `frames`: a record's framed value (and a control record's key), and back.
- `batches`: record batches, magic 2, CRC-32C, and back.
- `twins`: each house record as its Kafka twin at a metadata.version (a NoOpRecord if none).
- `log`: the house log as batches (encode once), fetch answers, segment files, and back.
"""

from controlplane.controller.kraft.batches import RecordBatch, decode_batches, encode_batch
from controlplane.controller.kraft.codec import MalformedRecords
from controlplane.controller.kraft.directories import BrokerDirectories, kafka_uuid
from controlplane.controller.kraft.frames import (
    DecodedRecord,
    KafkaRecord,
    control_record,
    decode_control,
    decode_metadata_value,
    metadata_record,
)
from controlplane.controller.kraft.log import (
    METADATA_PARTITION_DIR,
    EncodedBatch,
    KafkaLogEncoder,
    LogEntry,
    decode_records,
    kafka_batch,
    records_within,
    segment_file_name,
)
from controlplane.controller.kraft.twins import TWINNED_RECORD_TYPES, kafka_record
from controlplane.controller.kraft.versions import (
    DEFAULT_METADATA_VERSION,
    METADATA_VERSIONS,
    MetadataVersion,
    UnsupportedMetadataVersion,
    metadata_version,
)

__all__ = [
    "DEFAULT_METADATA_VERSION",
    "METADATA_PARTITION_DIR",
    "METADATA_VERSIONS",
    "TWINNED_RECORD_TYPES",
    "BrokerDirectories",
    "DecodedRecord",
    "EncodedBatch",
    "KafkaLogEncoder",
    "KafkaRecord",
    "LogEntry",
    "MalformedRecords",
    "MetadataVersion",
    "RecordBatch",
    "UnsupportedMetadataVersion",
    "control_record",
    "decode_batches",
    "decode_control",
    "decode_metadata_value",
    "decode_records",
    "encode_batch",
    "kafka_batch",
    "kafka_record",
    "kafka_uuid",
    "metadata_record",
    "metadata_version",
    "records_within",
    "segment_file_name",
]
