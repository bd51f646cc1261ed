from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.instance_status import InstanceStatus, check_instance_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.instance_context import InstanceContext
    from ..models.json_object import JsonObject
    from ..models.step_run import StepRun
    from ..models.task_failure import TaskFailure
    from ..models.task_waiting import TaskWaiting


T = TypeVar("T", bound="Instance")


@_attrs_define
class Instance:
    """
    Attributes:
        id (str):  Example: inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        sequence (str):
        version (int):
        status (InstanceStatus):
        input_ (JsonObject): Any JSON object.
        context (InstanceContext): `data` is the input; `config` the configuration given at start (P-WF-10).
        output (Any): The last step output once completed (any JSON value).
        error (None | TaskFailure):
        steps (list[StepRun]):
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
        finished_at (datetime.datetime | None):
        tenant (str | Unset): A tenant (P-TEN-1); `default` when no key or header names one. Example: team-a.
        on_error (None | StepRun | Unset): The outcome of the sequence's `on_error` step, once it ran.
        idempotency_key (None | str | Unset):
        concurrency_key (None | str | Unset): Its concurrency key (P-KEY-7), or null.
        max_concurrency (int | None | Unset): Its key's limit as this instance states it (P-KEY-7); null without a key.
        waiting (TaskWaiting | Unset): What holds this task, or who runs it (P-OBS-7): in `GET /tasks/{task_id}` only.
            An
            instance carries the same shape in `GET /instances/{instance_id}` while it waits for
            a slot of its concurrency key (P-KEY-7, reason `concurrency_key`).
    """

    id: str
    sequence: str
    version: int
    status: InstanceStatus
    input_: JsonObject
    context: InstanceContext
    output: Any
    error: None | TaskFailure
    steps: list[StepRun]
    created_at: datetime.datetime
    updated_at: datetime.datetime
    finished_at: datetime.datetime | None
    tenant: str | Unset = UNSET
    on_error: None | StepRun | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    concurrency_key: None | str | Unset = UNSET
    max_concurrency: int | None | Unset = UNSET
    waiting: TaskWaiting | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_run import StepRun
        from ..models.task_failure import TaskFailure

        id = self.id

        sequence = self.sequence

        version = self.version

        status: str = self.status

        input_ = self.input_.to_dict()

        context = self.context.to_dict()

        output = self.output

        error: dict[str, Any] | None
        if isinstance(self.error, TaskFailure):
            error = self.error.to_dict()
        else:
            error = self.error

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        tenant = self.tenant

        on_error: dict[str, Any] | None | Unset
        if isinstance(self.on_error, Unset):
            on_error = UNSET
        elif isinstance(self.on_error, StepRun):
            on_error = self.on_error.to_dict()
        else:
            on_error = self.on_error

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        max_concurrency: int | None | Unset
        if isinstance(self.max_concurrency, Unset):
            max_concurrency = UNSET
        else:
            max_concurrency = self.max_concurrency

        waiting: dict[str, Any] | Unset = UNSET
        if not isinstance(self.waiting, Unset):
            waiting = self.waiting.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "sequence": sequence,
                "version": version,
                "status": status,
                "input": input_,
                "context": context,
                "output": output,
                "error": error,
                "steps": steps,
                "created_at": created_at,
                "updated_at": updated_at,
                "finished_at": finished_at,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if on_error is not UNSET:
            field_dict["on_error"] = on_error
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.instance_context import InstanceContext
        from ..models.json_object import JsonObject
        from ..models.step_run import StepRun
        from ..models.task_failure import TaskFailure
        from ..models.task_waiting import TaskWaiting

        d = dict(src_dict)
        id = d.pop("id")

        sequence = d.pop("sequence")

        version = d.pop("version")

        status = check_instance_status(d.pop("status"))

        input_ = JsonObject.from_dict(d.pop("input"))

        context = InstanceContext.from_dict(d.pop("context"))

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

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = StepRun.from_dict(steps_item_data)

            steps.append(steps_item)

        created_at = isoparse(d.pop("created_at"))

        updated_at = isoparse(d.pop("updated_at"))

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

        tenant = d.pop("tenant", UNSET)

        def _parse_on_error(data: object) -> None | StepRun | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                on_error_type_0 = StepRun.from_dict(data)

                return on_error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepRun | Unset, data)

        on_error = _parse_on_error(d.pop("on_error", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_concurrency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", UNSET))

        def _parse_max_concurrency(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_concurrency = _parse_max_concurrency(d.pop("max_concurrency", UNSET))

        _waiting = d.pop("waiting", UNSET)
        waiting: TaskWaiting | Unset
        if isinstance(_waiting, Unset):
            waiting = UNSET
        else:
            waiting = TaskWaiting.from_dict(_waiting)

        instance = cls(
            id=id,
            sequence=sequence,
            version=version,
            status=status,
            input_=input_,
            context=context,
            output=output,
            error=error,
            steps=steps,
            created_at=created_at,
            updated_at=updated_at,
            finished_at=finished_at,
            tenant=tenant,
            on_error=on_error,
            idempotency_key=idempotency_key,
            concurrency_key=concurrency_key,
            max_concurrency=max_concurrency,
            waiting=waiting,
        )

        instance.additional_properties = d
        return instance

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
