"""The sharding test table, written against the `jax` API so it runs unchanged on fluxion and on real JAX.

Every case is `f(jax) -> value`, where `jax` is the module under test (`fluxion` or `jax`, both with 8 CPU devices).
`run_case` turns the value into plain data (arrays -> NumPy, slices -> (start, stop), devices -> ids) or, when the
case raises, into `("raises", class name, message)`. `tests/parallel/test_sharding.py` runs the table in-process on
fluxion and in a subprocess on JAX and compares the two.

This module must not import jax or fluxion itself (the subprocess imports it with only jax available).
"""

from __future__ import annotations

import numpy as np

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def norm(x):
    """Plain, comparable data from a case result."""
    if isinstance(x, dict):
        return {norm(k): norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(norm(v) for v in x)
    if isinstance(x, slice):
        return ("slice", x.start, x.stop)
    if hasattr(x, "platform") and hasattr(x, "id"):
        return ("device", x.id)
    if isinstance(x, (str, int, float, bool, type(None))):
        return x
    if isinstance(x, (set, frozenset)):
        return sorted(norm(v) for v in x)
    return np.asarray(x)


def run_case(name, jax, cases=None):
    """Runs case `name` of `cases` (default: this module's table) on `jax`."""
    try:
        return ("ok", norm((CASES if cases is None else cases)[name](jax)))
    except Exception as e:  # noqa: BLE001 - errors are part of the table
        return ("raises", type(e).__name__, str(e))


def _auto_mesh(jax, shape=(2, 4), names=("x", "y")):
    return jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(shape))


SPECS = {"replicated": (), "x": ("x",), "x_y": ("x", "y"), "xy": (("x", "y"),), "none_y": (None, "y"),
         "y_x": ("y", "x"), "yx_none": (("y", "x"), None)}


def _spec(jax, entries):
    return jax.sharding.PartitionSpec(*entries)


def _data(shape=(8, 4)):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


# -- PartitionSpec, Mesh -------------------------------------------------------------------------------------------

@case
def pspec_normalisation(jax):
    P = jax.sharding.PartitionSpec
    specs = [P(), P("x"), P("x", ("y",)), P(("x", "y"), None), P(["x", "y"]), P(None, "x")]
    return ([repr(s) for s in specs], P(("x",)) == P("x"), P("x", None) == P("x"), P("x") == ("x",),
            hash(P("x")) == hash(P("x", None)), P is jax.P, len(P("x", None)), P("x", "y")[1],
            repr(P("x") + ("y",)))


@case
def mesh_properties(jax):
    m = jax.make_mesh((2, 4), ("x", "y"))
    auto = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("a", "b"))
    return (repr(m), dict(m.shape), m.axis_sizes, m.size, m.axis_names, [d.id for d in m.devices.flat],
            m.devices.shape, repr(m.axis_types), repr(auto), auto.axis_types == (jax.sharding.AxisType.Auto,) * 2,
            repr(jax.sharding.AbstractMesh((2, 4), ("x", "y"))), str(jax.sharding.AxisType.Manual))


@case
def mesh_utils_create_device_mesh(jax):
    from importlib import import_module
    mu = import_module(jax.__name__ + ".experimental.mesh_utils")
    return [[d.id for d in row] for row in mu.create_device_mesh((4, 2))]


@case
def make_mesh_too_many_devices(jax):
    return jax.make_mesh((4, 4), ("x", "y"))


@case
def make_mesh_fewer_devices(jax):
    return [d.id for d in jax.make_mesh((3,), ("x",)).devices.flat]


@case
def set_mesh_context(jax):
    m = _auto_mesh(jax)
    f = jax.shard_map(lambda v: jax.lax.psum(v, "y"), in_specs=jax.P("x", "y"), out_specs=jax.P("x"))
    with jax.set_mesh(m):
        out = f(_data())
        inside = jax.sharding.get_abstract_mesh().axis_names
    return out, inside, jax.sharding.get_abstract_mesh().axis_names


