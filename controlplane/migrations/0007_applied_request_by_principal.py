"""Request ids belong to their principal: the applied-request table is keyed by
(request id, principal) instead of the request id alone.

Django cannot move a table to a composite primary key in place, so the new table is created
beside the old one, filled from it (the principal of a write is its records': the log's row at
its first offset), and takes the old one's name. Plain SQL that PostgreSQL and SQLite share.
"""

from django.db import migrations, models

COPY_FORWARD = """
INSERT INTO cp_applied_request_new
    (request_id, principal, api, response, first_offset, last_offset, created_ms)
SELECT a.request_id, COALESCE(r.principal, ''), a.api, a.response, a.first_offset,
       a.last_offset, a.created_ms
FROM cp_applied_request a LEFT JOIN cp_metadata_record r ON r."offset" = a.first_offset
"""

# Back to one row per request id: the earliest write of each keeps it.
COPY_BACK = """
INSERT INTO cp_applied_request
    (request_id, api, response, first_offset, last_offset, created_ms)
SELECT n.request_id, n.api, n.response, n.first_offset, n.last_offset, n.created_ms
FROM cp_applied_request_new n
WHERE NOT EXISTS (
    SELECT 1 FROM cp_applied_request_new e
    WHERE e.request_id = n.request_id
      AND (e.first_offset < n.first_offset
           OR (e.first_offset = n.first_offset AND e.principal < n.principal))
)
"""


def _rename_primary_key(old: str, new: str):
    """PostgreSQL keeps the constraint name of the table it was created as: give it the name
    the table's own would have (SQLite names none)."""

    def rename(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE cp_applied_request RENAME CONSTRAINT {old} TO {new}")

    return rename


class Migration(migrations.Migration):
    dependencies = [("controlplane", "0006_move_quotas_and_tokens")]

    operations = [
        migrations.CreateModel(
            name="AppliedRequestByPrincipal",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "request_id",
                        "principal",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("request_id", models.CharField(max_length=128)),
                ("principal", models.CharField(max_length=255)),
                ("api", models.CharField(max_length=64)),
                ("response", models.JSONField()),
                ("first_offset", models.BigIntegerField()),
                ("last_offset", models.BigIntegerField()),
                ("created_ms", models.BigIntegerField()),
            ],
            options={"db_table": "cp_applied_request_new"},
        ),
        migrations.RunSQL(COPY_FORWARD, COPY_BACK),
        migrations.DeleteModel(name="AppliedRequest"),
        migrations.RenameModel(old_name="AppliedRequestByPrincipal", new_name="AppliedRequest"),
        migrations.AlterModelTable(name="AppliedRequest", table="cp_applied_request"),
        migrations.RunPython(
            _rename_primary_key("cp_applied_request_new_pkey", "cp_applied_request_pkey"),
            _rename_primary_key("cp_applied_request_pkey", "cp_applied_request_new_pkey"),
        ),
    ]
