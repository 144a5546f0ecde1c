from django.db import migrations, models


class Migration(migrations.Migration):
    """The log's request id and broker indexes hold only the rows that have one: the
    controller's own records (most of a large commit's) are no longer indexed under '' and
    NULL, which no filter looks up."""

    dependencies = [
        ("controlplane", "0016_projected_offset"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="metadatarecord", name="cp_log_request"),
        migrations.RemoveIndex(model_name="metadatarecord", name="cp_log_broker"),
        migrations.AddIndex(
            model_name="metadatarecord",
            index=models.Index(
                condition=~models.Q(request_id=""), fields=["request_id"], name="cp_log_request"
            ),
        ),
        migrations.AddIndex(
            model_name="metadatarecord",
            index=models.Index(
                condition=models.Q(broker_id__isnull=False),
                fields=["broker_id"],
                name="cp_log_broker",
            ),
        ),
    ]
