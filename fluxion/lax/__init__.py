"""`fluxion.lax`: the primitive operations (mirrors `jax.lax`); no dtype promotion, explicit shapes."""

from .._src.lax.cumulative import (associative_scan as associative_scan, cumlogsumexp as cumlogsumexp,
                                   cummax as cummax, cummin as cummin, cumprod as cumprod, cumsum as cumsum)
from .._src.lax.elementwise import (polygamma as polygamma, abs as abs, acos as acos, acosh as acosh, add as add, asin as asin,  # noqa: A004
                                    asinh as asinh, atan as atan, atan2 as atan2, atanh as atanh,
                                    bitcast_convert_type as bitcast_convert_type, bitwise_and as bitwise_and,
                                    bitwise_not as bitwise_not, bitwise_or as bitwise_or, bitwise_xor as bitwise_xor,
                                    cbrt as cbrt, ceil as ceil, clamp as clamp, clz as clz, complex as complex,
                                    conj as conj, convert_element_type as convert_element_type, cos as cos,
                                    cosh as cosh, digamma as digamma, div as div, eq as eq, erf as erf, erf_inv as erf_inv,
                                    erfc as erfc, exp as exp, exp2 as exp2, expm1 as expm1, floor as floor, ge as ge,
                                    gt as gt, imag as imag, integer_pow as integer_pow, is_finite as is_finite,
                                    le as le, lgamma as lgamma, log as log, log1p as log1p, logistic as logistic,
                                    lt as lt, max as max, min as min, mul as mul, ne as ne, neg as neg,
                                    nextafter as nextafter, population_count as population_count, pow as pow,
                                    real as real, rem as rem, round as round, rsqrt as rsqrt, select as select,
                                    select_n as select_n, shift_left as shift_left,
                                    shift_right_arithmetic as shift_right_arithmetic,
                                    shift_right_logical as shift_right_logical, sign as sign, sin as sin, sinh as sinh,
                                    sqrt as sqrt, square as square, sub as sub, tan as tan, tanh as tanh)
from .._src.lax.reductions import (argmax as argmax, argmin as argmin, dot as dot, dot_general as dot_general,
                                   reduce_and as reduce_and, reduce_max as reduce_max, reduce_min as reduce_min,
                                   reduce_or as reduce_or, reduce_prod as reduce_prod, reduce_sum as reduce_sum,
                                   reduce_xor as reduce_xor)
from .._src.lax.structural import (broadcast as broadcast, broadcast_in_dim as broadcast_in_dim,
                                   broadcasted_iota as broadcasted_iota, concatenate as concatenate,
                                   dynamic_slice as dynamic_slice, dynamic_update_slice as dynamic_update_slice,
                                   expand_dims as expand_dims, full as full, index_in_dim as index_in_dim,
                                   iota as iota, pad as pad, reshape as reshape, rev as rev, slice as slice,
                                   slice_in_dim as slice_in_dim, squeeze as squeeze, transpose as transpose)
from .._src.lax.control_flow import (cond as cond, fori_loop as fori_loop, map as map, scan as scan,  # noqa: A004
                                     switch as switch, while_loop as while_loop)
from .._src.custom_derivatives import stop_gradient as stop_gradient
from .._src.lax.parallel import (all_gather as all_gather, all_to_all as all_to_all,  # noqa: E402
                                 axis_index as axis_index, axis_size as axis_size, pmax as pmax, pmean as pmean,
                                 pmin as pmin, ppermute as ppermute, pshuffle as pshuffle, psum as psum,
                                 psum_scatter as psum_scatter)
from .._src.lax.convolution import (ConvDimensionNumbers as ConvDimensionNumbers, conv as conv,  # noqa: E402
                                    conv_dimension_numbers as conv_dimension_numbers,
                                    conv_general_dilated as conv_general_dilated,
                                    conv_general_permutations as conv_general_permutations,
                                    conv_transpose as conv_transpose,
                                    conv_with_general_padding as conv_with_general_padding,
                                    padtype_to_pads as padtype_to_pads)
from .._src.lax.indexing import (GatherDimensionNumbers as GatherDimensionNumbers,  # noqa: E402
                                 GatherScatterMode as GatherScatterMode,
                                 ScatterDimensionNumbers as ScatterDimensionNumbers, gather as gather,
                                 scatter as scatter, scatter_add as scatter_add, scatter_apply as scatter_apply,
                                 scatter_max as scatter_max, scatter_min as scatter_min, scatter_mul as scatter_mul,
                                 scatter_sub as scatter_sub)
from .._src.lax.sorting import sort as sort, sort_key_val as sort_key_val, top_k as top_k  # noqa: E402
from .._src.lax.windowed import reduce_window as reduce_window  # noqa: E402
from .._src.lax.fft import FftType as FftType, fft as fft, fft_p as fft_p  # noqa: E402
from . import linalg as linalg  # noqa: E402
