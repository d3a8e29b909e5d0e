// The API's records as the page reads them (chalicelib/openapi.json's schemas),
// for TypeScript's checker only: this module exports no value. Other modules
// name them as `import("./types.js").Run`.

/** @typedef {string} Timestamp An RFC 3339 time, as the API writes it. */

/** @typedef {"in_progress" | "returned" | "completed" | "rejected" | "cancelled"} RunStatus */

/** @typedef {"approve" | "reject" | "return" | "resubmit" | "cancel" | "reassign" | "move"} ActionName What a caller may do with a run. */
/** @typedef {Exclude<ActionName, "reassign" | "move">} DecisionName What the decision form offers: every action but an administrator's reassign and move. */

/** @typedef {ActionName | "skip"} RecordedAction What a run's history records: the callers' actions and the service's skips. */

/**
 * A step's condition: JSON Logic, one operator and its operands (`{">": [{"var": "amount"}, 10000]}`).
 * @typedef {{ [operator: string]: unknown }} Condition
 */

/**
 * A JSON Schema node (a workflow's input schema, or one of its properties); the
 * page reads what it knows of it and ignores the rest.
 * @typedef {{
 *   type?: string | string[],
 *   title?: unknown,
 *   description?: unknown,
 *   format?: unknown,
 *   enum?: unknown[],
 *   const?: unknown,
 *   default?: unknown,
 *   minimum?: unknown,
 *   maximum?: unknown,
 *   maxLength?: unknown,
 *   properties?: { [name: string]: unknown },
 *   required?: unknown,
 *   items?: unknown,
 * }} JsonSchema
 */

/**
 * @typedef {object} Step
 * @property {number} id
 * @property {number} workflow_id
 * @property {string} name
 * @property {number} step_order
 * @property {string[]} approvers
 * @property {number} required_approvals
 * @property {number | null} deadline_seconds
 * @property {string | null} on_deadline
 * @property {string[]} escalate_to
 * @property {Condition | null} when
 * @property {string[]} notify
 */

/**
 * @typedef {object} Workflow
 * @property {number} id
 * @property {string} name
 * @property {string} description
 * @property {Timestamp} created_at
 * @property {boolean} allow_self_approval
 * @property {boolean} distinct_approvers
 * @property {boolean} reject_requires_comment
 * @property {number} max_returns
 * @property {JsonSchema | null} input_schema
 * @property {Step[]} steps
 * @property {number} version Which version this is (a workflow shows its newest).
 * @property {Timestamp} version_created_at
 * @property {boolean} retired No new run starts (runs in progress go on).
 */

/**
 * @typedef {object} Action
 * @property {number} id
 * @property {number} run_id
 * @property {number} step_id
 * @property {string} step_name
 * @property {RecordedAction} action
 * @property {string} actor
 * @property {string} comment
 * @property {Timestamp} created_at
 * @property {string | null} on_behalf_of
 * @property {number} round
 * @property {string | null} input_digest
 * @property {string[] | null} approvers A reassign: whom the step awaits from then on.
 * @property {number | null} workflow_version A move: the version the run continues on.
 */

/**
 * A run as lists give it (GET /runs, the inbox): without its history.
 * @typedef {object} RunSummary
 * @property {number} id
 * @property {number} workflow_id
 * @property {number} workflow_version The version of its workflow it runs on, for its whole life.
 * @property {string} title
 * @property {{ [field: string]: unknown }} input
 * @property {number} round
 * @property {string | null} requested_by
 * @property {RunStatus} status
 * @property {number | null} current_step_id
 * @property {Step | null} current_step
 * @property {string[]} current_step_approved_by
 * @property {Timestamp | null} current_step_since
 * @property {Timestamp} created_at
 * @property {Timestamp} updated_at
 * @property {Timestamp | null} current_step_due_at
 * @property {string[]} current_step_escalated_to
 */

/** @typedef {RunSummary & { actions: Action[] }} Run A run with its history (GET /runs/{id}, a decision's answer). */

/** @typedef {RunSummary & { on_behalf_of: string | null }} InboxItem A run waiting for the caller, or for whom they decide. */

/**
 * @typedef {"run_not_in_progress" | "not_an_approver" | "requester_may_not_decide"
 *   | "already_approved_this_step" | "approved_another_step" | "not_the_requester"
 *   | "run_returned" | "run_not_returned" | "returns_exhausted" | "delegation_not_active"} Reason
 */

/**
 * @typedef {object} Permission
 * @property {boolean} allowed
 * @property {Reason | null} reason
 * @property {string | null} message
 * @property {string | null} on_behalf_of
 */

/** @typedef {{ run_id: number, actor: string } & { [action in ActionName]: Permission }} Permissions */

/**
 * What the caller may do with a run, or why the page could not ask.
 * @typedef {Permissions | { failed: string }} PermissionsAnswer
 */

/**
 * @typedef {object} Delegation
 * @property {number} id
 * @property {string} delegator
 * @property {string} delegate
 * @property {number | null} workflow_id
 * @property {Timestamp} starts_at
 * @property {Timestamp} ends_at
 * @property {string} reason
 * @property {Timestamp} created_at
 * @property {string} created_by
 * @property {Timestamp | null} revoked_at
 * @property {string | null} revoked_by
 */

/**
 * Durations in seconds: how many, their nearest-rank percentiles, the longest (null: none).
 * @typedef {object} Durations
 * @property {number} count
 * @property {number | null} p50
 * @property {number | null} p90
 * @property {number | null} p99
 * @property {number | null} max
 */

/**
 * @typedef {object} StepStats
 * @property {string} name
 * @property {number} step_order
 * @property {number} step_id
 * @property {number} decisions
 * @property {number} approvals
 * @property {number} rejections
 * @property {number} returns
 * @property {number} skips
 * @property {Durations} wait_seconds
 */

/**
 * How long a workflow's approvals take (GET /workflows/{id}/stats).
 * @typedef {object} WorkflowStats
 * @property {number} workflow_id
 * @property {Timestamp} from
 * @property {Timestamp} to
 * @property {boolean} truncated
 * @property {{ started: number, completed: number, rejected: number, returned: number, cancelled: number, in_progress: number, overdue: number }} runs
 * @property {Durations} run_seconds
 * @property {StepStats[]} steps
 * @property {number[]} overdue_runs
 */

/**
 * @template T
 * @typedef {{ items: T[], next_cursor: string | null }} Page A page of a list, and the cursor to the next one.
 */

/**
 * Who this tab acts as: a name and groups, or a token's (read for display only).
 * @typedef {object} Caller
 * @property {string} actor
 * @property {string[]} groups
 * @property {string} [token]
 * @property {string | null} [expires]
 * @property {boolean} [renewable] Signed in (SIGNIN): whether the session renews before it ends.
 */

export {};
