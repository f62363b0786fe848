# Sourced by scripts/dev, scripts/install, .ci/run and Benchmarks/run: one way to install what is missing.
#   install_missing PACKAGE...   apt-get installs those of PACKAGE not installed yet (sudo when not root)
#   install_available PACKAGE... the same, but a package that cannot be installed (offline, a mirror
#                                hiccup) is named in a warning and skipped: the tests that need it skip too

install_missing() {
  local missing=() package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || { echo "no apt-get here: please install ${missing[*]}" >&2; return 1; }
  echo "installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_available() {
  install_missing "$@" 2>/dev/null && return 0
  local package
  for package in "$@"; do
    install_missing "$package" 2>/dev/null \
      || echo "warning: cannot install Debian package $package; the tests that need it will skip and name it" >&2
  done
  return 0
}
