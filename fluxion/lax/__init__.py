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
from .._src.placement import with_sharding_constraint as with_sharding_constraint  # noqa: E402
from .._src.lax.derived import (approx_max_k as approx_max_k, approx_min_k as approx_min_k,  # noqa: E402
                                batch_matmul as batch_matmul, broadcast_like as broadcast_like,
                                broadcast_shapes as broadcast_shapes, broadcast_to_rank as broadcast_to_rank,
                                collapse as collapse, composite as composite,
                                conv_general_dilated_local as conv_general_dilated_local,
                                conv_general_dilated_patches as conv_general_dilated_patches,
                                conv_general_shape_tuple as conv_general_shape_tuple,
                                conv_shape_tuple as conv_shape_tuple,
                                conv_transpose_shape_tuple as conv_transpose_shape_tuple, dtype as dtype,
                                dynamic_index_in_dim as dynamic_index_in_dim,
                                dynamic_slice_in_dim as dynamic_slice_in_dim,
                                dynamic_update_index_in_dim as dynamic_update_index_in_dim,
                                dynamic_update_slice_in_dim as dynamic_update_slice_in_dim, empty as empty,
                                full_like as full_like, index_take as index_take,
                                platform_dependent as platform_dependent, reciprocal as reciprocal,
                                reduce_window_shape_tuple as reduce_window_shape_tuple, split as split,
                                stack as stack, tile as tile, unstack as unstack)
from .._src.lax.general_reduce import reduce as reduce  # noqa: E402
from .._src.lax.options import (AccuracyMode as AccuracyMode,  # noqa: E402
                                ConvGeneralDilatedDimensionNumbers as ConvGeneralDilatedDimensionNumbers,
                                DotAlgorithm as DotAlgorithm, DotAlgorithmPreset as DotAlgorithmPreset,
                                DotDimensionNumbers as DotDimensionNumbers, Precision as Precision,
                                PrecisionLike as PrecisionLike, RandomAlgorithm as RandomAlgorithm,
                                RoundingMethod as RoundingMethod, Tolerance as Tolerance)
from .._src.lax.barrier import (optimization_barrier as optimization_barrier,  # noqa: E402
                                optimization_barrier_p as optimization_barrier_p)
from .._src.lax.precision import (reduce_precision as reduce_precision,  # noqa: E402
                                  reduce_precision_p as reduce_precision_p)
from .._src.lax.integer import mulhi as mulhi, mulhi_p as mulhi_p  # noqa: E402
from .._src.lax.special import (bessel_i0e as bessel_i0e, bessel_i0e_p as bessel_i0e_p,  # noqa: E402
                                bessel_i1e as bessel_i1e, bessel_i1e_p as bessel_i1e_p, betainc as betainc,
                                igamma as igamma, igamma_grad_a as igamma_grad_a,
                                igamma_grad_a_p as igamma_grad_a_p, igamma_p as igamma_p, igammac as igammac,
                                igammac_p as igammac_p, random_gamma_grad as random_gamma_grad,
                                regularized_incomplete_beta_p as regularized_incomplete_beta_p, zeta as zeta,
                                zeta_p as zeta_p)

# The primitives, under JAX's names (each has the same name and operands as JAX's; parameters follow fluxion's
# wrappers). polygamma_p is not exported: fluxion's takes the order as a parameter, JAX's as an operand.
from .._src.lax.elementwise import (abs_p as abs_p, acos_p as acos_p, acosh_p as acosh_p, add_p as add_p,  # noqa: E402
                                    and_p as and_p, asin_p as asin_p, asinh_p as asinh_p, atan2_p as atan2_p,
                                    atan_p as atan_p, atanh_p as atanh_p,
                                    bitcast_convert_type_p as bitcast_convert_type_p, cbrt_p as cbrt_p,
                                    ceil_p as ceil_p, clamp_p as clamp_p, clz_p as clz_p, complex_p as complex_p,
                                    conj_p as conj_p, convert_element_type_p as convert_element_type_p,
                                    cos_p as cos_p, cosh_p as cosh_p, digamma_p as digamma_p, div_p as div_p,
                                    eq_p as eq_p, erf_inv_p as erf_inv_p, erf_p as erf_p, erfc_p as erfc_p,
                                    exp2_p as exp2_p, exp_p as exp_p, expm1_p as expm1_p, floor_p as floor_p,
                                    ge_p as ge_p, gt_p as gt_p, imag_p as imag_p, integer_pow_p as integer_pow_p,
                                    is_finite_p as is_finite_p, le_p as le_p, lgamma_p as lgamma_p,
                                    log1p_p as log1p_p, log_p as log_p, logistic_p as logistic_p, lt_p as lt_p,
                                    max_p as max_p, min_p as min_p, mul_p as mul_p, ne_p as ne_p, neg_p as neg_p,
                                    nextafter_p as nextafter_p, not_p as not_p, or_p as or_p,
                                    population_count_p as population_count_p, pow_p as pow_p, real_p as real_p,
                                    rem_p as rem_p, round_p as round_p, rsqrt_p as rsqrt_p,
                                    select_n_p as select_n_p, shift_left_p as shift_left_p,
                                    shift_right_arithmetic_p as shift_right_arithmetic_p,
                                    shift_right_logical_p as shift_right_logical_p, sign_p as sign_p,
                                    sin_p as sin_p, sinh_p as sinh_p, sqrt_p as sqrt_p, square_p as square_p,
                                    sub_p as sub_p, tan_p as tan_p, tanh_p as tanh_p, xor_p as xor_p)
