"""Tests for ``looprl.core.namedarray``."""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pytest
import torch

from looprl.core import RolloutResult
from looprl.core.namedarray import (
    NamedArray,
    concat,
    from_dict,
    namedarray,
    recursive_aggregate,
    recursive_apply,
    stack,
)


@namedarray
class MyPolicyState:
    hx: np.ndarray


@namedarray
class Transition:
    """A transition."""

    obs: np.ndarray
    reward: np.ndarray
    info: np.ndarray = None

    def total(self) -> float:
        return float(self.reward.sum())


@namedarray
class TimedTransition(Transition):
    t: np.ndarray = None


def make_batch(n: int = 6) -> NamedArray:
    return NamedArray(
        obs=np.arange(n * 3, dtype=np.float32).reshape(n, 3),
        act=torch.arange(n),
        extra=None,
        inner=NamedArray(h=np.arange(n) * 10.0, g=torch.ones(n, 2)),
    )


# -- seed example -------------------------------------------------------------------------
def test_seed_policy_state_example():
    num_rnn_layers, rnn_hidden_dim = 2, 16
    default_policy_state = MyPolicyState(
        hx=np.zeros((num_rnn_layers, 1, rnn_hidden_dim), dtype=np.float32)
    )
    assert isinstance(default_policy_state, NamedArray)
    assert type(default_policy_state).__name__ == "MyPolicyState"
    assert default_policy_state.hx.shape == (2, 1, 16)
    assert default_policy_state.hx.dtype == np.float32
    assert default_policy_state.fields == ("hx",)
    assert len(default_policy_state) == num_rnn_layers


# -- construction and access --------------------------------------------------------------
def test_plain_construction_and_access():
    x = NamedArray(obs=np.zeros((4, 2)), reward=torch.ones(4), done=None)
    assert x.fields == ("obs", "reward", "done") == x.keys()
    assert list(x) == ["obs", "reward", "done"]
    assert x.obs is x["obs"] and x.reward is x["reward"] and x.done is None
    assert x.values()[1] is x.reward
    assert [k for k, _ in x.items()] == ["obs", "reward", "done"]
    assert "obs" in x and "foo" not in x
    assert len(x) == 4 and bool(x)


def test_set_existing_and_unknown_fields():
    x = NamedArray(a=np.zeros(3), b=None)
    x.a = np.ones(2)
    x["b"] = np.full(2, 7)
    np.testing.assert_array_equal(x.a, [1, 1])
    np.testing.assert_array_equal(x.b, [7, 7])
    with pytest.raises(AttributeError, match="has no field 'c'"):
        x.c = 1
    with pytest.raises(KeyError, match="has no field 'c'"):
        x["c"] = 1
    with pytest.raises(KeyError, match="has no field 'c'"):
        x["c"]
    assert x.fields == ("a", "b")


def test_plain_rejects_positional_and_reserved_names():
    with pytest.raises(TypeError, match="keyword arguments only"):
        NamedArray(np.zeros(2))
    with pytest.raises(ValueError, match="values"):
        NamedArray(values=np.zeros(2))
    with pytest.raises(ValueError, match="_fields"):
        NamedArray(_fields=np.zeros(2))


def test_len_is_batch_size():
    assert len(NamedArray(a=None, b=NamedArray(c=None, d=torch.zeros(5, 2)))) == 5
    assert len(NamedArray(a=np.zeros((0, 3)))) == 0
    assert bool(NamedArray(a=np.zeros((0, 3))))
    with pytest.raises(TypeError, match="unsized"):
        len(NamedArray(a=None))
    with pytest.raises(TypeError, match="unsized"):
        len(NamedArray(a=np.float32(1.0)))
    # a 0-d leaf first (a version number) is no batch (was: "unsized" though b has 4 rows)
    assert len(NamedArray(version=np.int64(3), b=np.zeros((4, 2)))) == 4
    assert len(NamedArray(meta=NamedArray(v=np.int64(3)), b=torch.zeros(6))) == 6


