from django.db import migrations

import controlplane.models


class Migration(migrations.Migration):
    """The log's record data as json, the text as written (controlplane.models.JsonAsWritten):
    rewrites the table once, its values printed from their jsonb form."""

    dependencies = [
        ("controlplane", "0018_kafka_batches_lz4"),
    ]

    operations = [
        migrations.AlterField(
            model_name="metadatarecord",
            name="data",
            field=controlplane.models.JsonAsWritten(),
        ),
    ]
