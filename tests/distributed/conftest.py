"""The distributed tests need Ray: a real local instance (``local_ray``, in
``tests/conftest.py``: loopback only, shared by consecutive modules that use it; that
conftest sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which Ray reads when it is imported,
before any test module imports Ray)."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
