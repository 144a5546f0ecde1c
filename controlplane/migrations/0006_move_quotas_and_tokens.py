"""ClientQuota and DelegationToken now belong to the configs and security apps: their tables
stay, only Django's state moves."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("controlplane", "0005_delegationtoken"),
        ("configs", "0001_initial"),
        ("security", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ClientQuota"),
                migrations.DeleteModel(name="DelegationToken"),
            ],
            database_operations=[],
        )
    ]
