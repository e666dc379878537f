#!/usr/bin/env bash
# cuda-tools.sh fetches NVIDIA's CUDA tools from Debian's non-free component into .tools/,
# so tests can use the real assembler as an oracle and the cgo runtime can be built on a
# machine without a GPU or a CUDA install.
#
#   scripts/cuda-tools.sh toolkit   ptxas, cuobjdump, nvdisasm  -> .tools/cuda/usr/bin/
#   scripts/cuda-tools.sh dev       cuda.h, stub libcuda.so      -> .tools/cudadev/usr/...
#
# Each part is skipped when its files are already there, so `make tools` is cheap to repeat.
#
# Why a private apt state (.tools/apt) instead of adding a file to /etc/apt: it leaves the
# machine's package configuration untouched, works without root, and its `apt-get update`
# only fetches the small non-free index. The non-free source is derived from the machine's
# own Debian source (same mirror, suite and signing key); set CUDA_APT_SOURCE to a one-line
# source ("deb [signed-by=...] URI SUITE non-free") to override that.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools=${TOOLS_DIR:-$root/.tools}
part=${1:-}
apt_etc=${APT_ETC:-/etc/apt} # overridable to test the source derivation

die() { echo "cuda-tools: $*" >&2; exit 1; }

# derive_source prints a deb822 stanza for the non-free component of the machine's Debian
# archive. It reads deb822 files (*.sources) and one-line lists (*.list, sources.list), skips
# security and third-party repositories, and keeps the mirror, suites and signing key.
derive_source() {
	local f
	shopt -s nullglob
	for f in "$apt_etc"/sources.list.d/*.sources; do
		# Paragraph mode: one record per stanza. Comment lines are dropped first so that a
		# "# URL" line cannot split or fake a field.
		awk '
			BEGIN { RS = ""; FS = "\n" }
			{
				types = uris = suites = signed = ""
				for (i = 1; i <= NF; i++) {
					line = $i
					if (line ~ /^[ \t]*#/) continue
					if (line ~ /^Types:/)     { sub(/^Types:[ \t]*/, "", line); types = line }
					if (line ~ /^URIs:/)      { sub(/^URIs:[ \t]*/, "", line); uris = line }
					if (line ~ /^Suites:/)    { sub(/^Suites:[ \t]*/, "", line); suites = line }
					if (line ~ /^Signed-By:/) { sub(/^Signed-By:[ \t]*/, "", line); signed = line }
				}
				if (types !~ /(^| )deb( |$)/) next
				if (uris !~ /debian/ || uris ~ /security/) next
				n = split(suites, s, /[ \t]+/); keep = ""
				for (j = 1; j <= n; j++) if (s[j] != "" && s[j] !~ /security/) keep = keep (keep == "" ? "" : " ") s[j]
				if (keep == "") next
				print "Types: deb"
				print "URIs: " uris
				print "Suites: " keep
				print "Components: non-free contrib"
				if (signed != "") print "Signed-By: " signed
				print ""
				found = 1
				exit
			}
			END { exit found ? 0 : 1 }
		' "$f" && return 0
	done
	for f in "$apt_etc"/sources.list "$apt_etc"/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		# "deb [options] URI suite components..." -> same URI and suite, non-free component.
		awk '
			/^[ \t]*deb[ \t]/ {
				line = $0; opts = ""
				if (match(line, /\[[^]]*\]/)) { opts = substr(line, RSTART, RLENGTH) " "; line = substr(line, 1, RSTART - 1) substr(line, RSTART + RLENGTH) }
				n = split(line, w, /[ \t]+/)
				k = (w[1] == "") ? 2 : 1   # leading blanks give an empty first field
				uri = w[k + 1]; suite = w[k + 2]
				if (uri !~ /debian/ || uri ~ /security/ || suite ~ /security/) next
				print "deb " opts uri " " suite " non-free contrib"
				found = 1
				exit
			}
			END { exit found ? 0 : 1 }
		' "$f" && return 0
	done
	return 1
}

# apt_private runs apt-get against the private state in $tools/apt.
apt_private() {
	local state=$tools/apt
	# APT::Sandbox::User=root: as root, apt would otherwise drop to the _apt user, which may not
	# be allowed to write into the repository's folders. As another user the option is moot.
	apt-get -q \
		-o Dir::Etc::SourceList="$state/sources.list" \
		-o Dir::Etc::SourceParts="$state/sources.list.d" \
		-o Dir::State::Lists="$state/lists" \
		-o Dir::Cache="$state/cache" \
		-o Dir::Etc::Preferences=/dev/null \
		-o Dir::Etc::PreferencesParts="$state/preferences.d" \
		-o APT::Sandbox::User=root \
		"$@"
}

