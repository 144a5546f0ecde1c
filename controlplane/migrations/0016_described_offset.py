from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("controlplane", "0015_kafka_batches")]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="described_offset",
            field=models.BigIntegerField(default=-1),
        ),
        # Every commit so far was described in its own transaction.
        migrations.RunSQL(
            "UPDATE cp_cluster SET described_offset = last_offset",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
