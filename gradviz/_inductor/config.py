"""torch._inductor.config: the flags scripts set before torch.compile, with torch 2.13's defaults.
gradviz compiles nothing (torch.compile returns its argument), so setting them changes nothing."""

from __future__ import annotations

from types import SimpleNamespace

aggressive_fusion = False
autotune_local_cache = True
benchmark_kernel = False
compile_threads = 1
conv_1x1_as_mm = False
coordinate_descent_tuning = False
cpp_wrapper = False
debug = False
epilogue_fusion = True
fallback_random = False
force_fuse_int_mm_with_mul = False
freezing = False
fx_graph_cache = True
fx_graph_remote_cache = None
implicit_fallbacks = True
layout_optimization = True
max_autotune = False
max_autotune_gemm = False
shape_padding = True
use_mixed_mm = True

triton = SimpleNamespace(unique_kernel_names=True, cudagraphs=False, cudagraph_trees=True)
cpp = SimpleNamespace(threads=-1, simdlen=None)
