"""Frozen records: dataclasses whose methods are shared by every record, not generated for each class.

``@dataclass(frozen=True)`` builds each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` by compiling source text when the class is defined (Python 3.11's
``dataclasses._create_fn``). For the 25 records that ``specsim optimal-gamma`` defines on its way, those
compilations were about 20 ms of a cold start whose target is 1.5x the time of ``import numpy`` (issue 28).
:func:`record` asks :mod:`dataclasses` for the fields alone and gives every record the six methods below, which read
the class's fields when they are called. Behaviour is that of a frozen dataclass:

- the constructor takes the fields in order, by position or by name, fills the defaults (a ``default_factory`` is
  called for each instance) and then calls ``__post_init__`` where the class has one; ``inspect.signature`` of the
  class is the one :mod:`dataclasses` would give;
- equal when of the same class with equal compared fields, compared as one tuple as :mod:`dataclasses` did up to
  Python 3.12 (so a field holding the same NaN object equals itself, on every Python; 3.13's dataclasses compare
  field by field); the hash is that of the compared fields' tuple (the fields with ``hash=True``, or ``hash=None``
  and ``compare=True``, as :mod:`dataclasses` chooses);
- the repr names the class's qualified name and each field with ``repr=True``;
- assigning or deleting an attribute raises :class:`dataclasses.FrozenInstanceError`; ``__post_init__`` sets
  derived attributes with ``object.__setattr__``, as with a frozen dataclass.

They are still dataclasses: :func:`dataclasses.fields`, :func:`~dataclasses.replace`, :func:`~dataclasses.asdict`
and :func:`~dataclasses.is_dataclass` work on them. What the shared constructor does not do is refused when the class
is defined: ``InitVar`` pseudo-fields, ``kw_only`` and ``init=False`` fields (no record uses them). Building an
instance is also quicker than a frozen dataclass's (which calls ``object.__setattr__`` once per field): 1.8 against
2.0 us for 9 fields, 7 against 11 us for 64, measured on this project's 2-core machine.

>>> @record
... class Pair:
...     left: int
...     right: int = 0
>>> Pair(1) == Pair(1, 0), hash(Pair(1)) == hash((1, 0)), Pair(1, right=2)
(True, True, Pair(left=1, right=2))
>>> Pair(1).left = 5
Traceback (most recent call last):
dataclasses.FrozenInstanceError: cannot assign to field 'left'
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


class _Factory:
    """The default shown for a ``default_factory`` field in a signature, as dataclasses shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _init(self, /, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    names, defaults, factories = cls.__record_init__
    given = len(args)
    if given > len(names):
        raise TypeError(f"{cls.__qualname__}() takes at most {len(names)} positional arguments but {given} were given")
    values = self.__dict__  # straight into the instance: __setattr__ refuses every assignment
    for name, value in zip(names, args):
        values[name] = value
    named = 0
    missing = []
    for name in names[given:]:
        if name in kwargs:
            values[name] = kwargs[name]
            named += 1
        elif name in defaults:
            values[name] = defaults[name]
        elif name in factories:
            values[name] = factories[name]()
        else:
            missing.append(name)
    if named != len(kwargs):
        for name in kwargs:
            if name not in names:
                raise TypeError(f"{cls.__qualname__}() got an unexpected keyword argument {name!r}")
            if names.index(name) < given:
                raise TypeError(f"{cls.__qualname__}() got multiple values for argument {name!r}")
    if missing:
        raise TypeError(f"{cls.__qualname__}() missing {len(missing)} required argument{'s' * (len(missing) > 1)}: "
                        + ", ".join(repr(name) for name in missing))
    post_init = getattr(cls, "__post_init__", None)
    if post_init is not None:
        post_init(self)


class _InitSignature:
    """``inspect.signature`` of a record class: built the first time it is asked for (help(), a notebook's tooltip),
    not when the class is defined."""

    def __get__(self, instance: object, owner: type):
        cached = owner.__dict__.get("__record_signature__")
        if cached is not None:
            return cached
        import inspect

        params = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=f.type,
                                    default=(f.default if f.default is not MISSING else
                                             _FACTORY if f.default_factory is not MISSING else inspect.Parameter.empty))
                  for f in dataclasses.fields(owner)]
        signature = inspect.Signature(params, return_annotation=None)
        type.__setattr__(owner, "__record_signature__", signature)
        return signature


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
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _init_spec(cls: type) -> tuple[tuple[str, ...], dict[str, Any], dict[str, Callable[[], Any]]]:
    """The constructor's fields in order, their defaults and their factories; TypeError for what it does not take."""
    for f in cls.__dataclass_fields__.values():
        if isinstance(f.type, dataclasses.InitVar) or (isinstance(f.type, str) and "InitVar" in f.type):
            raise TypeError(f"record {cls.__qualname__}: InitVar field {f.name!r} is not supported")
    fields = dataclasses.fields(cls)
    seen_default = None
    for f in fields:
        if not f.init or f.kw_only:
            raise TypeError(f"record {cls.__qualname__}: field {f.name!r} is init=False or kw_only, not supported")
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if has_default:
            seen_default = f.name
        elif seen_default is not None:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    return (tuple(f.name for f in fields), {f.name: f.default for f in fields if f.default is not MISSING},
            {f.name: f.default_factory for f in fields if f.default_factory is not MISSING})


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
        own = dict(cls.__dict__)
        cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False)
        cls.__record_init__ = _init_spec(cls)
        if "__init__" not in own:
            cls.__init__ = _init
            cls.__signature__ = _InitSignature()
            if not own.get("__doc__"):  # dataclasses names the class and its signature (it saw object's, without init)
                cls.__doc__ = cls.__name__ + str(cls.__signature__).replace(" -> None", "")
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
