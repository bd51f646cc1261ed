// Friendly names for the generated wire types. Hand-written code imports from here so a
// schema rename in openapi.yaml surfaces as one compile error in one file.
import type { components, operations } from "./generated/schema.js";

type Schemas = components["schemas"];

export type Task = Schemas["Task"];
export type TaskStatus = Schemas["TaskStatus"];
export type TaskPage = Schemas["TaskPage"];
export type NewTask = Schemas["NewTask"];
export type NewTaskBatch = Schemas["NewTaskBatch"];
export type EnqueuedTasks = Schemas["EnqueuedTasks"];
export type RetryPolicy = Schemas["RetryPolicy"];
export type Lease = Schemas["Lease"];
export type TaskFailure = Schemas["TaskFailure"];
export type TaskCancellation = Schemas["TaskCancellation"];
export type TaskRetry = Schemas["TaskRetry"];
export type ManualCompletion = Schemas["ManualCompletion"];
export type ManualFailure = Schemas["ManualFailure"];
export type Attempt = Schemas["Attempt"];
export type AttemptList = Schemas["AttemptList"];
export type PollOptions = Schemas["PollOptions"];
export type PollBatchOptions = Schemas["PollBatchOptions"];
export type ClaimedTask = Schemas["ClaimedTask"];
export type PollBatchResult = Schemas["PollBatchResult"];
export type TaskCompletion = Schemas["TaskCompletion"];
export type TaskFailureReport = Schemas["TaskFailureReport"];
export type TaskOutcome = Schemas["TaskOutcome"];
export type TaskHeartbeat = Schemas["TaskHeartbeat"];
export type TaskLeaseStatus = Schemas["TaskLeaseStatus"];
export type TaskRelease = Schemas["TaskRelease"];
export type TaskCompletionItem = Schemas["TaskCompletionItem"];
export type TaskFailureItem = Schemas["TaskFailureItem"];
export type BatchOutcome = Schemas["BatchOutcome"];
export type BatchItemOutcome = Schemas["BatchItemOutcome"];
export type WorkerState = Schemas["WorkerState"];
export type WorkerDirective = Schemas["WorkerDirective"];
export type WorkerRegistration = Schemas["WorkerRegistration"];
export type WorkerInfo = Schemas["Worker"];
export type WorkerList = Schemas["WorkerList"];
export type WorkerHeartbeat = Schemas["WorkerHeartbeat"];
export type WorkerHeartbeatResult = Schemas["WorkerHeartbeatResult"];
export type ActiveTaskStatus = Schemas["ActiveTaskStatus"];
export type QueueStats = Schemas["QueueStats"];
export type QueueStatsList = Schemas["QueueStatsList"];
export type BlockedReason = Schemas["BlockedReason"];
export type QueueControl = Schemas["QueueControl"];
export type HandlerControl = Schemas["HandlerControl"];
export type RunningLimit = Schemas["RunningLimit"];
export type RateLimit = Schemas["RateLimit"];
export type RateLimitList = Schemas["RateLimitList"];
export type RateLimitSettings = Schemas["RateLimitSettings"];
export type QueueHistory = Schemas["QueueHistory"];
export type QueueHistoryPoint = Schemas["QueueHistoryPoint"];
export type RequiredLabels = Schemas["RequiredLabels"];
export type HealthStatus = Schemas["HealthStatus"];
export type ServerInfo = Schemas["ServerInfo"];
export type Sequence = Schemas["Sequence"];
export type SequencePage = Schemas["SequencePage"];
export type NewSequence = Schemas["NewSequence"];
export type Step = Schemas["Step"];
export type StepAction = Schemas["StepAction"];
export type StepRun = Schemas["StepRun"];
export type StepStatus = Schemas["StepStatus"];
export type Instance = Schemas["Instance"];
export type InstanceStatus = Schemas["InstanceStatus"];
export type InstancePage = Schemas["InstancePage"];
export type NewInstance = Schemas["NewInstance"];
export type Problem = Schemas["Problem"];
export type FieldProblem = Schemas["FieldProblem"];

/** Query of `GET /tasks`. */
export type ListTasksQuery = NonNullable<operations["listTasks"]["parameters"]["query"]>;
/** Query of `GET /sequences`. */
export type ListSequencesQuery = NonNullable<operations["listSequences"]["parameters"]["query"]>;
/** Query of `GET /instances`. */
export type ListInstancesQuery = NonNullable<operations["listInstances"]["parameters"]["query"]>;
/** Query of `GET /workers`. */
export type ListWorkersQuery = NonNullable<operations["listWorkers"]["parameters"]["query"]>;
/** Query of `GET /queues`. */
export type QueueStatsQuery = NonNullable<operations["getQueueStats"]["parameters"]["query"]>;
/** Query of `GET /queues/{queue_name}/history`. */
export type QueueHistoryQuery = NonNullable<operations["getQueueHistory"]["parameters"]["query"]>;
