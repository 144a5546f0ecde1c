from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("controlplane", "0010_metadata_snapshots")]

    operations = [
        migrations.AddField(
            model_name="appliedrequest",
            name="fingerprint",
            field=models.CharField(max_length=64, null=True),
        ),
    ]
