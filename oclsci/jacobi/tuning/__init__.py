"""Configurations of the Jacobi kernels: what they are, their defaults, the cache, the search.

- :mod:`~oclsci.jacobi.tuning.space`: :class:`KernelConfig`, a kernel of the registry
  (:mod:`oclsci.jacobi.kernels`) with its parameters and work-group;
- :mod:`~oclsci.jacobi.tuning.defaults`: defaults per device type, :func:`choose_config`;
- :mod:`~oclsci.jacobi.tuning.cache`: the JSON cache that ``oclsci tune`` fills;
- :mod:`~oclsci.jacobi.tuning.search`: the tuner itself (imported on demand: it needs the
  solver).
"""

from oclsci.jacobi.tuning.cache import (
    CACHE_FORMAT,
    cache_disabled,
    cache_key,
    cache_path,
    cached_config,
    load_cache,
    make_entry,
    save_entry,
    size_class,
)
from oclsci.jacobi.tuning.defaults import (
    auto_kernel,
    choose_config,
    default_candidates,
    default_config,
    device_candidates,
    device_default,
    suited_kernels,
)
from oclsci.jacobi.tuning.space import LOCAL_SIZE_LIMIT, KernelConfig, round_up

__all__ = ["CACHE_FORMAT", "cache_disabled", "cache_key", "cache_path", "cached_config",
           "load_cache", "make_entry", "save_entry", "size_class", "auto_kernel",
           "choose_config", "default_candidates", "default_config", "device_candidates",
           "device_default", "suited_kernels", "LOCAL_SIZE_LIMIT", "KernelConfig", "round_up"]