# -- NamedSharding ------------------------------------------------------------------------------------------------

def _sharding_case(entries):
    def fn(jax):
        s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), _spec(jax, entries))
        shape = (8, 8)
        return (repr(s), s.shard_shape(shape), s.devices_indices_map(shape), s.is_fully_replicated, s.num_devices,
                sorted(d.id for d in s.device_set), sorted(d.id for d in s.addressable_devices),
                repr(s.spec), s.is_fully_addressable, repr(s.update(spec=jax.P("y"))))
    return fn


def _shards_case(entries):
    def fn(jax):
        s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), _spec(jax, entries))
        a = jax.device_put(_data((8, 8)), s)
        return (a.sharding == s, [(sh.device, sh.index, sh.replica_id, sh.data) for sh in a.addressable_shards],
                np.asarray(a), a.is_fully_replicated, sorted(d.id for d in a.devices()))
    return fn


for _name, _entries in SPECS.items():
    CASES[f"named_sharding_{_name}"] = _sharding_case(_entries)
    CASES[f"addressable_shards_{_name}"] = _shards_case(_entries)


@case
def single_device_sharding(jax):
    a = jax.numpy.ones(3)
    s = a.sharding
    d = jax.device_put(np.ones(2), jax.devices()[3])
    return (repr(s), s.shard_shape((3,)), s.devices_indices_map((4, 2)), s.is_fully_replicated,
            repr(d.sharding), [(sh.device, sh.index) for sh in d.addressable_shards])


@case
def error_axis_not_in_mesh(jax):
    return jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("z"))


@case
def error_duplicate_axis(jax):
    return jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x", "x"))


@case
def error_not_divisible(jax):
    return jax.device_put(np.ones((3, 4)), jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x")))


@case
def error_shard_shape_not_divisible(jax):
    return jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P(None, "y")).shard_shape((4, 6))


# -- make_array_from_* -------------------------------------------------------------------------------------------

@case
def make_array_from_callback(jax):
    s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("y", None))
    g = _data((8, 6))
    a = jax.make_array_from_callback((8, 6), s, lambda idx: g[idx])
    return (np.asarray(a), a.sharding == s, [sh.data for sh in a.addressable_shards])


@case
def make_array_from_single_device_arrays(jax):
    s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x", "y"))
    g = _data((4, 8))
    blocks = [jax.device_put(g[idx], d) for d, idx in s.addressable_devices_indices_map((4, 8)).items()]
    a = jax.make_array_from_single_device_arrays((4, 8), s, blocks)
    return (np.asarray(a), a.sharding == s)


@case
def make_array_from_process_local_data(jax):
    s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x"))
    a = jax.make_array_from_process_local_data(s, _data((4, 3)))
    return (np.asarray(a), a.sharding == s)


# -- shard_map -----------------------------------------------------------------------------------------------------

def _smap(jax, f, in_specs, out_specs, **kw):
    return jax.shard_map(f, mesh=_auto_mesh(jax), in_specs=in_specs, out_specs=out_specs, **kw)


@case
def shard_map_block_shapes_and_identity(jax):
    seen = []

    def f(a, b):
        seen.append((a.shape, b.shape))
        return a * 2, b + 1

    out = _smap(jax, f, (jax.P("x", "y"), jax.P(("y", "x"))), (jax.P("x", "y"), jax.P(("y", "x"))))(
        _data((4, 8)), _data((16,)))
    return seen[-1:], out


@case
def shard_map_psum_one_and_two_axes(jax):
    lax = jax.lax
    f = _smap(jax, lambda v: (lax.psum(v, "x"), lax.psum(v, ("x", "y")), lax.pmean(v, "y"), lax.pmax(v, "x"),
                              lax.pmin(v, ("y", "x"))), jax.P("x", "y"), (jax.P(None, "y"), jax.P(), jax.P("x"),
                                                                          jax.P(None, "y"), jax.P()))
    return f(_data((4, 8)) - 7.5)


