#!/bin/sh
# Makes the local image the docker tests run: Debian bookworm (debootstrap
# --variant=minbase) with python3, imported as coldstart-test-python:bookworm.
# Images cannot be pulled here, so the root filesystem is built from the Debian
# mirror apt already uses (/etc/apt/sources.list(.d)); the tarball is cached in
# build/docker/ so later runs only import it.  Needs DOCKER_HOST set to a
# running daemon (start-dockerd.sh), and root.
#
# Environment: COLDSTART_DOCKER_CACHE (default build/docker), COLDSTART_MIRROR
# (override the mirror), COLDSTART_IMAGE (default coldstart-test-python:bookworm).
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${COLDSTART_DOCKER_CACHE:-$here/build/docker}
image=${COLDSTART_IMAGE:-coldstart-test-python:bookworm}
tarball=$dir/rootfs-bookworm-python3.tar
rootfs=$dir/rootfs
DOCKER=${DOCKER:-docker}

# The first Debian archive URI apt is configured with (deb822 or one-line).
find_mirror() {
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		case "$f" in
		*.sources)
			awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$f"
			;;
		*)
			awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { if ($i ~ /\/debian\/?$/) { print $i; exit } break } }' "$f"
			;;
		esac
	done | head -n 1
}

if "$DOCKER" image inspect "$image" >/dev/null 2>&1; then
	echo "build-image: $image already present"
	exit 0
fi

mkdir -p "$dir"
# One build at a time; a concurrent session waits and then only imports.
exec 9>"$dir/.build.lock"
flock 9

if [ ! -s "$tarball" ]; then
	mirror=${COLDSTART_MIRROR:-$(find_mirror)}
	if [ -z "$mirror" ]; then
		echo "build-image: no Debian mirror found in /etc/apt/sources.list(.d); set COLDSTART_MIRROR" >&2
		exit 1
	fi
	if ! command -v debootstrap >/dev/null 2>&1; then
		echo "build-image: debootstrap is missing (Debian package debootstrap)" >&2
		exit 1
	fi
	echo "build-image: debootstrap bookworm from $mirror into $rootfs" >&2
	rm -rf "$rootfs"
	mkdir -p "$dir"
	debootstrap --variant=minbase --include=python3-minimal,python3 bookworm "$rootfs" "$mirror" \
		>"$dir/debootstrap.log" 2>&1 || {
		echo "build-image: debootstrap failed; last lines of $dir/debootstrap.log:" >&2
		tail -n 20 "$dir/debootstrap.log" >&2
		exit 1
	}
	# Smaller image, and nothing host-specific left inside.
	rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"* \
		"$rootfs/usr/share/doc" "$rootfs/usr/share/man" "$rootfs/usr/share/locale"
	mkdir -p "$rootfs/app"
	chroot "$rootfs" /usr/bin/python3 -c 'import sys; print(sys.version)' >&2
	tar -C "$rootfs" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$rootfs"
fi

"$DOCKER" import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'WORKDIR /app' - "$image" <"$tarball" >/dev/null
echo "build-image: imported $image from $tarball"
