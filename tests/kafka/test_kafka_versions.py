"""The controller's tables of Kafka's versions, held to the jars of every release installed
(the pinned one and the matrix's, `bash scripts/install-kafka.sh 4.0.2 4.2.2 4.3.1 4.4.0`):
each metadata.version level's record versions (MetadataVersion), the features and their
dependencies (Feature), and the metadata records' schemas (common/metadata/*.json)."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from controlplane.controller.features import DEPENDENCIES, NOT_WRITTEN_YET, SUPPORTED_FEATURES
from controlplane.controller.kraft import schemas
from controlplane.controller.metadata_versions import METADATA_VERSIONS
from devtools.kafka_conformance import kafka_facts
from stock_kafka import jars
from tests.kafka.conftest import need_kafka_jars

INSTALLED = [v for v in jars.MATRIX_VERSIONS if jars.installed(v)]
NEWEST = max(INSTALLED, key=jars.version_tuple, default=None)


@pytest.fixture(params=INSTALLED or [None])
def release(request: pytest.FixtureRequest) -> str:
    need_kafka_jars()
    if request.param is None:
        pytest.skip("no Kafka release installed")
    return str(request.param)


def test_every_metadata_version_writes_what_the_release_says(release: str) -> None:
    """Every level a release runs in production, as this controller writes it; the newest
    release decides what a level means (4.3-IV0 changed metadata only once 4.3 shipped it)."""
    facts = kafka_facts(release)
    newest = {mv["level"]: mv for mv in kafka_facts(NEWEST or release)["metadata_versions"]}
    production = [mv for mv in facts["metadata_versions"] if mv["production"]]
    assert production, release
    for kafka in production:
        ours = METADATA_VERSIONS[kafka["level"]]
        assert (ours.name, ours.register_broker, ours.partition) == (
            kafka["name"],
            kafka["register_broker"],
            kafka["partition"],
        ), (release, kafka)
        assert kafka["partition_change"] == ours.partition
        assert (ours.transactions, ours.delegation_tokens) == (
            kafka["transactions"],
            kafka["delegation_tokens"],
        )
        assert ours.metadata_changed == newest[kafka["level"]]["metadata_changed"], kafka
    newest_production = max(mv["level"] for mv in production)
    assert newest_production <= max(METADATA_VERSIONS), f"{release} runs a level not written here"


def test_the_supported_features_are_the_releases_but_eligible_leader_replicas(
    release: str,
) -> None:
    for feature in kafka_facts(release)["features"]:
        name, newest = feature["name"], feature["latest_production"]
        low, high = SUPPORTED_FEATURES[name]
        if name in NOT_WRITTEN_YET:
            assert high < newest or newest == 0, name
        else:
            assert high >= newest, (release, name, high, newest)
        for level in feature["levels"]:
            if low <= level["level"] <= high and level["level"] > 0:
                assert DEPENDENCIES.get((name, level["level"]), {}) == level["dependencies"], (
                    release,
                    name,
                    level,
                )


def test_the_metadata_record_schemas_are_the_releases(release: str) -> None:
    (metadata_jar,) = jars.libs_dir(release).glob("kafka-metadata-*.jar")
    with zipfile.ZipFile(metadata_jar) as archive:
        for name in archive.namelist():
            if not re.fullmatch(r"common/metadata/\w+Record\.json", name):
                continue
            text = "\n".join(
                line
                for line in archive.read(name).decode().splitlines()
                if not line.lstrip().startswith("//")
            )
            spec = json.loads(text)
            ours = schemas.METADATA_RECORDS.get(spec["apiKey"])
            if ours is None:  # a record this controller neither writes nor reads
                continue
            assert ours.name == spec["name"], (release, spec["name"])
            high = int(spec["validVersions"].split("-")[-1])
            assert ours.max_version >= high, (release, spec["name"], high)
            fields = [f["name"] for f in spec["fields"]]
            # An older release's fields come first; later ones add theirs after.
            assert [f.name for f in ours.fields][: len(fields)] == fields, (release, spec["name"])
