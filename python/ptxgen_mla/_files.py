"""Reading the files a manifest or a test-vector folder names.

Only a regular file directly in its folder is read, never through a symbolic link
(unless it is the path the user typed), of a size known before reading it: so a name
cannot block the reader (a FIFO), read without end (/dev/zero) or leave the folder (../).
JSON nested past MAX_JSON_DEPTH is refused before the parser recurses.
"""

import json
import lzma
import os
import stat

from .errors import PtxgenMLAError

# A manifest or meta.json nests about 8 deep; 64 leaves room and keeps the stdlib
# parser (recursive) far from Python's recursion limit.
MAX_JSON_DEPTH = 64


def plain_name(name, what):
    """name, checked to be a file name that stays in its folder."""
    if (not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name
            or "\0" in name or os.path.basename(name) != name):
        raise PtxgenMLAError(f"{what} {name!r}: want a file name in the folder (no directory part, not . or ..)")
    return name


def read_file(path, limit, want=None, follow=False):
    """The bytes of the regular file path: at most limit bytes, exactly want when given.

    A symbolic link is refused unless follow (for the path a user typed); a FIFO, a
    device or a folder always.
    """
    name = os.path.basename(path) or path
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError as e:
        raise PtxgenMLAError(f"{path}: {e.strerror or e}") from None
    if stat.S_ISLNK(st.st_mode):
        raise PtxgenMLAError(f"{name} is a symbolic link: want a regular file in the folder (a link could lead out of it)")
    if not stat.S_ISREG(st.st_mode):
        raise PtxgenMLAError(f"{name} is not a regular file")
    if want is not None and st.st_size != want:
        raise PtxgenMLAError(f"{name} has {st.st_size} bytes, want {want}")
    if st.st_size > limit:
        raise PtxgenMLAError(f"{name} has {st.st_size} bytes, want at most {limit}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            if not os.path.samestat(st, os.fstat(f.fileno())):
                raise PtxgenMLAError(f"{name} changed while it was opened")
            data = f.read(st.st_size + 1)
    except OSError as e:
        raise PtxgenMLAError(f"{path}: {e.strerror or e}") from None
    if len(data) != st.st_size:
        raise PtxgenMLAError(f"{name} changed size while it was read")
    return data


def json_depth_ok(text, limit=MAX_JSON_DEPTH):
    """Whether the brackets of JSON text nest at most limit deep (strings skipped)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def parse_json(data, name):
    """JSON text (bytes or str) as Python values; one PtxgenMLAError for anything bad."""
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    except UnicodeDecodeError as e:
        raise PtxgenMLAError(f"{name}: not UTF-8 text: {e}") from None
    if not isinstance(text, str):
        raise PtxgenMLAError(f"{name}: want JSON text, have {type(text).__name__}")
    if not json_depth_ok(text):
        raise PtxgenMLAError(f"{name}: JSON nested more than {MAX_JSON_DEPTH} deep")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as e:
        raise PtxgenMLAError(f"{name}: not JSON: {e}") from None


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON (Python's json would read it as a float)")


def read_text_maybe_xz(path, limit):
    """A file's bytes, decompressed when its name ends in .xz (the package ships PTX
    xz-compressed): at most limit bytes either way."""
    data = read_file(path, limit)
    if not path.endswith(".xz"):
        return data
    try:
        d = lzma.LZMADecompressor()
        out = d.decompress(data, max_length=limit + 1)
    except lzma.LZMAError as e:
        raise PtxgenMLAError(f"{os.path.basename(path)}: not xz data: {e}") from None
    if len(out) > limit or not d.eof:
        raise PtxgenMLAError(f"{os.path.basename(path)}: decompresses to more than {limit} bytes, or is truncated")
    return out