# -- decorator ----------------------------------------------------------------------------
def test_decorator_positional_keyword_and_defaults():
    x = Transition(np.zeros((2, 3)), np.ones(2))
    y = Transition(obs=np.zeros((2, 3)), reward=np.ones(2), info=np.zeros(2))
    z = Transition(np.zeros((2, 3)), reward=np.ones(2))
    assert x.fields == y.fields == z.fields == ("obs", "reward", "info")
    assert x.info is None and z.info is None and y.info.shape == (2,)
    assert x.total() == 2.0
    assert Transition.__name__ == "Transition" and Transition.__doc__ == "A transition."
    assert issubclass(Transition, NamedArray)


def test_decorator_errors():
    with pytest.raises(TypeError, match="missing required field\\(s\\): 'reward'"):
        Transition(obs=np.zeros(2))
    with pytest.raises(TypeError, match="'obs', 'reward'"):
        Transition()
    with pytest.raises(TypeError, match="unexpected field 'rewrd'"):
        Transition(obs=np.zeros(2), rewrd=np.zeros(2))
    with pytest.raises(TypeError, match="multiple values for field 'obs'"):
        Transition(np.zeros(2), np.zeros(2), obs=np.zeros(2))
    with pytest.raises(TypeError, match="takes 3 positional arguments, got 4"):
        Transition(1, 2, 3, 4)
    with pytest.raises(ValueError, match="clash"):

        @namedarray
        class Bad:
            shape: np.ndarray


def test_every_construction_checks_the_batch_rows():
    """Keyword, positional, default-filled and plain construction alike refuse fields of
    different leading dimensions in one line (nested fields count their rows)."""
    rows = r"Transition fields must share their leading \(batch\) dimension, got obs: 3, reward: 4"
    with pytest.raises(ValueError, match=rows):
        Transition(obs=np.zeros((3, 2)), reward=np.zeros(4))
    with pytest.raises(ValueError, match=rows):
        Transition(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="info: 2"):
        Transition(obs=np.zeros(3), reward=torch.zeros(3), info=np.zeros(2))
    with pytest.raises(ValueError, match="a: 3, b: 5"):
        NamedArray(a=np.zeros(3), b=np.zeros(5))
    with pytest.raises(ValueError, match="RolloutResult fields .* action: 3, log_prob: 5"):
        RolloutResult(action=np.zeros(3), log_prob=np.zeros(5))
    with pytest.raises(ValueError, match="obs: 2, reward: 3"):
        Transition(obs=NamedArray(x=np.zeros((2, 4))), reward=np.zeros(3))
    fine = Transition(obs=np.zeros((3, 2)), reward=np.float32(1.0), info=None)  # (0-d: no rows)
    assert len(fine) == 3


def test_decorator_inheritance():
    x = TimedTransition(np.zeros(2), np.ones(2), None, np.arange(2))
    assert x.fields == ("obs", "reward", "info", "t")
    assert isinstance(x, Transition) and x.total() == 2.0
    assert TimedTransition(np.zeros(2), np.ones(2)).t is None


# -- indexing -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "idx",
    [2, slice(1, 4), [0, 2, 5], np.array([5, 1]), np.array([True, False] * 3),
     torch.tensor([3, 0]), torch.tensor([False, True] * 3), np.int64(4)],
)
def test_getitem_matches_leafwise_indexing(idx):
    x = make_batch()
    y = x[idx]
    np_idx = idx.numpy() if isinstance(idx, torch.Tensor) else idx
    th_idx = torch.from_numpy(idx) if isinstance(idx, np.ndarray) else idx
    assert type(y) is NamedArray and y.extra is None
    np.testing.assert_array_equal(y.obs, x.obs[np_idx])
    assert torch.equal(y.act, x.act[th_idx])
    np.testing.assert_array_equal(y.inner.h, x.inner.h[np_idx])
    assert torch.equal(y.inner.g, x.inner.g[th_idx])


def test_getitem_tuple_and_type_preserved():
    x = Transition(obs=np.arange(12).reshape(3, 4), reward=torch.arange(12).reshape(3, 4))
    y = x[1:, torch.tensor([0, 3])]
    assert type(y) is Transition and y.info is None
    np.testing.assert_array_equal(y.obs, [[4, 7], [8, 11]])
    assert y.reward.tolist() == [[4, 7], [8, 11]]


