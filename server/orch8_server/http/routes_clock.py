"""Routes of the test clock (P-CLOCK-1..5): GET /clock, POST /clock/advance.

Admin only (`x-orch8-roles: []`, enforced with every other role check in endpoint.py);
the rules are lifecycle/clock.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response

from orch8_server.http.endpoint import Call, json_response
from orch8_server.http.operations import operation
from orch8_server.lifecycle.engine import Engine

if TYPE_CHECKING:
    from orch8_server._generated.models import ClockAdvance


@operation("getClock")
async def get_clock(call: Call[None]) -> Response:
    engine: Engine = call.request.app.state.engine
    return json_response(await engine.clock.view())


@operation("advanceClock")
async def advance_clock(call: Call[ClockAdvance]) -> Response:
    engine: Engine = call.request.app.state.engine
    body = call.body
    to_next = bool(body.get("to_next_timer"))
    return json_response(await engine.clock.advance(body.get("by_ms"), to_next))
