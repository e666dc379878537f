"""Loading generated PTX and launching it with cuda.bindings on torch's stream.

Per device: the primary context torch uses, its SM count and shared-memory limit, and
two constant buffers (lengths of INT32_MAX and a -inf sink) that stand in for an absent
topk_length or attn_sink. Per (manifest, target) and device: a Program, the module
loaded once with its functions and workspace. Per call shape: a Launcher holding each
kernel's argument array, packed once; a call writes its tensors' addresses into the
pointer slots and launches, nothing else.
"""

import ctypes
import threading

from . import pack
from .errors import PtxgenMLAError
from .targets import device_arch

_lock = threading.RLock()
_devices = {}   # ordinal -> Device
_driver = None
_SUCCESS = None
_INVALID_CONTEXT = None

INT32_MAX = 2**31 - 1
CONST_ROWS = 65535
CONST_HEADS = 128

_CTYPE = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64,
          "u64": ctypes.c_uint64}


def driver():
    """cuda.bindings.driver, initialized; a PtxgenMLAError in one line without it."""
    global _driver, _SUCCESS, _INVALID_CONTEXT
    if _driver is None:
        try:
            from cuda.bindings import driver as d
        except ImportError as e:
            raise PtxgenMLAError(f"ptxgen_mla needs cuda-python's cuda.bindings to launch kernels ({e}); "
                                 "pip install cuda-bindings") from None
        _SUCCESS = d.CUresult.CUDA_SUCCESS
        _INVALID_CONTEXT = d.CUresult.CUDA_ERROR_INVALID_CONTEXT
        check(d.cuInit(0), "cuInit", d)
        _driver = d
    return _driver


def check(result, what, d=None):
    d = d or _driver
    err, *rest = result
    if err != d.CUresult.CUDA_SUCCESS:
        _, name = d.cuGetErrorName(err)
        _, text = d.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(err)
        text = text.decode() if isinstance(text, bytes) else ""
        raise PtxgenMLAError(f"CUDA driver: {what}: {name}: {text}")
    return rest[0] if len(rest) == 1 else tuple(rest) if rest else None


class Device:
    """One GPU as torch uses it: its primary context, limits and constant buffers."""

    def __init__(self, torch, ordinal):
        d = driver()
        if torch.cuda.is_current_stream_capturing():
            raise PtxgenMLAError("ptxgen_mla: the first call on a device ran during CUDA graph capture, where "
                                 "modules cannot be loaded nor buffers filled: make one call of each shape "
                                 "before capturing (a warm-up call, as engines do)")
        with torch.cuda.device(ordinal):
            torch.empty(1, device=f"cuda:{ordinal}")  # makes torch's primary context current
            self.dev = check(d.cuDeviceGet(ordinal), "cuDeviceGet")
            self.ctx = check(d.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
            if int(check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")) == 0:
                check(d.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
            attr = d.CUdevice_attribute
            self.sms = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.dev), "SM count")
            self.smem_optin = check(d.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, self.dev), "shared memory per block")
            major = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.dev), "major")
            minor = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.dev), "minor")
            self.capability = (major, minor)
            self.arch = device_arch(self.capability)
            self.ordinal = ordinal
            self.no_lengths = torch.full((CONST_ROWS,), INT32_MAX, dtype=torch.int32, device=f"cuda:{ordinal}")
            self.no_sink = torch.full((CONST_HEADS,), float("-inf"), dtype=torch.float32, device=f"cuda:{ordinal}")
            torch.cuda.synchronize(ordinal)
        self.programs = {}

    def program(self, torch, man, target):
        key = (man.path, target)
        p = self.programs.get(key)
        if p is None:
            if torch.cuda.is_current_stream_capturing():
                raise PtxgenMLAError(f"ptxgen_mla: {man.path} ({target}) would be loaded during CUDA graph capture: "
                                     "make one call of each shape before capturing (a warm-up call)")
            p = self.programs[key] = Program(torch, self, man, target)
        return p


def device(torch, ordinal):
    with _lock:
        dev = _devices.get(ordinal)
        if dev is None:
            dev = _devices[ordinal] = Device(torch, ordinal)
        return dev