@case
def shard_map_axis_index(jax):
    lax = jax.lax
    f = _smap(jax, lambda v: (v[:1, :1] * 0 + lax.axis_index("x"), v[:1, :1] * 0 + lax.axis_index("y"),
                              v[:1, :1] * 0 + lax.axis_index(("x", "y"))), jax.P("x", "y"), jax.P("x", "y"))
    return f(_data((4, 8)))


@case
def shard_map_all_gather(jax):
    lax = jax.lax
    # check_vma=False: JAX types all_gather's result as still varying (fluxion's check would accept these specs).
    f = _smap(jax, lambda v: (lax.all_gather(v, "y", tiled=True), lax.all_gather(v, "x", axis=1),
                              lax.all_gather(v, ("x", "y"), tiled=True)), jax.P("x", "y"),
              (jax.P("x"), jax.P(None, None, "y"), jax.P()), check_vma=False)
    return f(_data((4, 8)))


@case
def shard_map_ppermute_and_scatter(jax):
    lax = jax.lax
    perm = [(i, (i + 1) % 4) for i in range(4)]
    f = _smap(jax, lambda v: (lax.ppermute(v, "y", perm), lax.psum_scatter(v, "y", scatter_dimension=0, tiled=True)),
              jax.P("x", "y"), (jax.P("x", "y"), jax.P(("x", "y"), None)))
    return f(_data((8, 8)))


@case
def shard_map_all_to_all(jax):
    f = _smap(jax, lambda v: jax.lax.all_to_all(v, "y", 0, 1, tiled=True), jax.P(None, "y"), jax.P(None, "y"))
    return f(_data((8, 8)))


@case
def shard_map_matmul_reduce_scatter(jax):
    """The docs' block matmul: contract a sharded dimension, reduce with psum."""
    jnp = jax.numpy

    def matmul(a, b):
        return jax.lax.psum(jnp.dot(a, b), "y")

    f = _smap(jax, matmul, (jax.P("x", "y"), jax.P("y", None)), jax.P("x", None))
    a, b = _data((8, 16)) / 100, _data((16, 4)) / 100
    return f(a, b), np.asarray(f(a, b).sharding.spec == jax.P("x", None))


@case
def shard_map_under_jit_and_grad(jax):
    jnp = jax.numpy

    def loss_block(w, x):
        return jax.lax.psum(jnp.sum(jnp.tanh(x @ w) ** 2), ("x", "y"))

    f = _smap(jax, loss_block, (jax.P(), jax.P(("x", "y"))), jax.P())
    w = _data((3, 2)) / 10
    x = _data((16, 3)) / 50
    return (jax.jit(f)(w, x), jax.grad(f)(w, x), jax.jit(jax.grad(f, argnums=(0, 1)))(w, x))


@case
def shard_map_vmap(jax):
    f = _smap(jax, lambda v: jax.lax.psum(v, "x") * jax.lax.axis_index("y"), jax.P("x", "y"), jax.P(None, "y"))
    return jax.vmap(f)(np.stack([_data((4, 8)), -_data((4, 8))]))


@case
def shard_map_axis_names_subset(jax):
    m = _auto_mesh(jax)
    f = jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=m, in_specs=jax.P("x"), out_specs=jax.P(),
                      axis_names={"x"})
    return jax.jit(f)(_data((4, 8)))


@case
def shard_map_check_vma_false(jax):
    f = _smap(jax, lambda v: v * 0 + jax.lax.psum(v, "x"), jax.P("x"), jax.P(), check_vma=False)
    return f(_data((4, 4)))


@case
def shard_map_experimental_check_rep(jax):
    from importlib import import_module
    legacy = import_module(jax.__name__ + ".experimental.shard_map").shard_map
    f = legacy(lambda v: jax.lax.psum(v, ("x", "y")), _auto_mesh(jax), in_specs=(jax.P(("x", "y")),),
               out_specs=jax.P(), check_rep=False)
    return f(_data((16, 2)))


@case
def shard_map_error_not_divisible(jax):
    return _smap(jax, lambda v: v, jax.P("y"), jax.P("y"))(np.ones((6, 2), np.float32))


