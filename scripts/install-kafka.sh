#!/usr/bin/env bash
# Apache Kafka's own jars (a 4.x broker, its tools and a log4j binding for SLF4J) from Maven
# Central, for the tests and demos that run real brokers: copied with Maven into
# var/kafka/<version>/libs (ignored by git). With no argument: the pinned version
# (scripts/kafka/pom.xml); `install-kafka.sh 4.4.0 4.0.2` installs those releases instead.
# Cached: once a version's folder is complete this does nothing for it and needs no network.
# Run a broker or a tool with `python -m stock_kafka`.
set -euo pipefail
cd "$(dirname "$0")/.."
pom=scripts/kafka/pom.xml
pinned=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=("$pinned")

install_version() {
  local version=$1 home="var/kafka/$1" stamp="var/kafka/$1/libs/.complete"
  local wanted
  wanted="$(cat "${pom}") ${version}"
  if [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${wanted}" ]; then return 0; fi
  if ! command -v mvn >/dev/null; then
    # shellcheck source=lib/apt.sh
    . scripts/lib/apt.sh
    apt_install maven || { echo "Maven is missing: the real-broker tests will fail (CI) or skip." >&2; exit 0; }
  fi
  echo "Fetching Apache Kafka ${version}'s jars from Maven Central into ${home}/libs..."
  rm -rf "${home}/libs.partial"
  mvn -q -B -f "${pom}" dependency:copy-dependencies -DincludeScope=runtime \
    -Dkafka.version="${version}" -DoutputDirectory="$(pwd)/${home}/libs.partial"
  rm -rf "${home}/libs"
  mv "${home}/libs.partial" "${home}/libs"
  printf '%s' "${wanted}" >"${stamp}"
  echo "Kafka ${version}: $(ls "${home}/libs" | wc -l) jars in ${home}/libs"
}

for version in "${versions[@]}"; do
  case "$version" in
    4.[0-9]*.[0-9]*) install_version "$version" ;;
    *) echo "install-kafka.sh: $version is not a Kafka 4.x release (like 4.4.0)" >&2; exit 2 ;;
  esac
done
