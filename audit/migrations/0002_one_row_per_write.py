"""One audit row per applied write: rows that earlier copies of a request id added for
the same write are folded into the first, then a unique index keeps it that way."""

from django.db import migrations, models


def drop_repeated_rows(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    written = AuditEvent.objects.filter(first_offset__isnull=False).exclude(request_id="")
    earlier = written.filter(request_id=models.OuterRef("request_id"), id__lt=models.OuterRef("id"))
    written.filter(models.Exists(earlier)).delete()


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [
        migrations.RunPython(drop_repeated_rows, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="auditevent",
            constraint=models.UniqueConstraint(
                condition=models.Q(("first_offset__isnull", False))
                & ~models.Q(("request_id", "")),
                fields=("request_id",),
                name="cp_audit_one_row_per_write",
            ),
        ),
    ]
