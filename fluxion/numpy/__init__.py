"""`fluxion.numpy`: the NumPy API (mirrors `jax.numpy`), written in terms of `fluxion.lax` primitives."""

import sys as _sys

import numpy as _np

from .._src import array_methods as _array_methods
from .._src.core import Array as ndarray  # noqa: F401
from .._src.dtypes import (finfo as finfo, iinfo as iinfo,  # noqa: F401
                           promote_types as promote_types, result_type as result_type)
from ..dtypes import issubdtype as issubdtype  # aware of PRNG key dtypes  # noqa: E402
from .._src.numpy.creation import (arange as arange, array as array, asarray as asarray, copy as copy,
                                   empty as empty, empty_like as empty_like, eye as eye, from_dlpack as from_dlpack,
                                   frombuffer as frombuffer, full as full, full_like as full_like,
                                   identity as identity, linspace as linspace, logspace as logspace,
                                   meshgrid as meshgrid, ones as ones, ones_like as ones_like, tri as tri,
                                   zeros as zeros, zeros_like as zeros_like)
from .._src.numpy.linear import (cross as cross, dot as dot, einsum as einsum, inner as inner, kron as kron,
                                 matmul as matmul, outer as outer, tensordot as tensordot, vdot as vdot,
                                 vecdot as vecdot)
from .._src.numpy.misc import (allclose as allclose, array_equal as array_equal, array_equiv as array_equiv,
                               iscomplexobj as iscomplexobj, isclose as isclose, isrealobj as isrealobj,
                               isscalar as isscalar, median as median, percentile as percentile,
                               quantile as quantile, unique as unique)
from .._src.numpy.reductions import (all as all, amax as amax, amin as amin, any as any, argmax as argmax,  # noqa: A004
                                     argmin as argmin, average as average, count_nonzero as count_nonzero,
                                     cumprod as cumprod, cumsum as cumsum, cumulative_prod as cumulative_prod,
                                     cumulative_sum as cumulative_sum, max as max, mean as mean, min as min,
                                     nancumprod as nancumprod, nancumsum as nancumsum, nanmax as nanmax,
                                     nanmean as nanmean, nanmin as nanmin, nansum as nansum,
                                     prod as prod, ptp as ptp, std as std, sum as sum, var as var)
from .._src.numpy.device_args import device_of as _device_of, to_device as _to_device  # noqa: F401
from .._src.numpy.scalar_types import (bfloat16 as bfloat16, bool_ as bool_, cdouble as cdouble,
                                       complex128 as complex128, complex64 as complex64, complex_ as complex_,
                                       csingle as csingle, double as double, float16 as float16,
                                       float32 as float32, float64 as float64, float_ as float_, half as half,
                                       int16 as int16, int32 as int32, int64 as int64, int8 as int8, int_ as int_,
                                       single as single, uint as uint, uint16 as uint16, uint32 as uint32,
                                       uint64 as uint64, uint8 as uint8)
from .._src.numpy.shape import (_bitcast_view as _bitcast_view, append as append, array_split as array_split,
                                astype as astype, atleast_1d as atleast_1d, atleast_2d as atleast_2d,
                                atleast_3d as atleast_3d, broadcast_arrays as broadcast_arrays,
                                broadcast_to as broadcast_to, column_stack as column_stack, concat as concat,
                                concatenate as concatenate, diag as diag, diagonal as diagonal, dstack as dstack,
                                expand_dims as expand_dims, flip as flip, fliplr as fliplr, flipud as flipud,
                                hsplit as hsplit, hstack as hstack, matrix_transpose as matrix_transpose,
                                moveaxis as moveaxis, ndim as ndim, pad as pad, permute_dims as permute_dims,
                                ravel as ravel, repeat as repeat, reshape as reshape, roll as roll,
                                rollaxis as rollaxis, rot90 as rot90, row_stack as row_stack, shape as shape,
                                size as size, split as split, squeeze as squeeze, stack as stack,
                                swapaxes as swapaxes, tile as tile, trace as trace, transpose as transpose,
                                tril as tril, triu as triu, vsplit as vsplit, vstack as vstack)
