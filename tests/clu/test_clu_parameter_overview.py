"""fluxion.clu.parameter_overview against hand-written tables: clu 0.0.12's format by default, the older format
(the reference tutorials') with include_dtype=False."""

import logging
import types

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion.clu import parameter_overview


def make_params(asarray=jnp.asarray):
    # Values chosen so mean/std are exact: arange(6) has mean 2.5 and std
    # sqrt(35/12) = 1.7078; -2**-17 is exactly representable, so the constant
    # kernel has mean -7.62939453125e-06 and std exactly 0.
    return {
        'params': {
            'dense': {'kernel': asarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
                      'bias': asarray(np.zeros(3, np.float32))},
            'head': {'kernel': asarray(np.full((1000, 2), -2.0 ** -17, np.float32))},
        },
        'batch_stats': {'bn': {'var': asarray(np.ones(4, np.float32))}},
    }


TABLE_WITH_STATS = """\
+---------------------+-----------+---------+-------+-----------+------+
| Name                | Shape     | Dtype   | Size  | Mean      | Std  |
+---------------------+-----------+---------+-------+-----------+------+
| batch_stats/bn/var  | (4,)      | float32 | 4     | 1.0       | 0.0  |
| params/dense/bias   | (3,)      | float32 | 3     | 0.0       | 0.0  |
| params/dense/kernel | (2, 3)    | float32 | 6     | 2.5       | 1.71 |
| params/head/kernel  | (1000, 2) | float32 | 2,000 | -7.63e-06 | 0.0  |
+---------------------+-----------+---------+-------+-----------+------+
Total: 2,013 -- 8,052 bytes"""

TABLE_NO_STATS = """\
+---------------------+-----------+---------+-------+
| Name                | Shape     | Dtype   | Size  |
+---------------------+-----------+---------+-------+
| batch_stats/bn/var  | (4,)      | float32 | 4     |
| params/dense/bias   | (3,)      | float32 | 3     |
| params/dense/kernel | (2, 3)    | float32 | 6     |
| params/head/kernel  | (1000, 2) | float32 | 2,000 |
+---------------------+-----------+---------+-------+
Total: 2,013 -- 8,052 bytes"""

TABLE_EMPTY = """\
+------+-------+-------+------+------+-----+
| Name | Shape | Dtype | Size | Mean | Std |
+------+-------+-------+------+------+-----+
+------+-------+-------+------+------+-----+
Total: 0 -- 0 bytes"""

TABLE_MAX_LINES = """\
+---------------------+-----------+---------+-------+
| Name                | Shape     | Dtype   | Size  |
+---------------------+-----------+---------+-------+
| batch_stats/bn/var  | (4,)      | float32 | 4     |
| params/dense/bias   | (3,)      | float32 | 3     |
[...]
+---------------------+-----------+---------+-------+
Total: 2,013 -- 8,052 bytes"""


def test_overview_with_stats():
    assert parameter_overview.get_parameter_overview(make_params()) == TABLE_WITH_STATS


def test_overview_without_stats():
    out = parameter_overview.get_parameter_overview(make_params(), include_stats=False)
    assert out == TABLE_NO_STATS


def test_overview_accepts_numpy_leaves_and_read_only_mappings():
    params = make_params(asarray=np.asarray)
    frozen = types.MappingProxyType({k: types.MappingProxyType(v) for k, v in params.items()})
    assert parameter_overview.get_parameter_overview(frozen) == TABLE_WITH_STATS


def test_empty_overview():
    assert parameter_overview.get_parameter_overview({}) == TABLE_EMPTY


def test_max_lines_truncates_rows():
    out = parameter_overview.get_parameter_overview(make_params(), include_stats=False,
                                                     max_lines=8)
    assert out == TABLE_MAX_LINES


def test_sharding_column_for_unsharded_arrays():
    out = parameter_overview.get_parameter_overview({'w': np.zeros((2,), np.float32)},
                                                     include_stats='sharding')
    assert out.splitlines()[1] == '| Name | Shape | Dtype   | Size | Sharding |'
    assert out.splitlines()[3] == '| w    | (2,)  | float32 | 2    | ()       |'


def test_global_mode_has_stats_and_sharding_columns():
    out = parameter_overview.get_parameter_overview({'w': np.zeros((2,), np.float32)},
                                                     include_stats='global')
    assert out.splitlines()[1] == '| Name | Shape | Dtype   | Size | Mean | Std | Sharding |'
    assert out.splitlines()[3] == '| w    | (2,)  | float32 | 2    | 0.0  | 0.0 | ()       |'


def test_value_formatting():
    fmt = parameter_overview._default_table_value_formatter
    assert [fmt(v) for v in (True, 1234567, 0.0, 0.035712, -3.1812e-05, 12345.0, (784, 128))] == [
        'True', '1,234,567', '0.0', '0.0357', '-3.18e-05', '1.23e+04', '(784, 128)']


def test_count_parameters():
    assert parameter_overview.count_parameters(make_params()) == 2013
    assert parameter_overview.count_parameters({}) == 0
    assert parameter_overview.count_parameters({'a': {'b': None}, 'c': np.ones((2, 5))}) == 10


