#!/bin/sh
# build-ucx-cuda.sh: a UCX built with CUDA, for the `ucx` GPU path on the GPU
# machine (whose system UCX has no CUDA transports). Nothing it makes is
# committed: the source goes to .device/ (git-ignored), the build to PREFIX.
#
#   scripts/build-ucx-cuda.sh fetch            here: Debian's UCX source, its
#                                              configure generated (autotools),
#                                              packed as .device/ucx-src.tar.gz
#   scripts/build-ucx-cuda.sh build [PREFIX]   there: configure --with-cuda,
#                                              make, install into PREFIX
#                                              (default /tmp/ucx-cuda)
#
# Then run gompix with LD_LIBRARY_PATH=PREFIX/lib: `PREFIX/bin/ucx_info -d`
# lists cuda_copy and cuda_ipc, and `gompix info` reports CUDA memory.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tarball=$root/.device/ucx-src.tar.gz
version=${UCX_SRC_VERSION:-1.13.1-1}

fetch() {
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	# The source of the UCX this machine links, so the headers gompix is
	# built against match the library it runs with there.
	grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/ || {
		echo "fetch: no deb-src entry in /etc/apt (add one for Debian main)" >&2
		exit 1
	}
	command -v autoreconf >/dev/null || apt-get install -y -qq autoconf automake libtool >/dev/null
	(cd "$work" && apt-get source -qq --download-only "ucx=$version" >/dev/null)
	(cd "$work" && tar xf ucx_*.orig.tar.*)
	src=$(ls -d "$work"/ucx-*/)
	# Debian's tarball leaves out debian/, which configure.ac lists.
	[ -d "$src/debian" ] || cp -r "$src/debian.upstream" "$src/debian"
	(cd "$src" && ./autogen.sh >/dev/null 2>&1)
	mkdir -p "$root/.device"
	tar czf "$tarball" -C "$work" "$(basename "$src")"
	echo "fetch: $tarball ($(du -h "$tarball" | cut -f1))"
}

build() {
	prefix=${1:-/tmp/ucx-cuda}
	cuda=${CUDA_HOME:-/usr/local/cuda}
	[ -f "$tarball" ] || { echo "build: $tarball missing (run fetch first)" >&2; exit 1; }
	[ -d "$cuda/include" ] || { echo "build: no CUDA toolkit at $cuda" >&2; exit 1; }
	work=$(mktemp -d)
	tar xzf "$tarball" -C "$work"
	cd "$work"/ucx-*/
	# Newer compilers warn where UCX builds with -Werror.
	CFLAGS="-O3 -Wno-error" CXXFLAGS="-O3 -Wno-error" ./configure --prefix="$prefix" --with-cuda="$cuda" --without-verbs --without-rdmacm \
		--without-java --without-go --disable-logging --disable-debug --disable-assertions \
		--disable-params-check --enable-mt >configure.log 2>&1 ||
		{ tail -40 configure.log; exit 1; }
	# The libraries, their transport modules and two tools; the test
	# applications beside them need not build.
	for d in src/ucm src/ucs src/uct src/ucp src/tools/info src/tools/perf; do
		make -C "$d" -j"$(nproc)" install >>make.log 2>&1 || { grep -m20 -B2 -A6 "error" make.log; exit 1; }
	done
	"$prefix/bin/ucx_info" -v
	"$prefix/bin/ucx_info" -d | grep -E "Transport|Memory domain" | sort -u
}

case "${1:-}" in
fetch) fetch ;;
build) shift; build "$@" ;;
*) sed -n 2,13p "$0"; exit 2 ;;
esac
