#!/bin/sh
# Builds the in-process recorder (csrc/) for each architecture sonde ships
# (make generate; needs gcc, gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf).
# The objects are committed and embedded, so building sonde needs none of this.
set -eu
cd "$(dirname "$0")"
flags="-O2 -fPIC -shared -fvisibility=hidden -fno-instrument-functions -Wall -Werror -s"
gcc $flags -o recorder_amd64.so csrc/recorder.c
aarch64-linux-gnu-gcc $flags -o recorder_arm64.so csrc/recorder.c
arm-linux-gnueabihf-gcc $flags -o recorder_arm.so csrc/recorder.c
