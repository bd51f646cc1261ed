"""Contains all the data models used in inputs/outputs"""

from .active_task_status import ActiveTaskStatus
from .attempt import Attempt
from .attempt_list import AttemptList
from .attempt_outcome import AttemptOutcome
from .batch_item_outcome import BatchItemOutcome
from .batch_item_status import BatchItemStatus
from .batch_outcome import BatchOutcome
from .block_type import BlockType
from .blocked_reason import BlockedReason
from .claimed_task import ClaimedTask
from .claimed_task_checkpoint_type_0 import ClaimedTaskCheckpointType0
from .claimed_task_headers import ClaimedTaskHeaders
from .clock import Clock
from .clock_advance import ClockAdvance
from .clock_mode import ClockMode
from .enqueued_tasks import EnqueuedTasks
from .field_problem import FieldProblem
from .handler_control import HandlerControl
from .health_status import HealthStatus
from .health_status_checks import HealthStatusChecks
from .health_status_status import HealthStatusStatus
from .instance import Instance
from .instance_context import InstanceContext
from .instance_page import InstancePage
from .instance_status import InstanceStatus
from .item_problem import ItemProblem
from .json_object import JsonObject
from .lease import Lease
from .manual_completion import ManualCompletion
from .manual_failure import ManualFailure
from .new_instance import NewInstance
from .new_instance_batch import NewInstanceBatch
from .new_instance_context import NewInstanceContext
from .new_sequence import NewSequence
from .new_task import NewTask
from .new_task_batch import NewTaskBatch
from .new_task_headers import NewTaskHeaders
from .poll_batch_options import PollBatchOptions
from .poll_batch_options_queue_weights import PollBatchOptionsQueueWeights
from .poll_batch_result import PollBatchResult
from .poll_options import PollOptions
from .poll_options_queue_weights import PollOptionsQueueWeights
from .principal import Principal
from .problem import Problem
from .queue_control import QueueControl
from .queue_history import QueueHistory
from .queue_history_point import QueueHistoryPoint
from .queue_stats import QueueStats
from .queue_stats_list import QueueStatsList
from .rate_limit import RateLimit
from .rate_limit_list import RateLimitList
from .rate_limit_settings import RateLimitSettings
from .required_labels import RequiredLabels
from .retry_policy import RetryPolicy
from .retry_policy_settings import RetryPolicySettings
from .role import Role
from .route import Route
from .running_limit import RunningLimit
from .sequence import Sequence
from .sequence_page import SequencePage
from .server_defaults import ServerDefaults
from .server_info import ServerInfo
from .server_info_storage import ServerInfoStorage
from .started_instances import StartedInstances
from .step import Step
from .step_action import StepAction
from .step_headers import StepHeaders
from .step_input import StepInput
from .step_params import StepParams
from .step_run import StepRun
from .step_semantics import StepSemantics
from .step_status import StepStatus
from .task import Task
from .task_cancellation import TaskCancellation
from .task_checkpoint_type_0 import TaskCheckpointType0
from .task_completion import TaskCompletion
from .task_completion_batch import TaskCompletionBatch
from .task_completion_item import TaskCompletionItem
from .task_failure import TaskFailure
from .task_failure_batch import TaskFailureBatch
from .task_failure_details_type_0 import TaskFailureDetailsType0
from .task_failure_item import TaskFailureItem
from .task_failure_report import TaskFailureReport
from .task_headers import TaskHeaders
from .task_heartbeat import TaskHeartbeat
from .task_lease_status import TaskLeaseStatus
from .task_metadata import TaskMetadata
from .task_outcome import TaskOutcome
from .task_page import TaskPage
from .task_release import TaskRelease
from .task_required_labels import TaskRequiredLabels
from .task_retry import TaskRetry
from .task_status import TaskStatus
from .task_waiting import TaskWaiting
from .tenant_list import TenantList
from .tenant_list_tenants_item import TenantListTenantsItem
from .worker import Worker
from .worker_directive import WorkerDirective
from .worker_heartbeat import WorkerHeartbeat
from .worker_heartbeat_result import WorkerHeartbeatResult
from .worker_heartbeat_state import WorkerHeartbeatState
from .worker_labels import WorkerLabels
from .worker_list import WorkerList
from .worker_registration import WorkerRegistration
from .worker_registration_labels import WorkerRegistrationLabels
from .worker_state import WorkerState

__all__ = (
    "ActiveTaskStatus",
    "Attempt",
    "AttemptList",
    "AttemptOutcome",
    "BatchItemOutcome",
    "BatchItemStatus",
    "BatchOutcome",
    "BlockType",
    "BlockedReason",
    "ClaimedTask",
    "ClaimedTaskCheckpointType0",
    "ClaimedTaskHeaders",
    "Clock",
    "ClockAdvance",
    "ClockMode",
    "EnqueuedTasks",
    "FieldProblem",
    "HandlerControl",
    "HealthStatus",
    "HealthStatusChecks",
    "HealthStatusStatus",
    "Instance",
    "InstanceContext",
    "InstancePage",
    "InstanceStatus",
    "ItemProblem",
    "JsonObject",
    "Lease",
    "ManualCompletion",
    "ManualFailure",
    "NewInstance",
    "NewInstanceBatch",
    "NewInstanceContext",
    "NewSequence",
    "NewTask",
    "NewTaskBatch",
    "NewTaskHeaders",
    "PollBatchOptions",
    "PollBatchOptionsQueueWeights",
    "PollBatchResult",
    "PollOptions",
    "PollOptionsQueueWeights",
    "Principal",
    "Problem",
    "QueueControl",
    "QueueHistory",
    "QueueHistoryPoint",
    "QueueStats",
    "QueueStatsList",
    "RateLimit",
    "RateLimitList",
    "RateLimitSettings",
    "RequiredLabels",
    "RetryPolicy",
    "RetryPolicySettings",
    "Role",
    "Route",
    "RunningLimit",
    "Sequence",
    "SequencePage",
    "ServerDefaults",
    "ServerInfo",
    "ServerInfoStorage",
    "StartedInstances",
    "Step",
    "StepAction",
    "StepHeaders",
    "StepInput",
    "StepParams",
    "StepRun",
    "StepSemantics",
    "StepStatus",
    "Task",
    "TaskCancellation",
    "TaskCheckpointType0",
    "TaskCompletion",
    "TaskCompletionBatch",
    "TaskCompletionItem",
    "TaskFailure",
    "TaskFailureBatch",
    "TaskFailureDetailsType0",
    "TaskFailureItem",
    "TaskFailureReport",
    "TaskHeaders",
    "TaskHeartbeat",
    "TaskLeaseStatus",
    "TaskMetadata",
    "TaskOutcome",
    "TaskPage",
    "TaskRelease",
    "TaskRequiredLabels",
    "TaskRetry",
    "TaskStatus",
    "TaskWaiting",
    "TenantList",
    "TenantListTenantsItem",
    "Worker",
    "WorkerDirective",
    "WorkerHeartbeat",
    "WorkerHeartbeatResult",
    "WorkerHeartbeatState",
    "WorkerLabels",
    "WorkerList",
    "WorkerRegistration",
    "WorkerRegistrationLabels",
    "WorkerState",
)
