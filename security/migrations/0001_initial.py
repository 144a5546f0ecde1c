"""DelegationToken moves here from controlplane (its own room): its table stays as it is."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = [("controlplane", "0005_delegationtoken")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="DelegationToken",
                    fields=[
                        (
                            "token_id",
                            models.CharField(max_length=64, primary_key=True, serialize=False),
                        ),
                        ("owner", models.CharField(db_index=True, max_length=255)),
                        ("requester", models.CharField(max_length=255)),
                        ("renewers", models.JSONField(default=list)),
                        ("issue_timestamp", models.BigIntegerField()),
                        ("max_timestamp", models.BigIntegerField()),
                        ("expiration_timestamp", models.BigIntegerField()),
                    ],
                    options={
                        "db_table": "cp_delegation_token",
                        "ordering": ["issue_timestamp", "token_id"],
                    },
                )
            ],
            database_operations=[],
        )
    ]
