#!/usr/bin/env bash
# Apache Kafka's own jars (a pinned 4.x broker, its tools and a log4j binding for SLF4J) from
# Maven Central, for the tests and demos that run real brokers: copied with Maven into
# var/kafka/<version>/libs (ignored by git). Cached: once the folder is complete this does
# nothing and needs no network. Run a broker with `python -m devtools.kafka`.
set -euo pipefail
cd "$(dirname "$0")/.."
pom=scripts/kafka/pom.xml
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
home="var/kafka/${version}"
stamp="${home}/libs/.complete"
if [ -f "${stamp}" ] && cmp -s "${pom}" "${stamp}"; then exit 0; fi
if ! command -v mvn >/dev/null; then
  # shellcheck source=lib/apt.sh
  . scripts/lib/apt.sh
  apt_install maven || { echo "Maven is missing: the real-broker tests will fail (CI) or skip." >&2; exit 0; }
fi
echo "Fetching Apache Kafka ${version}'s jars from Maven Central into ${home}/libs..."
rm -rf "${home}/libs.partial"
mvn -q -B -f "${pom}" dependency:copy-dependencies -DincludeScope=runtime \
  -DoutputDirectory="$(pwd)/${home}/libs.partial"
rm -rf "${home}/libs"
mv "${home}/libs.partial" "${home}/libs"
cp "${pom}" "${stamp}"
echo "Kafka ${version}: $(ls "${home}/libs" | wc -l) jars in ${home}/libs"
