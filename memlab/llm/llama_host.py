"""What llama.cpp runs on here: the threads it may use, whether a GPU takes its layers, and how
to install it (``INSTALL_HINT``). Read by ``LocalLLM`` and ``serve-llm``; never raises."""

from __future__ import annotations

import os

__all__ = ["INSTALL_HINT", "gpu_visible", "usable_cpus", "auto_threads"]

#: What to run when ``llama_cpp`` is missing.
INSTALL_HINT = "pip install 'memlab[local]' (scripts/setup.sh installs it)"


def gpu_visible() -> bool:
    """True when this llama-cpp-python build can offload layers and a GPU is there to take them.

    A CPU build says False whatever the machine has; a GPU build is believed (Metal always has
    its GPU) unless ``CUDA_VISIBLE_DEVICES`` hides every device (set to "" or "-1") or a CUDA
    build finds no /dev/nvidia* device. Never raises: a failed check means no GPU."""
    try:
        from llama_cpp import llama_supports_gpu_offload

        if not llama_supports_gpu_offload():
            return False
    except Exception:  # no llama_cpp, or an old build without the function
        return False
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return False
    if os.name == "posix" and os.path.isdir("/dev") and not os.uname().sysname == "Darwin":
        try:
            return any(name.startswith(("nvidia", "kfd", "dri")) for name in os.listdir("/dev"))
        except OSError:
            return False
    return True


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def auto_threads() -> int:
    """Threads for llama.cpp when ``n_threads`` is None: the usable CPUs that other work leaves
    free (usable CPUs minus the 1-minute load average, rounded), at least 1.

    Why not every CPU: llama.cpp's threads wait for each other at every operation, spinning, so a
    thread that the OS has put aside stalls the others. Measured with the 1.5B model on 2 cores:
    idle, 2 threads ran 11 generated / 65 prompt tokens/s against 5.7 / 33 for 1; with two other
    processes busy, 2 threads took 14 s per judge call and 1 thread 1.9 s."""
    cpus = usable_cpus()
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cpus
    return max(1, min(cpus, round(cpus - busy)))