def test_log_parameter_overview(caplog):
    with caplog.at_level(logging.INFO, logger='fluxion.clu.parameter_overview'):
        parameter_overview.log_parameter_overview(make_params(), msg='My model')
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage() == '\nMy model\n' + TABLE_WITH_STATS


def test_log_only_on_the_selected_process(caplog):
    # A single-host run is process 0.
    with caplog.at_level(logging.INFO, logger='fluxion.clu.parameter_overview'):
        parameter_overview.log_parameter_overview(make_params(), jax_logging_process=1)
        assert not caplog.records
        parameter_overview.log_parameter_overview(make_params(), jax_logging_process=0)
    assert caplog.records[0].getMessage() == '\n' + TABLE_WITH_STATS


def test_log_splits_long_tables_into_80_line_records(caplog):
    params = {f'layer_{i:03d}': np.zeros((1,), np.float32) for i in range(100)}
    with caplog.at_level(logging.INFO, logger='fluxion.clu.parameter_overview'):
        parameter_overview.log_parameter_overview(params, include_stats=False)
    lines = parameter_overview.get_parameter_overview(params, include_stats=False).split('\n')
    assert [r.getMessage() for r in caplog.records] == [
        '\n' + '\n'.join(lines[:80]), '\n' + '\n'.join(lines[80:])]


def test_errors():
    with pytest.raises(ValueError, match='dictionary'):
        parameter_overview.get_parameter_overview([np.zeros(3)])
    with pytest.raises(ValueError, match='include_stats'):
        parameter_overview.get_parameter_overview({}, include_stats='mean')
    with pytest.raises(ValueError, match='dataclasses'):
        parameter_overview.make_table([1, 2])


def test_flatten_dict():
    assert parameter_overview.flatten_dict({'a': {'b': 1, 'c': {'d': 2}}, 'e': 3}) == {
        'a/b': 1, 'a/c/d': 2, 'e': 3}


def test_matches_real_clu_when_installed():
    clu_po = pytest.importorskip('clu.parameter_overview')
    rng = np.random.default_rng(0)
    params = {'params': {'Dense_0': {'kernel': rng.standard_normal((784, 128)).astype(np.float32)
                                     * 0.035, 'bias': np.zeros(128, np.float32)},
                         'Dense_1': {'kernel': rng.standard_normal((128, 10)).astype(np.float32)}}}
    for include_stats in (True, False):
        assert parameter_overview.get_parameter_overview(params, include_stats=include_stats) == \
            clu_po.get_parameter_overview(params, include_stats=include_stats)


TUTORIAL_TABLE = """+----------------------+------------+---------+-----------+--------+
| Name                 | Shape      | Size    | Mean      | Std    |
+----------------------+------------+---------+-----------+--------+
| params/Dense1/bias   | (128,)     | 128     | 0.0       | 0.0    |
| params/Dense1/kernel | (784, 128) | 100,352 | -3.18e-05 | 0.0357 |
| params/Dense2/bias   | (128,)     | 128     | 0.0       | 0.0    |
| params/Dense2/kernel | (128, 128) | 16,384  | -3.94e-06 | 0.0894 |
| params/Output/bias   | (10,)      | 10      | 0.0       | 0.0    |
| params/Output/kernel | (128, 10)  | 1,280   | -0.000669 | 0.0911 |
+----------------------+------------+---------+-----------+--------+
Total: 118,282"""


def test_tutorial_mlp_overview_matches_the_tutorial_printout():
    """Tutorial 000: the MLP initialised from PRNGKey(42) (older, non-partitionable PRNG stream) prints this table."""
    import fluxion
    import fluxion.flax.linen as nn
    import fluxion.numpy as jnp
    from fluxion import random

    class Model(nn.Module):
        @nn.compact
        def __call__(self, inputs):
            inputs = inputs.reshape(inputs.shape[0], -1) / 255.
            x = nn.relu(nn.Dense(128, name='Dense1')(inputs))
            x = nn.relu(nn.Dense(128, name='Dense2')(x))
            return nn.Dense(10, name='Output')(x)

    old = fluxion.config.jax_threefry_partitionable
    fluxion.config.update('jax_threefry_partitionable', False)
    try:
        _, m_key = random.split(random.PRNGKey(42), 2)
        params = Model().init(m_key, jnp.ones((1, 28, 28)))
    finally:
        fluxion.config.update('jax_threefry_partitionable', old)
    assert parameter_overview.get_parameter_overview(params, include_dtype=False) == TUTORIAL_TABLE


def test_older_format_without_dtype():
    """``include_dtype=False``: no Dtype column and no byte count (older clu releases, the tutorials)."""
    out = parameter_overview.get_parameter_overview(make_params(), include_stats=False, include_dtype=False)
    assert out == """\
+---------------------+-----------+-------+
| Name                | Shape     | Size  |
+---------------------+-----------+-------+
| batch_stats/bn/var  | (4,)      | 4     |
| params/dense/bias   | (3,)      | 3     |
| params/dense/kernel | (2, 3)    | 6     |
| params/head/kernel  | (1000, 2) | 2,000 |
+---------------------+-----------+-------+
Total: 2,013"""
    assert parameter_overview.get_parameter_overview({}, include_dtype=False) == """\
+------+-------+------+------+-----+
| Name | Shape | Size | Mean | Std |
+------+-------+------+------+-----+
+------+-------+------+------+-----+
Total: 0"""