@case
def shard_map_error_axis_not_in_mesh(jax):
    return _smap(jax, lambda v: v, jax.P("z"), jax.P("z"))(np.ones((8, 2), np.float32))


@case
def shard_map_error_unreplicated_output(jax):
    return _smap(jax, lambda v: v * 2, jax.P("x"), jax.P())(np.ones((8, 2), np.float32))


# -- jit shardings, with_sharding_constraint, reshard ---------------------------------------------------------------

@case
def jit_in_out_shardings(jax):
    m = _auto_mesh(jax)
    s_in = jax.sharding.NamedSharding(m, jax.P("x"))
    s_out = jax.sharding.NamedSharding(m, jax.P(None, "y"))
    f = jax.jit(lambda a, b: (a * 2 + b, a.sum()), in_shardings=(s_in, None), out_shardings=(s_out, None))
    y, t = f(_data((4, 8)), 1.0)
    return (y, y.sharding == s_out, [(sh.device, sh.index) for sh in y.addressable_shards], t)


@case
def jit_in_shardings_not_divisible(jax):
    s = jax.sharding.NamedSharding(_auto_mesh(jax), jax.P("y"))
    return jax.jit(lambda a: a + 1, in_shardings=s)(np.ones((6,), np.float32))


@case
def with_sharding_constraint_and_reshard(jax):
    m = _auto_mesh(jax)
    s = jax.sharding.NamedSharding(m, jax.P("y", "x"))

    def f(v):
        return jax.lax.with_sharding_constraint(jax.numpy.sin(v), s) * 3

    x = _data((8, 8)) / 10
    eager = jax.lax.with_sharding_constraint(x, s)
    explicit = jax.make_mesh((2, 4), ("x", "y"))  # reshard needs Explicit axes in JAX
    se = jax.sharding.NamedSharding(explicit, jax.P("y", "x"))
    r = jax.reshard(jax.device_put(x, jax.sharding.NamedSharding(explicit, jax.P("x"))), se)
    return (jax.jit(f)(x), jax.grad(lambda v: f(v).sum())(x), eager.sharding == s, r.sharding == se, np.asarray(r))


@case
def with_sharding_constraint_bad_rank(jax):
    s = jax.sharding.NamedSharding(_auto_mesh(jax), jax.P("x", "y"))
    return jax.jit(lambda v: jax.lax.with_sharding_constraint(v, s))(np.ones(8, np.float32))


@case
def shard_map_grad_through_collectives(jax):
    lax, jnp = jax.lax, jax.numpy
    perm = [(i, (i + 1) % 4) for i in range(4)]

    def block(w, v):
        moved = lax.ppermute(v * w[0], "y", perm)
        gathered = lax.all_gather(jnp.sin(v), "x", tiled=True)
        scattered = lax.psum_scatter(v * w[1], "y", scatter_dimension=1, tiled=True)
        return lax.psum(jnp.sum(moved ** 2) + jnp.sum(gathered * w[2]) + jnp.sum(scattered ** 3), ("x", "y"))

    f = _smap(jax, block, (jax.P(), jax.P("x", "y")), jax.P())
    w = np.array([0.5, -1.5, 2.0], np.float32)
    v = _data((4, 16)) / 40
    return f(w, v), jax.grad(f, argnums=(0, 1))(w, v)


@case
def device_put_spec_under_set_mesh(jax):
    m = jax.make_mesh((2, 4), ("x", "y"))
    with jax.set_mesh(m):
        a = jax.device_put(_data((4, 8)), jax.P("x", "y"))
    return repr(a.sharding), np.asarray(a)


@case
def shard_map_infers_in_specs(jax):
    m = jax.make_mesh((2, 4), ("x", "y"))
    a = jax.device_put(_data((4, 8)), jax.sharding.NamedSharding(m, jax.P("x", "y")))
    b = jax.device_put(_data((8,)), jax.sharding.NamedSharding(m, jax.P("y")))
    f = jax.shard_map(lambda u, v: u * v, mesh=m, out_specs=jax.P("x", "y"))
    return f(a, b)


