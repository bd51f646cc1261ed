from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.retry_policy import RetryPolicy
    from ..models.step_params import StepParams


T = TypeVar("T", bound="StepAction")


@_attrs_define
class StepAction:
    """What a fallback or `on_error` runs (a step without id).

    Attributes:
        handler (str):  Example: process_image.
        params (StepParams | Unset): The step's task params. A value that is exactly `{"$from": "input.a.b"}` or
            `{"$from": "steps.<step_id>.output.a.b"}` is replaced, when the step starts, by
            that value of the instance input or of an earlier step's output (P-WF-2). A string
            holding `{{ expression }}` is a template (P-WF-12): a string that is one template
            keeps the value's JSON type, a template inside longer text is interpolated.
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1). Example: gpu-workers.
        priority (int | Unset):
        retry (RetryPolicy | Unset): Server-computed exponential backoff with jitter and cap (P-RETRY-2).
    """

    handler: str
    params: StepParams | Unset = UNSET
    queue_name: str | Unset = UNSET
    priority: int | Unset = UNSET
    retry: RetryPolicy | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        handler = self.handler

        params: dict[str, Any] | Unset = UNSET
        if not isinstance(self.params, Unset):
            params = self.params.to_dict()

        queue_name = self.queue_name

        priority = self.priority

        retry: dict[str, Any] | Unset = UNSET
        if not isinstance(self.retry, Unset):
            retry = self.retry.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "handler": handler,
            }
        )
        if params is not UNSET:
            field_dict["params"] = params
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if priority is not UNSET:
            field_dict["priority"] = priority
        if retry is not UNSET:
            field_dict["retry"] = retry

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.retry_policy import RetryPolicy
        from ..models.step_params import StepParams

        d = dict(src_dict)
        handler = d.pop("handler")

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

        step_action = cls(
            handler=handler,
            params=params,
            queue_name=queue_name,
            priority=priority,
            retry=retry,
        )

        return step_action
