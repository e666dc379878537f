"""The in-tree build backend: a wheel with the package, its kernels and the vLLM entry point."""

import os
import sys
import tempfile
import unittest
import zipfile

from helpers import PYTHON_DIR

sys.path.insert(0, os.path.join(PYTHON_DIR, "build_backend"))
import ptxgen_mla_build as backend  # noqa: E402


class Wheel(unittest.TestCase):
    def test_wheel_contents(self):
        self.assertEqual(backend.get_requires_for_build_wheel(), [])
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_wheel(d)
            self.assertEqual(name, "ptxgen_mla-0.3.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                self.assertIn("ptxgen_mla/__init__.py", names)
                self.assertIn("ptxgen_mla/kernels/index.json", names)
                self.assertIn("ptxgen_mla/kernels/mla_h64_k128p64_k512p64_exact_sm_90.ptx.xz", names)
                self.assertFalse(any("__pycache__" in n or n.startswith("tests/") for n in names))
                meta = z.read("ptxgen_mla-0.3.0.dist-info/METADATA").decode()
                self.assertIn("Requires-Dist: torch\n", meta)
                self.assertIn("Requires-Dist: cuda-bindings\n", meta)
                eps = z.read("ptxgen_mla-0.3.0.dist-info/entry_points.txt").decode()
                self.assertIn("[vllm.general_plugins]\nptxgen_mla = ptxgen_mla.vllm_plugin:register", eps)
                record = z.read("ptxgen_mla-0.3.0.dist-info/RECORD").decode().splitlines()
                self.assertEqual(len(record), len(names))

    def test_sdist_and_editable(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertTrue(backend.build_sdist(d).endswith(".tar.gz"))
            name = backend.build_editable(d)
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                pth = [n for n in z.namelist() if n.endswith(".pth")]
                self.assertEqual(z.read(pth[0]).decode().strip(), PYTHON_DIR)

    def test_toml_fallback_reads_pyproject_as_tomllib(self):
        with open(os.path.join(PYTHON_DIR, "pyproject.toml")) as f:
            text = f.read()
        ours = backend.parse_toml_subset(text)
        self.assertEqual(ours["project"]["dependencies"], ["torch", "cuda-bindings"])
        self.assertEqual(ours["project"]["entry-points"]["vllm.general_plugins"], {"ptxgen_mla": "ptxgen_mla.vllm_plugin:register"})
        try:
            import tomllib
        except ImportError:
            self.skipTest("no tomllib (Python < 3.11): the fallback is what the build uses")
        self.assertEqual(ours, tomllib.loads(text))

    def test_version_matches_the_package(self):
        import ptxgen_mla
        self.assertEqual(backend.project()["version"], ptxgen_mla.__version__)


if __name__ == "__main__":
    unittest.main()
