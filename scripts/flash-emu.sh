#!/usr/bin/env bash
# Runs the FlashAttention-2 kernels of exec/flash_mma.cu on the CPU (tests/emu/flash_emu.cpp:
# the kernel source unchanged, warp instructions emulated, one thread per CUDA thread) against
# a double reference. Needs g++ and the CUDA headers (for the bf16 type only), no GPU.
#   scripts/flash-emu.sh [case-index [fwd_mw [bwd_br [bwd_warps]]]]   (-1: every case; 0: default tiles)
set -eu
CUDA=${CUDA:-$(dirname "$(dirname "$(realpath "$(command -v nvcc)")")")}
mkdir -p build
g++ -std=c++17 -O2 -g -pthread -Wall -Wno-unused-function -Wno-unknown-pragmas -I. -I"$CUDA/include" tests/emu/flash_emu.cpp \
	-o build/flash_emu
exec build/flash_emu "$@"
