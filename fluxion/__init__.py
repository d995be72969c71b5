"""fluxion: composable transformations of NumPy programs (grad, jit, vmap, ...), mirroring `jax`.

`import fluxion as jax` runs JAX programs on the CPU with NumPy as the backend.
"""

from ._src.version import __version__ as __version__

from ._src.api import (ShapeDtypeStruct as ShapeDtypeStruct, block_until_ready as block_until_ready,
                       device_get as device_get, device_put as device_put, eval_shape as eval_shape, grad as grad,
                       hessian as hessian, jacfwd as jacfwd, jacrev as jacrev, jvp as jvp, linearize as linearize,
                       make_jaxpr as make_jaxpr, value_and_grad as value_and_grad, vjp as vjp, vmap as vmap)
# The NumPy backend registers the implementations of every primitive. It is imported right after `api` and before
# `jit`: it imports lax (all primitives), whose collectives import the pmap runtime, which imports jit; jit in turn
# imports the backend package, which must therefore already be loading rather than be started by jit.
from ._src import backends as _backends  # noqa: F401
from ._src.config import config as config
from ._src.custom_derivatives import custom_jvp as custom_jvp, custom_vjp as custom_vjp
from ._src.core import Array as Array
from ._src.jit import jit as jit
from ._src.caches import clear_caches as clear_caches
from ._src.tree_util import tree_leaves as tree_leaves, tree_map as tree_map, tree_structure as tree_structure
from ._src.aliases import install_aliases as install_aliases, uninstall_aliases as uninstall_aliases
from ._src.callback import pure_callback as pure_callback
from ._src.config import (check_tracer_leaks as check_tracer_leaks, checking_leaks as checking_leaks,
                          debug_infs as debug_infs, debug_key_reuse as debug_key_reuse, debug_nans as debug_nans,
                          default_device as default_device, default_matmul_precision as default_matmul_precision,
                          default_prng_impl as default_prng_impl, disable_jit as disable_jit,
                          enable_checks as enable_checks, enable_custom_prng as enable_custom_prng,
                          enable_x64 as enable_x64, explain_cache_misses as explain_cache_misses,
                          legacy_prng_key as legacy_prng_key, log_compiles as log_compiles,
                          numpy_dtype_promotion as numpy_dtype_promotion,
                          numpy_rank_promotion as numpy_rank_promotion,
                          threefry_partitionable as threefry_partitionable, transfer_guard as transfer_guard,
                          transfer_guard_device_to_device as transfer_guard_device_to_device,
                          transfer_guard_device_to_host as transfer_guard_device_to_host,
                          transfer_guard_host_to_device as transfer_guard_host_to_device)
from ._src.custom_derivatives import custom_gradient as custom_gradient
from ._src.dtypes import float0 as float0
from ._src.environment import (host_count as host_count, host_id as host_id, host_ids as host_ids,
                               print_environment_info as print_environment_info,
                               process_indices as process_indices)
from ._src.staging import (closure_convert as closure_convert, ensure_compile_time_eval as ensure_compile_time_eval,
                           linear_transpose as linear_transpose, named_call as named_call,
                           named_scope as named_scope, typeof as typeof)
from ._src.checkpoint import (checkpoint as checkpoint, checkpoint_policies as checkpoint_policies,
                              remat as remat)

from . import errors as errors  # noqa: E402
from . import lax as lax  # noqa: E402
from . import numpy as numpy  # noqa: E402
from . import tree as tree  # noqa: E402
from . import tree_util as tree_util  # noqa: E402
from . import dtypes as dtypes  # noqa: E402
from . import nn as nn  # noqa: E402
from . import random as random  # noqa: E402
from . import debug as debug  # noqa: E402
from . import experimental as experimental  # noqa: E402
from . import ad_checkpoint as ad_checkpoint  # noqa: E402
from . import image as image  # noqa: E402
from . import ops as ops  # noqa: E402
from . import typing as typing  # noqa: E402

jacobian = jacrev

# Devices, pmap and multi-process data parallelism (issue 6).
from ._src.devices import (Device as Device, default_backend as default_backend,  # noqa: E402
                           device_count as device_count, devices as devices,
                           local_device_count as local_device_count, local_devices as local_devices,
                           process_count as process_count, process_index as process_index)
from ._src.pmap import (device_put_replicated as device_put_replicated,  # noqa: E402
                        device_put_sharded as device_put_sharded, pmap as pmap)
from . import distributed as distributed  # noqa: E402

# Meshes, shardings and shard_map (sharding issue).
from . import sharding as sharding  # noqa: E402
from ._src.sharding import PartitionSpec as P, make_mesh as make_mesh, set_mesh as set_mesh  # noqa: E402
from ._src.sharding import NamedSharding as NamedSharding, Shard as Shard  # noqa: E402
from ._src.placement import (make_array_from_callback as make_array_from_callback,  # noqa: E402
                             make_array_from_process_local_data as make_array_from_process_local_data,
                             make_array_from_single_device_arrays as make_array_from_single_device_arrays,
                             reshard as reshard)
from ._src.shard_map import shard_map as shard_map, smap as smap  # noqa: E402

# The rest of the `jax` top level (jax-toplevel issue).
from ._src.buffers import (copy_to_host_async as copy_to_host_async,  # noqa: E402
                           effects_barrier as effects_barrier, live_arrays as live_arrays)
from ._src.config import (allow_f16_reductions as allow_f16_reductions,  # noqa: E402
                          make_user_context as make_user_context, no_execution as no_execution,
                          no_tracing as no_tracing, softmax_custom_jvp as softmax_custom_jvp,
                          jax2tf_associative_scan_reductions as jax2tf_associative_scan_reductions)
from ._src.fwd_and_bwd import fwd_and_bwd as fwd_and_bwd  # noqa: E402
from . import custom_batching as custom_batching  # noqa: E402
from . import custom_derivatives as custom_derivatives  # noqa: E402
from . import dlpack as dlpack  # noqa: E402
from . import memory as memory  # noqa: E402
from . import monitoring as monitoring  # noqa: E402
from . import profiler as profiler  # noqa: E402
from . import stages as stages  # noqa: E402
from . import ref as ref  # noqa: E402
from . import export as export  # noqa: E402
from ._src.numpy.dslice import ds as ds  # noqa: E402
from ._src.refs import (Ref as Ref, empty_ref as empty_ref, free_ref as free_ref, freeze as freeze,  # noqa: E402
                        new_ref as new_ref)
from . import version as version  # noqa: E402


def __getattr__(name: str):
    # `jax.scipy` is reachable as an attribute after `import jax`; fluxion.scipy is imported on first use (it is large
    # and most programs never touch it).
    if name == "scipy":
        import importlib
        return importlib.import_module(".scipy", __name__)
    raise AttributeError(f"module 'fluxion' has no attribute {name!r}")