@case
def shard_map_error_spec_longer_than_rank(jax):
    return _smap(jax, lambda v: v, jax.P("x", "y"), jax.P("x"))(np.ones((8,), np.float32))


@case
def shard_map_error_duplicate_axis(jax):
    return _smap(jax, lambda v: v, jax.P("x", "x"), jax.P("x"))(np.ones((8, 8), np.float32))


@case
def make_array_from_single_device_arrays_wrong_count(jax):
    s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x"))
    blocks = [jax.device_put(np.ones((2, 2), np.float32), d) for d in jax.devices()[:7]]
    return jax.make_array_from_single_device_arrays((4, 2), s, blocks)


@case
def make_array_from_single_device_arrays_wrong_shape(jax):
    s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x"))
    blocks = [jax.device_put(np.ones((3, 2), np.float32), d) for d in jax.devices()]
    return jax.make_array_from_single_device_arrays((4, 2), s, blocks)


@case
def make_array_from_callback_wrong_block(jax):
    s = jax.sharding.NamedSharding(jax.make_mesh((2, 4), ("x", "y")), jax.P("x"))
    return jax.make_array_from_callback((4, 2), s, lambda idx: np.ones((3, 2), np.float32))


# -- the rest of jax.sharding and jax.experimental.mesh_utils ------------------------------------------------------

def _mesh_utils(jax):
    from importlib import import_module
    return import_module(jax.__name__ + ".experimental.mesh_utils")


@case
def abstract_device_and_abstract_mesh(jax):
    S = jax.sharding
    m = jax.make_mesh((2, 4), ("x", "y"))
    dev = S.AbstractDevice(device_kind="cpu", num_cores=None, platform="cpu")
    plain = S.AbstractMesh((2, 4), ("x", "y"), (S.AxisType.Explicit,) * 2)
    with_dev = S.AbstractMesh((2, 4), ("x", "y"), (S.AxisType.Explicit,) * 2, abstract_device=dev)
    return (repr(m.abstract_mesh), repr(dev), dev == m.abstract_mesh.abstract_device, m.abstract_mesh == plain,
            m.abstract_mesh == with_dev, repr(with_dev.update(axis_sizes=(4, 2))),
            repr(plain.update_axis_types({"y": S.AxisType.Auto})), plain.abstract_device)


@case
def manual_axis_type(jax):
    M = jax.sharding.ManualAxisType
    a = M(varying={"x"}, unreduced={"y"})
    return (repr(a), repr(M()), a == M(varying=frozenset({"x"}), unreduced={"y"}), repr(a.update(varying={"z"})),
            sorted(a.vur), sorted(a.invarying(jax.sharding.AbstractMesh((2, 4), ("x", "y"),
                                                                         (jax.sharding.AxisType.Manual,) * 2))))


@case
def manual_axis_type_overlap(jax):
    return jax.sharding.ManualAxisType(varying={"x"}, reduced={"x"})


@case
def make_single_device_sharding(jax):
    s = jax.sharding.make_single_device_sharding(jax.devices()[3])
    x = jax.device_put(_data((2, 3)), s)
    return (repr(s), s == jax.sharding.SingleDeviceSharding(jax.devices()[3]), x.sharding == s,
            [sh.device for sh in x.addressable_shards], s.shard_shape((2, 3)))


@case
def use_abstract_mesh_contexts(jax):
    S = jax.sharding
    am = S.AbstractMesh((8,), ("z",))
    with S.use_abstract_mesh(am):
        inside = repr(S.get_abstract_mesh())
    with jax.set_mesh(jax.make_mesh((2, 4), ("x", "y"))):
        same_size = S.AbstractMesh((4, 2), ("a", "b"))
        with S.use_abstract_mesh(same_size):
            swapped = repr(S.get_abstract_mesh())
        restored = repr(S.get_abstract_mesh())
    return inside, swapped, restored, repr(S.get_abstract_mesh())