def test_setitem_single_and_slice_in_place():
    buf = Transition(obs=np.zeros((8, 2)), reward=torch.zeros(8), info=None)
    obs_buffer, reward_buffer = buf.obs, buf.reward
    buf[3] = Transition(obs=np.array([1.0, 2.0]), reward=torch.tensor(5.0))
    buf[5:8] = Transition(obs=torch.ones(3, 2), reward=np.full(3, 2.0))
    assert buf.obs is obs_buffer and buf.reward is reward_buffer
    np.testing.assert_array_equal(buf.obs[3], [1, 2])
    np.testing.assert_array_equal(buf.obs[5:], np.ones((3, 2)))
    assert buf.reward.tolist() == [0, 0, 0, 5, 0, 2, 2, 2]


def test_setitem_nested_index_array_and_scalar():
    buf = make_batch()
    sample = buf[[0, 1]].clone()
    buf[np.array([4, 5])] = sample
    np.testing.assert_array_equal(buf.obs[4:], buf.obs[:2])
    assert torch.equal(buf.inner.g[4:], buf.inner.g[:2])
    np.testing.assert_array_equal(buf.inner.h[4:], [0.0, 10.0])
    buf[torch.tensor([0])] = 0
    assert buf.obs[0].sum() == 0 and buf.act[0] == 0 and buf.inner.h[0] == 0


def test_setitem_errors():
    buf = NamedArray(a=np.zeros(3), b=None)
    with pytest.raises(ValueError, match="do not match"):
        buf[0] = NamedArray(a=np.ones(1))
    with pytest.raises(ValueError, match="None"):
        buf[0] = NamedArray(a=1.0, b=np.ones(1))


# -- aggregation --------------------------------------------------------------------------
def test_recursive_apply_and_aggregate():
    x = make_batch(3)
    y = recursive_apply(x, lambda v: v * 2)
    np.testing.assert_array_equal(y.inner.h, [0, 20, 40])
    assert y.extra is None and y.act.tolist() == [0, 2, 4]
    z = recursive_aggregate([x, y], lambda leaves: sum(leaf.sum() for leaf in leaves))
    assert float(z.obs) == 3 * x.obs.sum() and int(z.act) == 9 and z.extra is None


def test_stack_and_concat_numpy_and_torch():
    xs = [make_batch(4), make_batch(4), make_batch(4)]
    s = stack(xs)
    assert s.shape == {"obs": (3, 4, 3), "act": (3, 4), "extra": None,
                       "inner": {"h": (3, 4), "g": (3, 4, 2)}}
    assert isinstance(s.obs, np.ndarray) and isinstance(s.act, torch.Tensor)
    assert stack(xs, dim=1).shape["inner"]["g"] == (4, 3, 2)
    c = concat(xs)
    assert len(c) == 12 and c.shape["inner"]["g"] == (12, 2)
    assert c.act.tolist() == [0, 1, 2, 3] * 3
    assert NamedArray.stack(xs).shape == s.shape and NamedArray.cat(xs).shape == c.shape
    t = Transition.cat([Transition(np.zeros(2), np.ones(2))] * 2)
    assert type(t) is Transition and t.info is None and t.reward.shape == (4,)


def test_stack_and_concat_of_numpy_and_torch_items_are_one_line():
    # (was: NumPy's stack took the tensor as an array: the result silently NumPy)
    numpy_na = NamedArray(obs=np.zeros((2, 3)), reward=np.zeros(2))
    torch_na = NamedArray(obs=torch.zeros((2, 3)), reward=np.ones(2))
    for aggregate in (stack, concat, NamedArray.stack, NamedArray.cat):
        for items, first, other in (([numpy_na, torch_na], "numpy.ndarray", "torch.Tensor"),
                                    ([torch_na, numpy_na], "torch.Tensor", "numpy.ndarray")):
            with pytest.raises(TypeError, match=rf"^cannot aggregate field 'obs': item 0 is a "
                                                rf"{first} and item 1 a {other}; convert"):
                aggregate(items)
    nested = NamedArray(a=NamedArray(h=torch.zeros(2)))
    with pytest.raises(TypeError, match=r"^cannot aggregate field 'a.h': item 0 is a torch"):
        stack([nested, NamedArray(a=NamedArray(h=np.zeros(2)))])
    assert isinstance(stack([torch_na, torch_na]).obs, torch.Tensor)  # one backend: as before
    assert stack([numpy_na, torch_na.to_numpy()]).shape == {"obs": (2, 2, 3), "reward": (2, 2)}


