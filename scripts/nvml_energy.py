"""Reads each GPU's total-energy counter and power draw through NVML
(libnvidia-ml, present wherever the NVIDIA driver is), with ctypes only.

Prints one line per GPU: index, name, energy counter (mJ since the driver
loaded) or why it has none, power draw (mW). `scripts/gpu-check` calls it
before and after its workload, so the difference shows what a run used; the
energy accounting (issue 13) is planned on what this prints on real GPUs."""

import ctypes
import sys

try:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
except OSError as e:
    sys.exit(f"no NVML here: {e}")


def check(result, what):
    if result != 0:
        raise SystemExit(f"{what} failed with NVML error {result}")


check(nvml.nvmlInit_v2(), "nvmlInit")
count = ctypes.c_uint()
check(nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)), "nvmlDeviceGetCount")
for i in range(count.value):
    dev = ctypes.c_void_p()
    check(nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(dev)), "nvmlDeviceGetHandleByIndex")
    name = ctypes.create_string_buffer(96)
    check(nvml.nvmlDeviceGetName(dev, name, 96), "nvmlDeviceGetName")
    energy = ctypes.c_ulonglong()
    r = nvml.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(energy))
    energy_text = f"{energy.value} mJ" if r == 0 else f"none (NVML error {r})"
    power = ctypes.c_uint()
    r = nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(power))
    power_text = f"{power.value} mW" if r == 0 else f"none (NVML error {r})"
    print(f"GPU {i} ({name.value.decode()}): energy {energy_text}, power {power_text}")
nvml.nvmlShutdown()
