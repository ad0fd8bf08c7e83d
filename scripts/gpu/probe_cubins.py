"""Load GPU code objects extracted from a framework build on this machine's GPU.

Tells whether a framework wheel can run on the local GPU without installing it: extract its
embedded cubins with ``cuobjdump -xelf all LIB`` (``cuobjdump --list-elf`` / ``--list-ptx``
list what architectures it carries), then ``python3 probe_cubins.py FILE.cubin ...`` asks the
CUDA driver to load each one on device 0 and prints the driver's verdict. A build with no code
for the GPU's architecture and no PTX to compile fails here exactly as inside the framework.
"""

from __future__ import annotations

import ctypes
import sys


def _check(lib, status: int, what: str) -> None:
    if status != 0:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(status, ctypes.byref(name))
        raise SystemExit(f"{what}: {name.value.decode()} ({status})")


def main(paths: list[str]) -> int:
    cuda = ctypes.CDLL("libcuda.so.1")
    _check(cuda, cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    _check(cuda, cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    major, minor = ctypes.c_int(), ctypes.c_int()
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # COMPUTE_CAPABILITY_MAJOR
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)  # COMPUTE_CAPABILITY_MINOR
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, device)
    print(f"device 0: {name.value.decode()}, compute capability {major.value}.{minor.value}")
    context = ctypes.c_void_p()
    _check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "context")
    _check(cuda, cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    failures = 0
    for path in paths:
        module = ctypes.c_void_p()
        status = cuda.cuModuleLoad(ctypes.byref(module), path.encode())
        if status == 0:
            print(f"{path}: loaded")
            cuda.cuModuleUnload(module)
            continue
        failures += 1
        err_name, err_text = ctypes.c_char_p(), ctypes.c_char_p()
        cuda.cuGetErrorName(status, ctypes.byref(err_name))
        cuda.cuGetErrorString(status, ctypes.byref(err_text))
        print(f"{path}: {err_name.value.decode()} ({status}): {err_text.value.decode()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
