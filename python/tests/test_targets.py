import unittest

from helpers import REPO  # noqa: F401  (puts the package on sys.path)
from ptxgen_mla.errors import PtxgenMLAError
from ptxgen_mla.targets import device_arch, parse_id, pick_target

SHIPPED = ["sm_120", "sm_90", "sm_86", "sm_80"]


class PickTarget(unittest.TestCase):
    def test_go_table(self):
        # runtime/pick_test.go's TestPickTarget, case for case.
        all3 = ["sm_80", "sm_90", "sm_120"]
        cases = [("sm_120", all3, "sm_120"), ("sm_90", all3, "sm_90"), ("sm_100", all3, "sm_90"),
                 ("sm_89", all3, "sm_80"), ("sm_86", all3, "sm_80"), ("sm_80", all3, "sm_80"), ("sm_75", all3, None),
                 ("sm_90", ["sm_80"], "sm_80"), ("sm_120", ["sm_120", "sm_80"], "sm_120"), ("sm_90", ["sm_120"], None),
                 ("sm_90", ["sm_90", "sm_90a"], "sm_90a"), ("sm_100", ["sm_90a", "sm_80"], "sm_80"),
                 ("sm_121", ["sm_120f", "sm_90"], "sm_120f"), ("sm_100", ["sm_120f", "sm_90"], "sm_90"),
                 ("sm_90", [], None)]
        for arch, targets, want in cases:
            with self.subTest(arch=arch, targets=targets):
                if want is None:
                    with self.assertRaises(PtxgenMLAError):
                        pick_target(arch, targets)
                else:
                    self.assertEqual(pick_target(arch, targets), want)

    def test_bad_names_like_go(self):
        for arch, target in [("gfx90a", "sm_80"), ("sm_90", "sm80"), ("sm_90", "sm_"), ("sm_90", "sm_x0"),
                             ("sm_090", "sm_80"), ("sm_90", "compute_80"), ("sm_90", "sm_+90"), ("sm_90", "sm_９0")]:
            with self.subTest(arch=arch, target=target):
                with self.assertRaisesRegex(PtxgenMLAError, "bad target"):
                    pick_target(arch, [target])

    def test_capabilities_of_real_devices(self):
        # The devices engines run on, by compute capability, against the shipped targets
        # and against a set with the architecture-specific forms the driver cannot move
        # to other chips (issue 31: sm_100/120/121 must not pick sm_90a/sm_120a).
        with_a = ["sm_120a", "sm_120", "sm_90a", "sm_90", "sm_80"]
        for cap, shipped, a_forms in [((8, 0), "sm_80", "sm_80"), ((8, 6), "sm_86", "sm_80"), ((8, 9), "sm_86", "sm_80"),
                                      ((9, 0), "sm_90", "sm_90a"), ((10, 0), "sm_90", "sm_90"), ((10, 3), "sm_90", "sm_90"),
                                      ((11, 0), "sm_90", "sm_90"), ((12, 0), "sm_120", "sm_120a"),
                                      ((12, 1), "sm_120", "sm_120")]:
            arch = device_arch(cap)
            with self.subTest(cap=cap):
                self.assertEqual(pick_target(arch, SHIPPED), shipped)
                self.assertEqual(pick_target(arch, with_a), a_forms)

    def test_devices_outside_the_range(self):
        for cap in [(7, 5), (13, 0)]:
            with self.subTest(cap=cap), self.assertRaisesRegex(PtxgenMLAError, "device: bad target"):
                pick_target(device_arch(cap), SHIPPED)
        for cap in [(9,), (9, -1), ("9", "0"), (True, 0), None]:
            with self.subTest(cap=cap), self.assertRaisesRegex(PtxgenMLAError, "compute capability"):
                device_arch(cap)

    def test_parse_id(self):
        self.assertEqual(parse_id("sm_90a"), (90, "a"))
        self.assertEqual(parse_id("sm_120f"), (120, "f"))
        self.assertEqual(parse_id("sm_121"), (121, ""))
        for bad in ["sm_122", "sm_79", "sm_90b", None, 90]:
            with self.subTest(bad=bad), self.assertRaises(PtxgenMLAError):
                parse_id(bad)


if __name__ == "__main__":
    unittest.main()
