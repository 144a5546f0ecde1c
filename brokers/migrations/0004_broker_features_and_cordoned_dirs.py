from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("brokers", "0003_broker_offline_log_dirs"),
    ]

    operations = [
        migrations.AddField(
            model_name="broker",
            name="supported_features",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="broker",
            name="cordoned_log_dirs",
            field=models.JSONField(null=True, default=None),
        ),
    ]