from .._src.lax.structural import (broadcast_in_dim_p as broadcast_in_dim_p,  # noqa: E402
                                   concatenate_p as concatenate_p, copy_p as copy_p,
                                   dynamic_slice_p as dynamic_slice_p,
                                   dynamic_update_slice_p as dynamic_update_slice_p, iota_p as iota_p, pad_p as pad_p,
                                   reshape_p as reshape_p, rev_p as rev_p, slice_p as slice_p,
                                   squeeze_p as squeeze_p, stop_gradient_p as stop_gradient_p,
                                   transpose_p as transpose_p)
from .._src.lax.reductions import (argmax_p as argmax_p, argmin_p as argmin_p,  # noqa: E402
                                   dot_general_p as dot_general_p, reduce_and_p as reduce_and_p,
                                   reduce_max_p as reduce_max_p, reduce_min_p as reduce_min_p,
                                   reduce_or_p as reduce_or_p, reduce_prod_p as reduce_prod_p,
                                   reduce_sum_p as reduce_sum_p, reduce_xor_p as reduce_xor_p)
from .._src.lax.cumulative import (cumlogsumexp_p as cumlogsumexp_p, cummax_p as cummax_p,  # noqa: E402
                                   cummin_p as cummin_p, cumprod_p as cumprod_p, cumsum_p as cumsum_p)
from .._src.lax.control_flow import cond_p as cond_p, scan_p as scan_p, while_p as while_p  # noqa: E402
from .._src.lax.convolution import conv_general_dilated_p as conv_general_dilated_p  # noqa: E402
from .._src.lax.indexing import (gather_p as gather_p, scatter_add_p as scatter_add_p,  # noqa: E402
                                 scatter_max_p as scatter_max_p, scatter_min_p as scatter_min_p,
                                 scatter_mul_p as scatter_mul_p, scatter_p as scatter_p)
from .._src.lax.sorting import sort_p as sort_p, top_k_p as top_k_p  # noqa: E402
from .._src.lax.windowed import (reduce_window_max_p as reduce_window_max_p,  # noqa: E402
                                 reduce_window_min_p as reduce_window_min_p,
                                 reduce_window_sum_p as reduce_window_sum_p)
from .._src.lax.parallel import (all_gather_p as all_gather_p, all_to_all_p as all_to_all_p,  # noqa: E402
                                 axis_index_p as axis_index_p, pmax_p as pmax_p, pmin_p as pmin_p,
                                 ppermute_p as ppermute_p, psum_p as psum_p)
from .._src.solves import custom_root as custom_root  # noqa: E402
from .._src.lax.ragged import (RaggedDotDimensionNumbers as RaggedDotDimensionNumbers,  # noqa: E402
                               ragged_dot as ragged_dot, ragged_dot_general as ragged_dot_general)
from .._src.lax.linear_solve import (custom_linear_solve as custom_linear_solve,  # noqa: E402
                                     linear_solve_p as linear_solve_p)
from .._src.lax.elementwise import polygamma_p as polygamma_p  # noqa: E402
from .._src.lax.rng_bits import (rng_bit_generator as rng_bit_generator,  # noqa: E402
                                 rng_bit_generator_p as rng_bit_generator_p)

# Typed PRNG key arrays in the structural primitives' wrappers (reshape, select, dynamic_slice, ...).
from .._src.numpy import key_arrays as _key_arrays  # noqa: E402

_key_arrays.install(globals(), _key_arrays.LAX_RULES, lax_fn=True)
