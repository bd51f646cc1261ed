from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.poll_batch_options_queue_weights import PollBatchOptionsQueueWeights


T = TypeVar("T", bound="PollBatchOptions")


@_attrs_define
class PollBatchOptions:
    """
    Attributes:
        handler_names (list[str] | Unset):
        queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1). Example: gpu-workers.
        queue_names (list[str] | Unset): Several queues, claimed from in this strict order (P-QUEUE-2), or by weight
            with
            `queue_weights` (P-QUEUE-3). Not together with `queue_name` (422).
        queue_weights (PollBatchOptionsQueueWeights | Unset): Weight per queue of `queue_names` (every name, no other):
            each claimed task's
            queue is drawn with probability weight / sum of weights among the named queues
            that have claimable work (P-QUEUE-3). Needs `queue_names`.
        worker_id (str | Unset): Stable identifier of one worker process. Example: img-worker-1.
        wait_ms (int | Unset):  Default: 30000.
        lease_ms (int | Unset):
        batch_size (int | Unset): Most tasks to claim; a worker asks for exactly its free slots. Default: 10.
    """

    handler_names: list[str] | Unset = UNSET
    queue_name: str | Unset = UNSET
    queue_names: list[str] | Unset = UNSET
    queue_weights: PollBatchOptionsQueueWeights | Unset = UNSET
    worker_id: str | Unset = UNSET
    wait_ms: int | Unset = 30000
    lease_ms: int | Unset = UNSET
    batch_size: int | Unset = 10

    def to_dict(self) -> dict[str, Any]:
        handler_names: list[str] | Unset = UNSET
        if not isinstance(self.handler_names, Unset):
            handler_names = self.handler_names

        queue_name = self.queue_name

        queue_names: list[str] | Unset = UNSET
        if not isinstance(self.queue_names, Unset):
            queue_names = self.queue_names

        queue_weights: dict[str, Any] | Unset = UNSET
        if not isinstance(self.queue_weights, Unset):
            queue_weights = self.queue_weights.to_dict()

        worker_id = self.worker_id

        wait_ms = self.wait_ms

        lease_ms = self.lease_ms

        batch_size = self.batch_size

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if handler_names is not UNSET:
            field_dict["handler_names"] = handler_names
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if queue_names is not UNSET:
            field_dict["queue_names"] = queue_names
        if queue_weights is not UNSET:
            field_dict["queue_weights"] = queue_weights
        if worker_id is not UNSET:
            field_dict["worker_id"] = worker_id
        if wait_ms is not UNSET:
            field_dict["wait_ms"] = wait_ms
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms
        if batch_size is not UNSET:
            field_dict["batch_size"] = batch_size

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.poll_batch_options_queue_weights import (
            PollBatchOptionsQueueWeights,
        )

        d = dict(src_dict)
        handler_names = cast(list[str], d.pop("handler_names", UNSET))

        queue_name = d.pop("queue_name", UNSET)

        queue_names = cast(list[str], d.pop("queue_names", UNSET))

        _queue_weights = d.pop("queue_weights", UNSET)
        queue_weights: PollBatchOptionsQueueWeights | Unset
        if isinstance(_queue_weights, Unset):
            queue_weights = UNSET
        else:
            queue_weights = PollBatchOptionsQueueWeights.from_dict(_queue_weights)

        worker_id = d.pop("worker_id", UNSET)

        wait_ms = d.pop("wait_ms", UNSET)

        lease_ms = d.pop("lease_ms", UNSET)

        batch_size = d.pop("batch_size", UNSET)

        poll_batch_options = cls(
            handler_names=handler_names,
            queue_name=queue_name,
            queue_names=queue_names,
            queue_weights=queue_weights,
            worker_id=worker_id,
            wait_ms=wait_ms,
            lease_ms=lease_ms,
            batch_size=batch_size,
        )

        return poll_batch_options
