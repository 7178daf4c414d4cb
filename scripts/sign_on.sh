#!/usr/bin/env bash
# The campus sign-on services the tests and bench/sso.py start (they start and stop them themselves, on 127.0.0.1):
#   scripts/sign_on.sh install   Debian's slapd + ldap-utils (the test directory), Node.js (Debian's nodejs when none
#                                is installed) and tests/oidc's pinned oidc-provider (npm ci from package-lock.json).
#                                Only what is missing is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

install() {
  local need=()
  command -v slapd >/dev/null || [ -x /usr/sbin/slapd ] || need+=(slapd)
  command -v ldapmodify >/dev/null || need+=(ldap-utils)
  command -v node >/dev/null || need+=(nodejs)
  command -v npm >/dev/null || need+=(npm)
  if [ ${#need[@]} -gt 0 ]; then
    echo "[sign-on] installing ${need[*]}"
    # slapd's package asks for a domain and starts a system daemon: neither is used (the tests start their own).
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${need[@]}"
    if command -v service >/dev/null; then service slapd stop >/dev/null 2>&1 || true; fi
  fi
  if [ ! -d tests/oidc/node_modules/oidc-provider ] || [ tests/oidc/package-lock.json -nt tests/oidc/node_modules ]; then
    echo "[sign-on] npm ci (tests/oidc)"
    (cd tests/oidc && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

case "${1:-}" in
  install) install ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
