"""A PEP 517 build backend for ptxgen-mla that needs nothing outside the standard library.

pip builds a source folder in an isolated environment into which it installs the
backend's requirements; with none, `pip install ./python` works on a machine without a
package index (the GPU machines here). It writes a pure-Python wheel of the package
(ptxgen_mla/ with its kernels) whose metadata comes from pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ptxgen_mla"
SKIP_DIRS = {"__pycache__"}


def parse_toml_subset(text):
    """The tables of a TOML file written as pyproject.toml is: [table] headers (dotted,
    quoted parts allowed), key = "string", key = ["a", "b"]. Used where tomllib is
    missing (Python < 3.11); the tests hold it to tomllib on pyproject.toml."""
    out, cur = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([^\]]+)\]", line)
        if m:
            cur = out
            for part in re.findall(r'"([^"]*)"|([^.\s"]+)', m.group(1)):
                cur = cur.setdefault(part[0] or part[1], {})
            continue
        m = re.fullmatch(r'("[^"]*"|[A-Za-z0-9_.-]+)\s*=\s*(.+)', line)
        if not m or cur is None:
            raise ValueError(f"pyproject.toml: cannot read {raw!r}")
        key, val = m.group(1).strip('"'), m.group(2).strip()
        if val.startswith("["):
            cur[key] = re.findall(r'"([^"]*)"', val)
        elif val.startswith('"') and val.endswith('"'):
            cur[key] = val[1:-1]
        else:
            raise ValueError(f"pyproject.toml: cannot read the value of {key!r}: {val!r}")
    return out


def project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
        return tomllib.loads(data.decode())["project"]
    except ImportError:
        return parse_toml_subset(data.decode())["project"]


def _dist(p):
    return re.sub(r"[-_.]+", "_", p["name"]).lower()


def _metadata(p):
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '>=3')}"]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    body = ""
    if os.path.isfile(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _entry_points(p):
    out = []
    for group, eps in sorted(p.get("entry-points", {}).items()):
        out.append(f"[{group}]")
        out += [f"{k} = {v}" for k, v in sorted(eps.items())]
        out.append("")
    return "\n".join(out)


def _package_files():
    base = os.path.join(ROOT, PACKAGE)
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(d, f)
            yield full, os.path.relpath(full, ROOT).replace(os.sep, "/")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, files):
    """files: [(archive name, bytes)] without the dist-info; returns the wheel's name."""
    p = project()
    dist, ver = _dist(p), p["version"]
    info = f"{dist}-{ver}.dist-info"
    name = f"{dist}-{ver}-py3-none-any.whl"
    meta = [(f"{info}/METADATA", _metadata(p).encode()),
            (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: ptxgen_mla_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
            (f"{info}/entry_points.txt", _entry_points(p).encode())]
    record = [_record_line(n, d) for n, d in files + meta] + [f"{info}/RECORD,,"]
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files + meta + [(f"{info}/RECORD", ("\n".join(record) + "\n").encode())]:
            zi = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for full, arc in _package_files():
        with open(full, "rb") as f:
            files.append((arc, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth file puts this source folder on sys.path (pip install -e)."""
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = project()
    base = f"{_dist(p)}-{p['version']}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        extra = ["pyproject.toml", "README.md", "build_backend/ptxgen_mla_build.py"]
        for rel in extra:
            if os.path.exists(os.path.join(ROOT, rel)):
                t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        for full, arc in _package_files():
            t.add(full, arcname=f"{base}/{arc}")
        pkg_info = _metadata(p).encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return name
