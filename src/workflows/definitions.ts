/**
 * Names of the messages `generateWorkflow` answers, as typed constants: clients, the CLI
 * and tests import these, never retype a string. Pure: safe on both sides.
 */
import { defineQuery } from '@temporalio/workflow';
import type { Message, ModelRequest } from '../core/messages';
import type { RunStatus } from '../core/run';

/** Current state of a run: lifecycle, turn, usage, pending interrupts. Works on closed runs. */
export const statusQuery = defineQuery<RunStatus>('status');

/** The run's messages from index `from` on (for progress display). */
export const messagesQuery = defineQuery<Message[], [number]>('messages');

/**
 * The model request an in-flight `callModel` activity must send, by key. The activity
 * reads it back from the run so history records the conversation once (DESIGN §6).
 */
export const modelRequestQuery = defineQuery<ModelRequest, [string]>('modelRequest');

/** Workflow type name of a generate run. */
export const GENERATE_WORKFLOW = 'generateWorkflow';