@case
def use_abstract_mesh_size_change(jax):
    S = jax.sharding
    with jax.set_mesh(jax.make_mesh((2, 4), ("x", "y"))):
        with S.use_abstract_mesh(S.AbstractMesh((4,), ("z",))):
            pass


@case
def use_abstract_mesh_needs_abstract(jax):
    return jax.sharding.use_abstract_mesh(jax.make_mesh((2, 4), ("x", "y")))


@case
def auto_and_explicit_axes(jax):
    S, P = jax.sharding, jax.P
    seen = []

    def body(a):
        seen.append(repr(S.get_abstract_mesh().axis_types))
        return a * 2 + 1

    x = _data((8, 4))
    with jax.set_mesh(jax.make_mesh((2, 4), ("x", "y"))):
        a = jax.device_put(x, P("x", "y"))
        eager = S.auto_axes(body, out_sharding=P("x", None))(a)
        jitted = jax.jit(S.auto_axes(body, axes="y", out_sharding=P("x", None)))(a)
        by_call = S.auto_axes(body)(a, out_sharding=P(None, "y"))
    with jax.set_mesh(_auto_mesh(jax)):
        b = jax.jit(S.explicit_axes(body, in_sharding=P("x", None)))(x)
    return eager, eager.sharding.spec == P("x", None), jitted, by_call.sharding.spec == P(None, "y"), b, seen


@case
def auto_axes_without_out_sharding(jax):
    with jax.set_mesh(jax.make_mesh((2, 4), ("x", "y"))):
        return jax.sharding.auto_axes(lambda a: a)(_data())


@case
def explicit_axes_without_mesh(jax):
    return jax.sharding.explicit_axes(lambda a: a, in_sharding=jax.P("x"))(_data())


@case
def create_hybrid_device_mesh_processes(jax):
    mu = _mesh_utils(jax)
    return [[d.id for d in row] for row in mu.create_hybrid_device_mesh((2, 4), (1, 1), process_is_granule=True)]


@case
def create_hybrid_device_mesh_too_few_granules(jax):
    return _mesh_utils(jax).create_hybrid_device_mesh((2, 2), (2, 1), process_is_granule=True)


@case
def create_hybrid_device_mesh_no_slices(jax):
    return _mesh_utils(jax).create_hybrid_device_mesh((2, 4), (1, 1))


@case
def device_kind_handler(jax):
    mu = _mesh_utils(jax)
    calls = []

    def reversed_order(shape, devices, *, contiguous_submeshes):
        calls.append((shape, len(devices), contiguous_submeshes))
        return np.array(devices[::-1], dtype=object).reshape(shape)

    kind = jax.devices()[0].device_kind
    had = kind in mu.device_kind_handler_dict
    mu.device_kind_handler_dict[kind] = reversed_order
    try:
        grid = mu.create_device_mesh((4, 2))
    finally:
        del mu.device_kind_handler_dict[kind]
    return had, [[d.id for d in row] for row in grid], calls, [[d.id for d in r] for r in mu.create_device_mesh((2, 4))]


@case
def smap_one_mesh_axis(jax):
    with jax.set_mesh(_auto_mesh(jax)):
        total = jax.smap(lambda v, w: jax.lax.psum(v * w, "y"), in_axes=(1, None), out_axes=None, axis_name="y")
        scaled = jax.jit(jax.smap(lambda v: v * jax.lax.axis_index("x"), in_axes=0, out_axes=0, axis_name="x"))
        return total(_data((4, 8)), np.float32(2)), scaled(_data())


@case
def smap_bad_axis_name(jax):
    return jax.smap(lambda v: v, in_axes=0, out_axes=0, axis_name=("x", "y"))


