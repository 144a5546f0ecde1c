"""The delegation-token key leaves the metadata log (controlplane.runtime.token_key_removal):
its ConfigRecords become deletions, the snapshots that hold it are written again without it.
Refused, changing nothing, while the node's CP_DELEGATION_TOKEN_SECRET_KEY is a key the log
held (rotate it). Tokens signed with the old key are no longer accepted."""

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import migrations

from controlplane.runtime.token_key_removal import Models, TokenKeyNotRotated, token_key_remove


def remove_the_token_key(apps: Any, schema_editor: Any) -> None:
    models = Models(
        record=apps.get_model("controlplane", "MetadataRecord"),
        entry=apps.get_model("controlplane", "ConfigEntry"),
        snapshot=apps.get_model("controlplane", "MetadataSnapshot"),
        chunk=apps.get_model("controlplane", "MetadataSnapshotChunk"),
        node=apps.get_model("controlplane", "ControllerNode"),
        token=apps.get_model("security", "DelegationToken"),
    )
    configured = getattr(settings, "CP_DELEGATION_TOKEN_SECRET_KEY", None)
    try:
        removal = token_key_remove(models, configured=configured)
    except TokenKeyNotRotated as refusal:
        raise ImproperlyConfigured(str(refusal)) from None
    report = removal.report(key_configured=configured is not None)
    if report:
        print(f"\n{report}")


class Migration(migrations.Migration):
    dependencies = [
        ("controlplane", "0012_finalized_features"),
        ("security", "0001_initial"),
    ]

    operations = [migrations.RunPython(remove_the_token_key, migrations.RunPython.noop)]
