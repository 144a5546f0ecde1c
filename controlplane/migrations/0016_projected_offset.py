from django.db import migrations, models


class Migration(migrations.Migration):
    """The state tables' own offset: until now they were written in the log's transaction, so
    they stand where the log ends."""

    dependencies = [
        ("controlplane", "0015_kafka_batches"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="projected_offset",
            field=models.BigIntegerField(default=-1),
        ),
        migrations.RunSQL(
            "UPDATE cp_cluster SET projected_offset = last_offset",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
