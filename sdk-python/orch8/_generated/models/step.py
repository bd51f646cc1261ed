from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.block_type import BlockType, check_block_type
from ..models.step_semantics import StepSemantics, check_step_semantics
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.retry_policy import RetryPolicy
    from ..models.route import Route
    from ..models.step_action import StepAction
    from ..models.step_headers import StepHeaders
    from ..models.step_input import StepInput
    from ..models.step_params import StepParams


T = TypeVar("T", bound="Step")


@_attrs_define
class Step:
    """A block of a sequence (P-WF-3, P-WF-11): a task `step` (`handler`), or a block of
    blocks: `parallel` / `race` (`branches`), `router` (`routes`, `default`),
    `try_catch` (`try_block`, `catch_block`, `finally_block`), `loop` (`condition`,
    `body`), `for_each` (`collection`, `item_var`, `body`) or `sub_sequence`
    (`sequence_name`, `version`, `input`). The 1.x form `{id, parallel: [steps]}` is a
    parallel group. Handler `sleep` is built in: it waits `params.duration_ms` and is
    never dispatched to workers. Strings in `params` and `input` may hold templates
    `{{ expression }}` (P-WF-12).

        Example:
            {'type': 'step', 'id': 'render_video', 'handler': 'video_renderer', 'queue_name': 'gpu-workers', 'params':
                {'input_url': '{{context.data.video_url}}', 'resolution': '1080p'}}

        Attributes:
            id (str): Id of a step, unique within its sequence (parallel children included). Example: resize.
            type_ (BlockType | Unset): The kind of a block (P-WF-11). Without `type`, a block with `handler` is a `step`
                and one with `parallel` is a 1.x parallel group (a `parallel` block whose every
                child is its own branch).
            handler (str | Unset):  Example: process_image.
            params (StepParams | Unset): The step's task params. A value that is exactly `{"$from": "input.a.b"}` or
                `{"$from": "steps.<step_id>.output.a.b"}` is replaced, when the step starts, by
                that value of the instance input or of an earlier step's output (P-WF-2). A string
                holding `{{ expression }}` is a template (P-WF-12): a string that is one template
                keeps the value's JSON type, a template inside longer text is interpolated.
            queue_name (str | Unset): Named queue; tasks without one go to `default` (P-QUEUE-1). Example: gpu-workers.
            priority (int | Unset):
            retry (RetryPolicy | Unset): Server-computed exponential backoff with jitter and cap (P-RETRY-2).
            fallback (StepAction | Unset): What a fallback or `on_error` runs (a step without id).
            headers (StepHeaders | Unset): Static headers of the step's task (seed 001); the instance's trace headers are
                added (P-WF-4).
            concurrency_key (str | Unset): The concurrency key of the step's task (P-KEY-1). May be a template rendered from
                the instance (`'{{context.data.customer_id}}'`, P-WF-12); it must render to a string of 1-200 characters, else
                the step fails with `bad_reference`.
            max_concurrency (int | Unset): With `concurrency_key`, how many tasks of the key may be claimable or running at
                once (P-KEY-1); default 1. Without a key it is 422 (P-KEY-5).
            rate_limit_key (str | Unset): The rate limit of the step's task (P-RATE-1). May be a template (P-WF-12); it must
                render to a valid rate limit key, else the step fails with `bad_reference`.
            parallel (list[Step] | Unset):
            branches (list[list[Step]] | Unset): `parallel` and `race`: each branch is a list of blocks run in order.
            semantics (StepSemantics | Unset): `race`: the only semantics: the first branch to complete wins.
            routes (list[Route] | Unset):
            default (list[Step] | Unset):
            try_block (list[Step] | Unset):
            catch_block (list[Step] | Unset):
            finally_block (list[Step] | Unset):
            condition (str | Unset): A condition or value (P-WF-12): JSON literals, paths (`context.data.plan`,
                `steps.<id>.output.items[0]`), `!`, `+ - * / %`, `== != < <= > >=`, `in`, `&&`,
                `||`, `c ? a : b`, `len(x)`, `abs(x)`, `json(x)`. Malformed is 422 at definition.
                 Example: context.data.plan == "enterprise".
            max_iterations (int | Unset): `loop` and `for_each`; default 1000.
            body (list[Step] | Unset):
            collection (str | Unset): A condition or value (P-WF-12): JSON literals, paths (`context.data.plan`,
                `steps.<id>.output.items[0]`), `!`, `+ - * / %`, `== != < <= > >=`, `in`, `&&`,
                `||`, `c ? a : b`, `len(x)`, `abs(x)`, `json(x)`. Malformed is 422 at definition.
                 Example: context.data.plan == "enterprise".
            item_var (str | Unset): `for_each`: the name of the current item in templates; default `item`.
            sequence_name (str | Unset): Name of a sequence (the pattern of QueueName). Example: thumbnail.
            version (int | Unset): `sub_sequence`: the version to start; the latest when absent.
            input_ (StepInput | Unset): `sub_sequence`: the child instance input (templates allowed).
    """

    id: str
    type_: BlockType | Unset = UNSET
    handler: str | Unset = UNSET
    params: StepParams | Unset = UNSET
    queue_name: str | Unset = UNSET
    priority: int | Unset = UNSET
    retry: RetryPolicy | Unset = UNSET
    fallback: StepAction | Unset = UNSET
    headers: StepHeaders | Unset = UNSET
    concurrency_key: str | Unset = UNSET
    max_concurrency: int | Unset = UNSET
    rate_limit_key: str | Unset = UNSET
    parallel: list[Step] | Unset = UNSET
    branches: list[list[Step]] | Unset = UNSET
    semantics: StepSemantics | Unset = UNSET
    routes: list[Route] | Unset = UNSET
    default: list[Step] | Unset = UNSET
    try_block: list[Step] | Unset = UNSET
    catch_block: list[Step] | Unset = UNSET
    finally_block: list[Step] | Unset = UNSET
    condition: str | Unset = UNSET
    max_iterations: int | Unset = UNSET
    body: list[Step] | Unset = UNSET
    collection: str | Unset = UNSET
    item_var: str | Unset = UNSET
    sequence_name: str | Unset = UNSET
    version: int | Unset = UNSET
    input_: StepInput | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        type_: str | Unset = UNSET
        if not isinstance(self.type_, Unset):
            type_ = self.type_

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

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        concurrency_key = self.concurrency_key

        max_concurrency = self.max_concurrency

        rate_limit_key = self.rate_limit_key

        parallel: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.parallel, Unset):
            parallel = []
            for parallel_item_data in self.parallel:
                parallel_item = parallel_item_data.to_dict()
                parallel.append(parallel_item)

        branches: list[list[dict[str, Any]]] | Unset = UNSET
        if not isinstance(self.branches, Unset):
            branches = []
            for branches_item_data in self.branches:
                branches_item = []
                for componentsschemas_block_list_item_data in branches_item_data:
                    componentsschemas_block_list_item = (
                        componentsschemas_block_list_item_data.to_dict()
                    )
                    branches_item.append(componentsschemas_block_list_item)

                branches.append(branches_item)

        semantics: str | Unset = UNSET
        if not isinstance(self.semantics, Unset):
            semantics = self.semantics

        routes: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.routes, Unset):
            routes = []
            for routes_item_data in self.routes:
                routes_item = routes_item_data.to_dict()
                routes.append(routes_item)

        default: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.default, Unset):
            default = []
            for componentsschemas_block_list_item_data in self.default:
                componentsschemas_block_list_item = (
                    componentsschemas_block_list_item_data.to_dict()
                )
                default.append(componentsschemas_block_list_item)

        try_block: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.try_block, Unset):
            try_block = []
            for componentsschemas_block_list_item_data in self.try_block:
                componentsschemas_block_list_item = (
                    componentsschemas_block_list_item_data.to_dict()
                )
                try_block.append(componentsschemas_block_list_item)

        catch_block: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.catch_block, Unset):
            catch_block = []
            for componentsschemas_block_list_item_data in self.catch_block:
                componentsschemas_block_list_item = (
                    componentsschemas_block_list_item_data.to_dict()
                )
                catch_block.append(componentsschemas_block_list_item)

        finally_block: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.finally_block, Unset):
            finally_block = []
            for componentsschemas_block_list_item_data in self.finally_block:
                componentsschemas_block_list_item = (
                    componentsschemas_block_list_item_data.to_dict()
                )
                finally_block.append(componentsschemas_block_list_item)

        condition = self.condition

        max_iterations = self.max_iterations

        body: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.body, Unset):
            body = []
            for componentsschemas_block_list_item_data in self.body:
                componentsschemas_block_list_item = (
                    componentsschemas_block_list_item_data.to_dict()
                )
                body.append(componentsschemas_block_list_item)

        collection = self.collection

        item_var = self.item_var

        sequence_name = self.sequence_name

        version = self.version

        input_: dict[str, Any] | Unset = UNSET
        if not isinstance(self.input_, Unset):
            input_ = self.input_.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
            }
        )
        if type_ is not UNSET:
            field_dict["type"] = type_
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
        if headers is not UNSET:
            field_dict["headers"] = headers
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if rate_limit_key is not UNSET:
            field_dict["rate_limit_key"] = rate_limit_key
        if parallel is not UNSET:
            field_dict["parallel"] = parallel
        if branches is not UNSET:
            field_dict["branches"] = branches
        if semantics is not UNSET:
            field_dict["semantics"] = semantics
        if routes is not UNSET:
            field_dict["routes"] = routes
        if default is not UNSET:
            field_dict["default"] = default
        if try_block is not UNSET:
            field_dict["try_block"] = try_block
        if catch_block is not UNSET:
            field_dict["catch_block"] = catch_block
        if finally_block is not UNSET:
            field_dict["finally_block"] = finally_block
        if condition is not UNSET:
            field_dict["condition"] = condition
        if max_iterations is not UNSET:
            field_dict["max_iterations"] = max_iterations
        if body is not UNSET:
            field_dict["body"] = body
        if collection is not UNSET:
            field_dict["collection"] = collection
        if item_var is not UNSET:
            field_dict["item_var"] = item_var
        if sequence_name is not UNSET:
            field_dict["sequence_name"] = sequence_name
        if version is not UNSET:
            field_dict["version"] = version
        if input_ is not UNSET:
            field_dict["input"] = input_

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.retry_policy import RetryPolicy
        from ..models.route import Route
        from ..models.step_action import StepAction
        from ..models.step_headers import StepHeaders
        from ..models.step_input import StepInput
        from ..models.step_params import StepParams

        d = dict(src_dict)
        id = d.pop("id")

        _type_ = d.pop("type", UNSET)
        type_: BlockType | Unset
        if isinstance(_type_, Unset):
            type_ = UNSET
        else:
            type_ = check_block_type(_type_)

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

        _headers = d.pop("headers", UNSET)
        headers: StepHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = StepHeaders.from_dict(_headers)

        concurrency_key = d.pop("concurrency_key", UNSET)

        max_concurrency = d.pop("max_concurrency", UNSET)

        rate_limit_key = d.pop("rate_limit_key", UNSET)

        _parallel = d.pop("parallel", UNSET)
        parallel: list[Step] | Unset = UNSET
        if _parallel is not UNSET:
            parallel = []
            for parallel_item_data in _parallel:
                parallel_item = Step.from_dict(parallel_item_data)

                parallel.append(parallel_item)

        _branches = d.pop("branches", UNSET)
        branches: list[list[Step]] | Unset = UNSET
        if _branches is not UNSET:
            branches = []
            for branches_item_data in _branches:
                branches_item = []
                _branches_item = branches_item_data
                for componentsschemas_block_list_item_data in _branches_item:
                    componentsschemas_block_list_item = Step.from_dict(
                        componentsschemas_block_list_item_data
                    )

                    branches_item.append(componentsschemas_block_list_item)

                branches.append(branches_item)

        _semantics = d.pop("semantics", UNSET)
        semantics: StepSemantics | Unset
        if isinstance(_semantics, Unset):
            semantics = UNSET
        else:
            semantics = check_step_semantics(_semantics)

        _routes = d.pop("routes", UNSET)
        routes: list[Route] | Unset = UNSET
        if _routes is not UNSET:
            routes = []
            for routes_item_data in _routes:
                routes_item = Route.from_dict(routes_item_data)

                routes.append(routes_item)

        _default = d.pop("default", UNSET)
        default: list[Step] | Unset = UNSET
        if _default is not UNSET:
            default = []
            for componentsschemas_block_list_item_data in _default:
                componentsschemas_block_list_item = Step.from_dict(
                    componentsschemas_block_list_item_data
                )

                default.append(componentsschemas_block_list_item)

        _try_block = d.pop("try_block", UNSET)
        try_block: list[Step] | Unset = UNSET
        if _try_block is not UNSET:
            try_block = []
            for componentsschemas_block_list_item_data in _try_block:
                componentsschemas_block_list_item = Step.from_dict(
                    componentsschemas_block_list_item_data
                )

                try_block.append(componentsschemas_block_list_item)

        _catch_block = d.pop("catch_block", UNSET)
        catch_block: list[Step] | Unset = UNSET
        if _catch_block is not UNSET:
            catch_block = []
            for componentsschemas_block_list_item_data in _catch_block:
                componentsschemas_block_list_item = Step.from_dict(
                    componentsschemas_block_list_item_data
                )

                catch_block.append(componentsschemas_block_list_item)

        _finally_block = d.pop("finally_block", UNSET)
        finally_block: list[Step] | Unset = UNSET
        if _finally_block is not UNSET:
            finally_block = []
            for componentsschemas_block_list_item_data in _finally_block:
                componentsschemas_block_list_item = Step.from_dict(
                    componentsschemas_block_list_item_data
                )

                finally_block.append(componentsschemas_block_list_item)

        condition = d.pop("condition", UNSET)

        max_iterations = d.pop("max_iterations", UNSET)

        _body = d.pop("body", UNSET)
        body: list[Step] | Unset = UNSET
        if _body is not UNSET:
            body = []
            for componentsschemas_block_list_item_data in _body:
                componentsschemas_block_list_item = Step.from_dict(
                    componentsschemas_block_list_item_data
                )

                body.append(componentsschemas_block_list_item)

        collection = d.pop("collection", UNSET)

        item_var = d.pop("item_var", UNSET)

        sequence_name = d.pop("sequence_name", UNSET)

        version = d.pop("version", UNSET)

        _input_ = d.pop("input", UNSET)
        input_: StepInput | Unset
        if isinstance(_input_, Unset):
            input_ = UNSET
        else:
            input_ = StepInput.from_dict(_input_)

        step = cls(
            id=id,
            type_=type_,
            handler=handler,
            params=params,
            queue_name=queue_name,
            priority=priority,
            retry=retry,
            fallback=fallback,
            headers=headers,
            concurrency_key=concurrency_key,
            max_concurrency=max_concurrency,
            rate_limit_key=rate_limit_key,
            parallel=parallel,
            branches=branches,
            semantics=semantics,
            routes=routes,
            default=default,
            try_block=try_block,
            catch_block=catch_block,
            finally_block=finally_block,
            condition=condition,
            max_iterations=max_iterations,
            body=body,
            collection=collection,
            item_var=item_var,
            sequence_name=sequence_name,
            version=version,
            input_=input_,
        )

        return step
