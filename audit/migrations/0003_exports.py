"""The Parquet export: export runs, and the commit order of audit rows.

On PostgreSQL every audit row records the transaction that wrote it (`txid`, a column default
the model does not know, so every insert gets it): audit rows come from many writers whose ids
are not committed in id order, and the export takes only rows of transactions older than every
transaction of the database still running, so none commits behind its watermark. SQLite has one writer at a
time: ids are in commit order there, and the column is not needed.
"""

from django.db import migrations, models

POSTGRES_FORWARD = [
    "ALTER TABLE cp_audit_event ADD COLUMN txid bigint",
    "UPDATE cp_audit_event SET txid = 0",
    "ALTER TABLE cp_audit_event ALTER COLUMN txid SET DEFAULT (pg_current_xact_id()::text::bigint)",
    "ALTER TABLE cp_audit_event ALTER COLUMN txid SET NOT NULL",
    "CREATE INDEX cp_audit_txid ON cp_audit_event (txid, id)",
]
POSTGRES_BACKWARD = ["DROP INDEX IF EXISTS cp_audit_txid", "ALTER TABLE cp_audit_event DROP COLUMN txid"]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_one_row_per_write")]

    operations = [
        migrations.RunPython(_run(POSTGRES_FORWARD), _run(POSTGRES_BACKWARD)),
        migrations.CreateModel(
            name="AuditExport",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("path", models.CharField(max_length=1024)),
                ("requested_by", models.CharField(max_length=255)),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("PENDING", "Pending"),
                            ("RUNNING", "Running"),
                            ("SUCCEEDED", "Succeeded"),
                            ("FAILED", "Failed"),
                        ],
                        default="PENDING",
                        max_length=16,
                    ),
                ),
                ("created_ms", models.BigIntegerField()),
                ("started_ms", models.BigIntegerField(blank=True, null=True)),
                ("finished_ms", models.BigIntegerField(blank=True, null=True)),
                ("progress", models.JSONField(default=dict)),
                ("commit", models.IntegerField(blank=True, null=True)),
                ("rows", models.JSONField(default=dict)),
                ("message", models.TextField(blank=True, default="")),
            ],
            options={"db_table": "cp_audit_export", "ordering": ["-id"]},
        ),
    ]
