from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from dateutil.parser import isoparse
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject
    from ..models.new_task_headers import NewTaskHeaders
    from ..models.required_labels import RequiredLabels
    from ..models.retry_policy import RetryPolicy


T = TypeVar("T", bound="NewTask")


@_attrs_define
class NewTask:
    """
    Attributes:
        handler_name (str):  Example: process_image.
        params (JsonObject | Unset): Any JSON object.
        context (JsonObject | Unset): Any JSON object.
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1). Example: gpu-workers.
        priority (int | Unset): Lower numbers are claimed first (P-ORDER-1). Default: 0.
        headers (NewTaskHeaders | Unset): Static string metadata passed to the worker; `traceparent` and `tracestate`
            carry W3C trace context (P-TEL-1).
        run_at (datetime.datetime | Unset): Not claimable before this instant (status `scheduled`). Defaults to now.
        delay_ms (int | Unset): Added to `run_at` (so, alone, a delay from now).
        good_until (datetime.datetime | Unset): If still unclaimed at this instant the task becomes `expired` and is
            never delivered (P-EXPIRE-1).
        idempotency_key (str | Unset): Enqueueing the same key again returns the existing task (P-TASK-3). Keys
            beginning with `wf:` are reserved for workflow steps (422).
        retry (RetryPolicy | Unset): Server-computed exponential backoff with jitter and cap (P-RETRY-2).
        required_labels (RequiredLabels | Unset): Worker labels a claimer must have (P-LABEL-1): only a poll whose
            `worker_id` is a
            registered worker whose `labels` include every one of these pairs claims the task.
            `{}` (the default) means any worker.
             Example: {'gpu': 'true'}.
        concurrency_key (str | Unset): Names what the task's work must not overload, e.g. one customer or one external
            account (P-KEY-1). Per tenant, across queues and handlers: at most
            `max_concurrency` tasks of the key are claimable or running at once; the others
            stay `pending`, held, and never block other tasks (P-KEY-2).
             Example: customer-42.
        max_concurrency (int | Unset): With `concurrency_key`, how many tasks of the key may be claimable or running at
            once (P-KEY-1); default 1. Without a key it is 422 (P-KEY-5).
        rate_limit_key (str | Unset): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with `PUT
            /rate-limits/{key}`. Example: crm-api.
    """

    handler_name: str
    params: JsonObject | Unset = UNSET
    context: JsonObject | Unset = UNSET
    queue_name: str | Unset = UNSET
    priority: int | Unset = 0
    headers: NewTaskHeaders | Unset = UNSET
    run_at: datetime.datetime | Unset = UNSET
    delay_ms: int | Unset = UNSET
    good_until: datetime.datetime | Unset = UNSET
    idempotency_key: str | Unset = UNSET
    retry: RetryPolicy | Unset = UNSET
    required_labels: RequiredLabels | Unset = UNSET
    concurrency_key: str | Unset = UNSET
    max_concurrency: int | Unset = UNSET
    rate_limit_key: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        handler_name = self.handler_name

        params: dict[str, Any] | Unset = UNSET
        if not isinstance(self.params, Unset):
            params = self.params.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        queue_name = self.queue_name

        priority = self.priority

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        run_at: str | Unset = UNSET
        if not isinstance(self.run_at, Unset):
            run_at = self.run_at.isoformat()

        delay_ms = self.delay_ms

        good_until: str | Unset = UNSET
        if not isinstance(self.good_until, Unset):
            good_until = self.good_until.isoformat()

        idempotency_key = self.idempotency_key

        retry: dict[str, Any] | Unset = UNSET
        if not isinstance(self.retry, Unset):
            retry = self.retry.to_dict()

        required_labels: dict[str, Any] | Unset = UNSET
        if not isinstance(self.required_labels, Unset):
            required_labels = self.required_labels.to_dict()

        concurrency_key = self.concurrency_key

        max_concurrency = self.max_concurrency

        rate_limit_key = self.rate_limit_key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "handler_name": handler_name,
            }
        )
        if params is not UNSET:
            field_dict["params"] = params
        if context is not UNSET:
            field_dict["context"] = context
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if priority is not UNSET:
            field_dict["priority"] = priority
        if headers is not UNSET:
            field_dict["headers"] = headers
        if run_at is not UNSET:
            field_dict["run_at"] = run_at
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if good_until is not UNSET:
            field_dict["good_until"] = good_until
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if retry is not UNSET:
            field_dict["retry"] = retry
        if required_labels is not UNSET:
            field_dict["required_labels"] = required_labels
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if rate_limit_key is not UNSET:
            field_dict["rate_limit_key"] = rate_limit_key

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject
        from ..models.new_task_headers import NewTaskHeaders
        from ..models.required_labels import RequiredLabels
        from ..models.retry_policy import RetryPolicy

        d = dict(src_dict)
        handler_name = d.pop("handler_name")

        _params = d.pop("params", UNSET)
        params: JsonObject | Unset
        if isinstance(_params, Unset):
            params = UNSET
        else:
            params = JsonObject.from_dict(_params)

        _context = d.pop("context", UNSET)
        context: JsonObject | Unset
        if isinstance(_context, Unset):
            context = UNSET
        else:
            context = JsonObject.from_dict(_context)

        queue_name = d.pop("queue_name", UNSET)

        priority = d.pop("priority", UNSET)

        _headers = d.pop("headers", UNSET)
        headers: NewTaskHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = NewTaskHeaders.from_dict(_headers)

        _run_at = d.pop("run_at", UNSET)
        run_at: datetime.datetime | Unset
        if isinstance(_run_at, Unset):
            run_at = UNSET
        else:
            run_at = isoparse(_run_at)

        delay_ms = d.pop("delay_ms", UNSET)

        _good_until = d.pop("good_until", UNSET)
        good_until: datetime.datetime | Unset
        if isinstance(_good_until, Unset):
            good_until = UNSET
        else:
            good_until = isoparse(_good_until)

        idempotency_key = d.pop("idempotency_key", UNSET)

        _retry = d.pop("retry", UNSET)
        retry: RetryPolicy | Unset
        if isinstance(_retry, Unset):
            retry = UNSET
        else:
            retry = RetryPolicy.from_dict(_retry)

        _required_labels = d.pop("required_labels", UNSET)
        required_labels: RequiredLabels | Unset
        if isinstance(_required_labels, Unset):
            required_labels = UNSET
        else:
            required_labels = RequiredLabels.from_dict(_required_labels)

        concurrency_key = d.pop("concurrency_key", UNSET)

        max_concurrency = d.pop("max_concurrency", UNSET)

        rate_limit_key = d.pop("rate_limit_key", UNSET)

        new_task = cls(
            handler_name=handler_name,
            params=params,
            context=context,
            queue_name=queue_name,
            priority=priority,
            headers=headers,
            run_at=run_at,
            delay_ms=delay_ms,
            good_until=good_until,
            idempotency_key=idempotency_key,
            retry=retry,
            required_labels=required_labels,
            concurrency_key=concurrency_key,
            max_concurrency=max_concurrency,
            rate_limit_key=rate_limit_key,
        )

        return new_task
