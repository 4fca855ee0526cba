"""specsim.core.records: a record behaves as the frozen dataclass it replaces.

Each test builds the same class twice, once with ``@dataclass(frozen=True)`` and once with ``@record``, and compares
what the two do; deterministic, no tolerance.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import numpy as np
import pytest

from specsim.core.records import record


def _pair(decorate):
    @decorate
    class Shape:
        name: str
        layers: int = 2
        width: float = 1.0
        tags: tuple = ()
        note: str = field(default="", compare=False)
        extra: list = field(default_factory=list, compare=False)

    return Shape


@pytest.fixture
def Reference():
    return _pair(dataclass(frozen=True))


@pytest.fixture
def Shape():
    """Built in each test, not at import: what ``record`` does is then what the test sees."""
    return _pair(record)


# module level, so that pickle finds it
@record
class Pickled:
    name: str
    sizes: tuple = (1, 2)


@pytest.mark.parametrize("args", [("a",), ("a", 3, 0.5, ("x",), "n"), ("b", 2, float("inf"), (1, 2))])
def test_repr_equality_and_hash_are_those_of_the_frozen_dataclass(args, Shape, Reference):
    ours, theirs = Shape(*args), Reference(*args)
    assert repr(ours) == repr(theirs).replace(Reference.__qualname__, Shape.__qualname__)
    assert ours == Shape(*args) and theirs == Reference(*args) and hash(ours) == hash(theirs)
    assert ours != Shape("z") and theirs != Reference("z")


def test_equality_compares_the_fields_as_one_tuple_so_a_nan_field_equals_itself_on_every_python(Shape):
    """As dataclasses did up to Python 3.12 (3.13's compares field by field, so there the same NaN object differs):
    equal records then hash equal, which a cache keyed on them needs."""
    nan = float("nan")
    assert Shape("b", 2, nan) == Shape("b", 2, nan) and hash(Shape("b", 2, nan)) == hash(Shape("b", 2, nan))
    assert Shape("b", 2, nan) != Shape("b", 2, float("nan"))  # another NaN object: neither identical nor equal


def test_the_constructor_binds_like_the_dataclass_one_and_calls_each_factory_per_instance(Shape, Reference):
    assert repr(Shape("a", 3, width=0.5)) == repr(Reference("a", 3, width=0.5)).replace("Reference", "Shape")
    assert Shape(name="a").extra == [] and Shape("a").extra is not Shape("a").extra
    assert str(inspect.signature(Shape)) == str(inspect.signature(Reference))
    assert inspect.signature(Shape) is inspect.signature(Shape)  # built once per class, then kept
    assert Shape.__doc__ == Reference.__doc__.replace("Reference", "Shape")  # a class without a docstring gets its signature
    for args, kwargs, message in [(("a", 1, 1.0, (), "", [], 7), {}, "takes at most 6 positional arguments but 7"),
                                  ((), {}, "missing 1 required argument: 'name'"),
                                  (("a",), {"colour": 1}, "unexpected keyword argument 'colour'"),
                                  (("a",), {"layers": 1, "colour": 1}, "unexpected keyword argument 'colour'"),
                                  (("a",), {"name": "b"}, "multiple values for argument 'name'")]:
        with pytest.raises(TypeError, match=message):
            Shape(*args, **kwargs)
        with pytest.raises(TypeError):
            Reference(*args, **kwargs)
    two_required = record(type("Two", (), {"__module__": __name__, "__annotations__": {"left": "int", "right": "int"}}))
    with pytest.raises(TypeError, match=r"Two\(\) missing 2 required arguments: 'left', 'right'$"):
        two_required()


def test_what_the_shared_constructor_cannot_do_is_refused_when_the_class_is_defined():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @record
        class Order:
            a: int = 0
            b: int
    for body in ({"__annotations__": {"a": "InitVar[int]"}}, {"__annotations__": {"a": "int"}, "a": field(kw_only=True)},
                 {"__annotations__": {"a": "int"}, "a": field(default=0, init=False)}):
        with pytest.raises(TypeError, match="not supported"):
            record(type("Bad", (), {"__module__": __name__, **body}))


@pytest.mark.parametrize("names", [(), ("x",), ("x", "y")])
def test_hash_and_equality_of_records_with_zero_one_or_more_fields_are_those_of_the_dataclass(names):
    body = {"__module__": __name__, "__annotations__": {name: "int" for name in names}}
    ours, theirs = record(type("R", (), dict(body))), dataclass(frozen=True)(type("R", (), dict(body)))
    values = range(3, 3 + len(names))
    assert hash(ours(*values)) == hash(theirs(*values)) and ours(*values) == ours(*values)
    if names:
        assert ours(*values) != ours(*[v + 1 for v in values])


def test_a_field_with_compare_false_is_left_out_of_equality_and_hash_as_dataclasses_does(Shape, Reference):
    assert Shape("a", note="x") == Shape("a", note="y")
    assert hash(Shape("a", note="x")) == hash(Shape("a", note="y"))
    assert Shape("a") != Shape("a", layers=3)
    assert Shape("a") != Reference("a")  # another class, even with the same fields
    assert len({Shape("a"), Shape("a"), Shape("b")}) == 2


def test_assigning_or_deleting_any_attribute_is_refused_as_on_a_frozen_dataclass(Shape):
    shape = Shape("a")
    for name in ("layers", "not_a_field"):
        with pytest.raises(FrozenInstanceError, match=f"^cannot assign to field '{name}'$"):
            setattr(shape, name, 5)
        with pytest.raises(FrozenInstanceError, match=f"^cannot delete field '{name}'$"):
            delattr(shape, name)
    assert shape.layers == 2 and not hasattr(shape, "not_a_field")


def test_post_init_may_validate_and_set_derived_attributes_with_object_setattr():
    @record
    class Checked:
        value: int

        def __post_init__(self):
            if self.value < 0:
                raise ValueError("value must be >= 0")
            object.__setattr__(self, "double", 2 * self.value)

    assert Checked(3).double == 6
    with pytest.raises(ValueError, match="value must be"):
        Checked(-1)
    with pytest.raises(FrozenInstanceError):
        Checked(3).double = 7


def test_replace_fields_asdict_copy_and_pickle_work_as_on_a_dataclass(Shape, Reference):
    shape = Shape("a", tags=("x",))
    assert dataclasses.is_dataclass(shape)
    assert [f.name for f in dataclasses.fields(shape)] == [f.name for f in dataclasses.fields(Reference)]
    assert dataclasses.replace(shape, layers=4) == Shape("a", 4, tags=("x",))
    assert dataclasses.asdict(shape) == dataclasses.asdict(Reference("a", tags=("x",)))
    assert copy.deepcopy(shape) == shape and copy.copy(shape) == shape
    restored = pickle.loads(pickle.dumps(Pickled("p")))
    assert restored == Pickled("p")
    with pytest.raises(FrozenInstanceError):
        restored.name = "q"


def test_eq_false_compares_and_hashes_by_identity_for_records_holding_arrays():
    @record(eq=False)
    class Holder:
        values: np.ndarray

    one = Holder(np.arange(3))
    assert one == one and one != Holder(np.arange(3))
    assert hash(one) == object.__hash__(one)
    assert repr(one) == "test_eq_false_compares_and_hashes_by_identity_for_records_holding_arrays.<locals>.Holder(" \
                        "values=array([0, 1, 2]))"


def test_a_record_subclass_adds_fields_and_keeps_the_shared_methods():
    @record
    class Base:
        a: int

    @record
    class Child(Base):
        b: int = 0

    assert Child(1, 2) == Child(1, 2) and Child(1, 2) != Child(1, 3) and Child(1) != Base(1)
    assert repr(Child(1, 2)).endswith("Child(a=1, b=2)")
    with pytest.raises(FrozenInstanceError):
        Child(1).a = 2


def test_no_module_of_the_package_makes_a_frozen_dataclass_itself():
    """New records use @record, so a cold command does not compile five methods per class again (issue 28)."""
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "specsim"
    offenders = [str(p.relative_to(package)) for p in package.rglob("*.py")
                 if p.name != "records.py" and "dataclass(frozen=True" in p.read_text()]
    assert offenders == []