def test_aggregate_errors():
    with pytest.raises(ValueError, match="empty"):
        stack([])
    with pytest.raises(ValueError, match="different fields"):
        stack([NamedArray(a=np.zeros(1)), NamedArray(b=np.zeros(1))])
    with pytest.raises(ValueError, match="'a' is None in some"):
        concat([NamedArray(a=np.zeros(1)), NamedArray(a=None)])


def test_recursive_aggregate_as_the_srl_guide_writes_it():
    """named_array.md: ``recursive_aggregate(xs=..., aggregate_fn=np.stack)``, and a field that
    is None in some items only is zeros like the others' (a TypeError and an error before)."""
    msb = NamedArray(obs=np.ones((10, 3)), reward=np.ones((10, 1)), info=None)
    agg = recursive_aggregate(xs=[msb] * 4, aggregate_fn=np.stack)
    assert agg.shape == {"obs": (4, 10, 3), "reward": (4, 10, 1), "info": None}
    a = NamedArray(x=np.ones(2), y=NamedArray(h=torch.ones(2, 3)))
    b = NamedArray(x=np.ones(2), y=None)
    s = recursive_aggregate([b, a], np.stack)
    assert s.y.h.shape == (2, 2, 3) and s.y.h[0].sum() == 0 and s.y.h[1].sum() == 6
    assert recursive_aggregate([None, np.ones(2)], np.stack).tolist() == [[0, 0], [1, 1]]
    with pytest.raises(ValueError, match="'y' is None in some"):
        stack([a, b])  # looprl's own stack and concat stay strict


def test_aggregate_and_apply_as_srl_leaves_field_order_and_failing_field():
    # SRL's functions take leaves too, and its NamedArrays sort their fields: the same fields
    # built in another order aggregate by name
    np.testing.assert_array_equal(recursive_aggregate([np.zeros(2), np.ones(2)], np.stack),
                                  [[0, 0], [1, 1]])
    assert recursive_aggregate([None, None], np.stack) is None
    np.testing.assert_array_equal(recursive_apply(np.ones(2), lambda v: v * 2), [2, 2])
    assert recursive_apply(None, lambda v: v * 2) is None
    a = NamedArray(x=np.zeros((2, 3)), y=NamedArray(z=np.zeros(2)))
    b = NamedArray(y=NamedArray(z=np.ones(2)), x=np.ones((2, 3)))
    s = stack([a, b])
    assert s.fields == ("x", "y") and s.x[1].tolist() == [[1.0] * 3] * 2
    assert s.y.z.tolist() == [[0, 0], [1, 1]]
    c = NamedArray(x=np.zeros((2, 3)), y=NamedArray(z=np.zeros((2, 4))))
    with pytest.raises(ValueError, match="cannot aggregate field 'y.z': "):
        stack([a, c])
    with pytest.raises(ValueError, match="different fields"):
        stack([a, np.zeros(2)])


# -- conversion ---------------------------------------------------------------------------
def test_to_torch_and_numpy():
    x = make_batch(3)
    x.obs = x.obs[::-1]  # negative strides
    t = x.to("cpu")
    assert isinstance(t.obs, torch.Tensor) and isinstance(t.inner.h, torch.Tensor)
    assert t.obs[0].tolist() == [6.0, 7.0, 8.0] and t.extra is None
    assert t.inner.h.dtype == torch.float64
    assert isinstance(x.to_torch().inner.g, torch.Tensor)
    n = NamedArray(a=torch.ones(2, requires_grad=True), b=np.zeros(2)).to_numpy()
    assert isinstance(n.a, np.ndarray) and isinstance(n.b, np.ndarray)
    np.testing.assert_array_equal(n.a, [1, 1])


