"""Running a regression's `_run()` in a child process, for bugs that corrupted memory: an
overrun aborts the child (glibc's heap checks are on), not the test run, and fails the
test with the child's stderr."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def assert_survives_in_a_child(module: str, repeats: int = 1,
                               package: str = "tests.fuzz.regressions", **env: str) -> None:
    """Call `_run()` of the test module `module` (a file name in `package`'s folder,
    without `.py`) `repeats` times in a fresh Python process with the on-disk cache off,
    plus the environment variables `env`; it must exit cleanly."""
    script = (f"import gc\nfrom {package}.{module} import _run\n"
              f"for _ in range({repeats}):\n    _run()\ngc.collect()\nprint('survived')\n")
    child_env = {**os.environ, "MALLOC_CHECK_": "3", "HALO_CACHE_DIR": "off",
                 "PYTHONPATH": str(ROOT), **env}
    done = subprocess.run([sys.executable, "-c", script], env=child_env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "survived" in done.stdout, done.stderr[-2000:]
