"""GPU tests carry the `gpu` mark. Without a Hopper GPU they are skipped, unless OXTILE_EXPECT_GPU=1 says one is
there: then the whole run fails at once rather than passing with the GPU tests skipped."""

import os

import pytest
import torch


def hopper_missing():
    """Why the GPU tests cannot run here, or None."""
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"GPU 0 has compute capability {major}.{minor}; oxtile's kernels are sm_90a (Hopper)"
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a Hopper GPU (skipped without one, unless OXTILE_EXPECT_GPU=1)")


def pytest_collection_modifyitems(config, items):
    missing = hopper_missing()
    if missing is None:
        return
    if os.environ.get("OXTILE_EXPECT_GPU") == "1":
        pytest.exit(f"OXTILE_EXPECT_GPU=1 but {missing}", returncode=1)
    skip = pytest.mark.skip(reason=missing)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
