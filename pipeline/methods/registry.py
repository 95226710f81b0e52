"""Method specs and the registry of rating methods.

A spec is a method name with optional parameters: `borda`, `approval:k=3`,
`elo:k=4,scale=400`; a text parameter may hold a list, its items following it
(`m-elo:covariates=len,md,bootstrap=0`). Each method is a plain function registered with `@method(name, needs=...)`;
`needs` names its inputs, fields of `Statistics` (a statistic such as `pairwise`, an extra such
as `sequence`, or `agent_keys`, the agents' canonical order), which the registry passes
positionally; the spec's parameters are passed as keywords, converted to the types of the
function's defaults. Unknown names and parameters raise with the list of valid ones, and so does a
value outside its parameter's range: each method declares its parameters' `rules` when it
registers, and a spec is checked against them where it is parsed, so that a bad value is a usage
error before any log is read, not a failure after the reduction; the method itself checks them
again when called directly.

A spec is parsed once, where it enters (the command line, a board's YAML, a backtest's
configuration), into a `Spec` that travels from there. Its canonical spelling, `str(spec)`, is
the name and every effective parameter sorted by key, the same as `Ratings.spec`; specs are
equal when their canonical spellings are, so a list given with two spellings of one spec runs
it once (`unique_specs`).

A method may read a statistic only when a parameter is set (`needs_with={"covariates":
("battle_features",)}`: m-Elo's style control reads the distinct battles only with covariates):
the registry passes each such statistic positionally after `needs`, None while its parameter
is at its default, and a reduction computes it only for specs that set the parameter.

A method that fans work out (bootstrap rounds, shuffled orders) declares a keyword-only
parameter `client`: the registry passes the caller's Dask client there (None: local threads).
It is not a spec parameter and is not recorded in `Ratings.params`. Likewise `established`: a
method with a bootstrap of its own (m-Elo) that declares it receives the store ids of the agents
a board's standing establishes (`pipeline.methods.standing`), to count rank intervals among them.

A method whose time or memory grows fast with its input declares a cost model when it registers
(`cost=`): a function of the input's `Size` (agents, pairs compared, tasks, ballots and their members) and the
spec's effective parameters, giving a `Cost` (seconds and bytes expected on one core, and an
alternative that fits). `over_budget` turns it into the one-line refusal of a spec expected past
`BUDGET_SECONDS` or `BUDGET_BYTES` (`pipeline.board.rate` refuses such a spec before running it);
a method without a model is taken to fit. The models are checked by `benchmarks/bench_matrix.py`.

Every spec whose method has no `bootstrap` parameter of its own also accepts `bootstrap=R` and
`bootstrap_seed=S`: `run` then adds score intervals, rank intervals and tiers from R Poisson
bootstrap rounds of the records (`pipeline.methods.uncertainty`). They appear in the canonical
spelling only when set (`copeland:bootstrap=0` is `copeland`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.methods.numerics.fanout import MAX_ROUNDS
from pipeline.methods.numerics.threads import one_blas_thread
from pipeline.methods.ratings import Ratings, spec_text
from pipeline.methods.standing import Standing
from pipeline.stats.counts import CORE_STATISTICS, Statistics
from pipeline.stats.recency import HALF_LIFE, NO_DECAY

CLIENT = "client"  # the keyword through which a method that fans out receives the Dask client
ESTABLISHED = "established"  # the keyword through which a method with its own bootstrap receives the established agents
BOOTSTRAP, BOOTSTRAP_SEED = "bootstrap", "bootstrap_seed"  # the registry's own parameters: see `generic_parameters`
GIVEN = frozenset({"agents", "appearances", "agent_keys"})  # fields of every Statistics: never reduced on request

@dataclass(frozen=True)
class Rule:
    """What a parameter's values must be: a test, and the words that say it ("positive")."""

    holds: Callable[[object], bool]
    words: str
    infinite: bool = False  # whether `inf` is a value (a limit the method computes exactly); NaN never is
    texts: tuple[str, ...] = ()  # words a numeric parameter also takes, as they are (`prior=auto`: the method chooses)

    def problem(self, value: object) -> str | None:
        return None if self.holds(value) else f"must be {self.words}"


