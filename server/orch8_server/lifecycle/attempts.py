"""The failure codes the server itself stores; transitions.py records ended attempts."""

from __future__ import annotations

# Failure codes the server itself stores (openapi.yaml x-orch8-failure-codes).
# Each is also the attempt outcome where one exists (AttemptOutcome).
DEFAULT_FAILURE_CODE = "worker_error"  # a fail reported without `code`
MANUAL_CODE = "manual"  # an operator resolved the task (P-MANUAL-1)
LEASE_EXPIRED_CODE = "lease_expired"  # P-LEASE-6
WORKER_LOST_CODE = "worker_lost"  # P-WORKER-5
