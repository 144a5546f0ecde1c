from django.db import migrations, models


class Migration(migrations.Migration):
    """The log's type index leaves out the partitions' records (PartitionRecord,
    PartitionChangeRecord): most of the log's rows and of every large commit's, paid for on
    each one, and looked up by no filter the index would serve (a filter on one of those types
    reads the log in offset order, where they are dense)."""

    dependencies = [
        ("controlplane", "0020_applied_answers_as_json"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="metadatarecord", name="cp_log_type"),
        migrations.AddIndex(
            model_name="metadatarecord",
            index=models.Index(
                condition=~models.Q(record_type__in=("PartitionRecord", "PartitionChangeRecord")),
                fields=["record_type"],
                name="cp_log_type",
            ),
        ),
    ]
