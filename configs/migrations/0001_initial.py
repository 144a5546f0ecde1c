"""ClientQuota moves here from controlplane (its own room): its table stays as it is."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = [("controlplane", "0005_delegationtoken")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ClientQuota",
                    fields=[
                        ("id", models.TextField(primary_key=True, serialize=False)),
                        ("entity", models.JSONField()),
                        ("entity_key", models.TextField(db_index=True)),
                        ("key", models.CharField(max_length=64)),
                        ("value", models.FloatField()),
                    ],
                    options={"db_table": "cp_client_quota", "ordering": ["entity_key", "key"]},
                )
            ],
            database_operations=[],
        )
    ]
