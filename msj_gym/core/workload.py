"""What the simulator, the policies and the registry ask of a workload, of any of msj_gym's models.

A protocol, so that a workload class of one's own needs no base class of msj_gym's: the core reads a
workload's model off :attr:`WorkloadLike.model`, never off its type's name.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, TypeGuard, runtime_checkable

__all__ = ["WORKLOAD_MEMBERS", "WorkloadLike", "is_workload"]


@runtime_checkable
class WorkloadLike(Protocol):
    """What a workload of any of msj_gym's models declares: its ``model`` (``"msj"``, the
    multiserver-job queue; ``"moldable"``, the moldable loss system; ``"compatibility"``, job-server
    compatibility graphs), which the policies defined on it declare too (``Policy.models``), its
    servers and classes, and a document of itself (``to_dict``) that results are keyed by. The
    registry asks a workload its model here, never its type's name."""

    model: ClassVar[str]

    @property
    def num_servers(self) -> int: ...

    @property
    def num_classes(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...


#: The members :class:`WorkloadLike` asks for, for the messages that name what is missing.
WORKLOAD_MEMBERS = ("model", "num_servers", "num_classes", "to_dict")


def is_workload(obj: object) -> TypeGuard[WorkloadLike]:
    """Whether ``obj`` declares what :class:`WorkloadLike` asks (its model, servers, classes and
    ``to_dict``): the check every entry point makes before it reads a workload's model."""
    return isinstance(obj, WorkloadLike)
