"""One audit row per applied write of a principal: request ids belong to their
principal, so the unique index that folds copies of one write is on (principal, request id)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_exports")]

    operations = [
        migrations.RemoveConstraint(model_name="auditevent", name="cp_audit_one_row_per_write"),
        migrations.AddConstraint(
            model_name="auditevent",
            constraint=models.UniqueConstraint(
                condition=models.Q(("first_offset__isnull", False))
                & ~models.Q(("request_id", "")),
                fields=("principal", "request_id"),
                name="cp_audit_one_row_per_write",
            ),
        ),
    ]
