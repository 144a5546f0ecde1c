"""A waiting AlterReplicaState is unique per (principal, request id), not per request id
(request ids belong to their principal)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("replicas", "0004_canary_health")]

    operations = [
        migrations.AddConstraint(
            model_name="pendingreplicastatechange",
            constraint=models.UniqueConstraint(
                fields=("principal", "request_id"), name="cp_pending_replica_state_request"
            ),
        ),
        migrations.AlterField(
            model_name="pendingreplicastatechange",
            name="request_id",
            field=models.CharField(max_length=128),
        ),
    ]
