# Sourced by the install scripts: Debian's packages, installed only when missing.
# apt_install PKG... installs what is missing (root and apt-get needed: otherwise it says so and
# returns 1), running `apt-get update` once per machine boot when the package lists are empty or
# do not know a package (a fresh machine ships without lists).

apt_missing() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  echo "${missing[@]:-}"
}

apt_install() {
  local missing
  missing=$(apt_missing "$@")
  [ -z "${missing}" ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "missing Debian packages: ${missing} (installing them needs root and apt-get)" >&2
    return 1
  fi
  local pkg
  for pkg in ${missing}; do
    if ! apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [^(]'; then
      echo "Updating Debian's package lists..."
      apt-get update -qq
      break
    fi
  done
  echo "Installing Debian's ${missing}..."
  # policy-rc.d: a package's own service start (systemd is not running here) is left to us.
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${missing} >/dev/null
  local status=$?
  [ "$created" = 1 ] && rm -f "$policy"
  return $status
}