from .._src.numpy.ufuncs import (abs as abs, absolute as absolute, acos as acos, acosh as acosh,  # noqa: A004
                                 angle as angle, arccos as arccos, arccosh as arccosh, arcsin as arcsin,
                                 arcsinh as arcsinh, arctan as arctan, arctan2 as arctan2, arctanh as arctanh,
                                 around as around, asin as asin, asinh as asinh, atan as atan, atan2 as atan2,
                                 atanh as atanh, bitwise_invert as bitwise_invert,
                                 bitwise_left_shift as bitwise_left_shift, bitwise_not as bitwise_not,
                                 bitwise_right_shift as bitwise_right_shift, cbrt as cbrt, ceil as ceil, clip as clip,
                                 conj as conj, conjugate as conjugate, copysign as copysign, cos as cos, cosh as cosh,
                                 deg2rad as deg2rad, degrees as degrees, divide as divide, divmod as divmod,
                                 equal as equal, exp as exp, exp2 as exp2, expm1 as expm1, fabs as fabs, fix as fix,
                                 float_power as float_power, floor as floor, floor_divide as floor_divide, fmax as fmax,
                                 fmin as fmin, fmod as fmod, greater as greater, greater_equal as greater_equal,
                                 heaviside as heaviside, hypot as hypot, imag as imag, invert as invert,
                                 isfinite as isfinite, isinf as isinf, isnan as isnan, isneginf as isneginf,
                                 isposinf as isposinf, ldexp as ldexp, left_shift as left_shift, less as less,
                                 less_equal as less_equal, log as log, log10 as log10, log1p as log1p, log2 as log2,
                                 logical_not as logical_not, mod as mod, nan_to_num as nan_to_num,
                                 nextafter as nextafter, not_equal as not_equal, positive as positive, power as power,
                                 rad2deg as rad2deg, radians as radians, real as real, reciprocal as reciprocal,
                                 remainder as remainder, right_shift as right_shift, rint as rint, round as round,
                                 sign as sign, signbit as signbit, sin as sin, sinc as sinc, sinh as sinh, sqrt as sqrt,
                                 square as square, tan as tan, tanh as tanh, true_divide as true_divide, trunc as trunc,
                                 where as where)

from .._src.numpy.indexing import (IndexUpdateHelper as _IndexUpdateHelper, bincount as bincount, choose as choose,
                                   diag_indices as diag_indices, diag_indices_from as diag_indices_from,
                                   getitem as _getitem, ix_ as ix_, ravel_multi_index as ravel_multi_index,
                                   select as select, take as take, take_along_axis as take_along_axis,
                                   tril_indices as tril_indices, tril_indices_from as tril_indices_from,
                                   triu_indices as triu_indices, triu_indices_from as triu_indices_from,
                                   unravel_index as unravel_index)
from .._src.numpy.sorting import (argsort as argsort, argwhere as argwhere, compress as compress,
                                  digitize as digitize, extract as extract, flatnonzero as flatnonzero,
                                  lexsort as lexsort, nonzero as nonzero, searchsorted as searchsorted, sort as sort)
from .._src.numpy.differences import (diff as diff, ediff1d as ediff1d, gradient as gradient, interp as interp,
                                      trapezoid as trapezoid, unwrap as unwrap)
from .._src.numpy.statistics import (corrcoef as corrcoef, cov as cov, nanargmax as nanargmax,
                                     nanargmin as nanargmin,
                                     nanmedian as nanmedian, nanpercentile as nanpercentile, nanprod as nanprod,
                                     nanquantile as nanquantile, nanstd as nanstd, nanvar as nanvar)
from .._src.numpy.setops import (intersect1d as intersect1d, isin as isin, setdiff1d as setdiff1d,
                                 setxor1d as setxor1d, union1d as union1d, unique_all as unique_all,
                                 unique_counts as unique_counts, unique_inverse as unique_inverse,
                                 unique_values as unique_values)
from .._src.numpy.polynomial import (poly as poly, polyadd as polyadd, polyder as polyder, polydiv as polydiv,
                                     polyfit as polyfit, polyint as polyint, polymul as polymul, polysub as polysub,
                                     polyval as polyval, roots as roots, vander as vander)
