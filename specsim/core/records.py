"""Frozen records: dataclasses whose comparison, hash, repr and refusal to change are shared, not generated per class.

``@dataclass(frozen=True)`` builds each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` by compiling source text when the class is defined (Python 3.11's
``dataclasses._create_fn``). For the 25 records that ``specsim optimal-gamma`` defines on its way, those six
compilations per class were about 20 ms of a cold start whose target is 1.5x the time of ``import numpy``
(issue 28). :func:`record` asks :mod:`dataclasses` for the ``__init__`` alone and gives every record the same five
methods below, which read the class's fields when they are called. Behaviour is that of a frozen dataclass:

- equal when of the same class with equal compared fields; the hash is that of the compared fields'
  tuple (the fields with ``hash=True``, or ``hash=None`` and ``compare=True``, as :mod:`dataclasses` chooses);
- the repr names the class's qualified name and each field with ``repr=True``;
- assigning or deleting an attribute raises :class:`dataclasses.FrozenInstanceError`; ``__post_init__`` sets
  derived attributes with ``object.__setattr__``, as with a frozen dataclass.

They are still dataclasses: :func:`dataclasses.fields`, :func:`~dataclasses.replace`, :func:`~dataclasses.asdict`
and :func:`~dataclasses.is_dataclass` work on them. The generated ``__init__`` assigns each field once through
:func:`_setattr`, which lets a field be set while the instance does not hold it yet and refuses everything else;
every field is set by ``__init__`` (no record has ``init=False`` fields), so afterwards nothing can be assigned.

>>> @record
... class Pair:
...     left: int
...     right: int = 0
>>> Pair(1) == Pair(1, 0), hash(Pair(1)) == hash((1, 0)), Pair(1, 2)
(True, True, Pair(left=1, right=2))
>>> Pair(1).left = 5
Traceback (most recent call last):
dataclasses.FrozenInstanceError: cannot assign to field 'left'
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


def _getter(cls: type, keep) -> Callable[[Any], tuple]:
    """The tuple of the fields that ``keep`` selects, read in C by :func:`operator.attrgetter` (which returns a bare
    value for one name, so one field is wrapped)."""
    names = [f.name for f in dataclasses.fields(cls) if keep(f)]
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr(self) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _eq(self, other: object):
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = type(self).__record_compare__  # tuples, as dataclasses compares (so a field holding NaN equals itself)
    return key(self) == key(other)


def _hash(self) -> int:
    return hash(type(self).__record_hash__(self))


def _setattr(self, name: str, value: Any) -> None:
    if name in self.__dict__ or name not in type(self).__dataclass_fields__:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: type[T] | None = None, /, *, eq: bool = True):
    """Make ``cls`` a frozen dataclass with the shared methods of this module.

    Parameters
    ----------
    cls : type
        The class body, with annotated fields as for :func:`dataclasses.dataclass`.
    eq : bool
        Compare and hash by the fields (True), or by identity (False: records holding arrays, whose ``==`` is
        elementwise).
    """

    def make(cls: type[T]) -> type[T]:
        own = cls.__dict__
        cls = dataclasses.dataclass(cls, repr=False, eq=False)
        if "__repr__" not in own:
            cls.__repr__ = _repr
        if eq:
            cls.__record_compare__ = staticmethod(_getter(cls, lambda f: f.compare))
            cls.__record_hash__ = staticmethod(_getter(cls, lambda f: f.compare if f.hash is None else f.hash))
            if "__eq__" not in own:
                cls.__eq__ = _eq
            if "__hash__" not in own:
                cls.__hash__ = _hash
        cls.__setattr__ = _setattr
        cls.__delattr__ = _delattr
        return cls

    return make if cls is None else make(cls)
