"""Named scenarios: workloads as data.

A scenario is a TOML, JSON or YAML document (or the equivalent dict in Python)::

    name = "sf-fig2"
    description = "k = 8; need 1 w.p. 2/3, else 8; Exp(1) durations"
    source = "Grosof & Harchol-Balter, ApPLIED 2023, Fig. 2"
    num_servers = 8            # default k, overridable
    load = 0.7                 # default load (or arrival_rate = ...), overridable

    [vars]                     # optional derived quantities, evaluated in order; k is predefined
    f = "max(1, floor((k / 32) ** (2 / 3)))"

    [[classes]]
    name = "small"
    server_need = 1            # any number may be an arithmetic expression of k and the vars
    probability = "2/3"
    service_time = { distribution = "exponential", mean = 1.0 }

Expressions are evaluated by a small arithmetic interpreter (numbers, + - * / // % **, the names k,
vars and ``floor ceil sqrt log log2 exp min max round``), never by ``eval``. Every number in an
expression, and every intermediate result, must be finite and at most ``MAX_MAGNITUDE`` (1e18) in size
(a power is checked before it is computed); an expression is at most ``MAX_EXPRESSION_LENGTH`` (1000)
characters and ``MAX_EXPRESSION_DEPTH`` (32) levels deep. Scenario values are then checked against the
limits of :mod:`msj_gym.workloads.workload` (servers, loads) and :mod:`msj_gym.workloads.distributions`
(durations, variability) before anything is built.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import math
import operator
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .distributions import distribution_from_dict, short_repr
from .workload import MAX_SERVERS, JobClass, Workload, check_integer, check_load, check_probability

if TYPE_CHECKING:
    from .gpu_traces import GPUTraceScenario
    from .swf import SWFScenario

__all__ = ["Scenario", "evaluate_expression", "list_scenarios", "load_scenario"]

# Bounds that keep every expression fast: its text, its nesting, and every number in it (literal,
# name or intermediate result). 1e18 leaves room for any server count, duration or probability
# while keeping integer arithmetic on machine-sized numbers; powers are checked before computing.
MAX_EXPRESSION_LENGTH = 1000
MAX_EXPRESSION_DEPTH = 32
MAX_MAGNITUDE = 1e18
MAX_SCENARIO_BYTES = 16 << 20  # a scenario file: a few hundred bytes to a few kilobytes in practice
_LOG10_MAX = math.log10(MAX_MAGNITUDE)

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


class _ExprError(ValueError):
    """A problem inside an expression; :func:`evaluate_expression` adds the field and the text."""


def _power(base: Any, exp: Any) -> Any:
    """``base ** exp``, refused (before computing it) when the result would pass MAX_MAGNITUDE."""
    if base == 0:
        if exp < 0:
            raise _ExprError(f"0 ** {exp!r} divides by zero")
        return base**exp
    if base < 0 and exp != int(exp):
        raise _ExprError(f"({base!r}) ** {exp!r}: a negative number to a fractional power is not real")
    if exp * math.log10(abs(base)) > _LOG10_MAX:
        raise _ExprError(f"{base!r} ** {exp!r} exceeds the limit {MAX_MAGNITUDE:g}")
    return base**exp


def _sqrt(x: Any) -> float:
    if x < 0:
        raise _ExprError(f"sqrt({x!r}): the argument must be >= 0")
    return math.sqrt(x)


def _log(x: Any, base: Any = None) -> float:
    if x <= 0:
        raise _ExprError(f"log({x!r}): the argument must be > 0")
    if base is None:
        return math.log(x)
    if base <= 0 or base == 1:
        raise _ExprError(f"log({x!r}, {base!r}): the base must be > 0 and != 1")
    return math.log(x, base)


def _log2(x: Any) -> float:
    if x <= 0:
        raise _ExprError(f"log2({x!r}): the argument must be > 0")
    return math.log2(x)


def _exp(x: Any) -> float:
    if x > _LOG10_MAX * math.log(10):
        raise _ExprError(f"exp({x!r}) exceeds the limit {MAX_MAGNITUDE:g}")
    return math.exp(x)


def _round(x: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return round(x)
    # round(10**18, -10**9) would build 10**(10**9): keep the digit count small
    if ndigits != int(ndigits) or abs(ndigits) > 30:
        raise _ExprError(f"round({x!r}, {ndigits!r}): ndigits must be an integer in [-30, 30]")
    return round(x, int(ndigits))


# name -> (function, least and most number of arguments)
_FUNCS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "sqrt": (_sqrt, 1, 1),
    "log": (_log, 1, 2),
    "log2": (_log2, 1, 1),
    "exp": (_exp, 1, 1),
    "min": (lambda *a: min(a), 1, 64),
    "max": (lambda *a: max(a), 1, 64),
    "round": (_round, 1, 2),
}


def _number(v: Any, what: str) -> int | float:
    """``v`` if it is a finite real number within MAX_MAGNITUDE, else an error naming ``what``."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _ExprError(f"{what} is {v!r}, not a number")
    if isinstance(v, float) and not math.isfinite(v):
        raise _ExprError(f"{what} is {v!r}; expected a finite number")
    if abs(v) > MAX_MAGNITUDE:
        # an int this large has too many digits to show; its size says enough
        shown = f"{v:.3g}" if isinstance(v, float) or abs(v) < 10**30 else f"about 1e{len(str(abs(v))) - 1}"
        raise _ExprError(f"{what} is {shown}, beyond the limit {MAX_MAGNITUDE:g}")
    return v


