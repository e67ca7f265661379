# CMake toolchain file: build ember for 64-bit ARM Linux (aarch64) on an x86-64 Debian machine,
# and run what it builds (the tests, through CTest) under QEMU's user-mode emulator.
#
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   ctest --test-dir build-aarch64 -j2 -LE longrun
#
# What it expects (scripts/ci-aarch64 installs it all from Debian):
#   - the cross compiler g++-aarch64-linux-gnu, whose C and C++ runtimes live in
#     /usr/aarch64-linux-gnu;
#   - the arm64 builds of the libraries ember links (zlib, libjpeg-turbo, libpng) as Debian
#     multiarch packages (`dpkg --add-architecture arm64`, then `apt-get install zlib1g-dev:arm64
#     ...`), in /usr/lib/aarch64-linux-gnu beside the host's /usr/lib/x86_64-linux-gnu;
#   - the header-only ones (Eigen, Catch2, nlohmann-json, CLI11) as usual: their headers are the
#     same on every architecture;
#   - qemu-aarch64 (Debian's qemu-user) to run the programs.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# find_library and find_package look in the multiarch folders of this triple
# (/usr/lib/aarch64-linux-gnu), never in the host's x86-64 ones.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# CTest runs every test program through QEMU (and catch_discover_tests lists the test cases
# through it). -L: the dynamic loader and the C++ runtime come from the cross toolchain's folder;
# a library not there (libjpeg, libpng, zlib) is looked up in the host's folders next, where the
# multiarch packages put their arm64 builds. -E LD_LIBRARY_PATH: the C library must come from the
# cross toolchain's folder too, to match its loader. Without it the loader can take the host's
# libc6:arm64 (which those multiarch packages install); seen on Debian 12 with that at
# 2.36-9+deb12u14 and the cross toolchain's at 2.36-8cross1: a guest's first pthread_create hung.
find_program(EMBER_QEMU_AARCH64 qemu-aarch64)
if(NOT EMBER_QEMU_AARCH64)
  message(WARNING "aarch64 toolchain: qemu-aarch64 not found (apt-get install qemu-user): the "
                  "build works, but neither CTest nor the test discovery can run the programs")
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EMBER_QEMU_AARCH64} -L /usr/aarch64-linux-gnu
      -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
endif()

# The CPU build: no -march=native (it would describe the build machine, not the target; the NEON
# kernels need no flag, Advanced SIMD is part of every ARMv8-A CPU), no CUDA (nvcc here targets
# x86-64 hosts), no MPI (no arm64 MPI is installed). Defaults only: -D on the command line wins.
set(EMBER_NATIVE OFF CACHE BOOL "Compile for this machine's CPU (-march=native)")
set(EMBER_CUDA OFF CACHE STRING "Build the CUDA backend")
set(EMBER_DIST OFF CACHE STRING "Build ember::distributed")