def test_to_a_device_torch_cannot_use_is_one_line():
    x = make_batch(3)
    with pytest.raises(ValueError, match="^Unknown device 'gpu'"):
        x.to("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA GPU here; use 'cpu'"):
            x.to("cuda")


def test_dict_round_trip():
    x = make_batch(2)
    d = x.to_dict()
    assert isinstance(d["inner"], dict) and d["inner"]["g"] is x.inner.g and d["extra"] is None
    y = NamedArray.from_dict(d)
    assert type(y.inner) is NamedArray and y.fields == x.fields and y.inner.fields == ("h", "g")
    assert y.obs is x.obs
    p = MyPolicyState.from_dict({"hx": np.ones(3)})
    assert type(p) is MyPolicyState


def test_srl_module_level_from_dict():
    # SRL's base.namedarray.from_dict(env_result.obs), None for no values
    obs = from_dict({"obs": np.zeros((2, 3)), "state": {"speed": np.ones(2)}})
    assert type(obs) is NamedArray and obs.shape == {"obs": (2, 3), "state": {"speed": (2,)}}
    assert from_dict({}) is None and from_dict(None) is None


def test_from_dict_and_aggregates_of_a_wrong_type_are_one_line():
    # (were: AttributeError "'list' object has no attribute 'items'"; stack(x) stacked the
    # field names of x into an array of text; "'int' object is not callable")
    for wrong in ([1, 2], "obs", None, np.zeros(2)):
        with pytest.raises(TypeError, match=r"^NamedArray.from_dict takes a dict of field name"):
            NamedArray.from_dict(wrong)
    with pytest.raises(TypeError, match=r"^MyPolicyState.from_dict takes a dict .*got a list"):
        MyPolicyState.from_dict([np.ones(3)])
    with pytest.raises(TypeError, match=r"^NamedArray.from_dict takes a dict .*got a list"):
        from_dict([1, 2])
    with pytest.raises(TypeError, match=r"^NamedArray.from_dict: field names are text, got 1"):
        NamedArray.from_dict({1: np.zeros(2)})
    x = NamedArray(a=np.zeros(2))
    for aggregate in (stack, concat, NamedArray.stack, NamedArray.cat):
        with pytest.raises(TypeError, match=r"takes a list of NamedArrays, got a NamedArray; wrap"):
            aggregate(x)
        with pytest.raises(TypeError, match=r"takes a list of NamedArrays, got an int$"):
            aggregate(3)
    with pytest.raises(TypeError, match=r"^recursive_aggregate's aggregate_fn is a function"):
        recursive_aggregate([x, x], 3)
    for fn, got in ((3, "an int (3)"), ("double", "a str ('double')")):  # (was: "'int' object
        for y in (x, np.ones(2), None):  # is not callable", from deep inside; None: taken)
            with pytest.raises(TypeError, match=rf"^recursive_apply's fn is a function of one "
                               rf"leaf \(lambda v: v \* 2\), got {re.escape(got)}$"):
                recursive_apply(y, fn)
    with pytest.raises(ValueError, match=r"\('a',\) and an int$"):
        stack([x, 3])


def test_shape_and_clone():
    x = Transition(obs=np.zeros((2, 3)), reward=torch.zeros(2), info=None)
    assert x.shape == {"obs": (2, 3), "reward": (2,), "info": None}
    y = x.clone()
    y.obs[0, 0], y.reward[0] = 1.0, 1.0
    assert type(y) is Transition and x.obs[0, 0] == 0 and x.reward[0] == 0


