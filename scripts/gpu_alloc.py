"""Uses a GPU through the CUDA driver API (libcuda, present wherever the
NVIDIA driver is), with no PyTorch and no CUDA toolkit.

    gpu_alloc.py [SECONDS [GIB [hold]]]

allocates GIB GiB (default 1) of GPU memory and keeps the GPU's copy engine
busy for SECONDS (default 10); with `hold` it only holds the memory, idle, for
that long. It prints `holding` once the memory is allocated. An allocation the
GPU cannot satisfy ends it with status 1 and the driver's error name
(`CUDA_ERROR_OUT_OF_MEMORY`)."""

import ctypes
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
GIB = int(sys.argv[2]) if len(sys.argv) > 2 else 1
HOLD = len(sys.argv) > 3 and sys.argv[3] == "hold"
SIZE = GIB << 30

cuda = ctypes.CDLL("libcuda.so.1")


def check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(result, ctypes.byref(name))
        label = name.value.decode() if name.value else f"CUDA error {result}"
        raise SystemExit(f"{label}: {what} failed")


check(cuda.cuInit(0), "cuInit")
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
context = ctypes.c_void_p()
check(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")
buf = ctypes.c_uint64()
check(cuda.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(SIZE)), f"cuMemAlloc of {GIB} GiB")
print(f"holding {GIB} GiB", flush=True)
start, n = time.time(), 0
while time.time() - start < SECONDS:
    if HOLD:
        time.sleep(0.1)
        continue
    check(cuda.cuMemsetD8_v2(buf, ctypes.c_ubyte(n % 256), ctypes.c_size_t(SIZE)), "cuMemsetD8")
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    n += 1
check(cuda.cuMemFree_v2(buf), "cuMemFree")
if not HOLD:
    print(f"filled {GIB} GiB of GPU memory {n} times in {SECONDS:.0f} s")
