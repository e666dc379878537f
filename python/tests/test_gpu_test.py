"""gpu_test's parts that need no GPU: its cases have shipped kernels, its arguments parse."""

import unittest

from helpers import REPO  # noqa: F401
from ptxgen_mla import gpu_test
from ptxgen_mla.catalog import Catalog, Key


class Cases(unittest.TestCase):
    def test_every_flashmla_case_has_an_sm90_kernel(self):
        cat = Catalog(env="")
        for case in gpu_test.flashmla_cases(quick=False):
            (s0, k0, p0) = case.segs[0]
            k1, p1 = (case.segs[1][1], case.segs[1][2]) if len(case.segs) > 1 else (0, 0)
            with self.subTest(case=case.name):
                man, target = cat.find(Key(case.h_q, k0, p0, k1, p1, "exact", 0.0), case.b * case.s_q, "sm_90")
                self.assertEqual(target, "sm_90")
                self.assertLessEqual(k0 % 64 + k1 % 64, 0, "FlashMLA needs top-k widths in multiples of 64")

    def test_cases_cover_flashmla_s_test(self):
        cases = gpu_test.flashmla_cases(quick=False)
        self.assertEqual({c.h_q for c in cases}, {16, 64, 128})
        self.assertEqual({c.s_q for c in cases} >= {1, 3, 4}, True)
        self.assertTrue(any(c.all_invalid for c in cases) and any(c.zero_len for c in cases))
        self.assertTrue(any(not c.sink for c in cases) and any(not c.have_len for c in cases))
        self.assertTrue(any(c.b == 1 and c.s_q == 1 and c.timed for c in cases), "the T=1 host-time bar")
        self.assertEqual(len(gpu_test.flashmla_cases(quick=True)), 3)

    def test_finish_counts(self):
        gpu_test.results.update(passed=0, failed=0, skipped=0, records=[])
        gpu_test.report(True, "a")
        gpu_test.report(None, "b")

        class A:
            json = None
        self.assertEqual(gpu_test.finish(A()), 0)
        gpu_test.report(False, "c")
        self.assertEqual(gpu_test.finish(A()), 1)


if __name__ == "__main__":
    unittest.main()