# apt_ready prepares the private apt state and runs `apt-get update` once per fetch.
apt_ready() {
	local state=$tools/apt
	[ -n "${apt_updated:-}" ] && return 0
	command -v apt-get >/dev/null || die "apt-get not found: this script needs a Debian (or derivative) machine"
	mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/sources.list.d" "$state/preferences.d"
	: >"$state/sources.list"
	rm -f "$state/sources.list.d/"*
	if [ -n "${CUDA_APT_SOURCE:-}" ]; then
		echo "$CUDA_APT_SOURCE" >"$state/sources.list"
	elif derive_source >"$state/sources.list.d/nonfree.sources.tmp"; then
		if head -1 "$state/sources.list.d/nonfree.sources.tmp" | grep -q '^deb '; then
			mv "$state/sources.list.d/nonfree.sources.tmp" "$state/sources.list"
		else
			mv "$state/sources.list.d/nonfree.sources.tmp" "$state/sources.list.d/nonfree.sources"
		fi
	else
		rm -f "$state/sources.list.d/nonfree.sources.tmp"
		die "cannot find a Debian archive source in /etc/apt/sources.list or /etc/apt/sources.list.d/ (looked for a 'deb' entry whose URI contains 'debian' and is not a security archive); set CUDA_APT_SOURCE='deb http://deb.debian.org/debian bookworm non-free' to name one"
	fi
	echo "cuda-tools: apt source for non-free:"
	cat "$state/sources.list" "$state/sources.list.d/"* 2>/dev/null | sed '/^[[:space:]]*$/d; s/^/  /'
	apt_private update >/dev/null || die "apt-get update failed for the non-free source above"
	apt_updated=1
}

# fetch_deb downloads package $1 into $2 (a folder) and prints the .deb path.
fetch_deb() {
	local pkg=$1 dir=$2
	mkdir -p "$dir"
	apt_ready >&2 # stdout carries only the path
	(cd "$dir" && apt_private download "$pkg" >&2) || die "apt-get download $pkg failed"
	ls "$dir"/"$pkg"_*.deb | head -1
}

toolkit() {
	local dest=$tools/cuda
	if [ -x "$dest/usr/bin/ptxas" ] && [ -x "$dest/usr/bin/cuobjdump" ] && [ -x "$dest/usr/bin/nvdisasm" ]; then
		echo "cuda-tools: toolkit present: $("$dest/usr/bin/ptxas" --version | tail -1)"
		return 0
	fi
	local deb
	tmp=$(mktemp -d "$tools/dl.XXXXXX")
	deb=$(fetch_deb nvidia-cuda-toolkit "$tmp")
	rm -rf "$dest.new"
	dpkg-deb -x "$deb" "$dest.new"
	rm -rf "$dest" "$tmp"
	mv "$dest.new" "$dest"
	for b in ptxas cuobjdump nvdisasm; do
		[ -x "$dest/usr/bin/$b" ] || die "$b missing from $deb"
	done
	echo "cuda-tools: toolkit installed in $dest: $("$dest/usr/bin/ptxas" --version | tail -1)"
}

dev() {
	local dest=$tools/cudadev
	local hdr=usr/include/cuda.h stub=usr/lib/x86_64-linux-gnu/stubs/libcuda.so
	if [ -f "$dest/$hdr" ] && [ -f "$dest/$stub" ]; then
		echo "cuda-tools: cuda.h and stub libcuda.so present in $dest"
		return 0
	fi
	local deb
	tmp=$(mktemp -d "$tools/dl.XXXXXX")
	deb=$(fetch_deb nvidia-cuda-dev "$tmp")
	rm -rf "$dest.new"
	mkdir -p "$dest.new"
	# Only the two files cgo needs; the package is 774 MB and mostly static libraries.
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest.new" "./$hdr" "./$stub"
	rm -rf "$dest" "$tmp"
	mv "$dest.new" "$dest"
	grep -m1 '#define CUDA_VERSION' "$dest/$hdr" | sed 's/^/cuda-tools: cuda.h: /'
	# cuda.h from CUDA 13 breaks gorgonia.org/cu (cuCtxCreate became a 4-argument macro).
	local v
	v=$(awk '/#define CUDA_VERSION/ {print $3; exit}' "$dest/$hdr")
	[ "${v:-0}" -lt 13000 ] || die "cuda.h is CUDA_VERSION $v; gorgonia.org/cu v0.9.6 needs headers older than CUDA 13"
}

# The downloads (up to 774 MB) and half-extracted folders must not outlive a failed run.
tmp=
trap 'rm -rf "${tmp:-}" "$tools/cuda.new" "$tools/cudadev.new"' EXIT

mkdir -p "$tools"
case $part in
toolkit) toolkit ;;
dev) dev ;;
*) die "usage: $0 toolkit|dev" ;;
esac
