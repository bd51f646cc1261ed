from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.retry_policy import RetryPolicy
    from ..models.step_action import StepAction
    from ..models.step_params import StepParams


T = TypeVar("T", bound="Step")


@_attrs_define
class Step:
    """A task step (`handler`) or a parallel group (`parallel`, whose children are task
    steps); exactly one of the two (P-WF-3). Handler `sleep` is built in: it waits
    `params.duration_ms` and is never dispatched to workers.

        Attributes:
            id (str): Id of a step, unique within its sequence (parallel children included). Example: resize.
            handler (str | Unset):  Example: process_image.
            params (StepParams | Unset): The step's task params. A value that is exactly `{"$from": "input.a.b"}` or
                `{"$from": "steps.<step_id>.output.a.b"}` is replaced, when the step starts, by
                that value of the instance input or of an earlier step's output (P-WF-2).
            queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1). Example: gpu-workers.
            priority (int | Unset):
            retry (RetryPolicy | Unset): Server-computed exponential backoff with jitter and cap (P-RETRY-2).
            fallback (StepAction | Unset): What a fallback or `on_error` runs (a step without id).
            parallel (list[Step] | Unset):
    """

    id: str
    handler: str | Unset = UNSET
    params: StepParams | Unset = UNSET
    queue_name: str | Unset = UNSET
    priority: int | Unset = UNSET
    retry: RetryPolicy | Unset = UNSET
    fallback: StepAction | Unset = UNSET
    parallel: list[Step] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        handler = self.handler

        params: dict[str, Any] | Unset = UNSET
        if not isinstance(self.params, Unset):
            params = self.params.to_dict()

        queue_name = self.queue_name

        priority = self.priority

        retry: dict[str, Any] | Unset = UNSET
        if not isinstance(self.retry, Unset):
            retry = self.retry.to_dict()

        fallback: dict[str, Any] | Unset = UNSET
        if not isinstance(self.fallback, Unset):
            fallback = self.fallback.to_dict()

        parallel: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.parallel, Unset):
            parallel = []
            for parallel_item_data in self.parallel:
                parallel_item = parallel_item_data.to_dict()
                parallel.append(parallel_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
            }
        )
        if handler is not UNSET:
            field_dict["handler"] = handler
        if params is not UNSET:
            field_dict["params"] = params
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if priority is not UNSET:
            field_dict["priority"] = priority
        if retry is not UNSET:
            field_dict["retry"] = retry
        if fallback is not UNSET:
            field_dict["fallback"] = fallback
        if parallel is not UNSET:
            field_dict["parallel"] = parallel

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.retry_policy import RetryPolicy
        from ..models.step_action import StepAction
        from ..models.step_params import StepParams

        d = dict(src_dict)
        id = d.pop("id")

        handler = d.pop("handler", UNSET)

        _params = d.pop("params", UNSET)
        params: StepParams | Unset
        if isinstance(_params, Unset):
            params = UNSET
        else:
            params = StepParams.from_dict(_params)

        queue_name = d.pop("queue_name", UNSET)

        priority = d.pop("priority", UNSET)

        _retry = d.pop("retry", UNSET)
        retry: RetryPolicy | Unset
        if isinstance(_retry, Unset):
            retry = UNSET
        else:
            retry = RetryPolicy.from_dict(_retry)

        _fallback = d.pop("fallback", UNSET)
        fallback: StepAction | Unset
        if isinstance(_fallback, Unset):
            fallback = UNSET
        else:
            fallback = StepAction.from_dict(_fallback)

        _parallel = d.pop("parallel", UNSET)
        parallel: list[Step] | Unset = UNSET
        if _parallel is not UNSET:
            parallel = []
            for parallel_item_data in _parallel:
                parallel_item = Step.from_dict(parallel_item_data)

                parallel.append(parallel_item)

        step = cls(
            id=id,
            handler=handler,
            params=params,
            queue_name=queue_name,
            priority=priority,
            retry=retry,
            fallback=fallback,
            parallel=parallel,
        )

        return step