def _show(expr: str) -> str:
    """The expression for an error message: on one line and not too long."""
    return repr(expr if len(expr) <= 80 else expr[:77] + "...")


def _depth(node: ast.AST) -> int:
    return 1 + max((_depth(c) for c in ast.iter_child_nodes(node)), default=0)


def evaluate_expression(
    expr: str | float | int, names: Mapping[str, float], *, where: str = "expression"
) -> Any:
    """Evaluate an arithmetic expression over ``names``; numbers pass through unchanged.

    Every number (a literal, a name, an intermediate result) must be finite and at most
    ``MAX_MAGNITUDE`` in size, the text at most ``MAX_EXPRESSION_LENGTH`` characters and nested at most
    ``MAX_EXPRESSION_DEPTH`` deep, so an evaluation is fast or raises a one-line ``ValueError`` that
    starts with ``where`` and shows the expression.
    """
    if isinstance(expr, bool) or not isinstance(expr, int | float | str):
        raise ValueError(f"{where}: expected a number or an arithmetic expression, got {short_repr(expr)}")
    if not isinstance(expr, str):
        try:
            return _number(expr, "the value")
        except _ExprError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if len(expr) > MAX_EXPRESSION_LENGTH:
        raise ValueError(
            f"{where}: expression {_show(expr)} is {len(expr)} characters long; "
            f"the limit is {MAX_EXPRESSION_LENGTH}"
        )
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ValueError(f"{where}: cannot parse expression {_show(expr)}") from None
    try:
        depth = _depth(tree)
    except RecursionError:
        depth = MAX_EXPRESSION_DEPTH + 1
    if depth > MAX_EXPRESSION_DEPTH:
        raise ValueError(
            f"{where}: expression {_show(expr)} is nested too deeply (limit {MAX_EXPRESSION_DEPTH} levels)"
        )

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            text = ast.get_source_segment(expr.strip(), node) or ""
            return _number(node.value, f"the number {text if len(text) <= 30 else text[:27] + '...'}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return _number(_power(ev(node.left), ev(node.right)), "a power")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _number(_BINOPS[type(node.op)](ev(node.left), ev(node.right)), "an intermediate result")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Name):
            if node.id in names:
                return _number(names[node.id], f"{node.id}")
            raise _ExprError(f"unknown name {node.id!r}; known: {sorted(names)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
            fn, lo, hi = _FUNCS[node.func.id]
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise _ExprError(f"{node.func.id}() takes plain arguments, not keywords or *args")
            if not lo <= len(node.args) <= hi:
                raise _ExprError(
                    f"{node.func.id}() takes {lo if lo == hi else f'{lo} to {hi}'} argument(s), "
                    f"got {len(node.args)}"
                )
            return _number(fn(*(ev(a) for a in node.args)), f"{node.func.id}(...)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            raise _ExprError(f"unknown function {node.func.id!r}; known: {', '.join(_FUNCS)}")
        raise _ExprError(f"unsupported syntax {type(node).__name__}")

    try:
        return ev(tree)
    except _ExprError as exc:
        raise ValueError(f"{where}: {exc} in {_show(expr)}") from None
    except (ZeroDivisionError, OverflowError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: cannot evaluate {_show(expr)}: {exc}") from None


MAX_TREE_NUMBERS = 10**6


def _evaluate_tree(
    value: Any, names: Mapping[str, float], where: str, budget: list[int] | None = None
) -> Any:
    # ``budget`` counts the numbers still allowed: YAML aliases can make a small file name a huge tree
    budget = [MAX_TREE_NUMBERS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"{where}: more than {MAX_TREE_NUMBERS} numbers in one service_time table")
    if isinstance(value, Mapping):
        return {
            k: (v if k == "distribution" else _evaluate_tree(v, names, f"{where}.{k}", budget))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_evaluate_tree(v, names, f"{where}[{i}]", budget) for i, v in enumerate(value)]
    return evaluate_expression(value, names, where=where)


_KNOWN_KEYS = {
    "name",
    "description",
    "source",
    "num_servers",
    "load",
    "arrival_rate",
    "vars",
    "classes",
    "notes",
}
_CLASS_KEYS = {"name", "server_need", "probability", "service_time"}


@dataclass(frozen=True)
class Scenario:
    """A workload template: build a concrete :class:`Workload` for a given k and load."""

    name: str
    classes: tuple[Mapping[str, Any], ...]
    num_servers: int | str
    load: float | str | None = None
    arrival_rate: float | str | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = ""
    notes: str = ""
    # where the scenario came from, to start error messages (a file's name); "" names it by ``name``
    origin: str = field(default="", compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "scenario") -> Scenario:
        if not isinstance(data, Mapping):
            raise ValueError(f"{origin}: expected a table of scenario fields, got {type(data).__name__}")
        unknown = set(data) - _KNOWN_KEYS
        if unknown:
            names = ", ".join(sorted(map(short_repr, unknown)))
            raise ValueError(f"{origin}: unknown field(s) [{names}]; known: {sorted(_KNOWN_KEYS)}")
        for key in ("name", "description", "source", "notes"):
            if not isinstance(data.get(key, ""), str | int | float):  # text; str() of a tree could explode
                raise ValueError(f"{origin}.{key}: expected text, got {short_repr(data[key])}")
        if "num_servers" not in data:
            raise ValueError(f"{origin}: missing field 'num_servers'")
        classes = data.get("classes")
        if not isinstance(classes, list) or not classes:
            raise ValueError(
                f"{origin}.classes: expected a non-empty list of job classes, got {short_repr(classes)}"
            )
        for i, c in enumerate(classes):
            if not isinstance(c, Mapping):
                raise ValueError(f"{origin}.classes[{i}]: expected a table, got {short_repr(c)}")
            if not isinstance(c.get("name", ""), str | int | float):
                raise ValueError(f"{origin}.classes[{i}].name: expected text, got {short_repr(c['name'])}")
            bad = set(c) - _CLASS_KEYS
            missing = {"server_need", "probability", "service_time"} - set(c)
            if bad:
                names = ", ".join(sorted(map(short_repr, bad)))
                raise ValueError(
                    f"{origin}.classes[{i}]: unknown field(s) [{names}]; known: {sorted(_CLASS_KEYS)}"
                )
            if missing:
                raise ValueError(f"{origin}.classes[{i}]: missing field(s) {sorted(missing)}")
        if data.get("load") is not None and data.get("arrival_rate") is not None:
            raise ValueError(f"{origin}: give at most one of load and arrival_rate")
        variables = data.get("vars", {})
        if not isinstance(variables, Mapping):
            raise ValueError(
                f"{origin}.vars: expected a table of name = expression, got {short_repr(variables)}"
            )
        for var in variables:
            if not isinstance(var, str) or not var.isidentifier() or var == "k" or var in _FUNCS:
                raise ValueError(
                    f"{origin}.vars: {short_repr(var)} is not a usable name (an identifier other than k and "
                    "the function names)"
                )
        return cls(
            name=str(data.get("name", origin)),
            classes=tuple(dict(c) for c in classes),
            num_servers=data["num_servers"],
            load=data.get("load"),
            arrival_rate=data.get("arrival_rate"),
            vars=dict(variables),
            description=str(data.get("description", "")),
            source=str(data.get("source", "")),
            notes=str(data.get("notes", "")),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        """Read a .toml, .json, .yaml or .yml scenario file; a syntax error is one line naming the
        file, the place (line and column where the parser gives them) and the problem."""
        p = Path(path)
        where = f"scenario file {str(p)!r}"
        suffix = p.suffix.lower()
        if suffix not in (".toml", ".json", ".yaml", ".yml"):
            raise ValueError(f"{where}: expected a .toml, .json, .yaml or .yml file")
        if p.exists() and not p.is_file():  # a device or a pipe (/dev/zero) would be read for ever
            raise ValueError(f"{where}: not a regular file")
        if p.is_file() and p.stat().st_size > MAX_SCENARIO_BYTES:
            raise ValueError(f"{where}: {p.stat().st_size} bytes, more than {MAX_SCENARIO_BYTES}")
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{where}: cannot read it: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{where}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
            ) from None
        try:
            data = _parse(text, suffix, where)
        except RecursionError:
            raise ValueError(f"{where}: nested too deeply to read") from None
        origin = f"scenario file {p.name!r}"
        return dataclasses.replace(cls.from_dict(data, origin=origin), origin=origin)

    def build(
        self,
        *,
        num_servers: int | None = None,
        load: float | None = None,
        arrival_rate: float | None = None,
    ) -> Workload:
        """The concrete workload; ``num_servers``, ``load`` or ``arrival_rate`` override the defaults."""
        if load is not None and arrival_rate is not None:
            raise ValueError("give at most one of load and arrival_rate")
        where = self.origin or f"scenario {self.name!r}"
        if num_servers is not None:
            k = check_integer("num_servers", num_servers, 1, MAX_SERVERS)
        else:
            value = evaluate_expression(self.num_servers, {}, where=f"{where}.num_servers")
            k = check_integer(f"{where}.num_servers", value, 1, MAX_SERVERS)
        if load is not None:
            load = check_load(load, "load")
        names: dict[str, float] = {"k": k}
        for var, expr in self.vars.items():
            names[var] = evaluate_expression(expr, names, where=f"{where}.vars.{var}")
        classes = []
        for i, c in enumerate(self.classes):
            w = f"{where}.classes[{i}]"
            need = evaluate_expression(c["server_need"], names, where=f"{w}.server_need")
            need = check_integer(f"{w}.server_need", need, 1, MAX_SERVERS)
            if need > k:
                raise ValueError(f"{w}.server_need: {need} exceeds num_servers = {k}")
            p = evaluate_expression(c["probability"], names, where=f"{w}.probability")
            p = check_probability(p, f"{w}.probability")
            spec = _evaluate_tree(c["service_time"], names, f"{w}.service_time")
            classes.append(
                JobClass(
                    server_need=need,
                    service_time=distribution_from_dict(spec, where=f"{w}.service_time"),
                    probability=p,
                    name=str(c.get("name", f"class{i}")),
                )
            )
        if load is None and arrival_rate is None:
            if self.load is not None:
                value = evaluate_expression(self.load, names, where=f"{where}.load")
                load = check_load(value, f"{where}.load")
            elif self.arrival_rate is not None:
                arrival_rate = evaluate_expression(self.arrival_rate, names, where=f"{where}.arrival_rate")
            else:
                raise ValueError(f"{where}: no default load or arrival_rate; pass one")
        meta = {"scenario": self.name, "vars": {k2: v for k2, v in names.items() if k2 != "k"}}
        return Workload(int(k), classes, arrival_rate=arrival_rate, load=load, name=self.name, meta=meta)


def _parse(text: str, suffix: str, where: str) -> Any:
    """The document in ``text``; a syntax error becomes one line: where, line, column, problem."""
    if suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            # tomllib's message already ends with "(at line L, column C)"
            raise ValueError(f"{where}: TOML syntax error: {exc}") from None
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{where}: JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    try:
        import yaml
    except ImportError:
        from ..extras import install_hint

        raise ValueError(f"{where}: YAML needs PyYAML ({install_hint('yaml')})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        place = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        detail = f"{problem} ({context})" if context else problem
        raise ValueError(f"{where}: YAML syntax error{place}: {' '.join(str(detail).split())}") from None


def _builtin_dir() -> Any:
    return resources.files("msj_gym.workloads") / "scenarios"


@functools.lru_cache(maxsize=64)
def _builtin(text: str, origin: str) -> Scenario:
    # keyed by the file's text: an edited file is parsed again, an unchanged one once per process
    return Scenario.from_dict(tomllib.loads(text), origin=origin)


def list_scenarios() -> dict[str, Scenario]:
    """The built-in scenarios by name."""
    out: dict[str, Scenario] = {}
    for entry in sorted(_builtin_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            sc = _builtin(entry.read_text(encoding="utf-8"), entry.name)
            out[sc.name] = sc
    return out


def load_scenario(
    name_or_path: str | Path | Mapping[str, Any] | Scenario | GPUTraceScenario | SWFScenario,
) -> Any:
    """A built-in scenario by name, a scenario file by path, a scenario given as a dict, a GPU
    trace ``FORMAT:PATH[?options]`` (a :class:`~msj_gym.workloads.gpu_traces.GPUTraceScenario`; see
    :mod:`msj_gym.workloads.gpu_traces`) or an SWF log ``swf:FILE[?options]`` (a
    :class:`~msj_gym.workloads.swf.SWFScenario`; see :mod:`msj_gym.workloads.swf`). Each has ``name``
    and ``build(num_servers=, load=, arrival_rate=)``."""
    if isinstance(name_or_path, Scenario):
        return name_or_path
    if isinstance(name_or_path, Mapping):
        return Scenario.from_dict(name_or_path)
    # the trace readers only where a trace can be meant: an object of theirs, or a FORMAT:PATH text
    if not isinstance(name_or_path, str | Path):
        from .gpu_traces import GPUTraceScenario
        from .swf import SWFScenario

        if isinstance(name_or_path, GPUTraceScenario | SWFScenario):
            return name_or_path
    text = str(name_or_path)
    if isinstance(name_or_path, str) and not text.strip():  # else read as the folder '.'
        raise ValueError("scenario: expected a built-in name, a scenario file or a trace, got ''")
    if isinstance(name_or_path, str) and ":" in text:
        from .gpu_traces import gpu_trace_scenario, is_gpu_trace_spec
        from .swf import is_swf_spec, swf_scenario

        if is_gpu_trace_spec(text):
            return gpu_trace_scenario(text)
        if is_swf_spec(text):
            return swf_scenario(text)
    builtins = list_scenarios()
    if text in builtins:
        return builtins[text]
    p = Path(text)
    if p.suffix.lower() in (".toml", ".json", ".yaml", ".yml") or p.exists():
        if not p.exists():
            raise ValueError(f"scenario file {text!r}: no such file")
        return Scenario.from_file(p)
    raise ValueError(
        f"unknown scenario {text!r}; built-in: {', '.join(builtins)}; or give a .toml/.json/.yaml path "
        f"or a GPU trace FORMAT:PATH (FORMAT one of gpu, philly, helios, acme, pai, openb, gfs), or an SWF "
        "log swf:FILE"
    )
