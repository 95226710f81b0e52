"""Method specs and the registry of rating methods.

A spec is a method name with optional parameters: `borda`, `approval:k=3`,
`elo:k=4,scale=400`. Each method is a plain function registered with `@method(name, needs=...)`;
`needs` names the statistics it reads (fields of `Statistics`), which the registry passes
positionally, and the spec's parameters are passed as keywords, converted to the types of the
function's defaults. Unknown names and parameters raise with the list of valid ones.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pipeline.methods.ratings import Ratings
from pipeline.methods.threads import one_blas_thread
from pipeline.stats.counts import Statistics


@dataclass(frozen=True)
class Method:
    name: str
    fn: Callable[..., Ratings]
    needs: tuple[str, ...]
    kinds: frozenset[str] | None  # log kinds it accepts; None for all

    @property
    def parameters(self) -> dict[str, object]:
        return {p.name: p.default for p in inspect.signature(self.fn).parameters.values() if p.kind is p.KEYWORD_ONLY}

    @property
    def summary(self) -> str:
        return (inspect.getdoc(self.fn) or "").splitlines()[0] if self.fn.__doc__ else ""


REGISTRY: dict[str, Method] = {}


def method(name: str, *, needs: tuple[str, ...], kinds: Iterable[str] | None = None) -> Callable:
    def register(fn: Callable[..., Ratings]) -> Callable[..., Ratings]:
        if name in REGISTRY:
            raise ValueError(f"method {name!r} registered twice")
        REGISTRY[name] = Method(name, fn, tuple(needs), None if kinds is None else frozenset(kinds))
        return fn

    return register


def _coerce(method_name: str, key: str, text: str, default: object) -> object:
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        raise ValueError(f"{method_name}: parameter {key}={text!r} is not a valid {type(default).__name__}") from None
    return text


@dataclass(frozen=True)
class Spec:
    name: str
    params: dict[str, object]

    @classmethod
    def parse(cls, text: str) -> Spec:
        name, _, rest = text.strip().partition(":")
        if name not in REGISTRY:
            raise ValueError(f"unknown method {name!r}; known methods: {', '.join(sorted(REGISTRY))}")
        allowed = REGISTRY[name].parameters
        params: dict[str, object] = {}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if not eq or key not in allowed:
                valid = ", ".join(allowed) or "none"
                raise ValueError(f"{name}: unknown parameter {item!r} (parameters: {valid})")
            params[key] = _coerce(name, key, value.strip(), allowed[key])
        return cls(name, params)

    @property
    def method(self) -> Method:
        return REGISTRY[self.name]

    @property
    def effective_params(self) -> dict[str, object]:
        """Every parameter of the method: the spec's, and the defaults of the others."""
        return self.method.parameters | self.params


ALWAYS = frozenset({"agents", "agent_keys"})  # fields of every `Statistics`: nothing to reduce for them


def needed_statistics(specs: Iterable[str]) -> frozenset[str]:
    """The statistics a list of specs needs, so a reduction computes only those."""
    return frozenset(n for s in specs for n in Spec.parse(s).method.needs) - ALWAYS


def run(spec: str | Spec, stats: Statistics) -> Ratings:
    spec = Spec.parse(spec) if isinstance(spec, str) else spec
    chosen = spec.method
    if chosen.kinds is not None and stats.kind not in chosen.kinds:
        raise ValueError(f"{spec.name} rates {', '.join(sorted(chosen.kinds))} logs, not {stats.kind}")
    inputs = []
    for name in chosen.needs:
        value = getattr(stats, name) if hasattr(stats, name) else stats.extra.get(name)
        if value is None:
            raise ValueError(f"{spec.name} needs the {name} statistic, which was not computed")
        inputs.append(value)
    return apply(spec, *inputs)


def apply(spec: Spec, *inputs: object) -> Ratings:
    """Call a method on inputs already in hand, with one BLAS thread (see `pipeline.methods.threads`);
    the ratings are labelled with the method's name and effective parameters."""
    with one_blas_thread():
        ratings = spec.method.fn(*inputs, **spec.params)
    return dataclasses.replace(ratings, name=spec.name, params=spec.effective_params)
