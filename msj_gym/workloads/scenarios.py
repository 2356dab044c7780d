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
vars and ``floor ceil sqrt log log2 exp min max round``), never by ``eval``.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .workload import JobClass, Workload

if TYPE_CHECKING:
    from .gpu_traces import GPUTraceScenario

__all__ = ["Scenario", "evaluate_expression", "list_scenarios", "load_scenario"]

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCS: dict[str, Callable[..., Any]] = {
    "floor": math.floor,
    "ceil": math.ceil,
    "sqrt": math.sqrt,
    "log": math.log,
    "log2": math.log2,
    "exp": math.exp,
    "min": min,
    "max": max,
    "round": round,
}


def evaluate_expression(
    expr: str | float | int, names: Mapping[str, float], *, where: str = "expression"
) -> Any:
    """Evaluate an arithmetic expression over ``names``; numbers pass through unchanged."""
    if isinstance(expr, bool):
        raise ValueError(f"{where}: expected a number or an arithmetic expression, got {expr!r}")
    if isinstance(expr, int | float):
        return expr
    if not isinstance(expr, str):
        raise ValueError(f"{where}: expected a number or an arithmetic expression, got {expr!r}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError(f"{where}: cannot parse expression {expr!r}") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Name):
            if node.id in names:
                return names[node.id]
            raise ValueError(f"{where}: unknown name {node.id!r} in {expr!r}; known: {sorted(names)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
            if node.keywords:
                raise ValueError(f"{where}: keyword arguments are not allowed in {expr!r}")
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise ValueError(f"{where}: unsupported syntax {ast.dump(node)[:40]}... in {expr!r}")

    try:
        return ev(tree)
    except (ZeroDivisionError, OverflowError, TypeError) as exc:
        raise ValueError(f"{where}: cannot evaluate {expr!r}: {exc}") from None


def _evaluate_tree(value: Any, names: Mapping[str, float], where: str) -> Any:
    if isinstance(value, Mapping):
        return {
            k: (v if k == "distribution" else _evaluate_tree(v, names, f"{where}.{k}"))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_evaluate_tree(v, names, f"{where}[{i}]") for i, v in enumerate(value)]
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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "scenario") -> Scenario:
        if not isinstance(data, Mapping):
            raise ValueError(f"{origin}: expected a table of scenario fields, got {type(data).__name__}")
        unknown = set(data) - _KNOWN_KEYS
        if unknown:
            raise ValueError(f"{origin}: unknown field(s) {sorted(unknown)}; known: {sorted(_KNOWN_KEYS)}")
        if "num_servers" not in data:
            raise ValueError(f"{origin}: missing field 'num_servers'")
        classes = data.get("classes")
        if not isinstance(classes, list) or not classes:
            raise ValueError(f"{origin}.classes: expected a non-empty list of job classes, got {classes!r}")
        for i, c in enumerate(classes):
            if not isinstance(c, Mapping):
                raise ValueError(f"{origin}.classes[{i}]: expected a table, got {c!r}")
            bad = set(c) - _CLASS_KEYS
            missing = {"server_need", "probability", "service_time"} - set(c)
            if bad:
                raise ValueError(
                    f"{origin}.classes[{i}]: unknown field(s) {sorted(bad)}; known: {sorted(_CLASS_KEYS)}"
                )
            if missing:
                raise ValueError(f"{origin}.classes[{i}]: missing field(s) {sorted(missing)}")
        if data.get("load") is not None and data.get("arrival_rate") is not None:
            raise ValueError(f"{origin}: give at most one of load and arrival_rate")
        return cls(
            name=str(data.get("name", origin)),
            classes=tuple(dict(c) for c in classes),
            num_servers=data["num_servers"],
            load=data.get("load"),
            arrival_rate=data.get("arrival_rate"),
            vars=dict(data.get("vars", {})),
            description=str(data.get("description", "")),
            source=str(data.get("source", "")),
            notes=str(data.get("notes", "")),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"scenario file {str(p)!r}: cannot read it: {exc.strerror}") from None
        suffix = p.suffix.lower()
        try:
            if suffix == ".toml":
                data = tomllib.loads(text)
            elif suffix == ".json":
                data = json.loads(text)
            elif suffix in (".yaml", ".yml"):
                try:
                    import yaml
                except ImportError:
                    raise ValueError(
                        f"scenario file {str(p)!r}: YAML needs PyYAML (pip install 'msj-gym[yaml]')"
                    ) from None
                data = yaml.safe_load(text)
            else:
                raise ValueError(f"scenario file {str(p)!r}: expected a .toml, .json, .yaml or .yml file")
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"scenario file {str(p)!r}: {exc}") from None
        return cls.from_dict(data, origin=f"scenario file {p.name!r}")

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
        where = f"scenario {self.name!r}"
        k = (
            num_servers
            if num_servers is not None
            else evaluate_expression(self.num_servers, {}, where=f"{where}.num_servers")
        )
        if isinstance(k, bool) or not isinstance(k, int | float) or int(k) != k or int(k) < 1:
            raise ValueError(f"{where}.num_servers: expected a positive integer, got {k!r}")
        names: dict[str, float] = {"k": int(k)}
        for var, expr in self.vars.items():
            names[var] = evaluate_expression(expr, names, where=f"{where}.vars.{var}")
        classes = []
        for i, c in enumerate(self.classes):
            w = f"{where}.classes[{i}]"
            need = evaluate_expression(c["server_need"], names, where=f"{w}.server_need")
            if isinstance(need, float) and need.is_integer():
                need = int(need)
            classes.append(
                JobClass(
                    server_need=need,
                    service_time=_evaluate_tree(c["service_time"], names, f"{w}.service_time"),
                    probability=evaluate_expression(c["probability"], names, where=f"{w}.probability"),
                    name=str(c.get("name", f"class{i}")),
                )
            )
        if load is None and arrival_rate is None:
            if self.load is not None:
                load = evaluate_expression(self.load, names, where=f"{where}.load")
            elif self.arrival_rate is not None:
                arrival_rate = evaluate_expression(self.arrival_rate, names, where=f"{where}.arrival_rate")
            else:
                raise ValueError(f"{where}: no default load or arrival_rate; pass one")
        meta = {"scenario": self.name, "vars": {k2: v for k2, v in names.items() if k2 != "k"}}
        return Workload(int(k), classes, arrival_rate=arrival_rate, load=load, name=self.name, meta=meta)


