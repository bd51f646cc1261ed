from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject
    from ..models.new_instance_context import NewInstanceContext


T = TypeVar("T", bound="NewInstance")


@_attrs_define
class NewInstance:
    """
    Attributes:
        sequence (str): Name of a sequence (the pattern of QueueName). Example: thumbnail.
        version (int | Unset):
        input_ (JsonObject | Unset): Any JSON object.
        context (NewInstanceContext | Unset): Orch8's form of the input (P-WF-10) - `data` is the input (give `input` or
            `context.data`, or both equal), `config` the instance configuration templates read as `context.config`.
        idempotency_key (str | Unset):
        concurrency_key (str | Unset): Names what the task's work must not overload, e.g. one customer or one external
            account (P-KEY-1). Per tenant, across queues and handlers: at most
            `max_concurrency` tasks of the key are claimable or running at once; the others
            stay `pending`, held, and never block other tasks (P-KEY-2).
             Example: customer-42.
        max_concurrency (int | Unset): With `concurrency_key`, how many tasks of the key may be claimable or running at
            once (P-KEY-1); default 1. Without a key it is 422 (P-KEY-5).
    """

    sequence: str
    version: int | Unset = UNSET
    input_: JsonObject | Unset = UNSET
    context: NewInstanceContext | Unset = UNSET
    idempotency_key: str | Unset = UNSET
    concurrency_key: str | Unset = UNSET
    max_concurrency: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        sequence = self.sequence

        version = self.version

        input_: dict[str, Any] | Unset = UNSET
        if not isinstance(self.input_, Unset):
            input_ = self.input_.to_dict()

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        idempotency_key = self.idempotency_key

        concurrency_key = self.concurrency_key

        max_concurrency = self.max_concurrency

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "sequence": sequence,
            }
        )
        if version is not UNSET:
            field_dict["version"] = version
        if input_ is not UNSET:
            field_dict["input"] = input_
        if context is not UNSET:
            field_dict["context"] = context
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject
        from ..models.new_instance_context import NewInstanceContext

        d = dict(src_dict)
        sequence = d.pop("sequence")

        version = d.pop("version", UNSET)

        _input_ = d.pop("input", UNSET)
        input_: JsonObject | Unset
        if isinstance(_input_, Unset):
            input_ = UNSET
        else:
            input_ = JsonObject.from_dict(_input_)

        _context = d.pop("context", UNSET)
        context: NewInstanceContext | Unset
        if isinstance(_context, Unset):
            context = UNSET
        else:
            context = NewInstanceContext.from_dict(_context)

        idempotency_key = d.pop("idempotency_key", UNSET)

        concurrency_key = d.pop("concurrency_key", UNSET)

        max_concurrency = d.pop("max_concurrency", UNSET)

        new_instance = cls(
            sequence=sequence,
            version=version,
            input_=input_,
            context=context,
            idempotency_key=idempotency_key,
            concurrency_key=concurrency_key,
            max_concurrency=max_concurrency,
        )

        return new_instance
