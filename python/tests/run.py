#!/usr/bin/env python3
"""Runs the package's CPU tests (unittest discovery in python/tests) and ends with one line,
`python: N passed, N failed, N skipped`, listing each skipped test and why (a test that
needs torch skips where torch is not installed). Exit 0 only when nothing failed and at
least one test ran: a run of no test is a failure here, not a pass."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    result = unittest.TextTestRunner(verbosity=2 if "-v" in sys.argv else 1).run(suite)
    for test, why in result.skipped:
        print(f"skipped: {test.id()}: {why}")
    failed = len(result.failures) + len(result.errors) + len(getattr(result, "unexpectedSuccesses", []))
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print(f"python: {passed} passed, {failed} failed, {skipped} skipped")
    if result.testsRun == 0:
        print("python: no test ran (discovery found none): failing")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