@case
def jit_outputs_take_input_shardings(jax):
    """fluxion's rule for jit outputs without out_shardings (placement.propagate_traced on Auto axes, the output
    types on Explicit ones) agrees with JAX's propagation on elementwise maps, reductions and an SGD step."""
    S, P, jnp = jax.sharding, jax.P, jax.numpy
    out = []
    for kind in (S.AxisType.Auto, S.AxisType.Explicit):
        m = jax.make_mesh((4, 2), ("data", "model"), axis_types=(kind, kind))
        x = jax.device_put(_data((8, 4)), S.NamedSharding(m, P("data", None)))
        p = {"w": jax.device_put(_data((4, 6)) / 24, S.NamedSharding(m, P(None, "model"))),
             "b": jax.device_put(np.ones(6, np.float32), S.NamedSharding(m, P("model")))}

        def loss(q, xb):
            return jnp.mean(jnp.tanh(xb @ q["w"] + q["b"]) ** 2)

        def step(q, xb):
            value, g = jax.value_and_grad(loss)(q, xb)
            return jax.tree_util.tree_map(lambda a, d: a - 0.1 * d, q, g), value

        new, value = jax.jit(step)(p, x)
        pair = jax.jit(lambda a, c: (c + 1, a - 1))(x, p["w"])
        total = jax.jit(lambda a: a.sum())(x)
        out.append((repr(jax.jit(lambda a: a * 2 + 1)(x).sharding.spec), total.sharding == S.NamedSharding(m, P()),
                    [repr(o.sharding.spec) for o in pair], repr(new["w"].sharding.spec), repr(new["b"].sharding.spec),
                    repr(value.sharding.spec), new, value))
    return out


@case
def make_array_from_process_local_data_trees(jax):
    m = _auto_mesh(jax)
    s = jax.sharding.NamedSharding(m, jax.P("x"))
    data = {"a": _data((4, 3)), "b": (np.arange(8, dtype=np.int32), _data((8, 2)))}
    out = jax.make_array_from_process_local_data({"a": s, "b": jax.sharding.NamedSharding(m, jax.P("y"))}, data)
    with jax.set_mesh(m):
        spec = jax.make_array_from_process_local_data(jax.P("y"), [_data((8,)), _data((4, 2))], [(8,), None])
    return (out, [repr(x.sharding.spec) for x in jax.tree_util.tree_leaves(out)], spec,
            [repr(x.sharding.spec) for x in spec])


@case
def make_array_from_process_local_data_wrong_global_shape(jax):
    s = jax.sharding.NamedSharding(_auto_mesh(jax), jax.P("x"))
    return jax.make_array_from_process_local_data(s, _data((4, 3)), (8, 3))


@case
def visualize_array_sharding_text(jax):
    """The printed table, character for character (JAX prints it through `rich`; no colour off a terminal)."""
    import contextlib
    import io
    m = jax.make_mesh((2, 4), ("x", "y"))
    layouts = [((4, 8), ("x", "y")), ((8,), ("y",)), ((4, 8), ("x", None)), ((4, 8), ()), ((8, 8), (("x", "y"),)),
               ((16, 4), ("y", "x")), ((8, 16), (None, "y")), ((6,), ())]
    out = []
    for shape, spec in layouts:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            jax.debug.visualize_array_sharding(jax.device_put(np.zeros(shape), _sharding_of(jax, m, spec)))
            jax.debug.visualize_sharding(shape, _sharding_of(jax, m, spec), scale=0.5, min_width=4)
        out.append(buf.getvalue())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        jax.debug.visualize_array_sharding(jax.device_put(np.zeros((4, 4)), jax.devices()[2]))
    return out, buf.getvalue()


def _sharding_of(jax, mesh, spec):
    return jax.sharding.NamedSharding(mesh, jax.P(*spec))


@case
def visualize_array_sharding_rank_3(jax):
    return jax.debug.visualize_array_sharding(jax.device_put(np.zeros((2, 2, 2)), jax.devices()[0]))


@case
def global_shards_one_process(jax):
    x = jax.device_put(_data((8, 4)), jax.sharding.NamedSharding(_auto_mesh(jax), jax.P("y")))
    return [(s.device, s.index, s.replica_id, s.data) for s in x.global_shards]