def _builtin_dir() -> Any:
    return resources.files("msj_gym.workloads") / "scenarios"


def list_scenarios() -> dict[str, Scenario]:
    """The built-in scenarios by name."""
    out: dict[str, Scenario] = {}
    for entry in sorted(_builtin_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            sc = Scenario.from_dict(tomllib.loads(entry.read_text(encoding="utf-8")), origin=entry.name)
            out[sc.name] = sc
    return out


def load_scenario(name_or_path: str | Path | Mapping[str, Any] | Scenario | GPUTraceScenario) -> Any:
    """A built-in scenario by name, a scenario file by path, a scenario given as a dict, or a GPU
    trace ``FORMAT:PATH[?options]`` (a :class:`~msj_gym.workloads.gpu_traces.GPUTraceScenario`; see
    :mod:`msj_gym.workloads.gpu_traces`). Each has ``name`` and ``build(num_servers=, load=,
    arrival_rate=)``."""
    from .gpu_traces import GPUTraceScenario, gpu_trace_scenario, is_gpu_trace_spec

    if isinstance(name_or_path, Scenario | GPUTraceScenario):
        return name_or_path
    if isinstance(name_or_path, Mapping):
        return Scenario.from_dict(name_or_path)
    text = str(name_or_path)
    if isinstance(name_or_path, str) and is_gpu_trace_spec(text):
        return gpu_trace_scenario(text)
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
        f"or a GPU trace FORMAT:PATH (FORMAT one of gpu, philly, helios, acme, pai, openb, gfs)"
    )