from .._src.numpy.signal import convolve as convolve, correlate as correlate
from .._src.numpy.array_edit import (argpartition as argpartition, block as block, delete as delete,
                                     diagflat as diagflat, dsplit as dsplit, fill_diagonal as fill_diagonal,
                                     insert as insert, packbits as packbits, partition as partition, place as place,
                                     put as put, put_along_axis as put_along_axis, resize as resize,
                                     sort_complex as sort_complex, trim_zeros as trim_zeros,
                                     unpackbits as unpackbits, unstack as unstack)
from .._src.numpy.ufuncs_extra import (bitwise_count as bitwise_count, frexp as frexp, gcd as gcd, i0 as i0,
                                       iscomplex as iscomplex, isreal as isreal, lcm as lcm, modf as modf,
                                       pow as pow, spacing as spacing)  # noqa: A004
from .._src.numpy.functional import (apply_along_axis as apply_along_axis, apply_over_axes as apply_over_axes,
                                     fromfunction as fromfunction, piecewise as piecewise, vectorize as vectorize)
from .._src.numpy.index_tricks import (c_ as c_, index_exp as index_exp, indices as indices,
                                       mask_indices as mask_indices, mgrid as mgrid, ogrid as ogrid, r_ as r_, s_ as s_)
from .._src.numpy.windows import (bartlett as bartlett, blackman as blackman, hamming as hamming, hanning as hanning,
                                  kaiser as kaiser)
from .._src.numpy.io import (fromfile as fromfile, fromiter as fromiter, fromstring as fromstring, load as load,
                             save as save, savez as savez)
from .._src.numpy.printing import (array_repr as array_repr, array_str as array_str,
                                   get_printoptions as get_printoptions, printoptions as printoptions,
                                   set_printoptions as set_printoptions)
from .._src.numpy.products import einsum_path as einsum_path, matvec as matvec, vecmat as vecmat
from .._src.numpy.sequences import geomspace as geomspace
from .._src.numpy.type_api import (ComplexWarning as ComplexWarning, broadcast_shapes as broadcast_shapes,
                                   can_cast as can_cast, character as character, flexible as flexible,
                                   isdtype as isdtype, iterable as iterable, object_ as object_)
from .._src.numpy.ufunc import frompyfunc as frompyfunc, ufunc as ufunc
# The functions JAX makes `ufunc` objects (with reduce/accumulate/outer/at/reduceat).
from .._src.numpy.ufunc_objects import (add as add, bitwise_and as bitwise_and, bitwise_or as bitwise_or,
                                        bitwise_xor as bitwise_xor, logaddexp as logaddexp, logaddexp2 as logaddexp2,
                                        logical_and as logical_and, logical_or as logical_or,
                                        logical_xor as logical_xor, maximum as maximum, minimum as minimum,
                                        multiply as multiply, negative as negative, subtract as subtract)
from .._src.numpy.histograms import (histogram as histogram, histogram2d as histogram2d,
                                     histogram_bin_edges as histogram_bin_edges, histogramdd as histogramdd)

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
dtype = _np.dtype
integer = _np.integer
signedinteger = _np.signedinteger
unsignedinteger = _np.unsignedinteger
floating = _np.floating
complexfloating = _np.complexfloating
inexact = _np.inexact
number = _np.number
generic = _np.generic
bool = bool_  # noqa: A001  (Array-API name)
__array_api_version__ = "2024.12"

from .._src.numpy.array_api_info import __array_namespace_info__ as __array_namespace_info__  # noqa: E402

from . import fft as fft  # noqa: E402
from . import linalg as linalg  # noqa: E402

_array_methods.install_numpy_namespace(_sys.modules[__name__])

# Typed PRNG key arrays in the structural functions (reshape, stack, where, take, ...): see key_arrays.py.
from .._src.numpy import key_arrays as _key_arrays  # noqa: E402

_key_arrays.install(globals(), _key_arrays.NUMPY_RULES, lax_fn=False)
