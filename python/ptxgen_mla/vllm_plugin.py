"""The vLLM plugin: ptxgen's kernels behind vLLM's DeepSeek-V4 sparse decode backends.

pyproject.toml declares the entry point (group vllm.general_plugins, name ptxgen_mla),
which vLLM loads in every process. register():

1. picks the backend of the device, through vLLM's platform (NVML, no CUDA context):
   FLASHMLA_SPARSE_DSV4 on compute capability 9.x, FLASHINFER_MLA_SPARSE_DSV4 on 12.x,
   none elsewhere;
2. registers over it, with vLLM's public registry API (register_backend), a subclass of
   the backend vLLM had there (same name, metadata builder and KV-cache layout), built
   lazily from the enum's default class path;
3. routes the FlashMLA-convention decode call (vllm.v1.attention.ops.flashmla's
   flash_mla_with_kvcache, and the name bound in the DeepSeek-V4 modules that imported
   it) to ptxgen_mla.flash_mla_with_kvcache, and lets the FlashMLA DeepSeek-V4 layer
   keep its real head count (get_padded_num_q_heads), since the kernels need no
   padding to 64 or 128 heads.

vllm is imported only inside register(), so the package works without it. Nothing
raises at load (a plugin error would stop vLLM); every step it took or skipped is
logged under "ptxgen_mla". PTXGEN_MLA_VLLM=0 turns the plugin off; vLLM's own
VLLM_PLUGINS=... selects plugins too.
"""

import importlib
import logging
import os

log = logging.getLogger("ptxgen_mla")

ENV_SWITCH = "PTXGEN_MLA_VLLM"
BACKEND_BY_MAJOR = {9: "FLASHMLA_SPARSE_DSV4", 12: "FLASHINFER_MLA_SPARSE_DSV4"}
CLASS_NAMES = {"FLASHMLA_SPARSE_DSV4": "PtxgenFlashMLASparseDSV4Backend",
               "FLASHINFER_MLA_SPARSE_DSV4": "PtxgenFlashInferSparseDSV4Backend"}
# Where vLLM's FlashMLA-convention sparse decode call lives and is imported by name.
FLASHMLA_OPS = "vllm.v1.attention.ops.flashmla"
DSV4_CALLERS = ("vllm.models.deepseek_v4.nvidia.flashmla",)
DSV4_FLASHMLA_LAYER = ("vllm.models.deepseek_v4.nvidia.flashmla", "DeepseekV4FlashMLAAttention")

_original = {}   # backend name -> the class path vLLM had registered for it
_classes = {}    # our class name -> class
state = {"registered": None, "routed": [], "skipped": []}


def backend_for(capability):
    """The backend name the plugin takes over on a device of (major, minor), or None."""
    if capability is None:
        return None
    major = capability[0] if isinstance(capability, (tuple, list)) else getattr(capability, "major", None)
    return BACKEND_BY_MAJOR.get(major)


def register():
    """vLLM's entry point. Returns True when a backend was registered."""
    if os.environ.get(ENV_SWITCH, "1").strip() in ("0", "false", "no", "off"):
        log.info("ptxgen_mla: vLLM plugin off (%s=%s)", ENV_SWITCH, os.environ.get(ENV_SWITCH))
        return False
    try:
        registry = importlib.import_module("vllm.v1.attention.backends.registry")
        platforms = importlib.import_module("vllm.platforms")
    except ImportError as e:
        log.warning("ptxgen_mla: vLLM plugin not loaded: %s", e)
        return False
    try:
        cap = platforms.current_platform.get_device_capability()
    except Exception as e:  # a platform without devices: nothing to take over
        log.warning("ptxgen_mla: vLLM plugin: no device capability (%s)", e)
        return False
    name = backend_for(cap)
    enum = getattr(registry, "AttentionBackendEnum", None)
    if name is None:
        log.info("ptxgen_mla: vLLM plugin: no DeepSeek-V4 backend to take over on capability %s", cap)
        return False
    if enum is None or name not in getattr(enum, "__members__", {}):
        log.warning("ptxgen_mla: vLLM plugin: this vLLM has no AttentionBackendEnum.%s", name)
        return False
    member = enum[name]
    if name not in _original:
        path = member.value
        try:
            if member.is_overridden():
                path = member.get_path()
        except AttributeError:
            pass
        _original[name] = path
    ours = f"{__name__}.{CLASS_NAMES[name]}"
    registry.register_backend(member, ours)
    state["registered"] = (name, ours, _original[name])
    log.info("ptxgen_mla: registered %s over AttentionBackendEnum.%s (was %s)", ours, name, _original[name])
    route_decode()
    return True


def route_decode():
    """Points vLLM's FlashMLA-convention decode call at ptxgen_mla's, where it exists."""
    from .interface import flash_mla_with_kvcache
    for mod_name in (FLASHMLA_OPS,) + DSV4_CALLERS:
        try:
            mod = importlib.import_module(mod_name)
        except Exception as e:  # not in this vLLM, or it needs a GPU library
            state["skipped"].append(f"{mod_name}: {e}")
            continue
        if hasattr(mod, "flash_mla_with_kvcache"):
            if getattr(mod.flash_mla_with_kvcache, "__module__", "") != "ptxgen_mla.interface":
                mod._ptxgen_original_flash_mla_with_kvcache = mod.flash_mla_with_kvcache
            mod.flash_mla_with_kvcache = flash_mla_with_kvcache
            state["routed"].append(mod_name)
    mod_name, cls_name = DSV4_FLASHMLA_LAYER
    try:
        layer = getattr(importlib.import_module(mod_name), cls_name)
    except Exception as e:
        state["skipped"].append(f"{mod_name}.{cls_name}: {e}")
        return
    if hasattr(layer, "get_padded_num_q_heads"):
        layer.get_padded_num_q_heads = classmethod(_unpadded_heads)
        state["routed"].append(f"{mod_name}.{cls_name}.get_padded_num_q_heads")
    log.info("ptxgen_mla: decode routed through %s; skipped %s", state["routed"], state["skipped"])


def _unpadded_heads(cls, num_heads):
    from .catalog import MAX_HEADS
    if num_heads > MAX_HEADS:
        raise ValueError(f"ptxgen_mla: {num_heads} query heads per GPU: want at most {MAX_HEADS}")
    return num_heads


def _resolve(path):
    mod, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


def _make_class(our_name):
    backend = next(n for n, c in CLASS_NAMES.items() if c == our_name)
    if backend not in _original:
        raise AttributeError(f"{__name__}.{our_name}: register() has not run for {backend}")
    base = _resolve(_original[backend])
    return type(our_name, (base,), {
        "__module__": __name__,
        "__doc__": f"{base.__name__} with ptxgen_mla's kernels for the decode (ptxgen_mla.vllm_plugin).",
        "ptxgen_mla": True,
    })


def __getattr__(name):
    # vLLM resolves the registered class path after register() ran; the class is built
    # then, as a subclass of the backend it replaces, so importing this module never
    # imports vllm.
    if name in CLASS_NAMES.values():
        cls = _classes.get(name)
        if cls is None:
            cls = _classes[name] = _make_class(name)
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
