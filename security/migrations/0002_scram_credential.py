"""cp_scram_credential: the projection of UserScramCredentialRecord (KIP-554)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("security", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScramCredential",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=255)),
                ("mechanism", models.CharField(max_length=16)),
                ("salt", models.TextField()),
                ("stored_key", models.TextField()),
                ("server_key", models.TextField()),
                ("iterations", models.IntegerField()),
            ],
            options={
                "db_table": "cp_scram_credential",
                "ordering": ["name", "mechanism"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("name", "mechanism"), name="cp_scram_credential_key"
                    )
                ],
            },
        ),
    ]