class Program:
    """A manifest's target loaded on one device: module, functions, workspace."""

    def __init__(self, torch, dev, man, target):
        d = driver()
        self.man, self.target, self.dev = man, target, dev
        t = man.targets[target]
        too_big = [k["entry"] for k in t["kernels"] if k["dynamic_shared_bytes"] > dev.smem_optin]
        if too_big:
            raise PtxgenMLAError(f"{man.path}: {target} kernels {too_big} need more shared memory than this "
                                 f"{dev.arch} device allows per block ({dev.smem_optin} bytes): generate the "
                                 f"kernel for {dev.arch} (-targets {dev.arch})")
        ptx = man.ptx(target)
        with torch.cuda.device(dev.ordinal):
            self.module = check(d.cuModuleLoadData(ptx + b"\0"), f"cuModuleLoadData({target} PTX of {man.path})")
            self.funcs = {}
            for k in t["kernels"]:
                fn = check(d.cuModuleGetFunction(self.module, k["entry"].encode()), f"cuModuleGetFunction({k['entry']})")
                if k["shared_opt_in"]:
                    check(d.cuFuncSetAttribute(fn, d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               k["dynamic_shared_bytes"]), f"cuFuncSetAttribute({k['entry']})")
                self.funcs[k["entry"]] = fn
            sizes = pack.workspace_sizes(man, target, dev.sms)
            elems = pack.workspace_elems(man, target)
            self.workspace_bytes = sizes
            dtype_of = {"f32": torch.float32, "bf16": torch.bfloat16, "i32": torch.int32, "u8": torch.uint8}
            esize = {"f32": 4, "bf16": 2, "i32": 4, "u8": 1}
            self.workspace = {}
            for name, n in sizes.items():
                e = elems.get(name, "u8")
                self.workspace[name] = torch.zeros(-(-n // esize[e]), dtype=dtype_of[e], device=f"cuda:{dev.ordinal}")
        self.rule = man.rule(target)

    def workspace_args(self):
        return {n: (t.data_ptr(), t.numel() * t.element_size()) for n, t in self.workspace.items()}


class Launcher:
    """The launches of one call shape, their arguments packed once. run() writes the
    call's addresses into the slots and launches each kernel on the stream."""

    def __init__(self, program, launches):
        d = driver()
        self.program = program
        self.slots = (ctypes.c_uint64 * len(pack.SLOTS))()
        slot_index = {n: i for i, n in enumerate(pack.SLOTS)}
        base = ctypes.addressof(self.slots)
        self._keep = []
        self.kernels = []
        for kl in launches:
            ptrs = (ctypes.c_void_p * len(kl.params))()
            for i, p in enumerate(kl.params):
                if p.source == "slot":
                    ptrs[i] = base + 8 * slot_index[p.value]
                else:
                    v = _CTYPE[p.kind](p.value)
                    self._keep.append(v)
                    ptrs[i] = ctypes.addressof(v)
            self._keep.append(ptrs)
            fn = program.funcs[kl.entry]
            cfg = None
            if kl.programmatic:
                attr = d.CUlaunchAttribute()
                attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
                attr.value.programmaticStreamSerializationAllowed = 1
                cfg = d.CUlaunchConfig()
                cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = kl.grid
                cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = kl.block
                cfg.sharedMemBytes = kl.shared
                cfg.attrs = [attr]
                cfg.numAttrs = 1
                self._keep.append(attr)
            self.kernels.append((fn, kl.grid, kl.block, kl.shared, ctypes.addressof(ptrs), cfg, kl.entry))
        self.entries = [kl.entry for kl in launches]
        self._streams = {}  # raw stream handle -> CUstream
        self._cfg_stream = {}  # (kernel index, raw stream) -> CUlaunchConfig with hStream set
        self.push_context = False

    def run(self, stream):
        """Launches the kernels on stream (a raw handle); the slots hold the addresses."""
        d = _driver
        if self.push_context:
            check(d.cuCtxPushCurrent(self.program.dev.ctx), "cuCtxPushCurrent")
            try:
                self._launch(d, stream)
            finally:
                d.cuCtxPopCurrent()
            return
        try:
            self._launch(d, stream)
        except _WrongContext:
            # This thread has another context current (or none): push the device's
            # around this and every later call.
            self.push_context = True
            self.run(stream)

    def _launch(self, d, stream):
        s = self._streams.get(stream)
        if s is None:
            s = self._streams[stream] = d.CUstream(stream)
        for i, (fn, grid, block, shared, args, cfg, entry) in enumerate(self.kernels):
            if cfg is None:
                err = d.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                       shared, s, args, 0)[0]
            else:
                c = self._cfg_stream.get((i, stream))
                if c is None:
                    c = self._cfg_stream[(i, stream)] = _copy_config(d, cfg, s)
                err = d.cuLaunchKernelEx(c, fn, args, 0)[0]
            if err != _SUCCESS:
                if err == _INVALID_CONTEXT and i == 0 and not self.push_context:
                    raise _WrongContext()
                check((err,), f"launch of {entry}")


class _WrongContext(Exception):
    """The first launch found another context current on this thread."""


def _copy_config(d, cfg, stream):
    c = d.CUlaunchConfig()
    c.gridDimX, c.gridDimY, c.gridDimZ = cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ
    c.blockDimX, c.blockDimY, c.blockDimZ = cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ
    c.sharedMemBytes = cfg.sharedMemBytes
    c.attrs = cfg.attrs
    c.numAttrs = cfg.numAttrs
    c.hStream = stream
    return c
