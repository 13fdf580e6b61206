"""Uses a GPU through the CUDA driver API (libcuda, present wherever the
NVIDIA driver is), with no PyTorch and no CUDA toolkit: allocates memory and
keeps the GPU's copy engine busy for a few seconds."""

import ctypes
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
SIZE = 1 << 30  # 1 GiB

cuda = ctypes.CDLL("libcuda.so.1")


def check(result, what):
    if result != 0:
        raise SystemExit(f"{what} failed with CUDA error {result}")


check(cuda.cuInit(0), "cuInit")
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
context = ctypes.c_void_p()
check(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")
buf = ctypes.c_uint64()
check(cuda.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(SIZE)), "cuMemAlloc")
start, n = time.time(), 0
while time.time() - start < SECONDS:
    check(cuda.cuMemsetD8_v2(buf, ctypes.c_ubyte(n % 256), ctypes.c_size_t(SIZE)), "cuMemsetD8")
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    n += 1
check(cuda.cuMemFree_v2(buf), "cuMemFree")
print(f"filled 1 GiB of GPU memory {n} times in {SECONDS:.0f} s")
