from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.block_type import BlockType, check_block_type
from ..models.step_status import StepStatus, check_step_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.task_failure import TaskFailure


T = TypeVar("T", bound="StepRun")


@_attrs_define
class StepRun:
    """One run of a block of an instance (P-WF-10).

    Attributes:
        id (str):
        key (str): Unique in the instance - the block id, or `<loop key>[<i>]/<id>` inside iteration i of a `loop` or
            `for_each`.
        type_ (BlockType): The kind of a block (P-WF-11). Without `type`, a block with `handler` is a `step`
            and one with `parallel` is a 1.x parallel group (a `parallel` block whose every
            child is its own branch).
        group (None | str): The key of the block that contains this one; null at the top level.
        lane (None | str): The list of its container it is in - `branch:<i>`, `route:<i>`, `default`, `try`, `catch`,
            `finally` or `iteration:<i>`; null at the top level.
        chosen (None | str): A router's route taken (`route:<i>` or `default`), a race's winning branch (`branch:<i>`);
            null otherwise or before.
        iterations (int | None): `loop` and `for_each`: iterations started.
        child_instance_id (None | str): `sub_sequence`: the instance it started.
        status (StepStatus):
        task_id (None | str): The step's latest task (its fallback's once that runs); null for sleep.
        output (Any): The step output (any JSON value); null until completed.
        error (None | TaskFailure):
        attempts (int):
        started_at (datetime.datetime | None):
        finished_at (datetime.datetime | None):
        fallback (bool | Unset): The fallback ran (or runs) for this step.
    """

    id: str
    key: str
    type_: BlockType
    group: None | str
    lane: None | str
    chosen: None | str
    iterations: int | None
    child_instance_id: None | str
    status: StepStatus
    task_id: None | str
    output: Any
    error: None | TaskFailure
    attempts: int
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    fallback: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_failure import TaskFailure

        id = self.id

        key = self.key

        type_: str = self.type_

        group: None | str
        group = self.group

        lane: None | str
        lane = self.lane

        chosen: None | str
        chosen = self.chosen

        iterations: int | None
        iterations = self.iterations

        child_instance_id: None | str
        child_instance_id = self.child_instance_id

        status: str = self.status

        task_id: None | str
        task_id = self.task_id

        output = self.output

        error: dict[str, Any] | None
        if isinstance(self.error, TaskFailure):
            error = self.error.to_dict()
        else:
            error = self.error

        attempts = self.attempts

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        fallback = self.fallback

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "key": key,
                "type": type_,
                "group": group,
                "lane": lane,
                "chosen": chosen,
                "iterations": iterations,
                "child_instance_id": child_instance_id,
                "status": status,
                "task_id": task_id,
                "output": output,
                "error": error,
                "attempts": attempts,
                "started_at": started_at,
                "finished_at": finished_at,
            }
        )
        if fallback is not UNSET:
            field_dict["fallback"] = fallback

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.task_failure import TaskFailure

        d = dict(src_dict)
        id = d.pop("id")

        key = d.pop("key")

        type_ = check_block_type(d.pop("type"))

        def _parse_group(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        group = _parse_group(d.pop("group", None))

        def _parse_lane(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        lane = _parse_lane(d.pop("lane", None))

        def _parse_chosen(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        chosen = _parse_chosen(d.pop("chosen", None))

        def _parse_iterations(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        iterations = _parse_iterations(d.pop("iterations", None))

        def _parse_child_instance_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        child_instance_id = _parse_child_instance_id(d.pop("child_instance_id", None))

        status = check_step_status(d.pop("status"))

        def _parse_task_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        task_id = _parse_task_id(d.pop("task_id", None))

        output = d.pop("output")

        def _parse_error(data: object) -> None | TaskFailure:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = TaskFailure.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskFailure, data)

        error = _parse_error(d.pop("error", None))

        attempts = d.pop("attempts")

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = isoparse(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at", None))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = isoparse(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at", None))

        fallback = d.pop("fallback", UNSET)

        step_run = cls(
            id=id,
            key=key,
            type_=type_,
            group=group,
            lane=lane,
            chosen=chosen,
            iterations=iterations,
            child_instance_id=child_instance_id,
            status=status,
            task_id=task_id,
            output=output,
            error=error,
            attempts=attempts,
            started_at=started_at,
            finished_at=finished_at,
            fallback=fallback,
        )

        step_run.additional_properties = d
        return step_run

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
