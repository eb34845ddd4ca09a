#!/usr/bin/env bash
# Build Apache Mesos from its sources into a prefix, for `make test-mesos` (docs/real-mesos.md):
#
#   tools/mesos/build.sh SRC PREFIX
#
# SRC is a Mesos source tree (apache/mesos, its 1.11-compatible head), or a git directory of
# that repository (a bare copy will do): its HEAD is then laid out in PREFIX/src first, without
# the bundled tarballs the copy lacks. PREFIX gets bin/, sbin/mesos-master, sbin/mesos-agent,
# lib/ and libexec/mesos/ (the command and Docker executors, mesos-containerizer, the fetcher).
# Keep PREFIX out of the repository (libmesos alone is several hundred MB).
#
# Steps, each skipped when already done, so that a second run resumes where the first stopped:
#   1. Debian's packages the build needs (apt-get, root; waits for another apt-get's lock);
#   2. tools/mesos/patches/*.patch, for Debian 12's libraries (applied once each);
#   3. ./bootstrap, then ../configure in SRC/build against the system libraries;
#   4. make -j$JOBS (default: the cores), niced: hours at -O0 on 2 cores, so start it early;
#   5. make install into PREFIX.
# The build's output goes to SRC/build/disauto-build.log; this script prints one line a step.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# apt_get: apt-get that waits for another one's lock (tools/apt.sh).
source "${here}/../apt.sh"

say() { echo "mesos build: $*" >&2; }
die() { say "$*"; exit 1; }

(($# == 2)) || die "usage: tools/mesos/build.sh SRC PREFIX (SRC: a Mesos source tree or git directory)"
src="$1"
prefix="$(mkdir -p "$2" && cd "$2" && pwd)"
jobs="${JOBS:-$(nproc)}"

packages=(build-essential autoconf automake libtool pkg-config libprotobuf-dev protobuf-compiler
  protobuf-compiler-grpc libgrpc++-dev libzookeeper-mt-dev libarchive-dev libgoogle-glog-dev
  libgflags-dev libleveldb-dev libboost-dev libev-dev libhttp-parser-dev rapidjson-dev
  libapr1-dev libsvn-dev libsasl2-dev libcurl4-openssl-dev libseccomp-dev zlib1g-dev libssl-dev
  git patch)

# 1. Packages.
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("${package}")
done
if ((${#missing[@]})); then
  [[ "$(id -u)" == 0 ]] || die "need root to install: ${missing[*]}"
  say "installing ${#missing[@]} Debian packages"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A git directory: lay its HEAD out as PREFIX/src, leaving out the blobs the copy lacks (the
# bundled protobuf, ZooKeeper, libarchive, gRPC and gperftools tarballs; the system's replace them).
if git --git-dir="${src}" rev-parse --verify -q HEAD >/dev/null 2>&1 && [[ ! -f "${src}/configure.ac" ]]; then
  git_dir="$(cd "${src}" && pwd)"
  src="${prefix}/src"
  if [[ ! -f "${src}/configure.ac" ]]; then
    commit="$(git --git-dir="${git_dir}" rev-parse HEAD)"
    say "laying out ${commit} in ${src}"
    rm -rf "${src}.partial" && mkdir -p "${src}.partial"
    index="$(mktemp -u)"
    (
      cd "${src}.partial"
      export GIT_DIR="${git_dir}" GIT_WORK_TREE=. GIT_INDEX_FILE="${index}"
      git read-tree HEAD
      git ls-tree -r HEAD | awk '{print $3}' | git cat-file --batch-check \
        | awk '$2 == "missing" {print $1}' > "${index}.missing"
      if [[ -s "${index}.missing" ]]; then
        git ls-tree -r HEAD | grep -F -f "${index}.missing" | cut -f2 | while read -r path; do
          say "the copy lacks ${path}: the system's library replaces it"
          git update-index --force-remove -- "${path}"
        done
      fi
      git checkout-index -a -f
    )
    rm -f "${index}" "${index}.missing"
    echo "${commit}" > "${src}.partial/.disauto-commit"
    mv "${src}.partial" "${src}"
  fi
fi
[[ -f "${src}/configure.ac" && -f "${src}/src/master/master.cpp" ]] \
  || die "${src} is neither a Mesos source tree nor a git directory of one"
src="$(cd "${src}" && pwd)"
build="${src}/build"
mkdir -p "${build}"
log="${build}/disauto-build.log"

# 2. Patches, each applied once (a patch that applies in reverse is already in).
for patch_file in "${here}"/patches/*.patch; do
  name="$(basename "${patch_file}")"
  if patch -d "${src}" -p1 -R --dry-run -s -f < "${patch_file}" >/dev/null 2>&1; then
    continue
  fi
  patch -d "${src}" -p1 -N -s < "${patch_file}" || die "${name} does not apply to ${src}"
  say "applied ${name}"
done

# 3. Bootstrap and configure.
if [[ ! -x "${src}/configure" ]]; then
  say "bootstrap"
  (cd "${src}" && ./bootstrap) >> "${log}" 2>&1 || die "bootstrap failed: see ${log}"
fi
if [[ ! -f "${build}/Makefile" ]]; then
  say "configure (prefix ${prefix})"
  (cd "${build}" && ../configure --prefix="${prefix}" --disable-java --disable-python \
    --disable-werror --disable-optimize --with-protobuf=/usr --with-zookeeper=/usr \
    --with-libarchive=/usr --with-glog=/usr --with-leveldb=/usr --with-boost=/usr \
    --with-libev=/usr --with-http-parser=/usr --with-rapidjson=/usr --with-apr=/usr \
    --with-svn=/usr --with-grpc=/usr) >> "${log}" 2>&1 || die "configure failed: see ${log}"
fi

# 4. Compile (make resumes by itself: what is built is not built again).
if [[ ! -x "${prefix}/sbin/mesos-master" || "${build}/src/.libs/libmesos.so" -nt "${prefix}/sbin/mesos-master" ]]; then
  say "make -j${jobs}, niced: see ${log}"
  started=${SECONDS}
  (cd "${build}" && nice -n 19 make -j"${jobs}") >> "${log}" 2>&1 \
    || die "make failed: the last lines of ${log}: $(tail -n 5 "${log}" | tr '\n' ' ')"
  say "compiled in $(((SECONDS - started) / 60)) min"

  # 5. Install.
  say "make install into ${prefix}"
  (cd "${build}" && make install) >> "${log}" 2>&1 || die "make install failed: see ${log}"
fi
for binary in sbin/mesos-master sbin/mesos-agent libexec/mesos/mesos-executor \
  libexec/mesos/mesos-docker-executor libexec/mesos/mesos-containerizer; do
  [[ -x "${prefix}/${binary}" ]] || die "${prefix}/${binary} is missing after the install"
done
say "done: MESOS_HOME=${prefix} make test-mesos"