def test_pickle_and_deepcopy():
    for x in (make_batch(3), Transition(np.ones(2), np.zeros(2)), TimedTransition(1, 2, t=3),
              MyPolicyState(hx=np.zeros((1, 1, 4), dtype=np.float32))):
        for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
            assert type(y) is type(x) and y.fields == x.fields
            for a, b in zip(y.values(), x.values()):
                if isinstance(a, NamedArray):
                    np.testing.assert_array_equal(a.h, b.h)
                elif a is not None:
                    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    y = copy.deepcopy(make_batch(2))
    with pytest.raises(AttributeError):
        y.new_field = 1


def test_repr():
    x = Transition(obs=np.zeros((2, 3), dtype=np.float32), reward=torch.zeros(2))
    r = repr(x)
    assert r.startswith("Transition(obs=ndarray(shape=(2, 3), dtype=float32)")
    assert "reward=Tensor(shape=(2,), dtype=torch.float32, device=cpu)" in r
    assert r.endswith("info=None)")
    assert "inner=NamedArray(h=ndarray(shape=(2,)" in repr(make_batch(2))


def test_decorator_keywords_defaults_and_positional_mixes():
    obs, reward = np.zeros((2, 3)), np.ones(2)
    x = Transition(reward=reward, obs=obs)
    assert x.values() == (obs, reward, None) and x.obs is obs
    assert Transition(obs, reward, info=reward).info is reward
    assert Transition(obs, reward=reward, info=None).info is None
    assert Transition(obs=obs, reward=reward, info=obs).values() == (obs, reward, obs)


def test_decorator_fields_named_like_its_generated_code():
    @namedarray
    class Odd:
        _na_self: int
        k: int = 2

    assert Odd(_na_self=1).values() == (1, 2) and Odd(1, 3).values() == (1, 3)


def test_array_defaults_are_each_instances_own():
    """SRL's classes give fields array defaults: an in-place write to one instance (was:
    to the class's default, so every later instance started from the written values)."""

    @namedarray
    class Request:
        obs: np.ndarray = None
        flag: np.ndarray = np.zeros(1, dtype=bool)
        hx: torch.Tensor = torch.zeros(1, 2)
        inner: NamedArray = NamedArray(h=np.zeros(1))

    for make in (lambda: Request(), lambda: Request(np.zeros((1, 3)))):  # (both __init__ paths)
        first = make()
        obs = None if first.obs is None else np.ones((1, 3))
        first[:] = Request(obs, np.ones(1, dtype=bool), torch.ones(1, 2), NamedArray(h=np.ones(1)))
        fresh = make()
        assert not fresh.flag.any() and not fresh.hx.any() and not fresh.inner.h.any()


def test_a_read_only_array_becomes_a_tensor_of_its_own_without_a_warning() -> None:
    """Ray's object store hands the trainer read-only arrays: torch warned ("The given NumPy
    array is not writable") and shared memory nothing may write to."""
    import warnings

    from looprl.core.leaves import as_tensor

    array = np.arange(4.0)
    array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensor = as_tensor(array, "cpu")
    tensor += 1  # (its own memory)
    assert array.tolist() == [0.0, 1.0, 2.0, 3.0] and tensor.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_the_leaf_helpers_have_one_import_path() -> None:
    """``as_numpy``, ``as_tensor`` and the other leaf helpers live in ``looprl.core.leaves``;
    ``looprl.core.namedarray`` re-exported them and 17 modules imported them from there."""
    import importlib

    from looprl.core import leaves

    module = importlib.import_module("looprl.core.namedarray")
    assert [name for name in leaves.__all__ if hasattr(module, name)] == []
    assert NamedArray(x=np.ones(2)).to().x.tolist() == [1.0, 1.0]  # (namedarray takes them)


def test_the_module_is_seed_004s_decorator_too() -> None:
    """``import looprl.core.namedarray as na`` gave the decorator (looprl.core's attribute of that
    name), so ``na.NamedArray`` failed; now the module is the attribute, and calling it decorates
    (seed 004's ``@namedarray``)."""
    import looprl.core.namedarray as na
    from looprl.core import namedarray

    assert namedarray is na and na.NamedArray is NamedArray

    @namedarray
    class Memory:
        hx: np.ndarray

    assert issubclass(Memory, na.NamedArray) and Memory(hx=np.zeros(2)).hx.shape == (2,)
