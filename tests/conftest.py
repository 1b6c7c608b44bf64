"""Test-suite options: `--update-golden` rewrites golden snapshots instead of comparing."""


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/snapshots/*.txt from the current output")
