#!/bin/sh
# Installs what coldstart needs from Debian when run as root, or says what is
# missing.  Usage: install-deps.sh build|test|all|bench
#   build: compiling coldstart and the tracer
#   test:  the whole suite (cgroups, docker engine, browser and node consumers)
#   all:   both, plus the fuzzing toolchain
#   bench: what `make bench` runs besides the suite's packages (the plan
#          corpus's programs: formatters, linters, doc builders, CLIs)
set -u
what=${1:-all}

build_pkgs="gcc make pkg-config libjansson-dev libelf-dev zlib1g-dev python3 python3-dev"
test_pkgs="libcmocka-dev python3-pytest python3-aiohttp python3-flask python3-fastapi python3-numpy
python3-uvicorn python3-setuptools python3-venv python3-wheel python3-pip binutils time docker.io debootstrap chromium
gunicorn python3-django python3-pandas python3-boto3 python3-sqlalchemy python3-requests python3-httptools python3-iso8601 python3-pytest-asyncio
strace gdb golang-go prometheus-pushgateway prometheus curl
qemu-user cmake g++ libcurl4-openssl-dev python3-simplejson valgrind"
fuzz_pkgs="clang libclang-rt-14-dev"
bench_pkgs="black flake8 pylint isort pycodestyle pyflakes3 python3-mypy python3-pygments python3-docutils
python3-sphinx python3-markdown yamllint codespell python3-chardet httpie awscli python3-lxml python3-yaml
python3-cryptography python3-networkx"

case "$what" in
build) pkgs="$build_pkgs" ;;
test) pkgs="$build_pkgs $test_pkgs" ;;
all) pkgs="$build_pkgs $test_pkgs $fuzz_pkgs" ;;
bench) pkgs="$build_pkgs $test_pkgs $bench_pkgs" ;;
*) echo "usage: $0 build|test|all|bench" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js (for speedscope's own importer) may come from Debian or elsewhere.
if [ "$what" != build ] && ! command -v node >/dev/null 2>&1; then
	missing="$missing nodejs npm"
fi
consumers() {
	# The real viewers the export tests load our files into (pinned in
	# tests/consumers/package-lock.json); node_modules is not committed.
	here=$(cd "$(dirname "$0")" && pwd)
	if [ "$what" != build ] && command -v npm >/dev/null 2>&1 &&
		[ ! -e "$here/consumers/node_modules/@opentelemetry/otlp-transformer/package.json" ]; then
		echo "coldstart: npm ci in tests/consumers (speedscope, playwright-core, @opentelemetry/otlp-transformer)" >&2
		(cd "$here/consumers" && npm ci --no-audit --no-fund --silent >&2) ||
			echo "coldstart: npm install failed; the viewer tests will say why they skip" >&2
	fi
	return 0
}

if [ -z "$missing" ]; then
	consumers
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "coldstart: missing Debian packages:$missing" >&2
	echo "coldstart: run as root, or: sudo apt-get install$missing" >&2
	exit 1
fi
echo "coldstart: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >&2 || exit 1
consumers
