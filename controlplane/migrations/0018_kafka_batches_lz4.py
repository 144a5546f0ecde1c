from django.db import migrations

# A commit's Kafka batch is one value of up to 4 MiB of uncompressed records, which PostgreSQL
# compresses as it stores it (TOAST): with lz4 that costs a third of pglz's time for the same
# size (a 4,000-record batch of 196 KB stored in 30 KB either way), inside the log's transaction.
# A server built without lz4 keeps pglz.
LZ4_AVAILABLE = (
    "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
)


def _compress_with(method: str):
    def change(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(LZ4_AVAILABLE)
            (available,) = cursor.fetchone()
            if available:
                cursor.execute(
                    f"ALTER TABLE cp_kafka_batch ALTER COLUMN data SET COMPRESSION {method}"
                )

    return change


class Migration(migrations.Migration):
    """The stored Kafka batches are compressed with lz4 where the server has it (new values:
    those stored before stay as they are, readable either way)."""

    dependencies = [
        ("controlplane", "0017_log_indexes_only_rows_they_find"),
    ]

    operations = [
        migrations.RunPython(_compress_with("lz4"), _compress_with("pglz"), elidable=False),
    ]