def at_least(low: float) -> Rule:
    return Rule(lambda value: value >= low, f"at least {low}")


def one_of(*choices: str) -> Rule:
    return Rule(lambda value: value in choices, f"one of {', '.join(choices)}")


def between(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Rule:
    """low <= value <= high, each bound excluded when open."""
    excluded = " and ".join(str(b) for b, is_open in ((low, low_open), (high, high_open)) if is_open)
    return Rule(lambda value: (low < value if low_open else low <= value) and (value < high if high_open else value <= high),
                f"between {low:,} and {high:,}" + (f" (excluding {excluded})" if excluded else ""))


POSITIVE = Rule(lambda value: value > 0, "positive")
NON_NEGATIVE = Rule(lambda value: value >= 0, "non-negative")
ROUNDS = between(0, MAX_ROUNDS)  # bootstrap rounds and shuffles (0: none), as `fanout.fan_out` bounds them


BUDGET_SECONDS = 120.0  # a rating expected to run longer is refused before it starts
BUDGET_BYTES = 4 * 2**30  # and so is one expected to need more memory (2 cores, 24 GB shared by several runs)
# Importing numba and loading a compiled loop from its disk cache, paid once per process by the first method that
# calls one (0.41-0.66 CPU s in the full matrix at load 13): Schulze's widest paths, every bootstrap's Poisson draws.
COMPILED_FIRST_USE_S = 0.5


@dataclass(frozen=True)
class Size:
    """What a cost model reads: agents, pairs of agents compared, tasks (or prompts), ballots (distinct), the
    members of those ballots (their lengths summed: a count scans them once a round), and the log kind (a game
    method's `game=auto` picks its game by it)."""

    agents: int
    pairs: int = 0
    tasks: int = 0
    ballots: int = 0
    members: int = 0
    kind: str = ""

    def counts(self) -> str:
        """The nonzero counts, as a refusal names them ("127 agents, 8,001 pairs, 23 tasks")."""
        return ", ".join(f"{n:,} {what}" for what, n in dataclasses.asdict(self).items() if what != "kind" and n)


@dataclass(frozen=True)
class Cost:
    """A method's expected time and peak memory on an input, and what to do instead when it does not fit."""

    seconds: float
    bytes: float
    alternative: str
    solver: str = ""  # the size of what the method solves, as a user can check it ("an LP of 277 rows x 370,967 columns")


@dataclass(frozen=True)
class Method:
    name: str
    fn: Callable[..., Ratings]
    needs: tuple[str, ...]
    kinds: frozenset[str] | None  # log kinds it accepts; None for all
    needs_with: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # parameter -> statistics it reads
    rules: Mapping[str, Rule] = dataclasses.field(default_factory=dict)  # parameter -> what its values must be
    cost: Callable[[Size, Mapping[str, object]], Cost] | None = None  # the cost model (see the module doc)

    def check(self, params: Mapping[str, object]) -> None:
        """Raise ValueError naming the first of `params` that breaks its rule (the registry's own
        `bootstrap` included); parameters without a rule, and `client`, pass."""
        rules = {BOOTSTRAP: ROUNDS} | dict(self.rules) if self.generic_parameters else self.rules
        for key, value in params.items():
            if key in rules and (problem := rules[key].problem(value)) is not None:
                raise ValueError(f"{self.name}: parameter {key}={value!r} {problem}")

    def conditional_statistics(self, params: Mapping[str, object]) -> tuple[str, ...]:
        """The statistics read because `params` set a parameter of `needs_with` (to other than its default)."""
        defaults = self.parameters
        return tuple(n for key, names in self.needs_with.items() if params.get(key, defaults[key]) != defaults[key]
                     for n in names)

    @property
    def parameters(self) -> dict[str, object]:
        """The spec parameters and their defaults (the keyword-only arguments but `client`)."""
        return {p.name: p.default for p in inspect.signature(self.fn).parameters.values()
                if p.kind is p.KEYWORD_ONLY and p.name not in (CLIENT, ESTABLISHED)}

    @property
    def generic_parameters(self) -> dict[str, object]:
        """The parameters the registry handles for this method: the bootstrap of `pipeline.methods.uncertainty`,
        unless the method has a bootstrap of its own (m-Elo)."""
        return {} if BOOTSTRAP in self.parameters else {BOOTSTRAP: 0, BOOTSTRAP_SEED: 0}

    @property
    def fans_out(self) -> bool:
        """Whether the method takes the caller's Dask client."""
        return CLIENT in inspect.signature(self.fn).parameters

    @property
    def statistics(self) -> tuple[str, ...]:
        """The inputs a reduction must compute for this method."""
        return tuple(n for n in self.needs if n not in GIVEN)

    @property
    def summary(self) -> str:
        return (inspect.getdoc(self.fn) or "").splitlines()[0] if self.fn.__doc__ else ""


REGISTRY: dict[str, Method] = {}


def method(name: str, *, needs: tuple[str, ...], kinds: Iterable[str] | None = None,
           needs_with: Mapping[str, tuple[str, ...]] | None = None, rules: Mapping[str, Rule] | None = None,
           cost: Callable[[Size, Mapping[str, object]], Cost] | None = None) -> Callable:
    """Register `fn` as `name`; the function returned checks its keyword arguments against `rules`
    (`Method.check`) on every call, so a direct call refuses what a spec would."""
    def register(fn: Callable[..., Ratings]) -> Callable[..., Ratings]:
        if name in REGISTRY:
            raise ValueError(f"method {name!r} registered twice")
        if unknown := set(rules or ()) - {p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY}:
            raise ValueError(f"method {name!r}: rules for parameters it does not have: {sorted(unknown)}")

        @functools.wraps(fn)
        def checked(*inputs: object, **params: object) -> Ratings:
            REGISTRY[name].check(params)
            return fn(*inputs, **params)

        REGISTRY[name] = Method(name, checked, tuple(needs), None if kinds is None else frozenset(kinds), dict(needs_with or {}),
                                dict(rules or {}), cost)
        return checked

    return register


def _coerce(method_name: str, key: str, text: str, default: object, infinite: bool = False) -> object:
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            value = int(text)
            if key.endswith("seed") and value < 0:  # seeds go to numpy's SeedSequence
                raise ValueError(text)
            return value
        if isinstance(default, float):
            value = float(text)
            if math.isnan(value) or (math.isinf(value) and not infinite):
                raise ValueError(text)
            return value
    except ValueError:
        number = "number" if infinite else "finite number"
        kind = number if isinstance(default, float) else "non-negative int" if key.endswith("seed") else type(default).__name__
        raise ValueError(f"{method_name}: parameter {key}={text!r} is not a valid {kind}") from None
    return text


@dataclass(frozen=True, eq=False)
class Spec:
    """A registered method and the parameters a spec sets (`params`; the others take their defaults)."""

    name: str
    params: dict[str, object]

    @classmethod
    def parse(cls, text: str | Spec) -> Spec:
        if isinstance(text, Spec):
            return text
        name, _, rest = text.strip().partition(":")
        name = name.strip()
        if name not in REGISTRY:
            raise ValueError(f"unknown method {name!r}; known methods: {', '.join(sorted(REGISTRY))}")
        generic = REGISTRY[name].generic_parameters
        allowed = REGISTRY[name].parameters | generic
        params: dict[str, object] = {}
        previous = None
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if not eq and previous is not None and isinstance(allowed[previous], str):
                params[previous] = f"{params[previous]},{item}"  # a list value: `covariates=len,md`
                continue
            if not eq or key not in allowed:
                valid = ", ".join(allowed) or "none"
                raise ValueError(f"{name}: unknown parameter {item!r} (parameters: {valid})")
            rule = REGISTRY[name].rules.get(key)
            text = value.strip()
            params[key] = text if rule is not None and text in rule.texts else _coerce(
                name, key, text, allowed[key], infinite=rule is not None and rule.infinite)
            previous = key
            if key in generic and params[key] == generic[key]:
                del params[key]  # a registry parameter at its default is not part of the spec
        REGISTRY[name].check(params)
        return cls(name, params)

    @property
    def method(self) -> Method:
        return REGISTRY[self.name]

    @property
    def effective_params(self) -> dict[str, object]:
        """Every parameter of the method: the spec's, and the defaults of the others."""
        return self.method.parameters | self.params

    @property
    def canonical(self) -> str:
        """The one spelling of this spec: name and every effective parameter, sorted (= `Ratings.spec`)."""
        return spec_text(self.name, self.effective_params)

    @property
    def bootstrap_rounds(self) -> int:
        """Rounds of the registry's bootstrap (0: none; a method's own bootstrap is not counted)."""
        return int(self.params.get(BOOTSTRAP, 0)) if self.method.generic_parameters else 0

    @property
    def statistics(self) -> tuple[str, ...]:
        """The inputs a reduction must compute: the method's, and the ballot histogram its bootstrap
        redraws where the method reads core counts."""
        core = self.bootstrap_rounds and any(n in CORE_STATISTICS for n in self.method.statistics)
        return (self.method.statistics + self.method.conditional_statistics(self.params)
                + (("histogram",) if core and "histogram" not in self.method.statistics else ()))

    def without_bootstrap(self) -> Spec:
        """The spec the registry's bootstrap rates in every round."""
        return Spec(self.name, {k: v for k, v in self.params.items() if k not in self.method.generic_parameters})

    def with_params(self, **params: object) -> Spec:
        return Spec(self.name, self.params | params)

    def __str__(self) -> str:
        return self.canonical

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self.canonical == other.canonical

    def __hash__(self) -> int:
        return hash(self.canonical)


def estimate(spec: str | Spec, size: Size) -> Cost | None:
    """The cost `spec`'s method expects on an input of `size` (None: no model), bootstrap rounds included."""
    spec = Spec.parse(spec)
    if spec.method.cost is None:
        return None
    return with_rounds(spec.method.cost(size, spec.effective_params), spec.bootstrap_rounds)


def with_rounds(once: Cost, rounds: int) -> Cost:
    """The cost of one fit and `rounds` bootstrap fits, whose Poisson draws are a compiled loop."""
    return dataclasses.replace(once, seconds=once.seconds * (1 + rounds) + (COMPILED_FIRST_USE_S if rounds else 0.0))


def over_budget(spec: str | Spec, size: Size) -> str | None:
    """The one-line refusal of a spec expected past the budget (`BUDGET_SECONDS`, `BUDGET_BYTES`), else None."""
    spec = Spec.parse(spec)
    if spec.method.cost is None:
        return None
    once = spec.method.cost(size, spec.effective_params)
    cost = with_rounds(once, spec.bootstrap_rounds)
    if cost.seconds <= BUDGET_SECONDS and cost.bytes <= BUDGET_BYTES:
        return None
    solver = f" ({cost.solver})" if cost.solver else ""
    return (f"{spec.name}: expected {cost.seconds:,.0f} s and {cost.bytes / 2**30:,.1f} GiB on {size.counts()}{solver}, over the "
            f"budget of {BUDGET_SECONDS:.0f} s and {BUDGET_BYTES / 2**30:.0f} GiB; {fewer_rounds(spec, once)}{cost.alternative}")


def fewer_rounds(spec: Spec, once: Cost) -> str:
    """"bootstrap=R fits, or " with the most rounds that fit the budget when a spec's bootstrap rounds are what
    put it past the budget (`once`, one fit's cost, and a round fit); else ""."""
    if not spec.bootstrap_rounds or once.bytes > BUDGET_BYTES or not 0 < once.seconds * 2 <= BUDGET_SECONDS:
        return ""
    return f"{BOOTSTRAP}={int((BUDGET_SECONDS - COMPILED_FIRST_USE_S) // once.seconds) - 1} fits, or "


def unique_specs(specs: Iterable[str | Spec], key: Callable[[Spec], str] = str) -> tuple[tuple[Spec, ...], dict[str, list[str]]]:
    """The specs parsed, each once in first-seen order (specs with the same `key`, by default the
    canonical spelling, are one), and for every spec given more than once the spellings given, by key."""
    first: dict[str, Spec] = {}
    spellings: dict[str, list[str]] = {}
    for text in specs:
        spec = Spec.parse(text)
        first.setdefault(key(spec), spec)
        spellings.setdefault(key(spec), []).append(str(text).strip())
    return tuple(first.values()), {k: given for k, given in spellings.items() if len(given) > 1}


def needed_statistics(specs: Iterable[str | Spec]) -> frozenset[str]:
    """The statistics a list of specs reads, so a reduction computes only those."""
    return frozenset(n for s in specs for n in Spec.parse(s).statistics)


def run(spec: str | Spec, stats: Statistics, *, client=None, standing: Standing | None = None) -> Ratings:
    """Rate `stats` with a spec; a method that fans out, or the registry's bootstrap, does so on `client`
    (None: local threads). Given a `standing`, the headline ranks are its (`pipeline.methods.standing`):
    bootstraps count rank intervals among the agents it establishes, and provisional agents are flagged."""
    spec = Spec.parse(spec)
    if (weighed := spec.effective_params.get(HALF_LIFE, NO_DECAY)) != stats.half_life_days:
        raise ValueError(f"{spec.name}: {HALF_LIFE}={weighed:g} reads counts weighed by that half-life, and these are "
                         f"weighed by {stats.half_life_days:g}: reduce them with it (`pipeline.board.reduce`)")
    established = None if standing is None else standing.established(stats)
    if spec.bootstrap_rounds:
        ratings = BOOTSTRAP_RUNNER[BOOTSTRAP](spec, stats, client=client, established=established)
    else:
        ratings = apply(spec, *method_inputs(spec, stats), client=client, established=established)
    return ratings if standing is None else standing.apply(ratings, established, standing.threshold(stats))


# The registry's bootstrap, registered by `pipeline.methods.uncertainty` (which rates through this
# module, so this module cannot import it).
BOOTSTRAP_RUNNER: dict[str, Callable[..., Ratings]] = {}


def register_bootstrap(runner: Callable[..., Ratings]) -> Callable[..., Ratings]:
    BOOTSTRAP_RUNNER[BOOTSTRAP] = runner
    return runner


def method_inputs(spec: Spec, stats: Statistics) -> list[object]:
    """The inputs `spec`'s method reads from `stats`, in the order of its `needs`."""
    chosen = spec.method
    if chosen.kinds is not None and stats.kind not in chosen.kinds:
        raise ValueError(f"{spec.name} rates {', '.join(sorted(chosen.kinds))} logs, not {stats.kind}")
    inputs = []
    for name in chosen.needs:
        value = getattr(stats, name) if hasattr(stats, name) else stats.extra.get(name)
        if value is None:
            raise ValueError(f"{spec.name} needs the {name} statistic, which was not computed")
        inputs.append(value)
    read = chosen.conditional_statistics(spec.params)
    for names in chosen.needs_with.values():
        for name in names:
            if name in read and stats.extra.get(name) is None:
                raise ValueError(f"{spec} needs the {name} statistic, which was not computed")
            inputs.append(stats.extra.get(name) if name in read else None)
    return inputs


def apply(spec: Spec, *inputs: object, client=None, established: np.ndarray | None = None) -> Ratings:
    """Call a method on inputs already in hand, with one BLAS thread (see `pipeline.methods.numerics.threads`);
    the ratings are labelled with the method's name and effective parameters. A method with a bootstrap of
    its own that declares `established` receives the store ids of the agents its rank intervals are counted among."""
    options = dict(spec.without_bootstrap().params) | ({CLIENT: client} if spec.method.fans_out else {})
    if established is not None and ESTABLISHED in inspect.signature(spec.method.fn).parameters:
        options[ESTABLISHED] = established
    with one_blas_thread():
        ratings = spec.method.fn(*inputs, **options)
    return dataclasses.replace(ratings, name=spec.name, params=spec.effective_params)
