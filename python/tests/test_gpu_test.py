"""gpu_test's parts that need no GPU: its cases have shipped kernels, its arguments parse."""

import unittest

from helpers import HAVE_TORCH
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


@unittest.skipUnless(HAVE_TORCH, "torch is not installed: gpu_test's float64 reference is checked on the GPU only")
class Reference(unittest.TestCase):
    """gpu_test's batched float64 reference against the spec's loop (section 5), on the CPU."""

    def test_against_the_spec_loop(self):
        import math
        import torch
        g = torch.Generator().manual_seed(0)
        rows, H = 5, 3
        pool0, pool1 = torch.randn(40, 512, generator=g), torch.randn(30, 512, generator=g)
        idx0 = torch.randint(-2, 45, (rows, 7), generator=g)  # negatives and past the pool: invalid
        idx1 = torch.randint(0, 30, (rows, 4), generator=g)
        len0 = torch.tensor([7, 3, 0, 9, -1])
        idx0[2] = -1
        idx1[2] = -1                                            # row 2: no valid candidate
        q = torch.randn(rows, H, 512, generator=g)
        sink = torch.tensor([-math.inf, 0.5, math.inf])
        scale = 0.05
        out, lse = gpu_test.reference(torch, q, [(pool0, idx0, len0), (pool1, idx1, None)], sink, scale, chunk=2)
        for t in range(rows):
            for h in range(H):
                L, V = [], []
                for pool, idx, lens in ((pool0, idx0, len0), (pool1, idx1, None)):
                    n = min(max(int(lens[t]), 0), idx.shape[1]) if lens is not None else idx.shape[1]
                    for j in range(n):
                        i = int(idx[t, j])
                        if 0 <= i < pool.shape[0]:
                            k = pool[i].double()
                            L.append(scale * float(q[t, h].double() @ k))
                            V.append(k)
                if not L:
                    self.assertTrue(math.isinf(lse[t, h]) and lse[t, h] > 0)
                    self.assertEqual(float(out[t, h].abs().max()), 0.0)
                    continue
                m = max(L)
                l = m + math.log(sum(math.exp(x - m) for x in L))
                o = sum(math.exp(x - l) * v for x, v in zip(L, V))
                s = float(sink[h])
                o = o * (0.0 if s == math.inf else 1 / (1 + math.exp(s - l)))
                self.assertAlmostEqual(float(lse[t, h]), l, places=9)
                self.assertLess(float((out[t, h] - o).abs().max()), 1e-9)

    def test_compare_matches_the_stdlib_compare(self):
        import torch
        from ptxgen_mla import vectors
        want = [0.5, -1.25, 3.0, float("inf"), 0.0]
        for got in ([0.5, -1.25, 3.0, float("inf"), 0.0], [0.5, -1.25, 3.1, float("inf"), 0.0],
                    [0.5, float("nan"), 3.0, float("inf"), 0.0], [0.5, -1.25, 3.0, -float("inf"), 0.0]):
            ok_t, _ = gpu_test.compare(torch, torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64),
                                       vectors.OUT_TOL)
            self.assertEqual(ok_t, vectors.compare(got, want, vectors.OUT_TOL)[0], got)
